#pragma once
// Shared by the mcpi tests: the expected-value table data/mcpi_expected.csv. The bound on an
// estimate's error that a correct count does not exceed is the app's own (tally::mcpi::error_bound).

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "mcpi.hpp"

namespace mcpi_test {

struct Expected {
  tally::mcpi::Generator generator;
  tally::mcpi::Api api;
  std::uint64_t seed;
  std::int64_t offset, n, hits;
};

/// Columns: generator,api,seed,offset,n,hits ('#' lines are comments).
inline std::vector<Expected> read_expected(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::vector<Expected> rows;
  std::string line;
  bool header = true;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (header) {
      header = false;
      continue;
    }
    std::stringstream ss(line);
    std::string g, a, seed, off, n, hits;
    std::getline(ss, g, ',');
    std::getline(ss, a, ',');
    std::getline(ss, seed, ',');
    std::getline(ss, off, ',');
    std::getline(ss, n, ',');
    std::getline(ss, hits, ',');
    rows.push_back({tally::mcpi::parse_generator(g), tally::mcpi::parse_api(a), std::stoull(seed), std::stoll(off),
                    std::stoll(n), std::stoll(hits)});
  }
  return rows;
}

}  // namespace mcpi_test
