#pragma once
// heat2d's CUDA sweep kernels and the device state they share with the host side (solver_cuda.cu):
// one kernel per sweep (or per pass of S sweeps: sweep_blocked) updates the field and, on checked
// sweeps, folds the residual max |u_new - u| with the library's gang reduction, whose last block
// publishes it (or, across ranks, leaves it for the cross-rank step). Included by solver_cuda.cu alone (it defines
// kernels).
//
// Layout: rows padded to a pitch of 32 x 16 bytes so that each lane loads and stores 16 bytes
// (2 doubles or 4 floats) with rows aligned. A warp covers 32 x 16 contiguous bytes of a row; a
// block's warps sit side by side along x (a block reads and writes whole kilobytes of each row, so
// its concurrent accesses stay within few DRAM pages) and stream down one strip of rows together,
// the next rows loaded several rows ahead; west/east neighbours come from the neighbouring lanes
// by shuffle, only each warp's two end lanes load one extra element with each row.
#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "heat2d.hpp"
#include "tally/reduce/device/gang.cuh"
#include "tally/reduce/device/thread.cuh"
#include "tuning.hpp"

namespace tally::heat2d::kernels {

namespace dev = tally::reduce::device;
using reduce::Max;

constexpr int tile_lanes = 32;  // vector: one warp across x
// worker: a block's warps side by side along x, per kernel (async_warps, registers_warps below)

enum : int { running = 0, stop_converged = 1, stop_diverged = 2 };

struct CheckSlot {  // written by the device, read by the host after the sweep's event
  double residual;
  long long iteration;
  int stop;
  int pad;
};
struct DeviceState {
  long long done;  // sweeps executed (block 0 of each executed sweep writes its number)
  int stop;        // running / stop_converged / stop_diverged
  int pad;
  long long stop_at;  // the sweep whose check stopped the run (0: running)
};

// Rounded operations the compiler cannot contract into FMAs: the same arithmetic as the CPU.
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float sub_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double sub_rn(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }

template <class T>
__device__ __forceinline__ T update(T c, T w, T e, T s, T n, const Coeffs<T>& k) {
  const T sum = add_rn(add_rn(w, e), add_rn(s, n));
  if (k.steady) return mul_rn(sum, T(0.25));
  return add_rn(c, mul_rn(k.r, sub_rn(sum, mul_rn(T(4), c))));
}

template <class T>
struct SweepArgs {
  long long pitch, nx, ny;  // ny: the rows held (the block on several ranks)
  long long j0, rows;       // the strips split rows [j0, j0 + rows) ...
  long long jb;             // ... or, when jb >= 0, strip 0 is row j0 and strip 1 row jb (the boundary rows)
  Coeffs<T> c;
  dev::select_key_t<T>* d_cell;  // the gang reduction's cell (max |u_new - u| of this sweep)
  unsigned int* d_ticket;        // and its ticket
  DeviceState* d_state;
  CheckSlot* slot;  // checked sweeps: where the residual goes (mapped host memory)
  long long k;      // this sweep's number
  double tol;
  double* partial_out = nullptr;       // several ranks: the last block leaves max(r, *partial_in) here
  const double* partial_in = nullptr;  // instead of publishing
  bool lagged = false;                 // several ranks: obey only a stop two launches back (stopped())
  long long lag_k = 0;                 // ... at or before this sweep (the last of the launch two back)
};

/// Whether this launch was queued after the run stopped (uniform over the launch). One rank: the
/// flag the previous launch's last block set. Across ranks launch L's verdict is published while
/// launch L + 1 runs, so a launch obeys only a stop at least two launches back, which the host
/// ordered before it: the flag cannot change under a running launch.
template <class T>
__device__ __forceinline__ bool stopped(const SweepArgs<T>& a) {
  if (!a.lagged) return __ldcg(&a.d_state->stop) != running;
  const long long at = __ldcg(&a.d_state->stop_at);
  return at > 0 && at <= a.lag_k;
}

// ---- the pieces both sweep kernels share ---------------------------------------------------------

/// This warp's tile and strip: columns of tile blockIdx.x * blockDim.y + threadIdx.y (the block's
/// warps side by side), rows [js, je) of strip blockIdx.y (the rows split evenly, +-1 row). A warp
/// whose tile lies beyond the pitch gets no rows (it still joins the block's reduction).
template <class T>
struct Strip {
  static constexpr int V = dev::vec16<T>;
  int lane;
  long long x0, js, je, jlast;  // jlast: the last row the strip reads (its south halo)
  long long hoff;               // the end lanes' halo element: lane 0 west, lane 31 east
  bool has_halo;
  __device__ explicit Strip(const SweepArgs<T>& a) {
    lane = static_cast<int>(threadIdx.x);
    const long long tile = static_cast<long long>(blockIdx.x) * blockDim.y + threadIdx.y;
    x0 = (tile * tile_lanes + lane) * V;
    if (a.jb >= 0) {
      js = blockIdx.y == 0 ? a.j0 : a.jb;
      je = js + 1;
    } else {
      js = a.j0 + static_cast<long long>(blockIdx.y) * a.rows / gridDim.y;
      je = a.j0 + (static_cast<long long>(blockIdx.y) + 1) * a.rows / gridDim.y;
    }
    jlast = je < a.ny - 1 ? je : a.ny - 1;
    if (tile * tile_lanes * V >= a.pitch) js = je = 0, jlast = -1;  // warp-uniform
    hoff = lane == 0 ? -1 : V;
    has_halo = (lane == 0 && x0 > 0) || (lane == tile_lanes - 1 && x0 + V < a.pitch);
  }
};

/// Updates row jj of this lane's V columns from its rows prev/cur/next (cur's end-lane halo in
/// `halo`), stores it, folds the residual. Every lane of the warp calls it (shuffles).
template <class T, bool Check>
__device__ __forceinline__ void update_row(const Strip<T>& st, const SweepArgs<T>& a, long long jj,
                                           const dev::Vec<T, Strip<T>::V>& prev, const dev::Vec<T, Strip<T>::V>& cur,
                                           const dev::Vec<T, Strip<T>::V>& next, T halo, T* sp, T& local) {
  constexpr int V = Strip<T>::V;
  // Neighbours across the vector's ends from the adjacent lanes (whole warp, uniform).
  T w = __shfl_up_sync(0xffffffffu, cur.v[V - 1], 1);
  T e = __shfl_down_sync(0xffffffffu, cur.v[0], 1);
  if (st.lane == 0) w = halo;
  if (st.lane == tile_lanes - 1) e = halo;
  if (jj < 1 || jj >= a.ny - 1) return;  // warp-uniform; edge rows stay as they are
  dev::Vec<T, V> out;
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const T west = k == 0 ? w : cur.v[k - 1];
    const T east = k == V - 1 ? e : cur.v[k + 1];
    const T nv = update(cur.v[k], west, east, prev.v[k], next.v[k], a.c);
    const long long i = st.x0 + k;
    const bool inside = i >= 1 && i < a.nx - 1;
    out.v[k] = inside ? nv : cur.v[k];  // edge columns and padding: rewritten unchanged
    if constexpr (Check) {
      if (inside) {
        const T d = nv - cur.v[k];
        local = Max::combine(local, d < T(0) ? -d : d);  // NaN stays NaN
      }
    }
  }
  // Streaming (evict-first) stores: the new field is not read again this sweep, and the rows it
  // would push out of L2 are the next rows' halos (a few percent a sweep: BENCHMARKS.md, heat2d).
  if constexpr (sizeof(T) == 8) __stcs(reinterpret_cast<double2*>(sp), make_double2(out.v[0], out.v[1]));
  else __stcs(reinterpret_cast<float4*>(sp), make_float4(out.v[0], out.v[1], out.v[2], out.v[3]));
}

