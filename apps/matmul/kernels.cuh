#pragma once
// The matmul kernels, one per level, all reducing each element's dot product over K through the
// library's device building blocks (tally/reduce/device/*.cuh). Row-major A (M x K), B (K x N), C (M x N).

#include <cstdint>

#include "matmul.hpp"
#include "tally/reduce/device/gang.cuh"
#include "tally/reduce/device/thread.cuh"
#include "tally/reduce/device/vector.cuh"
#include "tally/reduce/device/worker.cuh"

namespace tally::matmul::kernels {

namespace dev = tally::reduce::device;
using tally::reduce::Sum;
using idx = std::int64_t;

// A block of `cols`-wide rows from (row0, col0) of matrix `which` (ld columns): generate_block_host.
template <class T>
__global__ void generate(T* __restrict__ d_out, idx n, std::uint64_t seed, int which, idx cols, idx row0, idx col0,
                         idx ld) {
  for (auto i : dev::grid_stride_range(n))
    d_out[i] = input_value<T>(seed, which, static_cast<std::uint64_t>((row0 + i / cols) * ld + col0 + i % cols));
}

// ---- vector: one warp per element of C, the lanes split K, warp_reduce -----------------------------
// Consecutive warps take consecutive columns, so the strided B column reads of a block's warps share
// cache lines; two accumulators per lane keep two loads in flight. Threads: the block (tuning.cuh).
template <class T, int Threads>
__global__ void __launch_bounds__(Threads)
    vector_level(const T* __restrict__ d_a, const T* __restrict__ d_b, T* __restrict__ d_c, idx m, idx n, idx k) {
  const unsigned lane = threadIdx.x % dev::warp_size;
  const idx warps = dev::grid_stride() / dev::warp_size;
  for (idx e = dev::global_thread_id() / dev::warp_size; e < m * n; e += warps) {  // warp-uniform
    const T* a = d_a + (e / n) * k;
    const T* b = d_b + e % n;
    T acc0 = Sum::identity<T>(), acc1 = Sum::identity<T>();
    idx q = lane;
    for (; q + dev::warp_size < k; q += 2 * dev::warp_size) {
      acc0 = Sum::combine(acc0, a[q] * b[q * n]);
      acc1 = Sum::combine(acc1, a[q + dev::warp_size] * b[(q + dev::warp_size) * n]);
    }
    if (q < k) acc0 = Sum::combine(acc0, a[q] * b[q * n]);
    const T r = dev::warp_reduce<Sum>(Sum::combine(acc0, acc1));
    if (lane == 0) d_c[e] = r;
  }
}

// ---- worker: block (32, Workers): 32 neighbouring columns (vector lanes kept), the workers split K ---
template <class T, int Workers>
__global__ void __launch_bounds__(32 * Workers)
    worker_level(const T* __restrict__ d_a, const T* __restrict__ d_b, T* __restrict__ d_c, idx m, idx n, idx k) {
  __shared__ T smem[32 * Workers];
  const idx col_blocks = (n + 31) / 32;
  for (idx blk = blockIdx.x; blk < m * col_blocks; blk += gridDim.x) {  // block-uniform
    const idx i = blk / col_blocks, j = (blk % col_blocks) * 32 + threadIdx.x;
    T acc0 = Sum::identity<T>(), acc1 = Sum::identity<T>();
    if (j < n) {
      const T* a = d_a + i * k;
      const idx step = blockDim.y;
      idx q = threadIdx.y;
      for (; q + step < k; q += 2 * step) {
        acc0 = Sum::combine(acc0, a[q] * d_b[q * n + j]);
        acc1 = Sum::combine(acc1, a[q + step] * d_b[(q + step) * n + j]);
      }
      if (q < k) acc0 = Sum::combine(acc0, a[q] * d_b[q * n + j]);
    }
    const T r = dev::worker_reduce<Sum>(Sum::combine(acc0, acc1), smem);
    if (threadIdx.y == 0 && j < n) d_c[i * n + j] = r;
  }
}

// ---- worker+vector: one block per element, all its Threads split K, block_reduce --------------------
template <class T, int Threads>
__global__ void __launch_bounds__(Threads) worker_vector_level(const T* __restrict__ d_a, const T* __restrict__ d_b,
                                                               T* __restrict__ d_c, idx m, idx n, idx k) {
  __shared__ dev::BlockReduceStorage<T> tmp;
  for (idx e = blockIdx.x; e < m * n; e += gridDim.x) {  // block-uniform
    const T* a = d_a + (e / n) * k;
    const T* b = d_b + e % n;
    T acc0 = Sum::identity<T>(), acc1 = Sum::identity<T>();
    const idx step = blockDim.x;
    idx q = threadIdx.x;
    for (; q + step < k; q += 2 * step) {
      acc0 = Sum::combine(acc0, a[q] * b[q * n]);
      acc1 = Sum::combine(acc1, a[q + step] * b[(q + step) * n]);
    }
    if (q < k) acc0 = Sum::combine(acc0, a[q] * b[q * n]);
    const T r = dev::block_reduce<Sum>(Sum::combine(acc0, acc1), tmp);
    if (threadIdx.x == 0) d_c[e] = r;
  }
}

// ---- the register-tiled block product shared by `tiled` and `gang` ---------------------------------
// A block computes a BM x BN tile of C over a K range. Tiles of A (BM x BK, stored transposed) and B
// (BK x BN) are staged in shared memory, double-buffered: the next tile's 16-byte global loads are in
// flight while the current one is multiplied. Each thread folds a TM x TN register tile (two halves
// BM/2 apart, so fragment loads are conflict-free), the thread level of the reduction over K. With
// G > 1 the block's G worker groups (threadIdx.y) split each BK slice and are combined at the end by
// worker_reduce: blockDim = (BM/TM * BN/TN, G).
template <int BM_, int BN_, int BK_, int TM_, int TN_, int G_>
struct TileConfig {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, TM = TM_, TN = TN_, G = G_;
  static constexpr int TX = BN / TN, TY = BM / TM;
  static constexpr int group_threads = TX * TY;
  static constexpr int threads = group_threads * G;
  static_assert(BK % G == 0 && TM % 2 == 0 && TN % 2 == 0, "tile shape");
};

template <class T, class Cfg>
struct TileLayout {
  static constexpr int V = dev::vec16<T>;  // elements per 16-byte load
  static constexpr int P = V;              // row padding: keeps rows 16-byte aligned, spreads banks
  static constexpr int as_stride = Cfg::BM + P, bs_stride = Cfg::BN + P;
  static constexpr int a_buf = Cfg::BK * as_stride, b_buf = Cfg::BK * bs_stride;
  static constexpr std::size_t smem_bytes = sizeof(T) * 2 * (a_buf + b_buf);
  static constexpr int LA = Cfg::BM * Cfg::BK / V / Cfg::threads;  // A vectors per thread and tile
  static constexpr int LB = Cfg::BK * Cfg::BN / V / Cfg::threads;
  static_assert(Cfg::BK % V == 0 && Cfg::BN % V == 0, "16-byte loads");
  static_assert(LA >= 1 && LA * V * Cfg::threads == Cfg::BM * Cfg::BK, "A tile load mapping");
  static_assert(LB >= 1 && LB * V * Cfg::threads == Cfg::BK * Cfg::BN, "B tile load mapping");
  static_assert(smem_bytes >= sizeof(T) * Cfg::threads, "worker_reduce reuses the tile storage");
  /// Resident blocks per SM the register budget is sized for: registers for the accumulators, the
  /// prefetched loads and ~40 for addresses and fragments; small tiles get many blocks in flight to
  /// keep memory busy, large ones the registers they need.
  static constexpr int regs_needed = (Cfg::TM * Cfg::TN + (LA + LB) * V) * static_cast<int>(sizeof(T)) / 4 + 40;
  static constexpr int fit = 65536 / (Cfg::threads * regs_needed);
  static constexpr int min_blocks = fit < 1 ? 1 : fit > 4 ? 4 : fit;
  /// Float A tiles of at most 16 rows are loaded row-fastest: the transposed store into shared
  /// memory then hits distinct banks (along K, a warp's 32 lanes share one row and 16 of them one
  /// bank), and 2+ lanes per row still read >= 32 contiguous bytes. Double keeps the K-fastest order:
  /// its store conflicts less, and whole 512-byte rows per warp read better.
  static constexpr bool a_rows_fastest = Cfg::BM <= 16 && sizeof(T) == 4;
};

/// Elements row[c, c + V) of a tile row, zero past c_end or when the row is outside the matrix. vec:
/// the row length is a multiple of V, so a vector starting before c_end lies wholly inside.
template <int V, class T>
__device__ __forceinline__ dev::Vec<T, V> load_or_zero(const T* row, bool row_ok, idx c, idx c_end, bool vec) {
  dev::Vec<T, V> out;
  if (vec && row_ok && c < c_end) return dev::load_vec<V>(row + c);
#pragma unroll
  for (int q = 0; q < V; ++q) out.v[q] = (!vec && row_ok && c + q < c_end) ? row[c + q] : T(0);
  return out;
}

/// Loads n consecutive elements of shared memory (16-byte aligned) into registers, 16 bytes at a time.
template <int N, class T>
__device__ __forceinline__ void load_frag(const T* p, T (&out)[N]) {
  constexpr int V = N < dev::vec16<T> ? N : dev::vec16<T>;
#pragma unroll
  for (int q = 0; q < N; q += V) {
    const auto v = dev::load_vec<V>(p + q);
#pragma unroll
    for (int r = 0; r < V; ++r) out[q + r] = v.v[r];
  }
}

template <class T, class Cfg>
struct TileProduct {
  using L = TileLayout<T, Cfg>;
  static constexpr int V = L::V;
  T acc[Cfg::TM][Cfg::TN];

