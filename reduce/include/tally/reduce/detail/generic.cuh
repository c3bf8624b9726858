#pragma once
// The CUDA engine of the generic reducers (tally/reduce/generic.cuh is its public face). Kernels (one
// launch each, no floating-point atomics; the combination tree is fixed by the launch shape, so a
// deterministic combine gives the same bits run to run):
// * flat_kernel: one contiguous run to one value (e.g. the full reduction of a contiguous array, any
//   length: 64-bit indices): 16-byte loads, GenericPolicy::unroll of them per thread folded as one pairwise tree
//   (device::fold_batch), then device::gang_reduce (per-block partials, the last block combines them
//   in block order).
// * block_kernel: a block per (output, chunk) over the X x Y layout of (innermost reduced axis, rows);
//   an output split over S chunks is combined in chunk order by its last block (device::gang_arrive).
// * tile_kernel: the outputs are the contiguous axis: a warp's lanes take 32 consecutive outputs,
//   the block's warps strands of their elements; split over blocks as above.
// * thread_kernel: a thread per output, for very many outputs with short or strided rows.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <type_traits>

#include "tally/common/cuda_check.cuh"
#include "tally/reduce/detail/generic.hpp"
#include "tally/reduce/detail/launch.cuh"
#include "tally/reduce/detail/tuning_cuda.hpp"
#include "tally/reduce/device/gang.cuh"
#include "tally/reduce/device/thread.cuh"