/// Publishes sweep k's residual: the stop flag, read by the next sweeps (kernel boundaries order
/// it), and the slot, read by the host after this sweep's event (the kernel's completion makes it
/// visible).
__device__ __forceinline__ void publish(double rd, DeviceState* d_state, CheckSlot* slot, long long k, double tol) {
  const int stop = !isfinite(rd) ? stop_diverged : (rd <= tol ? stop_converged : running);
  d_state->stop = stop;
  if (stop != running) d_state->stop_at = k;
  slot->residual = rd;
  slot->iteration = k;
  slot->stop = stop;
}

/// The end of a sweep: on checked sweeps the gang reduction of the residual, whose last block
/// publishes it (slot, stop flag) or, across ranks, leaves it for the cross-rank step; block 0
/// counts the sweep as done. Max selects, so the selecting gang reduction (one atomic cell)
/// applies: the last block reads one value instead of folding one partial per block while the rest
/// of the GPU idles.
template <class T, bool Check>
__device__ __forceinline__ void finish_sweep(const SweepArgs<T>& a, T local, dev::GangStorage<T>& tmp) {
  if constexpr (Check) {
    T r;
    if (dev::gang_reduce_select<Max>(local, a.d_cell, a.d_ticket, r, tmp) && dev::block_thread_rank() == 0) {
      const double rd = static_cast<double>(r);
      if (a.partial_out) *a.partial_out = a.partial_in ? Max::combine(rd, *a.partial_in) : rd;
      else publish(rd, a.d_state, a.slot, a.k, a.tol);
    }
  }
  if (blockIdx.x == 0 && blockIdx.y == 0 && dev::block_thread_rank() == 0) a.d_state->done = a.k;
}