  /// Row (col) of the tile that register row i (col j) of this thread holds.
  __device__ __forceinline__ static int row_of(int i) {
    const int ty = static_cast<int>(threadIdx.x) / Cfg::TX;
    return i < Cfg::TM / 2 ? ty * (Cfg::TM / 2) + i : Cfg::BM / 2 + ty * (Cfg::TM / 2) + i - Cfg::TM / 2;
  }
  __device__ __forceinline__ static int col_of(int j) {
    const int tx = static_cast<int>(threadIdx.x) % Cfg::TX;
    return j < Cfg::TN / 2 ? tx * (Cfg::TN / 2) + j : Cfg::BN / 2 + tx * (Cfg::TN / 2) + j - Cfg::TN / 2;
  }
  /// The block's tile into `mine` (BM x BN, row-major), after run(): worker group 0 holds it.
  __device__ __forceinline__ void store_partial(T* mine) const {
    if (threadIdx.y != 0) return;
#pragma unroll
    for (int i = 0; i < Cfg::TM; ++i)
#pragma unroll
      for (int j = 0; j < Cfg::TN; ++j) mine[row_of(i) * Cfg::BN + col_of(j)] = acc[i][j];
  }

  /// The A-tile row and K offset that load vector v covers (see TileLayout::a_rows_fastest).
  __device__ __forceinline__ static void a_slot(int v, int& r, int& kk) {
    if constexpr (L::a_rows_fastest) {
      r = v % Cfg::BM, kk = (v / Cfg::BM) * V;
    } else {
      r = v / (Cfg::BK / V), kk = (v % (Cfg::BK / V)) * V;
    }
  }

