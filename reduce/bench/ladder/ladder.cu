// The seeds' ladder of reduction strategies, for study and benchmarking (reduce_with(), ladder.hpp). Each rung
// changes one thing against the one before it:
//   atomic                 one atomicAdd per element into the result (Sum only; not deterministic)
//   interleaved_divergent  shared-memory tree, `t % (2s) == 0` picks the active threads (divergent warps)
//   interleaved            the same pairs through a strided index `2 s t` (no divergence, bank conflicts)
//   sequential             sequential addressing `t < s`, partner t + s (conflict-free, contiguous actives)
//   first_add              each thread adds two elements while loading (half the blocks)
//   warp_shuffle           ... and the last warp finishes with shuffles instead of six barrier steps
//   coarsened              ... and a grid-stride loop: one block per SM slot, a second launch over the
//                          block partials
//   production             reduce() itself (one launch, 16-byte loads, last-block combine)
//   cub                    cub::DeviceReduce with a NaN-propagating operator (ladder_cub.cu)
// Multi-block rungs reduce the block partials with further launches of the same kernel, as the
// seeds do. Full reductions of contiguous input only.
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <type_traits>

#include "instantiate.hpp"
#include "ladder/ladder.hpp"
#include "plan.hpp"
#include "tally/common/cuda_check.cuh"
#include "tally/reduce/device/index.cuh"
#include "tally/reduce/device/vector.cuh"

