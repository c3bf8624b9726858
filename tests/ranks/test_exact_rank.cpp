// ExactSum across ranks (reduce(comm, ...), reduce_to_host(comm, ...)): the ranks add their unrounded
// accumulators, so with gang in the level set every rank holds the single-process exact sum of the
// whole array bit for bit, for 1, 2 and 3 ranks; without gang each rank's output is its own slab's.
// (The CUDA backend: test_rank_cuda.cpp.) The inputs span 2^-40 .. 2^40 with a cancelling pair of 2^60 in different
// slabs: a rounded partial per rank would lose the small terms; the exact result does not.
#include <cmath>
#include <span>

#include "catch.hpp"
#include "rank_checks.hpp"
#include "tally/reduce/reduce.hpp"

using namespace tally::reduce;
using namespace tally::ranks;
using namespace tally::test;

namespace {

template <class T>
std::vector<T> wide_input(std::size_t n, std::uint64_t salt) {
  std::vector<T> x = rank_input<Sum, T>(n, 0, salt);  // the same on every rank (the shared seed)
  for (std::size_t i = 0; i < n; ++i) x[i] = std::ldexp(x[i], static_cast<int>((i * 37) % 81) - 40);
  if (n >= 2) x.front() = std::ldexp(T(1), 60), x.back() = -std::ldexp(T(1), 60);
  return x;
}

template <class T, class Out>
void check_exact4(std::int64_t ng, std::int64_t nw, std::int64_t nv, std::uint64_t salt) {
  const Comm& c = world();
  const std::vector<T> global = wide_input<T>(static_cast<std::size_t>(ng * nw * nv), salt);
  const std::int64_t row = nw * nv;
  const Range g = split_range(ng, c.size(), c.rank());
  const View<const T> mine =
      View<const T>::contiguous(g.size() ? global.data() + g.begin * row : nullptr, g.size(), nw, nv);
  Workspace ws(Backend::cpu);
  for (Levels levels : Levels::all_sets()) {
    INFO("exact " << type_name<T>() << "->" << type_name<Out>() << ", NG " << ng << " over " << c.size()
                  << " ranks (rank " << c.rank() << " ng " << mine.ext.ng << "), levels " << levels.to_string());
    std::vector<Out> out(static_cast<std::size_t>(output_shape(mine.ext, levels).size()));
    reduce<ExactSum, T, Out>(c, Backend::cpu, mine, levels, std::span<Out>(out), ws);
    std::vector<Out> expect(out.size());
    if (levels.contains(Level::gang)) {  // the whole array in one process
      reduce<ExactSum, T, Out>(Backend::cpu, View<const T>::contiguous(global.data(), ng, nw, nv), levels,
                               std::span<Out>(expect), ws);
    } else {
      reduce<ExactSum, T, Out>(Backend::cpu, mine, levels, std::span<Out>(expect), ws);
    }
    CHECK(first_difference(out, expect) == -1);
    if (levels == Levels::all()) {
      CHECK(same_bits(reduce_to_host<ExactSum, T, Out>(c, Backend::cpu, mine, ws), expect[0]));
      // The small terms survive the cancelling pair: the result is not the 2^60 - 2^60 = 0 of rounded partials.
      if (ng * row >= 4) CHECK(expect[0] != Out(0));
    }
  }
}

}  // namespace

TEST_CASE("reduce(comm) with ExactSum: the same bits for every rank count, the single-process exact sum") {
  std::uint64_t salt = 900;
  for (std::int64_t ng : {6, 7, 2, 1}) {  // divisible by 1, 2, 3 ranks or not; fewer gangs than ranks
    check_exact4<float, float>(ng, 3, 5, salt++);
    check_exact4<float, double>(ng, 3, 5, salt++);
    check_exact4<double, double>(ng, 3, 5, salt++);
  }
}
