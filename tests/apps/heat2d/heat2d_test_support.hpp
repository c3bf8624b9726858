#pragma once
// Shared by the heat2d tests: the expected table, random problems, running the executable.
#include <sys/wait.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "driver.hpp"
#include "heat2d.hpp"
#include "solver.hpp"
#include "test_support.hpp"

namespace heat2d_test {

using namespace tally::heat2d;

/// One row of data/heat2d_expected.csv: a problem and what it must give.
struct Expected {
  std::string name;
  Problem p;
  std::string precision;
  double tol = 0;
  std::int64_t max_iter = 0, check_every = 1;
  std::string status;
  std::int64_t iterations = 0;
  double final_residual = 0, analytic_max = -1, analytic_l2 = -1;  // -1: no analytic solution
};

inline std::vector<Expected> read_expected(const std::string& path) {
  std::ifstream f(path);
  REQUIRE(f.good());
  std::vector<Expected> rows;
  std::string line;
  std::getline(f, line);  // header
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> c;
    std::stringstream ss(line + ",");  // keeps a trailing empty cell
    for (std::string cell; std::getline(ss, cell, ',');) c.push_back(cell);
    REQUIRE(c.size() == 21);
    Expected e;
    e.name = c[0];
    e.p.mode = c[1] == "transient" ? Mode::transient : Mode::steady;
    e.p.nx = std::stoll(c[2]);
    e.p.ny = std::stoll(c[3]);
    e.precision = c[4];
    e.tol = std::stod(c[5]);
    e.max_iter = std::stoll(c[6]);
    e.check_every = std::stoll(c[7]);
    e.p.alpha = std::stod(c[8]);
    e.p.dt = std::stod(c[9]);
    e.p.t_end = std::stod(c[10]);
    e.p.top = parse_spec(c[11], "bc_top");
    e.p.bottom = parse_spec(c[12], "bc_bottom");
    e.p.left = parse_spec(c[13], "bc_left");
    e.p.right = parse_spec(c[14], "bc_right");
    e.p.init = parse_spec(c[15], "init");
    e.status = c[16];
    e.iterations = std::stoll(c[17]);
    e.final_residual = std::stod(c[18]);
    if (!c[19].empty()) e.analytic_max = std::stod(c[19]);
    if (!c[20].empty()) e.analytic_l2 = std::stod(c[20]);
    finalize(e.p);
    rows.push_back(e);
  }
  REQUIRE(!rows.empty());
  return rows;
}

/// Runs one row on `backend` and checks it against the table. The arithmetic is the same on every
/// backend, but the table may come from another libm (sin in the initial field): allow one sweep
/// in a thousand and a relative 1e-3 on the residual and the errors.
template <class T>
void check_expected(const Expected& e, tally::reduce::Backend backend) {
  INFO("row " << e.name);
  RunOptions o;
  o.backend = backend;
  const auto rep = run_problem<T>(e.p, make_stop_rule(e.p, e.tol, e.max_iter, e.check_every), o);
  CHECK(to_string(rep.result.status) == e.status);
  CHECK(std::abs(rep.result.iterations - e.iterations) <= std::max<std::int64_t>(1, e.iterations / 1000));
  CHECK(rep.result.final_residual == Catch::Approx(e.final_residual).epsilon(1e-3));
  if (e.analytic_max >= 0) {
    REQUIRE(rep.analytic.has_value());
    CHECK(rep.analytic->max == Catch::Approx(e.analytic_max).epsilon(1e-3));
    CHECK(rep.analytic->l2 == Catch::Approx(e.analytic_l2).epsilon(1e-3));
  } else {
    CHECK_FALSE(rep.analytic.has_value());
  }
}

/// A random field: random interior and random constant edges in [-1, 1] (never zeros).
template <class T>
std::vector<T> random_field(const Problem& p, std::uint64_t salt) {
  auto v = tally::test::random_vector<T>(static_cast<std::size_t>(p.nx * p.ny), T(-1), T(1), salt);
  return v;
}

/// Runs a shell command; returns its exit code (-1 when it did not exit normally).
inline int run_command(const std::string& cmd, std::string* out = nullptr) {
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string text;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe)) text += buf;
  const int status = pclose(pipe);
  if (out) *out = text;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// Bitwise equality of two sequences (fields, residual histories: NaN compares equal to itself).
template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}
inline bool same_bits(std::initializer_list<double> a, std::initializer_list<double> b) {
  return same_bits(std::vector<double>(a), std::vector<double>(b));
}

/// Solves p from u0 with the options `so` on backend b; the final field in `out`.
template <class T>
SolveResult solve_from(tally::reduce::Backend b, const Problem& p, const std::vector<T>& u0, const StopRule& rule,
                       std::vector<T>& out, const SolverOptions& so = {}) {
  auto s = make_solver<T>(b, p, so);
  s->set_field(u0);
  auto r = s->solve(rule);
  out.resize(u0.size());
  s->get_field(out);
  return r;
}

/// A random constant in [-1, 1] as an option value (printed with all its digits).
inline std::string random_value(std::mt19937_64& g) {
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", std::uniform_real_distribution<double>(-1.0, 1.0)(g));
  return b;
}

/// A stop request (StopRule::stop_requested) that fires after stop_after_polls polls. It is a plain
/// function pointer, so its counters live here: set stop_after_polls and zero stop_polls per run.
inline int stop_polls = 0;
inline int stop_after_polls = 0;
inline bool stop_after_some_polls() { return ++stop_polls > stop_after_polls; }

}  // namespace heat2d_test