// ---- kernel "async": rows staged through a shared-memory ring by cp.async --------------------------
// Each lane copies its 16 bytes of the next rows (and the end lanes their halo element) into its own
// ring slots, `ring_rows - 3` rows ahead of the row it computes; the loads in flight cost shared
// memory, not registers, so occupancy stays high. A lane reads back only what it copied itself, so
// __pipeline_wait_prior is the only synchronisation.
// Its shape: tuning::async_warps, tuning::ring_rows.
using tuning::async_warps;
using tuning::ring_rows;

template <class T, bool Check>
__global__ void __launch_bounds__(tile_lanes* async_warps)
    sweep_async(const T* __restrict__ u, T* __restrict__ v, const SweepArgs<T> a) {
  constexpr int V = Strip<T>::V;
  constexpr int S = ring_rows;
  using Vec = dev::Vec<T, V>;
  __shared__ Vec ring[async_warps][S][tile_lanes];
  __shared__ T halo[async_warps][S][2];
  __shared__ dev::GangStorage<T> tmp;
  if (stopped(a)) return;  // queued after the run stopped

  const Strip<T> st(a);
  const int w = static_cast<int>(threadIdx.y), hl = st.lane == 0 ? 0 : 1;
  long long jl = st.js - 1;                         // the next row to copy
  const T* lp = u + (st.js - 1) * a.pitch + st.x0;  // dereferenced only for rows in [0, jlast]
  int slot = 0;
  auto issue = [&] {
    if (jl >= 0 && jl <= st.jlast) {
      __pipeline_memcpy_async(&ring[w][slot][st.lane], lp, sizeof(Vec));
      if (st.has_halo) __pipeline_memcpy_async(&halo[w][slot][hl], lp + st.hoff, sizeof(T));
    }
    __pipeline_commit();  // one group per row, empty ones included: the counting stays uniform
    ++jl;
    lp += a.pitch;
    slot = slot + 1 == S ? 0 : slot + 1;
  };
  for (int r = 0; r < S; ++r) issue();

  T local = Max::identity<T>();
  T* sp = v + st.js * a.pitch + st.x0;
  int s0 = 0;  // the slot of row jj - 1
  for (long long jj = st.js; jj < st.je; ++jj) {
    __pipeline_wait_prior(S - 3);  // rows up to jj + 1 have landed
    const int s1 = s0 + 1 == S ? 0 : s0 + 1, s2 = s1 + 1 == S ? 0 : s1 + 1;
    const Vec prev = ring[w][s0][st.lane], cur = ring[w][s1][st.lane], next = ring[w][s2][st.lane];
    const T h = halo[w][s1][hl];
    issue();  // refills slot s0: its row is in registers now
    update_row<T, Check>(st, a, jj, prev, cur, next, h, sp, local);
    sp += a.pitch;
    s0 = s1;
  }
  __pipeline_wait_prior(0);  // no copy may still target shared memory at exit
  finish_sweep<T, Check>(a, local, tmp);
}

// ---- kernel "registers": a queue of rows loaded ahead in registers ---------------------------------
// Its shape: tuning::registers_warps side by side, tuning::queue_rows queued a lane.
using tuning::queue_rows;
using tuning::registers_blocks_sm;
using tuning::registers_warps;

