// The four-level reduce(comm, ...): a global (NG, nw, nv) array split along gang over the ranks.
// With gang in the level set every rank holds the rank-ordered fold of the per-slab reductions (and,
// for Max/Min and integer sums, the single-process reduction of the whole array, bit for bit);
// without gang each rank's output is its own slab's reduction.
#include <span>

#include "catch.hpp"
#include "rank_checks.hpp"
#include "tally/reduce/reduce.hpp"

using namespace tally::reduce;
using namespace tally::ranks;
using namespace tally::test;

namespace {

template <class Op, class T, class Acc>
void check_reduce4(std::int64_t ng, std::int64_t nw, std::int64_t nv, std::uint64_t salt) {
  const Comm& c = world();
  const std::vector<T> global =
      rank_input<Op, T>(static_cast<std::size_t>(ng * nw * nv), 0, salt);  // same on every rank
  const std::int64_t row = nw * nv;
  auto slab_view = [&](int r) {
    const Range g = split_range(ng, c.size(), r);
    return View<const T>::contiguous(g.size() ? global.data() + g.begin * row : nullptr, g.size(), nw, nv);
  };
  Workspace ws(Backend::cpu);
  for (Levels levels : Levels::all_sets()) {
    const View<const T> mine = slab_view(c.rank());
    INFO(Op::name << " " << type_name<T>() << "->" << type_name<Acc>() << ", NG " << ng << " over " << c.size()
                  << " ranks (rank " << c.rank() << " ng " << mine.ext.ng << "), levels " << levels.to_string());
    std::vector<Acc> out(static_cast<std::size_t>(output_shape(mine.ext, levels).size()));
    reduce<Op, T, Acc>(c, Backend::cpu, mine, levels, std::span<Acc>(out), ws);
    if (levels.contains(Level::gang)) {
      std::vector<std::vector<Acc>> per_slab;
      for (int r = 0; r < c.size(); ++r) {
        std::vector<Acc> s(out.size());
        reduce<Op, T, Acc>(Backend::cpu, slab_view(r), levels, std::span<Acc>(s), ws);
        per_slab.push_back(s);
      }
      CHECK(first_difference(out, naive_rank_fold<Op, Acc>(per_slab)) == -1);
      if constexpr (!std::is_same_v<Op, Sum> || std::is_integral_v<Acc>) {
        if constexpr (!std::is_same_v<Op, Prod>) {  // exact whatever the split: the whole array in one process
          std::vector<Acc> whole(out.size());
          reduce<Op, T, Acc>(Backend::cpu, View<const T>::contiguous(global.data(), ng, nw, nv), levels,
                             std::span<Acc>(whole), ws);
          CHECK(first_difference(out, whole) == -1);
        }
      }
      if (levels == Levels::all()) CHECK(same_bits(reduce_to_host<Op, T, Acc>(c, Backend::cpu, mine, ws), out[0]));
    } else {
      std::vector<Acc> local(out.size());
      reduce<Op, T, Acc>(Backend::cpu, mine, levels, std::span<Acc>(local), ws);
      CHECK(first_difference(out, local) == -1);
    }
  }
}

template <class Op, class T, class Acc = T>
void check_splits(std::uint64_t& salt) {
  // NG divisible by 1, 2, 3 ranks or not; fewer gangs than ranks (empty slabs).
  for (std::int64_t ng : {6, 7, 2, 1}) check_reduce4<Op, T, Acc>(ng, 3, 5, salt++);
}

}  // namespace

TEST_CASE("reduce(comm): the gang axis split over the ranks, every level set") {
  std::uint64_t salt = 100;
  check_splits<Sum, float>(salt);
  check_splits<Sum, float, double>(salt);
  check_splits<Sum, double>(salt);
  check_splits<Prod, double>(salt);
  check_splits<Max, float>(salt);
  check_splits<Min, double>(salt);
  check_splits<Sum, std::int32_t, std::int64_t>(salt);
  check_splits<Max, std::int64_t>(salt);
  check_splits<BitXor, std::int32_t>(salt);
  check_splits<LogicalOr, std::int64_t>(salt);
}