  /// acc = sum over k in [k_begin, k_end) of A(row0 + r, k) B(k, col0 + c); every thread of the block calls.
  /// vec_a / vec_b: K (N) is a multiple of V, so 16-byte loads stay inside rows.
  __device__ __forceinline__ void run(const T* __restrict__ d_a, const T* __restrict__ d_b, idx m, idx n, idx k,
                                      idx row0, idx col0, idx k_begin, idx k_end, bool vec_a, bool vec_b, T* smem) {
#pragma unroll
    for (int i = 0; i < Cfg::TM; ++i)
#pragma unroll
      for (int j = 0; j < Cfg::TN; ++j) acc[i][j] = Sum::identity<T>();
    const int tid = static_cast<int>(dev::block_thread_rank());
    dev::Vec<T, V> ra[L::LA], rb[L::LB];

    auto load = [&](idx k0) {
#pragma unroll
      for (int l = 0; l < L::LA; ++l) {
        int r, kk;
        a_slot(tid + l * Cfg::threads, r, kk);
        const idx gr = row0 + r;
        ra[l] = load_or_zero<V>(d_a + gr * k, gr < m, k0 + kk, k_end, vec_a);
      }
#pragma unroll
      for (int l = 0; l < L::LB; ++l) {
        const int v = tid + l * Cfg::threads;
        const idx gk = k0 + v / (Cfg::BN / V);
        rb[l] = load_or_zero<V>(d_b + gk * n, gk < k_end, col0 + (v % (Cfg::BN / V)) * V, n, vec_b);
      }
    };
    auto store = [&](int buf) {
      T* as = smem + buf * L::a_buf;
      T* bs = smem + 2 * L::a_buf + buf * L::b_buf;
#pragma unroll
      for (int l = 0; l < L::LA; ++l) {
        int r, kk;
        a_slot(tid + l * Cfg::threads, r, kk);
#pragma unroll
        for (int q = 0; q < V; ++q) as[(kk + q) * L::as_stride + r] = ra[l].v[q];
      }
#pragma unroll
      for (int l = 0; l < L::LB; ++l) {
        const int v = tid + l * Cfg::threads;
        const int kk = v / (Cfg::BN / V), c = (v % (Cfg::BN / V)) * V;
        *reinterpret_cast<dev::Vec<T, V>*>(bs + kk * L::bs_stride + c) = rb[l];
      }
    };

    const int ty = static_cast<int>(threadIdx.x) / Cfg::TX, tx = static_cast<int>(threadIdx.x) % Cfg::TX;
    const int kg0 = static_cast<int>(threadIdx.y) * (Cfg::BK / Cfg::G);
    const idx ntiles = (k_end - k_begin + Cfg::BK - 1) / Cfg::BK;
    if (ntiles <= 0) return;
    load(k_begin);
    store(0);
    __syncthreads();
    for (idx t = 0; t < ntiles; ++t) {
      const int buf = static_cast<int>(t & 1);
      if (t + 1 < ntiles) load(k_begin + (t + 1) * Cfg::BK);
      const T* as = smem + buf * L::a_buf;
      const T* bs = smem + 2 * L::a_buf + buf * L::b_buf;
#pragma unroll
      for (int kk = 0; kk < Cfg::BK / Cfg::G; ++kk) {
        T a[Cfg::TM / 2], a2[Cfg::TM / 2], b[Cfg::TN / 2], b2[Cfg::TN / 2];
        const T* arow = as + (kg0 + kk) * L::as_stride;
        const T* brow = bs + (kg0 + kk) * L::bs_stride;
        load_frag(arow + ty * (Cfg::TM / 2), a);
        load_frag(arow + Cfg::BM / 2 + ty * (Cfg::TM / 2), a2);
        load_frag(brow + tx * (Cfg::TN / 2), b);
        load_frag(brow + Cfg::BN / 2 + tx * (Cfg::TN / 2), b2);
#pragma unroll
        for (int i = 0; i < Cfg::TM; ++i)
#pragma unroll
          for (int j = 0; j < Cfg::TN; ++j) {
            const T x = i < Cfg::TM / 2 ? a[i % (Cfg::TM / 2)] : a2[i % (Cfg::TM / 2)];
            const T y = j < Cfg::TN / 2 ? b[j % (Cfg::TN / 2)] : b2[j % (Cfg::TN / 2)];
            acc[i][j] = Sum::combine(acc[i][j], x * y);
          }
      }
      if (t + 1 < ntiles) store(buf ^ 1);
      __syncthreads();
    }
    if constexpr (Cfg::G > 1) {  // the worker level: groups combined in order y = 0, 1, ...
#pragma unroll
      for (int i = 0; i < Cfg::TM; ++i)
#pragma unroll
        for (int j = 0; j < Cfg::TN; ++j) acc[i][j] = dev::worker_reduce<Sum>(acc[i][j], smem);
    }
  }
};

// ---- tiled: one block per C tile over the whole K ---------------------------------------------------
template <class T, class Cfg>
__global__ void __launch_bounds__(Cfg::threads, (TileLayout<T, Cfg>::min_blocks))
    tiled_level(const T* __restrict__ d_a, const T* __restrict__ d_b, T* __restrict__ d_c, idx m, idx n, idx k,
                bool vec_a, bool vec_b) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* smem = reinterpret_cast<T*>(smem_raw);
  const idx tiles_n = (n + Cfg::BN - 1) / Cfg::BN;
  const idx row0 = (blockIdx.x / tiles_n) * Cfg::BM, col0 = (blockIdx.x % tiles_n) * Cfg::BN;
  TileProduct<T, Cfg> p;
  p.run(d_a, d_b, m, n, k, row0, col0, 0, k, vec_a, vec_b, smem);
  if (threadIdx.y != 0) return;
#pragma unroll
  for (int i = 0; i < Cfg::TM; ++i) {
    const idx r = row0 + p.row_of(i);
    if (r >= m) continue;
#pragma unroll
    for (int j = 0; j < Cfg::TN; ++j) {
      const idx c = col0 + p.col_of(j);
      if (c < n) d_c[r * n + c] = p.acc[i][j];
    }
  }
}