/// The registers kernel's work for one strip: the rows of `st`, from u into v, the residual into
/// `local` (checked). Coherent: the loads go through L2 only (ld.global.cg), for fields written by
/// other blocks of the same launch (the persistent kernel); otherwise the read-only path.
template <class T, bool Check, bool Coherent>
__device__ __forceinline__ void stream_strip(const Strip<T>& st, const SweepArgs<T>& a, const T* __restrict__ u,
                                             T* __restrict__ v, T& local) {
  constexpr int V = Strip<T>::V;
  constexpr int P = queue_rows;
  struct Row {
    dev::Vec<T, V> x;
    T halo;
  };
  long long jl = st.js - 1;
  const T* lp = u + (st.js - 1) * a.pitch + st.x0;
  auto load_next = [&](Row& r) {
    if (jl >= 0 && jl <= st.jlast) {
      if constexpr (Coherent) {
        if constexpr (sizeof(T) == 8) {
          const double2 d = __ldcg(reinterpret_cast<const double2*>(lp));
          r.x.v[0] = d.x, r.x.v[1] = d.y;
        } else {
          const float4 f = __ldcg(reinterpret_cast<const float4*>(lp));
          r.x.v[0] = f.x, r.x.v[1] = f.y, r.x.v[2] = f.z, r.x.v[3] = f.w;
        }
        r.halo = st.has_halo ? __ldcg(lp + st.hoff) : T(0);
      } else {
        r.x = dev::load_vec<V>(lp);
        r.halo = st.has_halo ? lp[st.hoff] : T(0);
      }
    }
    ++jl;
    lp += a.pitch;
  };
  Row prev{}, cur{}, q[P] = {};
  load_next(prev);
  load_next(cur);
#pragma unroll
  for (int p = 0; p < P; ++p) load_next(q[p]);
  T* sp = v + st.js * a.pitch + st.x0;
  for (long long j = st.js; j < st.je; j += P) {
#pragma unroll
    for (int p = 0; p < P; ++p) {
      const Row next = q[p];
      load_next(q[p]);  // keep P rows in flight
      if (j + p < st.je) update_row<T, Check>(st, a, j + p, prev.x, cur.x, next.x, cur.halo, sp, local);
      sp += a.pitch;
      prev = cur;
      cur = next;
    }
  }
}

template <class T, bool Check>
__global__ void __launch_bounds__(tile_lanes* registers_warps, registers_blocks_sm)
    sweep_registers(const T* __restrict__ u, T* __restrict__ v, const SweepArgs<T> a) {
  __shared__ dev::GangStorage<T> tmp;
  if (stopped(a)) return;  // queued after the run stopped

  const Strip<T> st(a);
  T local = Max::identity<T>();
  stream_strip<T, Check, false>(st, a, u, v, local);
  finish_sweep<T, Check>(a, local, tmp);
}

// ---- kernel "blocked": S sweeps a pass (2.5-D streaming temporal blocking, as in AN5D) ------------
// Each warp owns a tile of 32 lanes x V columns and a strip of rows, and streams down it: when row n
// of the field arrives, sweep level s (1..S) computes its row n - s from level s - 1's rows
// n - s - 1, n - s, n - s + 1, which the lane holds in registers (each level keeps its last two
// rows); west/east neighbours come from the adjacent lanes by shuffle, so no lane ever waits for
// another warp. Level S's rows go to memory, each read and written once per pass. The price: a
// level's tile is valid one column narrower on each side than the level below it (the end lanes
// have no neighbours), so warps' tiles overlap by 2 H columns (H = S rounded up to V, for aligned
// vectors) and only the middle W columns are stored; strips overlap by S rows. The overlap is
// recomputed, and its reads mostly hit L1/L2. Every level evaluates update() exactly as the
// one-sweep kernels do, so the fields are the same bits; the residual is level S's
// max |u_S - u_{S-1}| over the stored points, through the same gang reduction.
using tuning::blocked_blocks_sm;
using tuning::blocked_queue;  // rows of the field loaded ahead (in registers)
using tuning::blocked_warps;

template <class T, int S>
struct BlockedTile {
  static constexpr int V = dev::vec16<T>;
  static constexpr int H = (S + V - 1) / V * V;     // halo columns on each side of a warp's tile
  static constexpr int W = tile_lanes * V - 2 * H;  // columns a warp stores
};

