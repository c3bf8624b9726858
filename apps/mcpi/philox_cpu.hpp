#pragma once
// Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy as 1, 2, 3", SC 2011)
// on the CPU, with the round constants, key schedule and output order of cuRAND's
// curand_Philox4x32_10 (curand_philox4x32_x.h), so that it reproduces cuRAND's streams.

#include <array>
#include <cstdint>

namespace tally::mcpi {

struct Philox4x32 {
  static constexpr std::uint32_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u;  // multipliers
  static constexpr std::uint32_t w0 = 0x9E3779B9u, w1 = 0xBB67AE85u;  // Weyl key increments

  /// Ten rounds on counter c with key k: each round multiplies words 0 and 2, swaps the halves and
  /// xors in the other words and the round key; the key is bumped between rounds.
  static std::array<std::uint32_t, 4> block(std::array<std::uint32_t, 4> c, std::uint32_t k0, std::uint32_t k1) {
    for (int round = 0; round < 10; ++round) {
      const std::uint64_t p0 = std::uint64_t{m0} * c[0];
      const std::uint64_t p1 = std::uint64_t{m1} * c[2];
      const auto hi0 = static_cast<std::uint32_t>(p0 >> 32), lo0 = static_cast<std::uint32_t>(p0);
      const auto hi1 = static_cast<std::uint32_t>(p1 >> 32), lo1 = static_cast<std::uint32_t>(p1);
      c = {hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0};
      k0 += w0;
      k1 += w1;
    }
    return c;
  }

  /// Block b of cuRAND's host-API ordering (see mcpi.hpp): subsequence b % 65536, counter b / 65536.
  static std::array<std::uint32_t, 4> host_order_block(std::uint64_t seed, std::uint64_t b) {
    const std::uint64_t c = b >> 16;
    return block({static_cast<std::uint32_t>(c), static_cast<std::uint32_t>(c >> 32),
                  static_cast<std::uint32_t>(b & 0xffffu), 0u},
                 static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
  }
};

}  // namespace tally::mcpi