/// The C tile and K range of a split-K gang block: tile blockIdx.x (BM x BN, row-major over C), split
/// blockIdx.y of gridDim.y, each split k_chunk deep (the last one shorter).
struct SplitTile {
  idx tile, ksplit, split, row0, col0, k_begin, k_end;
  __device__ SplitTile(idx n, idx k, idx k_chunk, int bm, int bn)
      : tile(blockIdx.x), ksplit(gridDim.y), split(blockIdx.y) {
    const idx tiles_n = (n + bn - 1) / bn;
    row0 = (tile / tiles_n) * bm, col0 = (tile % tiles_n) * bn;
    k_begin = split * k_chunk, k_end = k_begin + k_chunk < k ? k_begin + k_chunk : k;
  }
};

// ---- gang: K split across blocks (blockIdx.y), tile partials combined by the last block ---------------
// Every block writes its BM x BN partial tile and takes a ticket (gang_arrive). Up to 2 x kSplitGroup
// splits, the last of the tile's `ksplit` blocks sums the partials in block order (gang_combine).
// Beyond, in two levels: the last block of each group of kSplitGroup consecutive splits sums the
// group's partials in block order into a group partial, and the last group's combiner sums those in
// group order. Either way each element's order is fixed by ksplit alone: bitwise reproducible. One
// block reads L2 at ~64 bytes a cycle, so a single combiner of a 64 x 64 double tile split 132 ways
// (4.3 MB) would run long after the other blocks have finished; two levels read 25 partials on that
// path instead of 132. kSplitGroup is part of the summation order: changing it changes C's bits.
inline constexpr idx kSplitGroup = 16;

