#include "tally/common/timing.hpp"

#include <algorithm>

namespace tally {

void Timings::set(const std::string& name, double seconds) {
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](const auto& e) { return e.first == name; });
  if (it == entries_.end()) entries_.emplace_back(name, seconds);
  else it->second = seconds;
}

void Timings::add(const std::string& name, double seconds) {
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](const auto& e) { return e.first == name; });
  if (it == entries_.end()) entries_.emplace_back(name, seconds);
  else it->second += seconds;
}

double Timings::get(const std::string& name) const {
  for (const auto& [n, s] : entries_)
    if (n == name) return s;
  return 0.0;
}

bool Timings::has(const std::string& name) const {
  return std::any_of(entries_.begin(), entries_.end(), [&](const auto& e) { return e.first == name; });
}

}  // namespace tally
