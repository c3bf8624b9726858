// CUDA backend of the exact sum (ExactSum; tally/reduce/exact.hpp, device/exact.cuh). Three kernels
// over the plan (../plan.hpp), all on the device blocks of exact.cuh, so every path gives the exact
// sum correctly rounded, the same bits as the CPU backend whatever the grid:
//   * exact_flat_kernel: the full reduction of a contiguous array: a grid-stride loop of 16-byte
//     loads, each batch of ReducePolicy::unroll vectors into the thread's bins (exact_bins.hpp; the filter takes
//     what they cannot), then exact_gang_total over the blocks (one launch).
//   * exact_segment_kernel: any other plan with long outputs: a block per (output, chunk), the
//     elements of a chunk addressed through the plan; chunks of one output joined by their ticket.
//   * exact_thread_kernel: many (or very short) outputs: a thread per output, its filter's rare
//     residuals in a superaccumulator of its own (local memory, only touched when needed).
#include "instantiate.hpp"
#include "tally/common/cuda_check.cuh"
#include "kernels.cuh"
#include "tally/reduce/device/exact.cuh"
#include "tally/reduce/device/exact_total.cuh"

namespace tally::reduce::detail {

namespace cuda {

template <class T>
using ExactAcc = exact::Accumulator<T>;

/// A block takes at most this many inputs: its shared limbs gain less than 2^32 per input.
inline constexpr std::int64_t kExactMaxPerBlock = std::int64_t{1} << 29;

// The flat kernel's grid is at most ReducePolicy::flat_blocks_sm blocks an SM: its register budget is
// held to that (80, not 64), so that the next batch's loads are in flight while a batch is binned.
// Small: a grid under a wave, whose threads have one batch each (nothing to prefetch): the plain loop
// and ReducePolicy::min_blocks_sm's budget (64), whose tail is the shorter.
template <class T, class Out, int V, bool Small>
__global__ void __launch_bounds__(ReducePolicy::block,
                                  Small ? ReducePolicy::min_blocks_sm : ReducePolicy::flat_blocks_sm)
    exact_flat_kernel(const T* __restrict__ in, std::int64_t n, Out* __restrict__ out, std::int64_t* __restrict__ total,
                      unsigned int* __restrict__ ticket) {
  __shared__ device::ExactStorage<T> s;
  device::ExactThread<T> t(s);  // clears shared memory only: while the predecessor finishes
  enter_after_predecessor();
  const std::int64_t nv = n / V * V;  // whole vectors; the rest is block 0's tail
  const std::int64_t step = std::int64_t{gridDim.x} * ReducePolicy::block * V;
  std::int64_t i = (std::int64_t{blockIdx.x} * ReducePolicy::block + threadIdx.x) * V;
  i = device::exact_add_batches<!Small, ReducePolicy::unroll, V>(t, in, i, nv, step);
  for (; i < nv; i += step) {
    const auto v = device::load_vec<V>(in + i);
#pragma unroll
    for (int k = 0; k < V; ++k) t.add(v.v[k]);
  }
  if (blockIdx.x == 0 && nv + threadIdx.x < n) t.add(in[nv + threadIdx.x]);
  Out r;
  if (device::exact_gang_total(t, total, ticket, r, s) && threadIdx.x == 0) *out = r;
}

template <class T, class Out>
__global__ void __launch_bounds__(ReducePolicy::block, ReducePolicy::min_blocks_sm)
    exact_segment_kernel(Plan p, std::int64_t S, std::int64_t chunk, const T* __restrict__ in, Out* __restrict__ out,
                         ExactAcc<T>* __restrict__ partials, unsigned int* __restrict__ tickets) {
  enter_after_predecessor();
  __shared__ device::ExactStorage<T> s;
  const std::int64_t per = p.per_output();
  for (std::int64_t item = blockIdx.x; item < p.n_out * S; item += gridDim.x) {
    const std::int64_t o = item / S, c = item % S;
    const std::int64_t e1 = (c + 1) * chunk < per ? (c + 1) * chunk : per;
    device::ExactThread<T> t(s);
    if (p.kind == Plan::Kind::inner) {
      // Element e = q * n + i: (q, i) advanced without a division per element.
      const T* base = in + out_offset(p, o);
      const std::int64_t e0 = c * chunk + threadIdx.x, dq = ReducePolicy::block / p.n, di = ReducePolicy::block % p.n;
      std::int64_t q = e0 / p.n, i = e0 % p.n;
      for (std::int64_t e = e0; e < e1; e += ReducePolicy::block) {
        t.add(base[row_offset(p, q) + i]);
        q += dq, i += di;
        if (i >= p.n) i -= p.n, ++q;
      }
    } else {
      const T* base = in + (o / p.nc) * p.sb + o % p.nc;
      for (std::int64_t e = c * chunk + threadIdx.x; e < e1; e += ReducePolicy::block) t.add(base[row_offset(p, e)]);
    }
    Out r;
    const bool split = S > 1;  // otherwise there are no partials and no tickets
    if (device::exact_gang_sum(t, split ? partials + o * S : nullptr, split ? tickets + o : nullptr, r, s, S, c) &&
        threadIdx.x == 0)
      out[o] = r;
    __syncthreads();  // s is cleared for the next item
  }
}

template <class T, class Out>
__global__ void __launch_bounds__(ReducePolicy::block, ReducePolicy::min_blocks_sm)
    exact_thread_kernel(Plan p, const T* __restrict__ in, Out* __restrict__ out) {
  enter_after_predecessor();
  for (std::int64_t o = device::global_thread_id(); o < p.n_out; o += device::grid_stride()) {
    exact::Filter f;
    device::LocalSink<T> sink;
    if (p.kind == Plan::Kind::inner) {
      const T* base = in + out_offset(p, o);
      for (std::int64_t q = 0; q < p.rows; ++q) {
        const T* row = base + row_offset(p, q);
        for (std::int64_t i = 0; i < p.n; ++i) f.add(row[i], sink);
      }
    } else {
      const T* base = in + (o / p.nc) * p.sb + o % p.nc;
      for (std::int64_t q = 0; q < p.rows; ++q) f.add(base[row_offset(p, q)], sink);
    }
    out[o] = exact::result_of<Out>(f, sink.acc, sink.used);
  }
}

/// out[o] = acc[o] rounded once (the rank level's last step, after the ranks added their accumulators).
template <class T, class Out>
__global__ void __launch_bounds__(ReducePolicy::block)
    exact_round_kernel(const ExactAcc<T>* __restrict__ acc, Out* __restrict__ out, std::int64_t n) {
  enter_after_predecessor();
  for (std::int64_t o = device::global_thread_id(); o < n; o += device::grid_stride())
    out[o] = acc[o].template round<Out>();
}

template <class T, class Out>
void exact_cuda_impl(const Problem& prob, Out* d_out, Workspace& ws, stream_t stream) {
  const Plan p = make_plan(prob);
  const Tuning& tune = ws.tuning();
  if (p.n_out == 0) return;
  if (p.empty) {
    if constexpr (std::is_same_v<Out, ExactAcc<T>>)  // cleared accumulators
      TALLY_CUDA_TRY(cudaMemsetAsync(d_out, 0, static_cast<std::size_t>(p.n_out) * sizeof(Out), stream));
    else
      launch(fill_kernel<ExactSum, Out>, std::clamp<std::int64_t>(ceil_div(p.n_out, ReducePolicy::block), 1, 4096),
             ReducePolicy::block, tune, stream, d_out, p.n_out);
    return;
  }
  const T* in = static_cast<const T*>(prob.data);
  const std::int64_t per = p.per_output(), resident = fill_blocks(tune);
  if (p.kind == Plan::Kind::inner && p.n_out == 1 && p.rows == 1) {
    constexpr int V = device::vec16<T>;
    const std::int64_t wave = std::int64_t{std::max(tune.sm_count, 1)} * ReducePolicy::flat_blocks_sm;
    std::int64_t grid =
        std::clamp<std::int64_t>(ceil_div(p.n, std::int64_t{ReducePolicy::block} * V * ReducePolicy::unroll), 1, wave);
    grid = std::max(grid, ceil_div(p.n, kExactMaxPerBlock));
    // The blocks' accumulators meet in one (exact_gang_total), zero-kept like the tickets and after
    // ticket 0 (8-byte aligned: two tickets in): the last block reads one accumulator, not one a block.
    std::int64_t* total = nullptr;
    if (grid > 1) {
      ws.reserve(0, 2 + device::exact_total_bytes<T>() / sizeof(unsigned int), stream);
      total = reinterpret_cast<std::int64_t*>(ws.ticket_array() + 2);
    }
    // Small grids' kernel only for rounded outputs: the rank level's accumulator output spills more
    // at 64 registers.
    constexpr bool small_ok = !std::is_same_v<Out, ExactAcc<T>>;
    if (!aligned_to(in, sizeof(T) * V))
      launch(exact_flat_kernel<T, Out, 1, false>, grid, ReducePolicy::block, tune, stream, in, p.n, d_out, total,
             ws.ticket_array());
    else if (grid < wave && small_ok)
      launch(exact_flat_kernel<T, Out, V, small_ok>, grid, ReducePolicy::block, tune, stream, in, p.n, d_out, total,
             ws.ticket_array());
    else
      launch(exact_flat_kernel<T, Out, V, false>, grid, ReducePolicy::block, tune, stream, in, p.n, d_out, total,
             ws.ticket_array());
    return;
  }
  if (per <= 64 || p.n_out >= resident * ReducePolicy::block / 4) {
    const std::int64_t grid = std::clamp<std::int64_t>(ceil_div(p.n_out, ReducePolicy::block), 1, resident * 8);
    launch(exact_thread_kernel<T, Out>, grid, ReducePolicy::block, tune, stream, p, in, d_out);
    return;
  }
  // Blocks per output: enough chunks to fill the device once, none shorter than 16 loads a thread.
  std::int64_t S =
      std::clamp<std::int64_t>(resident / p.n_out, 1, std::max<std::int64_t>(1, per / (ReducePolicy::block * 16)));
  S = std::max(S, ceil_div(per, kExactMaxPerBlock));
  const std::int64_t chunk = ceil_div(per, S);
  S = ceil_div(per, chunk);
  ExactAcc<T>* partials = nullptr;
  unsigned int* tickets = nullptr;
  if (S > 1) {
    ws.reserve(device::exact_partials_bytes<T>(p.n_out * S), static_cast<std::size_t>(p.n_out), stream);
    partials = static_cast<ExactAcc<T>*>(ws.scratch());
    tickets = ws.ticket_array();
  }
  const std::int64_t grid = std::clamp<std::int64_t>(p.n_out * S, 1, resident * 8);
  launch(exact_segment_kernel<T, Out>, grid, ReducePolicy::block, tune, stream, p, S, chunk, in, d_out, partials,
         tickets);
}

}  // namespace cuda

template <class T, class Out>
void exact_cuda(const Problem& prob, Out* d_out, Workspace& ws, stream_t stream) {
  cuda::exact_cuda_impl<T, Out>(prob, d_out, ws, stream);
}

template <class T, class Out>
void exact_round_cuda(const exact::Accumulator<T>* d_acc, Out* d_out, std::int64_t n, Workspace& ws, stream_t stream) {
  if (n > 0)
    cuda::launch(cuda::exact_round_kernel<T, Out>,
                 std::clamp<std::int64_t>(cuda::ceil_div(n, ReducePolicy::block), 1, 4096), ReducePolicy::block,
                 ws.tuning(), stream, d_acc, d_out, n);
}

#define TALLY_INSTANTIATE_EXACT_CUDA(Op, T, Out)                                \
  template void exact_cuda<T, Out>(const Problem&, Out*, Workspace&, stream_t); \
  template void exact_round_cuda<T, Out>(const exact::Accumulator<T>*, Out*, std::int64_t, Workspace&, stream_t);
TALLY_REDUCE_FOR_EACH_EXACT(TALLY_INSTANTIATE_EXACT_CUDA)
// The unrounded accumulators, for the rank level's cross-rank step (ranks.hpp).
template void exact_cuda<float, exact::Accumulator<float>>(const Problem&, exact::Accumulator<float>*, Workspace&,
                                                           stream_t);
template void exact_cuda<double, exact::Accumulator<double>>(const Problem&, exact::Accumulator<double>*, Workspace&,
                                                             stream_t);

}  // namespace tally::reduce::detail