/// The groups of a tile's `ksplit` splits (1: a single level). Partials: tiles x ksplit block tiles,
/// then tiles x groups group tiles; tickets: one a tile, then tiles x groups (split_k_grid sizes both).
__host__ __device__ constexpr idx split_groups(idx ksplit) {
  return ksplit > 2 * kSplitGroup ? (ksplit + kSplitGroup - 1) / kSplitGroup : 1;
}

/// Partials a combining thread sums at a time (gang_combine), then adds to its total (combine_partials).
inline constexpr idx kCombineBatch = 8;
/// The roundings a partial meets in combine_partials of `count` partials (its order's depth): within
/// its batch, then each later batch's addition to the total.
__host__ __device__ constexpr idx combine_depth(idx count) {
  return (count < kCombineBatch ? count : kCombineBatch) - 1 + count / kCombineBatch;
}
/// The same for split_k_combine of `ksplit` splits, in one level or two (split_groups).
__host__ __device__ constexpr idx split_k_combine_depth(idx ksplit) {
  return split_groups(ksplit) == 1 ? combine_depth(ksplit)
                                   : combine_depth(kSplitGroup) + combine_depth(split_groups(ksplit));
}

/// The last block's part: C tile (row0, col0) = the `ksplit` partial tiles of `segment` (BM x BN each,
/// row-major) summed in block order. gang_combine over 8 blocks at a time, for up to 8 elements at
/// once: up to 64 independent loads in flight per thread, since this one block reads the partials of
/// every block. The order of each element's sum does not depend on how many a thread takes.
template <class T, int BM, int BN, int Threads>
__device__ __forceinline__ void combine_partials(const T* segment, idx ksplit, T* __restrict__ d_c, idx m, idx n,
                                                 idx row0, idx col0) {
  constexpr idx width = idx{BM} * BN;
  constexpr idx batch = kCombineBatch;
  constexpr int per_thread = width / Threads >= 8 ? 8 : width / Threads >= 4 ? 4 : width / Threads >= 2 ? 2 : 1;
  static_assert(width % (Threads * per_thread) == 0, "combine mapping");
  for (idx e0 = dev::block_thread_rank(); e0 < width; e0 += Threads * per_thread) {
    T total[per_thread];
#pragma unroll
    for (int q = 0; q < per_thread; ++q) total[q] = Sum::identity<T>();
    idx b = 0;
    for (; b + batch <= ksplit; b += batch)
#pragma unroll
      for (int q = 0; q < per_thread; ++q)
        total[q] = Sum::combine(total[q], dev::gang_combine<Sum>(segment + b * width, batch, width, e0 + q * Threads));
#pragma unroll
    for (int q = 0; q < per_thread; ++q) {
      total[q] =
          Sum::combine(total[q], dev::gang_combine<Sum>(segment + b * width, ksplit - b, width, e0 + q * Threads));
      const idx e = e0 + q * Threads;
      const idx r = row0 + e / BN, c = col0 + e % BN;
      if (r < m && c < n) d_c[r * n + c] = total[q];
    }
  }
}

