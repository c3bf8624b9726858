#include "tally/common/ranks_report.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace tally {

namespace {
constexpr const char* suffix = "_s";
}

void write(h5::Location& where, const RanksReport& report) {
  if (report.ranks < 1) throw std::invalid_argument("ranks report: ranks " + std::to_string(report.ranks) + " < 1");
  std::set<std::string> names;
  for (const RankPhase& p : report.phases) {
    if (p.name.empty() || p.name.find_first_of(",/") != std::string::npos)
      throw std::invalid_argument("ranks report: phase name '" + p.name + "' (empty, or with ',' or '/')");
    if (!names.insert(p.name).second) throw std::invalid_argument("ranks report: phase '" + p.name + "' twice");
    if (p.per_rank.size() != static_cast<std::size_t>(report.ranks))
      throw std::invalid_argument("ranks report: phase '" + p.name + "' has " + std::to_string(p.per_rank.size()) +
                                  " values for " + std::to_string(report.ranks) + " ranks");
  }
  h5::Location g = where.group("ranks");
  g.attr("ranks", static_cast<std::int32_t>(report.ranks));
  g.attr("transport", report.transport);
  g.attr("decomposition", report.decomposition);
  g.attr("shares_device", report.shares_device);
  g.attr("writer", !report.writer.empty() ? report.writer : report.ranks == 1 ? writer_one_rank : writer_gathered);
  std::string list;
  for (const RankPhase& p : report.phases) list += (list.empty() ? "" : ",") + p.name;
  g.attr("phases", list);  // the datasets' order, for readers
  for (const RankPhase& p : report.phases) {
    const std::string name = p.name + suffix;
    g.write<double>(name, p.per_rank);
    h5::Location ds = g.open_dataset(name);
    ds.attr("min", p.min);
    ds.attr("median", p.median);
    ds.attr("max", p.max);
  }
}

RanksReport read_ranks_report(const h5::Location& where) {
  const h5::Location g = where.open_group("ranks");
  RanksReport r;
  r.ranks = g.read_attr<std::int32_t>("ranks");
  r.transport = g.read_attr_string("transport");
  r.decomposition = g.read_attr_string("decomposition");
  r.shares_device = g.read_attr<bool>("shares_device");
  if (g.has_attr("writer")) r.writer = g.read_attr_string("writer");  // files from before it was recorded: ""
  const std::string list = g.read_attr_string("phases");
  for (std::size_t at = 0; at < list.size();) {
    const std::size_t end = std::min(list.find(',', at), list.size());
    RankPhase p;
    p.name = list.substr(at, end - at);
    at = end + 1;
    const std::string name = p.name + suffix;
    p.per_rank = g.read<double>(name);
    const h5::Location ds = g.open_dataset(name);
    p.min = ds.read_attr<double>("min");
    p.median = ds.read_attr<double>("median");
    p.max = ds.read_attr<double>("max");
    r.phases.push_back(std::move(p));
  }
  return r;
}

std::string ranks_summary(const RanksReport& report) {
  if (report.ranks <= 1) return "";
  std::string s = ", " + std::to_string(report.ranks) + " ranks (" + report.transport + ")";
  if (report.shares_device) s += " (" + std::to_string(report.ranks) + " ranks share a GPU)";
  return s;
}

}  // namespace tally
