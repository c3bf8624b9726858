// CPU backend of the exact dot product (dot.hpp): fixed chunks over OpenMP threads, each thread
// running four filters side by side (independent dependency chains) in front of its own
// superaccumulator; the threads' accumulators are added word by word (exact, so in any order) and
// rounded once. The result cannot depend on the thread count or the chunking.
#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "tally/reduce/detail/exact.hpp"
#include "tally/reduce/detail/tuning_cpu.hpp"
#include "tally/reduce/dot.hpp"

namespace tally::reduce::detail {

namespace {

constexpr std::int64_t renorm_every = std::int64_t{1} << 28;  // flushes between normalisations (limit 2^31)

template <class P>
struct Sink {
  exact::Accumulator<P>* acc;
  std::int64_t adds = 0;
  void touch() {
    if (++adds == renorm_every) acc->normalize(), adds = 0;
  }
  void add(double r) { touch(), acc->add(r); }
  void special(double x) { touch(), acc->special(x); }
  void product(double a, double b) { touch(), touch(), acc->product(a, b); }
};

}  // namespace

template <class T, class Out>
void exact_dot_cpu(const T* a, const T* b, std::int64_t n, Out* out) {
  using P = exact::products_of<T>;
  if (n == 0) {
    *out = Out(0);
    return;
  }
  exact::Accumulator<P> total;
  total.clear();
  const std::int64_t chunks = (n + ExactCpuPolicy::dot_chunk - 1) / ExactCpuPolicy::dot_chunk;
#pragma omp parallel if (n >= ExactCpuPolicy::serial_below)
  {
    exact::Accumulator<P> acc;
    acc.clear();
    Sink<P> sink{&acc};
    exact::Filter f[ExactCpuPolicy::dot_ways];
    bool seen = false;
#pragma omp for schedule(static) nowait
    for (std::int64_t c = 0; c < chunks; ++c) {
      const std::int64_t i0 = c * ExactCpuPolicy::dot_chunk, i1 = std::min(n, i0 + ExactCpuPolicy::dot_chunk);
      std::int64_t i = i0;
      for (; i + ExactCpuPolicy::dot_ways <= i1; i += ExactCpuPolicy::dot_ways)
        for (int w = 0; w < ExactCpuPolicy::dot_ways; ++w) f[w].add_product(a[i + w], b[i + w], sink);
      for (; i < i1; ++i) f[0].add_product(a[i], b[i], sink);
      seen = true;
    }
    if (seen)
      for (auto& fw : f) fw.flush_into(acc);
    acc.normalize();
#pragma omp critical(tally_exact_dot)
    total.merge(acc);  // normalised: limbs below 2^32, any number of threads below 2^31 fits
  }
  *out = total.template round<Out>();
}

template void exact_dot_cpu<float, float>(const float*, const float*, std::int64_t, float*);
template void exact_dot_cpu<float, double>(const float*, const float*, std::int64_t, double*);
template void exact_dot_cpu<double, double>(const double*, const double*, std::int64_t, double*);

}  // namespace tally::reduce::detail