/// After a block has written its partial tile: its tickets and, where it is the last to arrive, the
/// combines (split_groups). arrive(ticket, count) is gang_arrive with the caller's block barrier: true
/// in every combining thread of the last of `count` blocks.
template <class T, int BM, int BN, int Threads, class Arrive>
__device__ __forceinline__ void split_k_combine(const SplitTile& st, T* __restrict__ d_c, idx m, idx n,
                                                T* __restrict__ d_partials, unsigned int* d_tickets, Arrive&& arrive) {
  constexpr idx width = idx{BM} * BN;
  const idx groups = split_groups(st.ksplit), tiles = gridDim.x;
  const T* blocks = d_partials + st.tile * st.ksplit * width;
  if (groups == 1) {
    if (arrive(d_tickets + st.tile, st.ksplit))
      combine_partials<T, BM, BN, Threads>(blocks, st.ksplit, d_c, m, n, st.row0, st.col0);
    return;
  }
  const idx g = st.split / kSplitGroup, first = g * kSplitGroup, count = min(kSplitGroup, st.ksplit - first);
  T* group_tiles = d_partials + tiles * st.ksplit * width + st.tile * groups * width;
  if (!arrive(d_tickets + tiles + st.tile * groups + g, count)) return;
  // The group's sum, a whole BM x BN tile (combine_partials' bounds are the tile's own).
  combine_partials<T, BM, BN, Threads>(blocks + first * width, count, group_tiles + g * width, BM, BN, 0, 0);
  if (arrive(d_tickets + st.tile, groups))
    combine_partials<T, BM, BN, Threads>(group_tiles, groups, d_c, m, n, st.row0, st.col0);
}

