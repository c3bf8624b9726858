// The generic suite (reduce_checks.hpp) on the CPU backend, plus what only the CPU has: results
// that do not depend on the number of OpenMP threads.
#include <omp.h>

#include "backend_cpu.hpp"

#define TALLY_TEST_BACKEND "cpu"
using TestBackend = tally::test::CpuBackend;
#include "reduce_checks.hpp"

namespace tally::test::reduce_checks {

namespace {
/// Sets the OpenMP thread count for a scope.
class Threads {
 public:
  explicit Threads(int n) : saved_(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~Threads() { omp_set_num_threads(saved_); }
  Threads(const Threads&) = delete;
  Threads& operator=(const Threads&) = delete;

 private:
  int saved_;
};
}  // namespace

TEST_CASE("cpu: results are bitwise the same whatever the number of threads", "[reduce][determinism]") {
  Workspace ws(Backend::cpu);
  std::uint64_t salt = 7000;
  // Shapes that take every path: split long outputs, many short ones, split rows, narrow rows.
  for (const Extents& e : {Extents{1, 1, (int64_t{1} << 22) + 3}, Extents{3, 1025, 1023}, Extents{4099, 2, 257},
                           Extents{2, 16411, 8}, Extents{1023, 33, 2}}) {
    const auto x = make_input<Sum, float, float>(static_cast<std::size_t>(e.size()), e.size(), ++salt);
    const auto in = View<const float>::contiguous(x.data(), e.ng, e.nw, e.nv);
    for (Levels lv : Levels::all_sets()) {
      std::vector<float> one;
      std::vector<double> one_d;
      {
        Threads t(1);
        one = run_once<CpuBackend, Sum, float, float>(ws, in, lv);
        one_d = run_once<CpuBackend, Sum, float, double>(ws, in, lv);
      }
      for (int threads : {2, 3, 8}) {
        Threads t(threads);
        INFO("sum over " << lv.to_string() << " of " << shape_name(e, false) << ", 1 vs " << threads << " threads");
        CHECK(bitwise_equal(one, run_once<CpuBackend, Sum, float, float>(ws, in, lv)));
        CHECK(bitwise_equal(one_d, run_once<CpuBackend, Sum, float, double>(ws, in, lv)));
      }
    }
  }
}

}  // namespace tally::test::reduce_checks
