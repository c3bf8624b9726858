#pragma once
// Fixed inputs from an integer hash (SplitMix64's finaliser) of (stream, index): the same values on
// every compiler, library and machine, unlike std:: distributions. Each flavour says what it exercises.

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace checksums {

inline std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
inline std::uint64_t bits(std::uint64_t stream, std::uint64_t i) { return mix(i ^ mix(stream)); }

enum class Flavour {
  uniform,    ///< floats in [-1, 1) on the type's grid; integers small enough that no sum overflows
  wide,       ///< integers spanning the type (max, min, xor; sums of int32 only into int64)
  near_one,   ///< products that stay finite: floats 1 +- 2^-7, integers +-1 with a few 2s
  ties,       ///< a few distinct values: ties everywhere (first index wins), +0 and -0 among them
  nan,        ///< uniform with NaN, +Inf and -Inf at sparse places (some outputs get one, most none)
  exact,      ///< floats over a wide exponent range with exactly cancelling pairs (exact sums)
  and_mask,   ///< all bits set but, rarely, one (bit and)
  or_mask,    ///< zero but, rarely, one bit (bit or)
  rare_zero,  ///< non-zero but rarely zero (logical and)
  rare_one,   ///< zero but rarely non-zero (logical or)
};

inline const char* name(Flavour f) {
  switch (f) {
    case Flavour::uniform: return "uniform";
    case Flavour::wide: return "wide";
    case Flavour::near_one: return "near1";
    case Flavour::ties: return "ties";
    case Flavour::nan: return "nan";
    case Flavour::exact: return "exact";
    case Flavour::and_mask: return "andmask";
    case Flavour::or_mask: return "ormask";
    case Flavour::rare_zero: return "rare0";
    case Flavour::rare_one: return "rare1";
  }
  return "?";
}

/// Element i of stream `stream` in flavour f.
template <class T>
T element(Flavour f, std::uint64_t stream, std::uint64_t i) {
  const std::uint64_t b = bits(stream * 16 + static_cast<std::uint64_t>(f), i);
  const auto top = [&](int n) { return static_cast<std::int64_t>(b >> (64 - n)); };  // n random bits
  if constexpr (std::is_floating_point_v<T>) {
    constexpr int p = std::numeric_limits<T>::digits;  // 24 or 53
    const T unit = T(1) / static_cast<T>(std::int64_t{1} << (p - 1));
    const T u = static_cast<T>(top(p) - (std::int64_t{1} << (p - 1))) * unit;  // [-1, 1), exact
    switch (f) {
      case Flavour::near_one: return T(1) + u / T(128);
      case Flavour::ties: {
        const int k = static_cast<int>(b % 7);
        return k == 0 ? T(-0.0) : k == 1 ? T(0) : static_cast<T>(static_cast<int>(b % 5) - 3);
      }
      case Flavour::nan: {
        const std::uint64_t r = b % 4001;
        if (r == 0) return std::numeric_limits<T>::quiet_NaN();
        if (r == 1) return std::numeric_limits<T>::infinity();
        if (r == 2) return -std::numeric_limits<T>::infinity();
        return u;
      }
      case Flavour::exact: {
        // Pairs (2m, 2m + 1) cancel exactly in one index in eight; the rest spread over 2^-e .. 2^e.
        const std::uint64_t m = i / 2, pair = bits(stream * 16 + 15, m);
        const int span = std::is_same_v<T, float> ? 40 : 300;
        if (pair % 8 == 0) {
          const T base = element<T>(Flavour::uniform, stream + 7, m) *
                         static_cast<T>(std::ldexp(1.0, static_cast<int>(pair % (2 * span)) - span));
          return i % 2 == 0 ? base : -base;
        }
        return static_cast<T>(std::ldexp(static_cast<double>(u), static_cast<int>((b >> 8) % (2 * span)) - span));
      }
      default: return u;
    }
  } else {
    constexpr int w = 8 * sizeof(T);
    switch (f) {
      case Flavour::uniform:  // int32: |x| <= 1000; int64: |x| < 2^40 (a sum of 2^23 of them fits)
        return sizeof(T) == 4 ? static_cast<T>(static_cast<std::int64_t>(b % 2001) - 1000)
                              : static_cast<T>(static_cast<std::int64_t>(b >> 23) - (std::int64_t{1} << 40));
      case Flavour::wide: return static_cast<T>(b);  // every bit random
      case Flavour::near_one: {
        const T s = (b & 1) ? T(1) : T(-1);
        return (i % 997 == 0 && i < 20000) ? static_cast<T>(2 * s) : s;  // at most 21 twos: no overflow
      }
      case Flavour::ties: return static_cast<T>(static_cast<std::int64_t>(b % 9) - 4);
      case Flavour::and_mask: return (b >> 20) % 64 == 0 ? static_cast<T>(~(std::uint64_t{1} << (b % w))) : T(~T(0));
      case Flavour::or_mask: return (b >> 20) % 64 == 0 ? static_cast<T>(std::uint64_t{1} << (b % w)) : T(0);
      case Flavour::rare_zero: return (b >> 20) % 4096 == 0 ? T(0) : static_cast<T>(b | 1);
      case Flavour::rare_one: return (b >> 20) % 4096 == 0 ? static_cast<T>(b | 1) : T(0);
      default: return static_cast<T>(static_cast<std::int64_t>(b % 2001) - 1000);
    }
  }
}

template <class T>
std::vector<T> elements(Flavour f, std::uint64_t stream, std::size_t n) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = element<T>(f, stream, i);
  return v;
}

}  // namespace checksums
