#pragma once
// FNV-1a 64 over a canonical encoding of values: integers and IEEE floats as their little-endian
// bytes, every NaN as one canonical token (a NaN's sign and payload are not a result the library
// promises; that it is a NaN is), -0 and +0 apart (their order in a max or min is a result).

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>

namespace checksums {

class Fnv1a {
 public:
  void byte(unsigned char b) {
    h_ ^= b;
    h_ *= 1099511628211ULL;
  }
  /// The bits of an unsigned word, least significant byte first.
  void word(std::uint64_t w, int bytes) {
    for (int i = 0; i < bytes; ++i) byte(static_cast<unsigned char>(w >> (8 * i)));
  }
  template <class T>
  requires(std::is_arithmetic_v<T>) void value(T x) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(x)) {
        word(0x4e614e, 3);  // "NaN", whatever the width
        return;
      }
      using U = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
      word(std::bit_cast<U>(x), sizeof(T));
    } else if constexpr (std::is_same_v<T, bool>) {
      byte(x ? 1 : 0);
    } else {
      word(static_cast<std::uint64_t>(x), sizeof(T));
    }
  }
  void text(const std::string& s) {
    word(s.size(), 8);
    for (char c : s) byte(static_cast<unsigned char>(c));
  }
  [[nodiscard]] std::uint64_t digest() const { return h_; }
  [[nodiscard]] std::string hex() const {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h_));
    return buf;
  }

 private:
  std::uint64_t h_ = 14695981039346656037ULL;
};

}  // namespace checksums
