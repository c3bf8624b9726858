#include "tally/common/ranks_report.hpp"

namespace tally {

void write_ranks(h5::Location& where, const RanksReport& r) {
  auto g = where.group("ranks");
  g.attr("ranks", r.ranks);
  g.attr("transport", r.transport);
  g.attr("decomposition", r.decomposition);
  g.attr("shares_device", r.shares_device);
  if (!r.part_begin.empty()) g.write<std::int64_t>("part_begin", r.part_begin);
  if (!r.part_end.empty()) g.write<std::int64_t>("part_end", r.part_end);
  for (const auto& t : r.timings) {
    auto tg = g.group("timings/" + t.name);
    tg.attr("min", t.min);
    tg.attr("median", t.median);
    tg.attr("max", t.max);
    tg.write<double>("per_rank", t.per_rank);
  }
}

std::string ranks_summary(const RanksReport& r) {
  if (r.ranks <= 1) return "";
  std::string s = ", " + std::to_string(r.ranks) + " ranks (" + r.transport + ")";
  if (r.shares_device) s += " (" + std::to_string(r.ranks) + " ranks share a GPU)";
  return s;
}

}  // namespace tally