namespace tally::reduce {

namespace detail::generic {

/// Elements per vector load of T: 16 bytes where T's size divides it, else one element.
template <class T>
inline constexpr int vec_width = (sizeof(T) <= 16 && 16 % sizeof(T) == 0) ? static_cast<int>(16 / sizeof(T)) : 1;

template <class T, int V>
__device__ __forceinline__ auto load_pack(const T* p) {
  if constexpr (V == 1) return device::Pack<T, 1>{{*p}};
  else return device::load_vec<V>(p);
}

template <class R, class T, int V>
__global__ void __launch_bounds__(GenericPolicy::block)
    flat_kernel(const T* __restrict__ in, std::int64_t n, typename R::value_type* __restrict__ out,
                typename R::value_type* __restrict__ partials, unsigned int* __restrict__ ticket) {
  using Val = typename R::value_type;
  using P = decltype(load_pack<T, V>(in));
  __shared__ device::GangStorage<Val> tmp;
  Val acc = R::identity();
  const std::int64_t nvec = n / V, nthreads = std::int64_t{gridDim.x} * GenericPolicy::block;
  const std::int64_t first = std::int64_t{blockIdx.x} * GenericPolicy::block + threadIdx.x;
  std::int64_t j = first;
  for (; j + (GenericPolicy::unroll - 1) * nthreads < nvec; j += GenericPolicy::unroll * nthreads) {
    P v[GenericPolicy::unroll];
    std::int64_t idx[GenericPolicy::unroll];
#pragma unroll
    for (int u = 0; u < GenericPolicy::unroll; ++u) {
      idx[u] = (j + u * nthreads) * V;
      v[u] = load_pack<T, V>(in + idx[u]);
    }
    acc = device::fold_batch<R, V, GenericPolicy::unroll>(acc, v, idx);
  }
  for (; j < nvec; j += nthreads) {
    const P v[1] = {load_pack<T, V>(in + j * V)};
    const std::int64_t idx[1] = {j * V};
    acc = device::fold_batch<R, V, 1>(acc, v, idx);
  }
  const std::int64_t t = nvec * V + first;  // the tail of fewer than V elements
  if (t < n) acc = R::combine(acc, reducer_load<R>(in[t], t));
  Val r;
  if (device::gang_reduce<R>(acc, partials, ticket, r, tmp) && threadIdx.x == 0) *out = r;
}

struct BlockArgs {
  Walk w;
  int X = GenericPolicy::block;     ///< threads along the innermost reduced axis (power of two)
  std::int64_t Sr = 1, rchunk = 1;  ///< row chunks per output and rows per chunk
  std::int64_t Sc = 1, cchunk = 1;  ///< column chunks per row and columns per chunk
};

template <class R, class T>
__global__ void __launch_bounds__(GenericPolicy::block)
    block_kernel(BlockArgs a, const T* __restrict__ in, typename R::value_type* __restrict__ out,
                 typename R::value_type* __restrict__ partials, unsigned int* __restrict__ tickets) {
  using Val = typename R::value_type;
  __shared__ device::GangStorage<Val> tmp;
  const Walk& w = a.w;
  const std::int64_t m = w.m(), s = w.s(), rows = w.rows(), S = a.Sr * a.Sc;
  const int x = static_cast<int>(threadIdx.x) & (a.X - 1), Y = GenericPolicy::block / a.X,
            y = static_cast<int>(threadIdx.x) / a.X;
  for (std::int64_t item = blockIdx.x; item < w.n_out * S; item += gridDim.x) {
    const std::int64_t o = item / S, k = item % S;
    const std::int64_t r0 = (k / a.Sc) * a.rchunk, r1 = min(rows, r0 + a.rchunk);
    const std::int64_t c0 = (k % a.Sc) * a.cchunk, c1 = min(m, c0 + a.cchunk);
    const T* base = in + w.out_offset(o);
    Val acc = R::identity();
    for (std::int64_t r = r0 + y; r < r1; r += Y) {
      const T* row = base + w.row_offset(r);
      const std::int64_t i0 = r * m;
      std::int64_t c = c0 + x;
      if constexpr (constexpr int V = vec_width<T>; V > 1) {
        // A contiguous row aligned for 16-byte loads (the common last-axis reduction): whole vectors
        // of V, GenericPolicy::unroll in flight per thread as in flat_kernel (64 bytes a thread, twice
        // the scalar batch's, a V-th of its load instructions), then the last < V elements below.
        if (s == 1 && device::is_aligned<V>(row + c0)) {
          using P = decltype(load_pack<T, V>(row));
          const std::int64_t cv1 = c0 + (c1 - c0) / V * V, step = std::int64_t{a.X} * V;
          std::int64_t cv = c0 + std::int64_t{x} * V;
          for (; cv + (GenericPolicy::unroll - 1) * step + V <= cv1; cv += GenericPolicy::unroll * step) {
            P v[GenericPolicy::unroll];
            std::int64_t idx[GenericPolicy::unroll];
#pragma unroll
            for (int u = 0; u < GenericPolicy::unroll; ++u)
              v[u] = load_pack<T, V>(row + cv + u * step), idx[u] = i0 + cv + u * step;
            asm volatile("" ::: "memory");  // as below: every load issued before the first combine
            acc = device::fold_batch<R, V, GenericPolicy::unroll>(acc, v, idx);
          }
          for (; cv + V <= cv1; cv += step) {
            const P v[1] = {load_pack<T, V>(row + cv)};
            const std::int64_t idx[1] = {i0 + cv};
            acc = device::fold_batch<R, V, 1>(acc, v, idx);
          }
          c = cv1 + x;  // fewer than V left: the scalar loops below
        }
      }
      // GenericPolicy::row_batch loads issued before they are combined by fold_batch (one fixed pairwise tree joined
      // to acc: off acc's chain, MeanVar's counts constant, so one division per batch): one load in
      // flight per thread left row reductions at half the bandwidth (argmax over rows: 0.55x
      // PyTorch's), a division per element MeanVar's rows at 0.76x.
      for (; c + (GenericPolicy::row_batch - 1) * a.X < c1; c += GenericPolicy::row_batch * a.X) {
        device::Pack<T, 1> v[GenericPolicy::row_batch];
        std::int64_t idx[GenericPolicy::row_batch];
#pragma unroll
        for (int u = 0; u < GenericPolicy::row_batch; ++u)
          v[u].v[0] = row[(c + u * a.X) * s], idx[u] = i0 + c + u * a.X;
        asm volatile("" ::: "memory");  // else nvcc sinks each load to its combine (ArgMax's SASS)
        acc = device::fold_batch<R, 1, GenericPolicy::row_batch>(acc, v, idx);
      }
      for (; c < c1; c += a.X) acc = R::combine(acc, reducer_load<R>(row[c * s], i0 + c));
    }
    acc = device::block_reduce<R>(acc, tmp.block);
    if (S == 1) {
      if (threadIdx.x == 0) out[o] = acc;
      continue;
    }
    if (threadIdx.x == 0) partials[item] = acc;
    if (device::gang_arrive(tickets + o, static_cast<unsigned int>(S), tmp.last)) {
      Val v = R::identity();  // chunk order: strided per thread, then the fixed block tree
      for (std::int64_t b = threadIdx.x; b < S; b += GenericPolicy::block)
        v = R::combine(v, device::load_coherent(partials + o * S + b));
      v = device::block_reduce<R>(v, tmp.block);
      if (threadIdx.x == 0) out[o] = v;
    }
  }
}

struct TileArgs {
  Walk w;
  std::int64_t tiles = 1;  ///< tiles of GenericPolicy::tile_x consecutive outputs
  std::int64_t S = 1;      ///< element chunks per tile
  std::int64_t chunk = 1;  ///< elements per chunk
};

/// The outputs are the contiguous axis (e.g. gang or worker reduced, vector kept): lanes x of a warp
/// take GenericPolicy::tile_x consecutive outputs, so each load instruction reads contiguous memory; the block's
/// warps y take elements e = e0 + y, e0 + y + Y, ... of the chunk, joined in y order; a tile's
/// element range split over S blocks is combined in chunk order by its last block.
template <class R, class T>
__global__ void __launch_bounds__(GenericPolicy::block)
    tile_kernel(TileArgs a, const T* __restrict__ in, typename R::value_type* __restrict__ out,
                typename R::value_type* __restrict__ partials, unsigned int* __restrict__ tickets) {
  using Val = typename R::value_type;
  constexpr int X = GenericPolicy::tile_x, Y = GenericPolicy::block / GenericPolicy::tile_x;
  __shared__ Val sm[GenericPolicy::block];
  __shared__ bool last;
  const Walk& w = a.w;
  const int x = static_cast<int>(threadIdx.x) % X, y = static_cast<int>(threadIdx.x) / X;
  const std::int64_t m = w.m(), s = w.s();
  for (std::int64_t item = blockIdx.x; item < a.tiles * a.S; item += gridDim.x) {
    const std::int64_t tile = item / a.S, k = item % a.S, o = tile * X + x;
    const std::int64_t e0 = k * a.chunk, e1 = min(w.per, e0 + a.chunk);
    Val acc = R::identity();
    if (o < w.n_out) {
      const T* base = in + w.out_offset(o);
      std::int64_t e = e0 + y, r = e / m, c = e % m;
      for (; e < e1; e += Y) {
        acc = R::combine(acc, reducer_load<R>(base[w.row_offset(r) + c * s], e));
        c += Y;
        while (c >= m) c -= m, ++r;
      }
    }
    sm[threadIdx.x] = acc;
    __syncthreads();
    if (y == 0) {
      for (int j = 1; j < Y; ++j) acc = R::combine(acc, sm[j * X + x]);
      if (a.S == 1 && o < w.n_out) out[o] = acc;
      if (a.S > 1) partials[item * X + x] = acc;
    }
    if (a.S > 1 && device::gang_arrive(tickets + tile, static_cast<unsigned int>(a.S), last) && y == 0) {
      Val v = R::identity();
      for (std::int64_t j = 0; j < a.S; ++j)
        v = R::combine(v, device::load_coherent(partials + (tile * a.S + j) * X + x));
      if (o < w.n_out) out[o] = v;
    }
    __syncthreads();  // sm is free for the next item
  }
}

template <class R, class T>
__global__ void __launch_bounds__(GenericPolicy::block)
    thread_kernel(Walk w, const T* __restrict__ in, typename R::value_type* __restrict__ out) {
  using Val = typename R::value_type;
  const std::int64_t m = w.m(), s = w.s(), rows = w.rows();
  for (std::int64_t o = device::global_thread_id(); o < w.n_out; o += device::grid_stride()) {
    const T* base = in + w.out_offset(o);
    Val acc = R::identity();
    for (std::int64_t r = 0; r < rows; ++r) {
      const T* row = base + w.row_offset(r);
      for (std::int64_t c = 0; c < m; ++c) acc = R::combine(acc, reducer_load<R>(row[c * s], r * m + c));
    }
    out[o] = acc;
  }
}

template <class R>
__global__ void fill_kernel(typename R::value_type* out, std::int64_t n) {
  for (std::int64_t i = device::global_thread_id(); i < n; i += device::grid_stride()) out[i] = R::identity();
}

/// Resident blocks per SM of a kernel at GenericPolicy::block threads (once per kernel).
template <class K>
int occupancy(K kernel) {
  return cuda::resident_blocks(kernel, GenericPolicy::block);
}

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
inline int pow2_at_least(std::int64_t v, int cap) {
  int g = 1;
  while (g < cap && g < v) g *= 2;
  return g;
}
inline std::size_t round_up(std::size_t b) { return (b + 255) / 256 * 256; }

/// The whole engine: d_out gets w.n_out values. With `to_host`, the (single) value goes to a slot
/// in the workspace instead and is returned through *host after the stream is synchronised.
template <class R, class T>
void run(View<const T> in, Levels levels, typename R::value_type* d_out, Workspace& ws, stream_t stream,
         typename R::value_type* host = nullptr) {
  using Val = typename R::value_type;
  static_assert(
      std::is_trivially_copyable_v<Val> && std::is_trivially_default_constructible_v<Val>,
      "a reducer's value_type must be trivially copyable and trivially default constructible (it lives in __shared__)");
  const Walk w = make_walk(in, levels);
  const int sms = std::max(ws.tuning().sm_count, 1);
  // Scratch: [partials | the host result's slot].
  std::size_t part_bytes = 0, tickets = 1;
  std::int64_t grid = 1;
  enum class K { fill, flat, block, tile, thread } kind;
  BlockArgs a{w};
  TileArgs a2;
  int V = 1;
  if (w.n_out == 0) return;
  if (w.per == 0) {
    kind = K::fill;
  } else if (w.n_out == 1 && w.nr == 1 && w.s() == 1) {
    kind = K::flat;
    constexpr int V16 = vec_width<T>;
    V = reinterpret_cast<std::uintptr_t>(in.data) % (sizeof(T) * V16) == 0 ? V16 : 1;
    static const int occ16 = occupancy(flat_kernel<R, T, V16>), occ1 = occupancy(flat_kernel<R, T, 1>);
    grid = std::clamp<std::int64_t>(ceil_div(w.per, std::int64_t{GenericPolicy::block} * V * GenericPolicy::unroll), 1,
                                    std::int64_t{sms} * (V == 1 ? occ1 : occ16));
    part_bytes = static_cast<std::size_t>(grid) * sizeof(Val);
  } else {
    static const int occ_b = occupancy(block_kernel<R, T>);
    const std::int64_t resident = std::int64_t{sms} * occ_b;
    if (w.nk >= 1 && w.kstr[w.nk - 1] == 1) {
      kind = K::tile;  // the outputs are the contiguous axis
      a2.w = w;
      a2.tiles = ceil_div(w.n_out, GenericPolicy::tile_x);
      const std::int64_t min_chunk = std::int64_t{GenericPolicy::block / GenericPolicy::tile_x} * 64;
      a2.S = std::clamp<std::int64_t>(resident / a2.tiles, 1, std::max<std::int64_t>(1, w.per / min_chunk));
      a2.chunk = ceil_div(w.per, a2.S), a2.S = ceil_div(w.per, a2.chunk);
      grid = std::clamp<std::int64_t>(a2.tiles * a2.S, 1, resident * 16);
      if (a2.S > 1) {
        part_bytes = static_cast<std::size_t>(a2.tiles * a2.S * GenericPolicy::tile_x) * sizeof(Val);
        tickets = static_cast<std::size_t>(a2.tiles);
      }
    } else if ((w.s() != 1 || w.m() < 32) && (w.per <= 16 || w.n_out >= resident * GenericPolicy::block)) {
      kind = K::thread;  // many outputs whose rows are strided or short
      grid = std::clamp<std::int64_t>(ceil_div(w.n_out, GenericPolicy::block), 1, resident * 8);
    } else {
      kind = K::block;
      const std::int64_t m = w.m(), rows = w.rows();
      a.X = pow2_at_least(m, GenericPolicy::block);
      const std::int64_t want = std::max<std::int64_t>(1, resident / w.n_out);
      const std::int64_t max_s = std::max<std::int64_t>(1, w.per / GenericPolicy::min_chunk);
      const std::int64_t S = std::min(want, max_s);
      a.Sr = std::min(rows, S);
      a.Sc = std::clamp<std::int64_t>(S / a.Sr, 1, std::max<std::int64_t>(1, m / GenericPolicy::block));
      a.rchunk = ceil_div(rows, a.Sr), a.Sr = ceil_div(rows, a.rchunk);
      a.cchunk = ceil_div(m, a.Sc), a.Sc = ceil_div(m, a.cchunk);
      const std::int64_t items = w.n_out * a.Sr * a.Sc;
      grid = std::clamp<std::int64_t>(items, 1, resident * 16);
      if (a.Sr * a.Sc > 1) {
        part_bytes = static_cast<std::size_t>(items) * sizeof(Val);
        tickets = static_cast<std::size_t>(w.n_out);
      }
    }
  }
  const std::size_t slot = round_up(part_bytes);
  ws.reserve(slot + (host ? sizeof(Val) : 0), tickets, stream);
  Val* partials = static_cast<Val*>(ws.scratch());
  if (host) d_out = reinterpret_cast<Val*>(static_cast<char*>(ws.scratch()) + slot);
  const T* data = in.data;
  switch (kind) {
    case K::fill:
      fill_kernel<R>
          <<<static_cast<unsigned>(std::clamp<std::int64_t>(ceil_div(w.n_out, GenericPolicy::block), 1, 4096)),
             GenericPolicy::block, 0, stream>>>(d_out, w.n_out);
      break;
    case K::flat:
      if (V == 1)
        flat_kernel<R, T, 1><<<static_cast<unsigned>(grid), GenericPolicy::block, 0, stream>>>(
            data, w.per, d_out, partials, ws.ticket_array());
      else
        flat_kernel<R, T, vec_width<T>><<<static_cast<unsigned>(grid), GenericPolicy::block, 0, stream>>>(
            data, w.per, d_out, partials, ws.ticket_array());
      break;
    case K::block:
      block_kernel<R, T><<<static_cast<unsigned>(grid), GenericPolicy::block, 0, stream>>>(a, data, d_out, partials,
                                                                                           ws.ticket_array());
      break;
    case K::tile:
      tile_kernel<R, T><<<static_cast<unsigned>(grid), GenericPolicy::block, 0, stream>>>(a2, data, d_out, partials,
                                                                                          ws.ticket_array());
      break;
    case K::thread:
      thread_kernel<R, T><<<static_cast<unsigned>(grid), GenericPolicy::block, 0, stream>>>(w, data, d_out);
      break;
  }
  TALLY_CHECK_LAUNCH();
  if (host) {
    TALLY_CUDA_TRY(cudaMemcpyAsync(host, d_out, sizeof(Val), cudaMemcpyDeviceToHost, stream));
    TALLY_CUDA_TRY(cudaStreamSynchronize(stream));
  }
}

}  // namespace detail::generic

namespace detail {
template <class R, class T>
void check_custom(View<const T> in, Levels levels, std::int64_t out_size, const void* out, const Workspace& ws,
                  Backend b) {
  const Problem p{in.data, in.ext, in.stride_w, in.stride_g, levels, out_size};
  validate(p, out);
  check_workspace(ws, b);
  if constexpr (reducer_needs_input<R>()) {
    const char* name = "reduction";
    if constexpr (requires { R::name; }) name = R::name;
    check_nonempty(name, in.ext, levels, out_size);
  }
}
}  // namespace detail

}  // namespace tally::reduce
