#pragma once
// The CPU backend's builds per instruction set: reduce_cpu.cpp is compiled as detail::base (the
// compiler's baseline, SSE2 on x86-64) and, where the compiler can target it, again with -mavx2 as
// detail::avx2 (TALLY_HAVE_CPU_AVX2). reduce_cpu() (dispatch.cpp) picks one at run time. The two give
// bitwise the same results: the same lanes, the same order, only wider registers.
#include "tally/reduce/reduce.hpp"

namespace tally::reduce::detail {

namespace base {
template <class Op, class T, class Acc>
void reduce_cpu_isa(const Problem& p, Acc* out);
template <class T, class Out>
void exact_cpu_isa(const Problem& p, Out* out);  // exact_cpu.cpp
}  // namespace base

namespace avx2 {
template <class Op, class T, class Acc>
void reduce_cpu_isa(const Problem& p, Acc* out);
template <class T, class Out>
void exact_cpu_isa(const Problem& p, Out* out);  // exact_cpu.cpp
}  // namespace avx2

namespace avx512 {
template <class T, class Out>
void exact_cpu_isa(const Problem& p, Out* out);  // exact_cpu.cpp only: the filters in 8-wide registers
}  // namespace avx512

/// Whether exact_cpu() runs the AVX-512 build of the exact sum: built with it (TALLY_HAVE_CPU_AVX512),
/// the CPU has AVX-512F, and TALLY_CPU_ISA is not "base" or "avx2".
bool cpu_uses_avx512();

/// Whether reduce_cpu() runs the AVX2 build: built with it and the CPU has it. TALLY_CPU_ISA=base in
/// the environment (read once) keeps the baseline, for comparison.
bool cpu_uses_avx2();

}  // namespace tally::reduce::detail
