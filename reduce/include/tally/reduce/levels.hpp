#pragma once
// The OpenACC levels of parallelism and the sets of them a reduction can span.
// The loop nest is k (gang) over j (worker) over i (vector): a 3-D array (ng, nw, nv), vector innermost.

#include <array>
#include <string>
#include <string_view>

namespace tally::reduce {

enum class Level : unsigned char { gang = 1, worker = 2, vector = 4 };

class Levels {
 public:
  constexpr Levels() = default;
  constexpr Levels(Level l) : bits_(static_cast<unsigned char>(l)) {}  // NOLINT: implicit on purpose
  friend constexpr Levels operator|(Levels a, Levels b) { return from_bits(a.bits_ | b.bits_); }
  friend constexpr bool operator==(Levels a, Levels b) = default;

  [[nodiscard]] constexpr bool contains(Level l) const { return (bits_ & static_cast<unsigned char>(l)) != 0; }
  [[nodiscard]] constexpr bool empty() const { return bits_ == 0; }
  [[nodiscard]] constexpr unsigned bits() const { return bits_; }
  static constexpr Levels from_bits(unsigned b) {
    Levels l;
    l.bits_ = static_cast<unsigned char>(b & 7u);
    return l;
  }

  /// "gang", "worker+vector", "gang+worker+vector", ...; "none" for the empty set.
  [[nodiscard]] std::string to_string() const;
  /// Parses the names above ('+' or ',' separated, any order; "all" for the three). Throws
  /// std::invalid_argument naming the offending word.
  static Levels parse(std::string_view text);

  /// The seven non-empty sets, in the order of the OpenACC testsuite table then the rest.
  static constexpr std::array<Levels, 7> all_sets() {
    return {from_bits(1), from_bits(2), from_bits(4), from_bits(3), from_bits(6), from_bits(5), from_bits(7)};
  }
  static constexpr Levels all() { return from_bits(7); }

 private:
  unsigned char bits_ = 0;
};

constexpr Levels operator|(Level a, Level b) { return Levels(a) | Levels(b); }

}  // namespace tally::reduce
