#pragma once
// Host timers and a small registry of named timings that apps fill and write out.

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace tally {

/// The median of timed runs (the upper one of the middle two for an even count); v must not be empty.
[[nodiscard]] inline double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

class HostTimer {
 public:
  HostTimer() : t0_(clock::now()) {}
  void restart() { t0_ = clock::now(); }
  [[nodiscard]] double seconds() const { return std::chrono::duration<double>(clock::now() - t0_).count(); }

 private:
  using clock = std::chrono::steady_clock;
  clock::time_point t0_;
};

/// Named durations in seconds, in the order they were first recorded. add() accumulates.
class Timings {
 public:
  void set(const std::string& name, double seconds);
  void add(const std::string& name, double seconds);
  [[nodiscard]] double get(const std::string& name) const;  ///< 0 when absent
  [[nodiscard]] bool has(const std::string& name) const;
  [[nodiscard]] const std::vector<std::pair<std::string, double>>& entries() const { return entries_; }

 private:
  std::vector<std::pair<std::string, double>> entries_;
};

/// Times a scope into a registry entry (host clock; synchronise device work first).
class ScopedTimer {
 public:
  ScopedTimer(Timings& t, std::string name) : t_(t), name_(std::move(name)) {}
  ~ScopedTimer() { t_.add(name_, timer_.seconds()); }
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

 private:
  Timings& t_;
  std::string name_;
  HostTimer timer_;
};

}  // namespace tally
