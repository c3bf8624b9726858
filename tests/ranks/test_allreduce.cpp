// allreduce (tally/reduce/ranks.hpp) on host memory, for every operator and type of the library: the rank-ordered
// fold, bit for bit, against a naive fold every rank computes from every rank's (regenerated) inputs.
#include <cmath>
#include <limits>
#include <span>

#include "catch.hpp"
#include "instantiate.hpp"
#include "rank_checks.hpp"

using namespace tally::reduce;
using namespace tally::ranks;
using namespace tally::test;

namespace {

template <class Op, class T>
void check_allreduce(std::size_t n, std::uint64_t salt, bool in_place) {
  const Comm& c = world();
  INFO(Op::name << " " << type_name<T>() << ", " << n << " elements, " << c.size() << " ranks, rank " << c.rank()
                << (in_place ? ", in place" : ""));
  std::vector<std::vector<T>> rows;
  for (int r = 0; r < c.size(); ++r) rows.push_back(rank_input<Op, T>(n, r, salt));
  const std::vector<T> expect = naive_rank_fold<Op, T>(rows);
  std::vector<T> mine = rows[static_cast<std::size_t>(c.rank())], out(n, T(7));
  if (in_place) {
    allreduce<Op, T>(c, std::span<const T>(mine), std::span<T>(mine), Memory::host);
    out = mine;
  } else {
    allreduce<Op, T>(c, std::span<const T>(mine), std::span<T>(out), Memory::host);
    CHECK(first_difference(mine, rows[static_cast<std::size_t>(c.rank())]) == -1);  // input untouched
  }
  CHECK(first_difference(out, expect) == -1);
}

}  // namespace

TEST_CASE("allreduce: every operator and type, rank-ordered, bitwise") {
  std::uint64_t salt = 1;
  for (std::size_t n : {std::size_t{1}, std::size_t{37}, std::size_t{1000}}) {
    for (bool in_place : {false, true}) {
#define CHECK_CASE(Op, T, Acc) check_allreduce<Op, T>(n, salt++, in_place);
      TALLY_REDUCE_FOR_EACH_SAME(CHECK_CASE)
#undef CHECK_CASE
    }
  }
}

TEST_CASE("allreduce: empty spans") {
  const Comm& c = world();
  std::vector<double> none;
  allreduce<Sum, double>(c, std::span<const double>(none), std::span<double>(none), Memory::host);
  allreduce<Max, std::int32_t>(c, {}, {}, Memory::host);
  // Still paired after the empty calls: a real one goes through.
  std::vector<std::int64_t> one{c.rank() + 1};
  allreduce<Sum, std::int64_t>(c, std::span<const std::int64_t>(one), std::span<std::int64_t>(one), Memory::host);
  CHECK(one[0] == std::int64_t{c.size()} * (c.size() + 1) / 2);
}

TEST_CASE("allreduce: a mismatch of in and out sizes throws std::invalid_argument") {
  std::vector<float> a(3), b(2);
  auto call = [&] { allreduce<Sum, float>(world(), std::span<const float>(a), std::span<float>(b), Memory::host); };
  CHECK_THROWS_AS(call(), std::invalid_argument);
}

template <class T>
void check_nan_and_inf() {
  const Comm& c = world();
  const int last = c.size() - 1;
  constexpr T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
  // [0]: NaN on the last rank only; [1]: NaN on rank 0 only; [2]: +inf on the last rank; [3]: -inf on
  // rank 0; [4]: finite everywhere (the rank number).
  std::vector<T> x{T(1), T(2), T(3), T(4), T(c.rank())};
  if (c.rank() == last) x[0] = nan, x[2] = inf;
  if (c.rank() == 0) x[1] = nan, x[3] = -inf;
  std::vector<T> mx(x.size()), mn(x.size());
  allreduce<Max, T>(c, std::span<const T>(x), std::span<T>(mx), Memory::host);
  allreduce<Min, T>(c, std::span<const T>(x), std::span<T>(mn), Memory::host);
  INFO(type_name<T>() << ", " << c.size() << " ranks");
  CHECK(std::isnan(mx[0]));
  CHECK(std::isnan(mn[0]));
  CHECK(std::isnan(mx[1]));
  CHECK(std::isnan(mn[1]));
  CHECK(mx[2] == inf);
  CHECK(mn[2] == (c.size() == 1 ? inf : T(3)));
  CHECK(mx[3] == (c.size() == 1 ? -inf : T(4)));
  CHECK(mn[3] == -inf);
  CHECK(mx[4] == T(last));
  CHECK(mn[4] == T(0));
}

TEST_CASE("allreduce: Max and Min propagate NaN from any rank; infinities") {
  check_nan_and_inf<float>();
  check_nan_and_inf<double>();
}