template <class T, int S, bool Check>
__global__ void __launch_bounds__(tile_lanes* blocked_warps, blocked_blocks_sm)
    sweep_blocked(const T* __restrict__ u, T* __restrict__ v, const SweepArgs<T> a) {
  using Tile = BlockedTile<T, S>;
  constexpr int V = Tile::V, P = blocked_queue;
  using Vec = dev::Vec<T, V>;
  __shared__ dev::GangStorage<T> tmp;
  if (stopped(a)) return;  // queued after the run stopped

  const int lane = static_cast<int>(threadIdx.x);
  const long long tile = static_cast<long long>(blockIdx.x) * blockDim.y + threadIdx.y;
  const long long x0 = tile * Tile::W - Tile::H + lane * V;  // this lane's first column
  const bool loads = x0 >= 0 && x0 < a.pitch;                // whole vectors: pitch and x0 are multiples of V
  const bool stores = lane * V >= Tile::H && lane * V < Tile::H + Tile::W && x0 < a.pitch;
  // The strip's output rows [js, je) of the interior rows [a.j0, a.j0 + a.rows); a warp beyond the
  // grid's width gets none (it still joins the block's reduction).
  long long js = a.j0 + static_cast<long long>(blockIdx.y) * a.rows / gridDim.y;
  long long je = a.j0 + (static_cast<long long>(blockIdx.y) + 1) * a.rows / gridDim.y;
  if (tile * Tile::W >= a.nx) je = js;                                    // warp-uniform
  const long long n0 = js - S > 0 ? js - S : 0;                           // the first row read
  const long long nlast = je - 1 + S < a.ny - 1 ? je - 1 + S : a.ny - 1;  // the last row read
  const long long nend = je - 1 + S;  // the step at which level S computes row je - 1

  long long jl = n0;
  auto load_next = [&](Vec& r) {
    if (loads && jl <= nlast) r = dev::load_vec<V>(u + jl * a.pitch + x0);
    ++jl;
  };
  Vec q[P], prev[S], cur[S];  // the rows queued; each level's rows m - 1 and m (levels 0..S-1)
#pragma unroll
  for (int p = 0; p < P; ++p) {
    q[p] = Vec{};
    load_next(q[p]);
  }
#pragma unroll
  for (int s = 0; s < S; ++s) prev[s] = cur[s] = Vec{};
  T local = Max::identity<T>();
  for (long long n = n0; js < je && n <= nend; n += P) {
#pragma unroll
    for (int p = 0; p < P; ++p) {
      Vec nw = q[p];  // level 0's row n + p
      load_next(q[p]);
      if (n + p > nend) continue;
#pragma unroll
      for (int s = 1; s <= S; ++s) {
        const long long m = n + p - s;  // level s's new row, from level s - 1's prev (m - 1), cur (m), nw (m + 1)
        const Vec& c = cur[s - 1];
        const T w = __shfl_up_sync(0xffffffffu, c.v[V - 1], 1);  // lane 0: its own, invalid anyway
        const T e = __shfl_down_sync(0xffffffffu, c.v[0], 1);
        Vec out = c;                   // edge rows (and rows outside the field, never used) stay
        if (m >= 1 && m < a.ny - 1) {  // warp-uniform
#pragma unroll
          for (int k = 0; k < V; ++k) {
            const T west = k == 0 ? w : c.v[k - 1];
            const T east = k == V - 1 ? e : c.v[k + 1];
            const T nv = update(c.v[k], west, east, prev[s - 1].v[k], nw.v[k], a.c);
            const long long i = x0 + k;
            const bool inside = i >= 1 && i < a.nx - 1;
            out.v[k] = inside ? nv : c.v[k];  // edge columns and padding: unchanged
            if constexpr (Check) {
              if (s == S && inside && stores && m >= js) {
                const T d = nv - c.v[k];
                local = Max::combine(local, d < T(0) ? -d : d);  // NaN stays NaN
              }
            }
          }
          if (s == S && stores && m >= js) {
            T* sp = v + m * a.pitch + x0;
            if constexpr (sizeof(T) == 8) __stcs(reinterpret_cast<double2*>(sp), make_double2(out.v[0], out.v[1]));
            else __stcs(reinterpret_cast<float4*>(sp), make_float4(out.v[0], out.v[1], out.v[2], out.v[3]));
          }
        }
        prev[s - 1] = c;
        cur[s - 1] = nw;
        nw = out;
      }
    }
  }
  finish_sweep<T, Check>(a, local, tmp);
}

/// Several ranks: publishes the global residual after the cross-rank step (one thread), unless
/// an earlier check stopped the run (the checks publish in order, on one stream).
__global__ void publish_global(const double* d_res, DeviceState* d_state, CheckSlot* slot, long long k, double tol) {
  if (__ldcg(&d_state->stop) != running) return;
  publish(*d_res, d_state, slot, k, tol);
}

}  // namespace tally::heat2d::kernels
