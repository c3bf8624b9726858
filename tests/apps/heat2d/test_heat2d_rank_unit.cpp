// heat2d's pieces across the ranks of the job (ConfigureRankTest: 1, 2 and 3 ranks): the row blocks,
// the gather of the field (in rounds too), and the solver split over the ranks against the same
// solver on one rank, on a random field, fields and residual histories bit for bit. Built for the
// CPU backend and, as a GPU test, for CUDA (HEAT2D_RANK_BACKEND).
#include <cstring>
#include <string>
#include <vector>

#include "catch.hpp"
#include "driver.hpp"
#include "heat2d_test_support.hpp"
#include "rank_support.hpp"
#include "solver.hpp"
#include "tally/common/error.hpp"

using namespace heat2d_test;
using tally::test::world;

namespace {

const tally::reduce::Backend backend =
    std::string(HEAT2D_RANK_BACKEND) == "cuda" ? tally::reduce::Backend::cuda : tally::reduce::Backend::cpu;

Problem grid(std::int64_t nx, std::int64_t ny, Mode mode) {
  Problem p;
  p.nx = nx;
  p.ny = ny;
  p.mode = mode;
  finalize(p);
  return p;
}

/// The rows of `whole` that rank `r` holds.
template <class T>
std::vector<T> rows_of(const std::vector<T>& whole, const Problem& p, const Block& b) {
  return {whole.begin() + b.row0 * p.nx, whole.begin() + b.end() * p.nx};
}

/// Solves from u0 on one rank (a local solver) and split over the job; compares on rank 0.
template <class T>
void compare_split(const Problem& p, const std::vector<T>& u0, const StopRule& rule, int t = 1) {
  const auto& comm = world();
  INFO(p.nx << "x" << p.ny << " " << to_string(p.mode) << " check-every " << rule.check_every << " on " << comm.size()
            << " ranks, t = " << t);
  if (backend == tally::reduce::Backend::cuda && comm.size() > 1) {
    // use_device: once per job. world() is const but the job's Comm is not (rank_main.cpp's `w`).
    static bool device_set = false;
    if (!device_set) const_cast<tally::ranks::Comm&>(comm).use_device(comm.pick_device());
    device_set = true;
  }
  const int device = backend == tally::reduce::Backend::cuda ? std::max(comm.pick_device(), 0) : 0;

  auto one = make_solver<T>(backend, p, {device, "registers", nullptr});
  one->set_field(u0);
  const SolveResult r1 = one->solve(rule);
  std::vector<T> f1(u0.size());
  one->get_field(f1);

  const Decomposition dec = decompose(p, comm.size(), comm.rank());
  const Block b = local_block(dec);
  auto split = make_solver<T>(backend, p, {device, "registers", &comm, &dec, t});
  split->set_field(rows_of(u0, p, b));
  const SolveResult rn = split->solve(rule);
  std::vector<T> block(static_cast<std::size_t>(b.rows * p.nx));
  split->get_field(block);
  const std::vector<T> fn = gather_field<T>(comm, dec, std::span<const T>(block));

  // Every rank holds the same history (the global residual), equal to one rank's bit for bit.
  CHECK(rn.status == r1.status);
  CHECK(rn.iterations == r1.iterations);
  CHECK(rn.check_iteration == r1.check_iteration);
  CHECK(same_bits(rn.check_residual, r1.check_residual));
  if (comm.is_root()) CHECK(same_bits(fn, f1));
  else CHECK(fn.empty());
}

}  // namespace

TEST_CASE("heat2d row blocks cover the interior rows in order; more ranks than rows are refused", "[heat2d][ranks]") {
  for (std::int64_t ny : {3, 4, 7, 29, 64}) {
    const Problem p = grid(9, ny, Mode::steady);
    for (int n = 1; n <= ny - 2 && n <= 8; ++n) {
      std::int64_t next = 1, most = 0, least = ny;
      for (int r = 0; r < n; ++r) {
        const Block b = local_block(decompose(p, n, r));
        CHECK(b.row0 + 1 == next);  // its first interior row follows the previous rank's last
        CHECK(b.rows >= 3);
        next = b.end() - 1;
        most = std::max(most, b.rows), least = std::min(least, b.rows);
      }
      CHECK(next == ny - 1);
      CHECK(most - least <= 1);  // balanced
    }
    CHECK_THROWS_AS(decompose(p, static_cast<int>(ny - 1), 0), tally::InputError);
  }
}

TEST_CASE("heat2d gather_field assembles the whole field on rank 0, in one round or many", "[heat2d][ranks]") {
  const auto& comm = world();
  for (std::int64_t ny : {5, 29, 64}) {
    if (ny - 2 < comm.size()) continue;
    const Problem p = grid(13, ny, Mode::steady);
    const auto whole = random_field<double>(p, static_cast<std::uint64_t>(ny));  // the same on every rank (seed)
    const Decomposition dec = decompose(p, comm.size(), comm.rank());
    const auto block = rows_of(whole, p, local_block(dec));
    for (std::int64_t round : {std::int64_t{1} << 30, std::int64_t{13 * 8}, std::int64_t{3 * 13 * 8 * 2}}) {
      INFO("ny " << ny << ", rounds of " << round << " bytes");
      const auto got = gather_field<double>(comm, dec, std::span<const double>(block), round);
      if (comm.is_root()) CHECK(same_bits(got, whole));
      else CHECK(got.empty());
    }
  }
}

TEST_CASE("heat2d split over the ranks gives one rank's fields and residuals bit for bit", "[heat2d][ranks]") {
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {{37, 29}, {64, 64}, {40, 6}, {130, 5}};
  std::uint64_t salt = 100;
  for (const auto& [nx, ny] : shapes) {
    if (ny - 2 < world().size()) continue;
    for (Mode mode : {Mode::steady, Mode::transient}) {
      const Problem p = grid(nx, ny, mode);
      const auto ud = random_field<double>(p, ++salt);
      for (std::int64_t ce : {std::int64_t{1}, std::int64_t{3}}) {
        compare_split<double>(p, ud, make_stop_rule(p, 1e-300, 40, ce));    // 40 sweeps, never converged
        compare_split<double>(p, ud, make_stop_rule(p, 1e-3, 100000, ce));  // converges
      }
      const std::vector<float> uf(ud.begin(), ud.end());
      compare_split<float>(p, uf, make_stop_rule(p, 1e-3, 100000, 2));
    }
  }
}

TEST_CASE("heat2d split over the ranks with t sweeps a pass (halos t rows deep) gives one rank's bits",
          "[heat2d][ranks][blocked]") {
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {{37, 29}, {64, 40}, {130, 14}};
  std::uint64_t salt = 200;
  for (const auto& [nx, ny] : shapes) {
    for (Mode mode : {Mode::steady, Mode::transient}) {
      const Problem p = grid(nx, ny, mode);
      const auto ud = random_field<double>(p, ++salt);
      const int deepest = deepest_pass(decompose(p, world().size(), world().rank()));
      for (int t : {0, 2, 3, 4}) {  // 0: auto
        if (t > deepest) continue;
        compare_split<double>(p, ud, make_stop_rule(p, 1e-300, 41, 12), t);    // a last pass of 5 sweeps
        compare_split<double>(p, ud, make_stop_rule(p, 1e-3, 100000, 12), t);  // converges
      }
      const std::vector<float> uf(ud.begin(), ud.end());
      if (deepest >= 4) compare_split<float>(p, uf, make_stop_rule(p, 1e-3, 100000, 4), 4);
    }
  }
}