namespace tally::reduce::bench {

namespace {

constexpr int kLadderBlock = 256;

enum class Rung { interleaved_divergent, interleaved, sequential, first_add, warp_shuffle, coarsened };

__host__ __device__ constexpr int elems_per_thread(Rung r) {
  return (r == Rung::first_add || r == Rung::warp_shuffle) ? 2 : 1;
}

template <class Op, class In, class Acc, Rung R>
__global__ void __launch_bounds__(kLadderBlock)
    ladder_kernel(const In* __restrict__ in, std::int64_t n, Acc* __restrict__ out) {
  __shared__ Acc smem[kLadderBlock];
  const unsigned t = threadIdx.x;
  constexpr unsigned B = kLadderBlock;
  const auto id = [](auto x) { return static_cast<Acc>(x); };
  Acc v = Op::template identity<Acc>();
  if constexpr (R == Rung::coarsened) {
    for (std::int64_t i = device::global_thread_id(); i < n; i += device::grid_stride())
      v = Op::template combine<Acc>(v, id(in[i]));
  } else if constexpr (elems_per_thread(R) == 2) {
    const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * 2 * B + t;
    if (i < n) v = id(in[i]);
    if (i + B < n) v = Op::template combine<Acc>(v, id(in[i + B]));
  } else {
    const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * B + t;
    if (i < n) v = id(in[i]);
  }
  smem[t] = v;
  __syncthreads();
  if constexpr (R == Rung::interleaved_divergent) {
    for (unsigned s = 1; s < B; s *= 2) {
      if (t % (2 * s) == 0) smem[t] = Op::template combine<Acc>(smem[t], smem[t + s]);
      __syncthreads();
    }
  } else if constexpr (R == Rung::interleaved) {
    for (unsigned s = 1; s < B; s *= 2) {
      const unsigned index = 2 * s * t;
      if (index < B) smem[index] = Op::template combine<Acc>(smem[index], smem[index + s]);
      __syncthreads();
    }
  } else if constexpr (R == Rung::sequential || R == Rung::first_add) {
    for (unsigned s = B / 2; s > 0; s /= 2) {
      if (t < s) smem[t] = Op::template combine<Acc>(smem[t], smem[t + s]);
      __syncthreads();
    }
  } else {  // warp_shuffle, coarsened: tree down to 64 values, then one warp shuffles
    for (unsigned s = B / 2; s > device::warp_size; s /= 2) {
      if (t < s) smem[t] = Op::template combine<Acc>(smem[t], smem[t + s]);
      __syncthreads();
    }
    if (t < device::warp_size) {
      Acc w = Op::template combine<Acc>(smem[t], smem[t + device::warp_size]);
      w = device::warp_reduce<Op>(w);
      if (t == 0) smem[0] = w;
    }
  }
  if (t == 0) out[blockIdx.x] = smem[0];
}

template <class Op, class In, class Acc, Rung R>
void launch_rung(const In* in, std::int64_t n, Acc* out, std::int64_t blocks, stream_t stream) {
  ladder_kernel<Op, In, Acc, R><<<static_cast<unsigned>(blocks), kLadderBlock, 0, stream>>>(in, n, out);
  TALLY_CHECK_LAUNCH();
}

/// One rung: a first pass over the input into block partials, then passes over the partials
/// (ping-pong in the workspace) until one value is left, the last pass writing d_out.
template <class Op, class T, class Acc, Rung R>
void run_rung(const T* in, std::int64_t n, Acc* d_out, Workspace& ws, stream_t stream) {
  const std::int64_t per_block = std::int64_t{kLadderBlock} * elems_per_thread(R);
  const auto blocks_for = [&](std::int64_t count) -> std::int64_t {
    if constexpr (R == Rung::coarsened) {
      const Tuning& tune = ws.tuning();
      const std::int64_t resident = std::int64_t{std::max(tune.sm_count, 1)} * std::max(tune.blocks_per_sm, 1);
      return std::clamp<std::int64_t>((count + kLadderBlock - 1) / kLadderBlock, 1, resident);
    } else {
      return std::max<std::int64_t>(1, (count + per_block - 1) / per_block);
    }
  };
  std::int64_t count = blocks_for(n);
  if (count == 1) {
    launch_rung<Op, T, Acc, R>(in, n, d_out, 1, stream);
    return;
  }
  const std::int64_t second = blocks_for(count);
  ws.reserve(static_cast<std::size_t>(count + second) * sizeof(Acc), 0, stream);
  Acc* a = static_cast<Acc*>(ws.scratch());
  Acc* b = a + count;
  launch_rung<Op, T, Acc, R>(in, n, a, count, stream);
  while (count > 1) {
    const std::int64_t next = blocks_for(count);
    launch_rung<Op, Acc, Acc, R>(a, count, next == 1 ? d_out : b, next, stream);
    std::swap(a, b);
    count = next;
  }
}

template <class T, class Acc>
__global__ void atomic_sum_kernel(const T* __restrict__ in, std::int64_t n, Acc* __restrict__ out) {
  for (std::int64_t i = device::global_thread_id(); i < n; i += device::grid_stride()) {
    const Acc x = static_cast<Acc>(in[i]);
    if constexpr (std::is_same_v<Acc, std::int64_t>) {
      atomicAdd(reinterpret_cast<unsigned long long*>(out), static_cast<unsigned long long>(x));  // two's complement
    } else {
      atomicAdd(out, x);
    }
  }
}

}  // namespace

template <class Op, class T, class Acc>
void reduce_cuda_ladder(Strategy s, const detail::Problem& prob, Acc* d_out, Workspace& ws, stream_t stream) {
  if (s == Strategy::production) {
    detail::reduce_cuda<Op, T, Acc>(prob, d_out, ws, stream);
    return;
  }
  const detail::Plan p = detail::make_plan(prob);
  const bool contiguous =
      p.empty || (p.kind == detail::Plan::Kind::inner && p.n_out == 1 && p.rows == 1 && p.k_s1 == 0 && p.k_s2 == 0);
  if (!contiguous)
    throw std::invalid_argument("tally::reduce: strategy " + to_string(s) +
                                ": needs a contiguous input (a strided view only with Strategy::production)");
  const T* in = static_cast<const T*>(prob.data);
  const std::int64_t n = p.empty ? 0 : p.n;
  if (s == Strategy::cub) {
    ladder_cub<Op, T, Acc>(in, n, d_out, ws, stream);
    return;
  }
  if constexpr (is_bitwise_op<Op>) {
    throw std::invalid_argument("tally::reduce: strategy " + to_string(s) +
                                ": the ladder has sum, prod, max and min (use production or cub)");
  } else {
    switch (s) {
      case Strategy::atomic:
        if constexpr (std::is_same_v<Op, Sum>) {
          TALLY_CUDA_TRY(cudaMemsetAsync(d_out, 0, sizeof(Acc), stream));
          if (n > 0) {
            const Tuning& tune = ws.tuning();
            const std::int64_t grid =
                std::clamp<std::int64_t>((n + kLadderBlock - 1) / kLadderBlock, 1,
                                         std::int64_t{std::max(tune.sm_count, 1)} * std::max(tune.blocks_per_sm, 1));
            atomic_sum_kernel<T, Acc><<<static_cast<unsigned>(grid), kLadderBlock, 0, stream>>>(in, n, d_out);
            TALLY_CHECK_LAUNCH();
          }
          return;
        } else {
          throw std::invalid_argument("tally::reduce: strategy atomic: only for sum (one atomicAdd per element)");
        }
      case Strategy::interleaved_divergent:
        run_rung<Op, T, Acc, Rung::interleaved_divergent>(in, n, d_out, ws, stream);
        return;
      case Strategy::interleaved: run_rung<Op, T, Acc, Rung::interleaved>(in, n, d_out, ws, stream); return;
      case Strategy::sequential: run_rung<Op, T, Acc, Rung::sequential>(in, n, d_out, ws, stream); return;
      case Strategy::first_add: run_rung<Op, T, Acc, Rung::first_add>(in, n, d_out, ws, stream); return;
      case Strategy::warp_shuffle: run_rung<Op, T, Acc, Rung::warp_shuffle>(in, n, d_out, ws, stream); return;
      case Strategy::coarsened: run_rung<Op, T, Acc, Rung::coarsened>(in, n, d_out, ws, stream); return;
      case Strategy::production:
      case Strategy::cub: break;
    }
    throw std::invalid_argument("tally::reduce: unknown strategy");
  }
}

#define TALLY_INSTANTIATE_LADDER(Op, T, Acc) \
  template void reduce_cuda_ladder<Op, T, Acc>(Strategy, const detail::Problem&, Acc*, Workspace&, stream_t);
TALLY_REDUCE_FOR_EACH(TALLY_INSTANTIATE_LADDER)

}  // namespace tally::reduce::bench