/// The split-K gang step of a block: run(st) computes the block's product over st's K range into p,
/// p.store_partial writes it to the block's partial tile, and the last of the tile's `ksplit` blocks
/// sums the partials into C (split_k_combine). Shared by the CUDA-core and tensor-core Gram kernels.
template <class T, int BM, int BN, int Threads, class Product, class Run>
__device__ __forceinline__ void split_k_gang(Product& p, Run&& run, T* __restrict__ d_c, idx m, idx n, idx k,
                                             idx k_chunk, T* __restrict__ d_partials, unsigned int* d_tickets) {
  __shared__ bool last;
  constexpr idx width = idx{BM} * BN;
  const SplitTile st(n, k, k_chunk, BM, BN);
  run(st);
  p.store_partial(d_partials + (st.tile * st.ksplit + st.split) * width);
  split_k_combine<T, BM, BN, Threads>(st, d_c, m, n, d_partials, d_tickets, [&](unsigned int* ticket, idx count) {
    return dev::gang_arrive(ticket, static_cast<unsigned int>(count), last);
  });
}

template <class T, class Cfg>
__global__ void __launch_bounds__(Cfg::threads, (TileLayout<T, Cfg>::min_blocks))
    gang_level(const T* __restrict__ d_a, const T* __restrict__ d_b, T* __restrict__ d_c, idx m, idx n, idx k,
               idx k_chunk, T* __restrict__ d_partials, unsigned int* d_tickets, bool vec_a, bool vec_b) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  TileProduct<T, Cfg> p;
  split_k_gang<T, Cfg::BM, Cfg::BN, Cfg::threads>(
      p,
      [&](const SplitTile& st) {
        p.run(d_a, d_b, m, n, k, st.row0, st.col0, st.k_begin, st.k_end, vec_a, vec_b, reinterpret_cast<T*>(smem_raw));
      },
      d_c, m, n, k, k_chunk, d_partials, d_tickets);
}

// ---- the reference: RefSum (matmul.hpp) per element, K split over blockIdx.y ------------------------
template <class T>
__global__ void reference_partial(const T* __restrict__ d_a, const T* __restrict__ d_b, idx m, idx n, idx k,
                                  idx k_chunk, double* __restrict__ d_hi, double* __restrict__ d_lo,
                                  double* __restrict__ d_abs) {
  const idx e = static_cast<idx>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= m * n) return;
  const idx i = e / n, j = e % n, k0 = blockIdx.y * k_chunk, k1 = k0 + k_chunk < k ? k0 + k_chunk : k;
  RefSum acc;
  for (idx q = k0; q < k1; ++q) acc.add_product(d_a[i * k + q], d_b[q * n + j]);
  const idx o = static_cast<idx>(blockIdx.y) * m * n + e;
  d_hi[o] = acc.partial_hi(), d_lo[o] = acc.partial_lo(), d_abs[o] = acc.abs;
}

// A template (of nothing) so that every translation unit that includes this header may define it.
template <class = void>
__global__ void reference_combine(idx mn, idx splits, const double* __restrict__ d_hi, const double* __restrict__ d_lo,
                                  const double* __restrict__ d_abs, double* __restrict__ d_ref,
                                  double* __restrict__ d_ref_abs) {
  for (auto e : dev::grid_stride_range(mn)) {
    RefSum acc;
    for (idx z = 0; z < splits; ++z) acc.add_sum(d_hi[z * mn + e], d_lo[z * mn + e], d_abs[z * mn + e]);
    d_ref[e] = acc.value();
    d_ref_abs[e] = acc.abs;
  }
}

}  // namespace tally::matmul::kernels
