#pragma once
// Helpers of the multi-rank tests (ConfigureRankTest; main: rank_main.cpp).

#include <cstdint>

#include "tally/ranks/comm.hpp"

namespace tally::test {

/// The job's communicator (every rank runs every test case).
ranks::Comm& world();

/// A salt for rank `rank`'s own inputs, distinct from every other rank's and use's.
inline std::uint64_t rank_salt(std::uint64_t salt, int rank) {
  return salt * 1000003u + static_cast<std::uint64_t>(rank) + 1;
}

}  // namespace tally::test
