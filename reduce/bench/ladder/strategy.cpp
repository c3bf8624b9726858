// The ladder's strategy names (ladder.hpp).
#include <stdexcept>
#include <string>

#include "ladder/ladder.hpp"

namespace tally::reduce::bench {

std::string to_string(Strategy s) {
  switch (s) {
    case Strategy::production: return "production";
    case Strategy::atomic: return "atomic";
    case Strategy::interleaved_divergent: return "interleaved-divergent";
    case Strategy::interleaved: return "interleaved";
    case Strategy::sequential: return "sequential";
    case Strategy::first_add: return "first-add";
    case Strategy::warp_shuffle: return "warp-shuffle";
    case Strategy::coarsened: return "coarsened";
    case Strategy::cub: return "cub";
  }
  return "?";
}

Strategy parse_strategy(std::string_view name) {
  std::string names;
  for (Strategy s : all_strategies) {
    if (to_string(s) == name) return s;
    names += (names.empty() ? "" : ", ") + to_string(s);
  }
  throw std::invalid_argument("strategy: unknown '" + std::string(name) + "' (one of: " + names + ")");
}

}  // namespace tally::reduce::bench
