// reduce_cpu(): the CPU backend's entry point, choosing the instruction-set build (isa.hpp).
#include <cstdlib>
#include <string_view>
#include <type_traits>

#include "instantiate.hpp"
#include "isa.hpp"
#include "tally/reduce/detail/exact.hpp"

namespace tally::reduce::detail {

bool cpu_uses_avx2() {
#if defined(TALLY_HAVE_CPU_AVX2)
  static const bool use = [] {
    const char* forced = std::getenv("TALLY_CPU_ISA");
    if (forced != nullptr && std::string_view(forced) == "base") return false;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return use;
#else
  return false;
#endif
}

bool cpu_uses_avx512() {
#if defined(TALLY_HAVE_CPU_AVX512)
  static const bool use = [] {
    const char* forced = std::getenv("TALLY_CPU_ISA");
    if (forced != nullptr && (std::string_view(forced) == "base" || std::string_view(forced) == "avx2")) return false;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") != 0;
  }();
  return use;
#else
  return false;
#endif
}

template <class Op, class T, class Acc>
void reduce_cpu(const Problem& p, Acc* out) {
  if constexpr (std::is_same_v<Op, Mean>) {
    // The sum's code and bits (independent of the thread count), then each output divided once.
    reduce_cpu<Sum, T, Acc>(p, out);
    const std::int64_t count = elements_per_output(p.ext, p.levels);
#pragma omp parallel for simd schedule(static) if (p.out_size >= (std::int64_t{1} << 16))
    for (std::int64_t o = 0; o < p.out_size; ++o) out[o] = Mean::finish(out[o], count);
    return;
  }
#if defined(TALLY_HAVE_CPU_AVX2)
  if (cpu_uses_avx2()) return avx2::reduce_cpu_isa<Op, T, Acc>(p, out);
#endif
  base::reduce_cpu_isa<Op, T, Acc>(p, out);
}

template <class T, class Out>
void exact_cpu(const Problem& p, Out* out) {
#if defined(TALLY_HAVE_CPU_AVX512)
  if (cpu_uses_avx512()) return avx512::exact_cpu_isa<T, Out>(p, out);
#endif
#if defined(TALLY_HAVE_CPU_AVX2)
  if (cpu_uses_avx2()) return avx2::exact_cpu_isa<T, Out>(p, out);
#endif
  base::exact_cpu_isa<T, Out>(p, out);
}

#define TALLY_INSTANTIATE_EXACT_CPU(Op, T, Out) template void exact_cpu<T, Out>(const Problem&, Out*);
TALLY_REDUCE_FOR_EACH_EXACT(TALLY_INSTANTIATE_EXACT_CPU)
// The unrounded accumulators, for the rank level's cross-rank step (ranks.hpp).
template void exact_cpu<float, exact::Accumulator<float>>(const Problem&, exact::Accumulator<float>*);
template void exact_cpu<double, exact::Accumulator<double>>(const Problem&, exact::Accumulator<double>*);

#define TALLY_INSTANTIATE_CPU_DISPATCH(Op, T, Acc) template void reduce_cpu<Op, T, Acc>(const Problem&, Acc*);
TALLY_REDUCE_FOR_EACH(TALLY_INSTANTIATE_CPU_DISPATCH)
TALLY_REDUCE_FOR_EACH_MEAN(TALLY_INSTANTIATE_CPU_DISPATCH)

}  // namespace tally::reduce::detail
