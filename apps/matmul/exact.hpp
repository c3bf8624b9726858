#pragma once
// matmul --exact: every element of C is the exact dot product of its row of A and column of B,
// rounded once to T (tally::reduce's exact dot: products exact by FMA splitting, summed into a
// superaccumulator). The result does not depend on the level, the backend, the thread count or the
// grid: every level, CPU and GPU, gives the same C bit for bit, equal to exact_reference().
// Host-only interface (no CUDA headers); exact_cpu.cpp and exact_cuda.cu implement it.
//
// The levels place the exact reduction over K as the ordinary levels place theirs:
//   vector         GPU: a warp per C element, lanes split K (exact_block_sum of one warp);
//                  CPU: threads over C elements, each dot product sequential (four filters)
//   worker         GPU: 32 neighbouring elements per block, its 8 warps split K, each element's
//                  accumulator in shared memory; CPU: threads split K, accumulators merged
//   worker+vector  GPU: a block per C element (exact_block_sum); CPU: as worker, a finer split
//   gang           GPU: K split across blocks, exact_gang_sum per element; CPU: fixed K chunks
//   tiled          GPU: 16 x 16 tiles of C over K chunks staged in shared memory, a filter per
//                  thread, chunks joined by integer atomics on each element's global accumulator;
//                  CPU: 8 x 8 tiles in i-k-j order, a filter per element
//   ozaki          every element by its fallback, an exact dot product: CPU as vector, GPU as worker
#include <cstdint>
#include <span>
#include <vector>

#include "matmul.hpp"

namespace tally::matmul {

/// Why --exact has no tiled-tc level (InputError's message wherever it is asked for).
inline constexpr const char* kNoExactTiledTc =
    "--level tiled-tc: has no --exact form (the tensor cores round every product)";

/// C = A B exactly rounded, on the CPU at `level` (not tiled-tc: InputError).
template <class T>
void exact_cpu_multiply(Level level, std::span<const T> a, std::span<const T> b, std::span<T> c, Shape s,
                        std::int64_t split_k = 0);

/// The correctly rounded C (as doubles holding T values) and |A||B|: exact::dot per element, on the
/// CPU (OpenMP over elements). The reference of matmul --exact and of the tests.
template <class T>
Reference exact_reference(std::span<const T> a, std::span<const T> b, Shape s);

/// Device state of the exact GPU levels (partials, tickets, element accumulators), grown on use.
class ExactCuda {
 public:
  ExactCuda();
  ~ExactCuda();
  ExactCuda(const ExactCuda&) = delete;
  ExactCuda& operator=(const ExactCuda&) = delete;
  /// C = A B exactly rounded at `level` (not tiled-tc: InputError); a, b, c device memory, asynchronous
  /// on `stream`.
  template <class T>
  void multiply(Level level, const T* a, const T* b, T* c, Shape s, stream_t stream, int sm_count);

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace tally::matmul
