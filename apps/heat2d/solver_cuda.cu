// CUDA backend: one kernel per sweep that updates the field and, on checked sweeps, computes the
// residual max |u_new - u| in the same pass with the library's gang reduction (the last block to
// finish writes it). The host never waits for the sweep it just launched:
//  * the residual of each checked sweep goes to a slot of a ring in mapped pinned host memory, and
//    an event after that sweep tells the host when the slot is valid; the host reads it while the
//    next sweeps are already queued (up to `lookahead_sweeps` ahead);
//  * the last block also sets a device-side stop flag (converged or diverged); every later sweep
//    already queued reads it first and returns at once, so the field stops exactly at the sweep
//    that converged and the iteration count equals the CPU backend's.
// Across ranks (solve() with ranks_) a sweep is: the block's first and last rows (one launch),
// their exchange with the neighbours on a second stream (NCCL, or host-staged when ranks share a
// GPU) while the rows between are updated on the main stream; on checked sweeps the local maximum
// goes through the cross-rank Max on the device and a one-thread kernel publishes it (slot, stop
// flag) as the last block does on one rank. The host then reads checks only at fixed distances (no
// polling), so every rank enqueues the same sweeps and collectives.
//
// Layout: rows padded to a pitch of 32 x 16 bytes so that each lane loads and stores 16 bytes
// (2 doubles or 4 floats) with rows aligned. A warp covers 32 x 16 contiguous bytes of a row; a
// block's warps sit side by side along x (a block reads and writes whole kilobytes of each row, so
// its concurrent accesses stay within few DRAM pages) and stream down one strip of rows together,
// the next rows loaded several rows ahead; west/east neighbours come from the neighbouring lanes
// by shuffle, only each warp's two end lanes load one extra element with each row.
#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <deque>
#include <vector>

#include "solver.hpp"
#include "tally/common/copy_bandwidth.cuh"
#include "tally/common/cuda_check.cuh"
#include "tally/common/device_buffer.cuh"
#include "tally/common/device_timer.cuh"
#include "tally/common/error.hpp"
#include "tally/common/timing.hpp"
#include "tally/reduce/device/gang.cuh"
#include "tally/reduce/device/thread.cuh"
#include "tally/reduce/rank.hpp"

namespace tally::heat2d {
namespace {

namespace dev = tally::reduce::device;
using reduce::Max;

constexpr int tile_lanes = 32;      // vector: one warp across x
// worker: a block's warps side by side along x, per kernel (async_warps, registers_warps below)
constexpr int slots = 64;           // ring of residual slots in mapped host memory
constexpr std::int64_t lookahead_sweeps = 16;  // sweeps queued beyond the oldest unread check

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
};

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
  // would push out of L2 are the next rows' halos (measured on an H100, 4096^2 double, registers
  // kernel: 108.2 -> 104.5 us a checked sweep).
  if constexpr (sizeof(T) == 8) __stcs(reinterpret_cast<double2*>(sp), make_double2(out.v[0], out.v[1]));
  else __stcs(reinterpret_cast<float4*>(sp), make_float4(out.v[0], out.v[1], out.v[2], out.v[3]));
}

/// Publishes sweep k's residual: the stop flag, read by the next sweeps (kernel boundaries order
/// it), and the slot, read by the host after this sweep's event (the kernel's completion makes it
/// visible).
__device__ __forceinline__ void publish(double rd, DeviceState* d_state, CheckSlot* slot, long long k, double tol) {
  const int stop = !isfinite(rd) ? stop_diverged : (rd <= tol ? stop_converged : running);
  d_state->stop = stop;
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
// 8 warps a block (4 KiB of each row) and 10 ring rows: 7 rows (7 x 16 bytes a lane) in flight,
// 40 KiB of shared memory a block.
constexpr int ring_rows = 10;
constexpr int async_warps = 8;

template <class T, bool Check>
__global__ void __launch_bounds__(tile_lanes* async_warps)
    sweep_async(const T* __restrict__ u, T* __restrict__ v, const SweepArgs<T> a) {
  constexpr int V = Strip<T>::V;
  constexpr int S = ring_rows;
  using Vec = dev::Vec<T, V>;
  __shared__ Vec ring[async_warps][S][tile_lanes];
  __shared__ T halo[async_warps][S][2];
  __shared__ dev::GangStorage<T> tmp;
  if (__ldcg(&a.d_state->stop) != running) return;  // queued after the run stopped (uniform)

  const Strip<T> st(a);
  const int w = static_cast<int>(threadIdx.y), hl = st.lane == 0 ? 0 : 1;
  long long jl = st.js - 1;                      // the next row to copy
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
// 8 warps a block side by side (4 KiB of each row), 4 rows queued a lane, 2 blocks an SM (up to 128
// registers). Measured on an H100, 4096^2 double, checked every sweep: 108.1 us with 4 warps a block
// (5 blocks an SM), 108.6 with 6 rows queued, 105.4 with this shape.
constexpr int queue_rows = 4;
constexpr int registers_warps = 8;
constexpr int registers_blocks_sm = 2;

template <class T, bool Check>
__global__ void __launch_bounds__(tile_lanes* registers_warps, registers_blocks_sm)
    sweep_registers(const T* __restrict__ u, T* __restrict__ v, const SweepArgs<T> a) {
  constexpr int V = Strip<T>::V;
  constexpr int P = queue_rows;
  struct Row {
    dev::Vec<T, V> x;
    T halo;
  };
  __shared__ dev::GangStorage<T> tmp;
  if (__ldcg(&a.d_state->stop) != running) return;  // queued after the run stopped (uniform)

  const Strip<T> st(a);
  long long jl = st.js - 1;
  const T* lp = u + (st.js - 1) * a.pitch + st.x0;
  auto load_next = [&](Row& r) {
    if (jl >= 0 && jl <= st.jlast) {
      r.x = dev::load_vec<V>(lp);
      r.halo = st.has_halo ? lp[st.hoff] : T(0);
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
  T local = Max::identity<T>();
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
  finish_sweep<T, Check>(a, local, tmp);
}

/// Several ranks: publishes the global residual after the cross-rank step (one thread), unless
/// the run stopped before this sweep.
__global__ void publish_global(const double* d_res, DeviceState* d_state, CheckSlot* slot, long long k, double tol) {
  if (__ldcg(&d_state->stop) != running) return;
  publish(*d_res, d_state, slot, k, tol);
}

template <class T>
class CudaSolver final : public Solver<T> {
 public:
  CudaSolver(const Problem& p, const SolverOptions& o)
      : p_(p), c_(coeffs<T>(p)), ranks_(o.comm && o.comm->size() > 1 ? o.comm : nullptr),
        rows_(ranks_ ? local_block(p, ranks_->size(), ranks_->rank()).rows : p.ny) {
    if (o.cuda_kernel != "async" && o.cuda_kernel != "registers")
      throw InputError("--cuda-kernel '" + o.cuda_kernel + "': expected async or registers");
    async_ = o.cuda_kernel == "async";
    warps_ = async_ ? async_warps : registers_warps;
    checked_ = async_ ? sweep_async<T, true> : sweep_registers<T, true>;
    unchecked_ = async_ ? sweep_async<T, false> : sweep_registers<T, false>;
    const int device = o.device;
    TALLY_CUDA_TRY(cudaSetDevice(device));
    constexpr long long V = dev::vec16<T>;
    pitch_ = (p.nx + tile_lanes * V - 1) / (tile_lanes * V) * (tile_lanes * V);
    const long long tiles_x = pitch_ / (tile_lanes * V);
    warps_ = static_cast<int>(std::min<long long>(warps_, tiles_x));
    // One full wave of blocks, each streaming one strip of rows: one pipeline start per warp and
    // sweep. Narrow grids get narrower blocks rather than idle warps.
    int sms = 0, per_sm = 0;
    if (async_) {
      // The ring lives in shared memory: ask for the largest carveout (the kernel bypasses L1).
      TALLY_CUDA_TRY(cudaFuncSetAttribute(sweep_async<T, true>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                          cudaSharedmemCarveoutMaxShared));
      TALLY_CUDA_TRY(cudaFuncSetAttribute(sweep_async<T, false>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                          cudaSharedmemCarveoutMaxShared));
    }
    TALLY_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    TALLY_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &per_sm, checked_, tile_lanes * warps_, 0));
    const long long target = static_cast<long long>(sms) * std::max(per_sm, 1);
    const long long grid_x = (tiles_x + warps_ - 1) / warps_;
    const long long most_y = std::max<long long>(1, rows_ / 4);  // >= 4 rows a strip
    grid_ = dim3(static_cast<unsigned>(grid_x),
                 static_cast<unsigned>(std::clamp<long long>(target / grid_x, 1, std::min<long long>(most_y, 65535))));

    const double field_bytes = static_cast<double>(pitch_) * static_cast<double>(rows_) * sizeof(T);
    std::size_t free_b = 0, total_b = 0;
    TALLY_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    if (2.0 * field_bytes + 64.0 * (1 << 20) > static_cast<double>(free_b))
      throw InputError("--nx/--ny " + std::to_string(p.nx) + " x " + std::to_string(p.ny) + ": two fields need " +
                       std::to_string(2.0 * field_bytes / (1 << 30)) + " GiB of device memory, " +
                       std::to_string(static_cast<double>(free_b) / (1 << 30)) + " GiB are free");
    const auto n = static_cast<std::size_t>(pitch_ * rows_);
    u_[0] = DeviceBuffer<T>(n);
    u_[1] = DeviceBuffer<T>(n);
    cell_ = DeviceBuffer<dev::select_key_t<T>>(1);
    const auto cell0 = dev::select_identity_key<Max, T>();
    TALLY_CUDA_TRY(cudaMemcpy(cell_.data(), &cell0, sizeof cell0, cudaMemcpyHostToDevice));
    ticket_ = DeviceBuffer<unsigned int>(1);
    state_ = DeviceBuffer<DeviceState>(1);
    TALLY_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    ticket_.fill_bytes(0, stream_);
    if (ranks_) {
      // The halo stream at the highest priority: its transfers' blocks start as soon as the
      // boundary rows are done, ahead of the interior's blocks.
      int least = 0, greatest = 0;
      TALLY_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest));
      TALLY_CUDA_TRY(cudaStreamCreateWithPriority(&halo_stream_, cudaStreamNonBlocking, greatest));
      TALLY_CUDA_TRY(cudaEventCreateWithFlags(&boundary_done_, cudaEventDisableTiming));
      TALLY_CUDA_TRY(cudaEventCreateWithFlags(&halo_done_, cudaEventDisableTiming));
      res_ = DeviceBuffer<double>(2);  // [0] this rank's, then the global residual; [1] the boundary rows'
    }
    TALLY_CUDA_TRY(cudaHostAlloc(reinterpret_cast<void**>(&h_slots_), slots * sizeof(CheckSlot), cudaHostAllocMapped));
    TALLY_CUDA_TRY(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d_slots_), h_slots_, 0));
    for (auto& ev : events_) TALLY_CUDA_TRY(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    TALLY_CUDA_TRY(cudaStreamSynchronize(stream_));
  }

  ~CudaSolver() override {
    for (auto ev : events_)
      if (ev) cudaEventDestroy(ev);
    if (h_slots_) cudaFreeHost(h_slots_);
    if (stream_) cudaStreamDestroy(stream_);
    if (halo_stream_) cudaStreamDestroy(halo_stream_);
    if (boundary_done_) cudaEventDestroy(boundary_done_);
    if (halo_done_) cudaEventDestroy(halo_done_);
  }
  CudaSolver(const CudaSolver&) = delete;
  CudaSolver& operator=(const CudaSolver&) = delete;

  void set_field(std::span<const T> u) override {
    for (auto& b : u_) {
      b.fill_bytes(0, stream_);  // the padding: never updated, but read as a neighbour of the last column
      TALLY_CUDA_TRY(cudaMemcpy2DAsync(b.data(), pitch_ * sizeof(T), u.data(), p_.nx * sizeof(T), p_.nx * sizeof(T),
                                       rows_, cudaMemcpyHostToDevice, stream_));
    }
    TALLY_CUDA_TRY(cudaStreamSynchronize(stream_));
    cur_ = 0;
  }

  void get_field(std::span<T> u) override {
    TALLY_CUDA_TRY(cudaMemcpy2DAsync(u.data(), p_.nx * sizeof(T), u_[cur_].data(), pitch_ * sizeof(T),
                                     p_.nx * sizeof(T), rows_, cudaMemcpyDeviceToHost, stream_));
    TALLY_CUDA_TRY(cudaStreamSynchronize(stream_));
  }

  SolveResult solve(const StopRule& rule, const ProgressFn& progress) override {
    SolveResult r;
    struct Pending {
      long long k;
      int slot;
    };
    std::deque<Pending> pending;
    bool stopped = false;
    HostTimer clock;
    // Reads the oldest pending check (waiting for it when `wait`); false when not ready.
    auto take = [&](bool wait) {
      const Pending f = pending.front();
      if (wait) {
        TALLY_CUDA_TRY(cudaEventSynchronize(events_[f.slot]));
      } else {
        const cudaError_t q = cudaEventQuery(events_[f.slot]);
        if (q == cudaErrorNotReady) return false;
        TALLY_CUDA_TRY(q);
      }
      pending.pop_front();
      const volatile CheckSlot& s = h_slots_[f.slot];
      const long long iteration = s.iteration;
      const double residual = s.residual;
      const int stop = s.stop;
      if (iteration != f.k) throw Error("heat2d: residual slot of sweep " + std::to_string(f.k) + " not written");
      r.check_iteration.push_back(f.k);
      r.check_residual.push_back(residual);
      r.final_residual = residual;
      if (progress) progress(f.k, residual, clock.seconds());
      if (stop != running) stopped = true;
      return true;
    };

    state_.fill_bytes(0, stream_);
    EventTimer timer;
    timer.start(stream_);
    long long checks = 0;
    for (long long k = 1; k <= rule.last && !stopped; ++k) {
      const int src = cur_ ^ static_cast<int>((k - 1) & 1);
      SweepArgs<T> a{pitch_, p_.nx, rows_, 0, rows_, -1, c_, cell_.data(), ticket_.data(), state_.data(), nullptr, k, rule.tol};
      const dim3 block(tile_lanes, static_cast<unsigned>(warps_));
      if (ranks_) {
        if (rule.is_check(k)) {
          const int slot = static_cast<int>(checks++ % slots);
          h_slots_[slot].iteration = -1;
          sweep_ranks(a, u_[src].data(), u_[src ^ 1].data(), true);
          ranks_->allreduce<Max, double>(std::span<const double>(res_.data(), 1), std::span<double>(res_.data(), 1),
                                         reduce::Memory::device, stream_);
          publish_global<<<1, 1, 0, stream_>>>(res_.data(), state_.data(), d_slots_ + slot, k, rule.tol);
          TALLY_CHECK_LAUNCH();
          TALLY_CUDA_TRY(cudaEventRecord(events_[slot], stream_));
          pending.push_back({k, slot});
        } else {
          sweep_ranks(a, u_[src].data(), u_[src ^ 1].data(), false);
        }
      } else if (rule.is_check(k)) {
        const int slot = static_cast<int>(checks++ % slots);
        a.slot = d_slots_ + slot;
        h_slots_[slot].iteration = -1;
        checked_<<<grid_, block, 0, stream_>>>(
            u_[src].data(), u_[src ^ 1].data(), a);
        TALLY_CHECK_LAUNCH();
        TALLY_CUDA_TRY(cudaEventRecord(events_[slot], stream_));
        pending.push_back({k, slot});
      } else {
        unchecked_<<<grid_, block, 0, stream_>>>(
            u_[src].data(), u_[src ^ 1].data(), a);
        TALLY_CHECK_LAUNCH();
      }
      // Read what is ready; wait only when too much is queued beyond the oldest unread check. Across
      // ranks only the waits: they come at the same sweeps on every rank, so every rank sees the
      // stop after the same sweep and enqueues the same collectives.
      while (!pending.empty() && !stopped) {
        const bool must_wait = k - pending.front().k >= lookahead_sweeps || pending.size() >= slots / 2;
        if ((ranks_ && !must_wait) || !take(must_wait)) break;
      }
    }
    if (ranks_) TALLY_CUDA_TRY(cudaStreamWaitEvent(stream_, halo_done_, 0));  // the last exchange counts
    timer.stop(stream_);
    TALLY_CUDA_TRY(cudaStreamSynchronize(stream_));
    while (!pending.empty() && !stopped) take(true);
    r.solve_s = timer.elapsed_s();

    DeviceState st{};
    TALLY_CUDA_TRY(cudaMemcpy(&st, state_.data(), sizeof st, cudaMemcpyDeviceToHost));
    r.iterations = st.done;
    r.status = st.stop == stop_diverged ? Status::diverged : st.stop == stop_converged ? Status::converged : rule.at_last;
    if (r.check_iteration.empty() || r.check_iteration.back() != r.iterations)
      throw Error("heat2d: the device stopped at sweep " + std::to_string(r.iterations) +
                  " but its last check seen was another");
    cur_ ^= static_cast<int>(r.iterations & 1);
    return r;
  }

 private:
  /// One sweep across ranks: the boundary rows, their exchange on the halo stream, the rows between.
  /// Checked: this rank's residual in res_[0]. The next sweep's kernels wait for the exchange.
  void sweep_ranks(SweepArgs<T> a, const T* u, T* v, bool check) {
    const long long last = rows_ - 2;  // the block's interior rows: 1..last
    const dim3 block(tile_lanes, static_cast<unsigned>(warps_));
    const Kernel kernel = check ? checked_ : unchecked_;
    TALLY_CUDA_TRY(cudaStreamWaitEvent(stream_, halo_done_, 0));  // u's halo rows have arrived
    // Rows 1 and last (one row when they coincide, rows 1 and 2 when nothing lies between).
    a.j0 = 1;
    a.rows = 1;
    a.jb = last > 1 ? last : -1;
    a.partial_out = res_.data() + (last > 2 ? 1 : 0);
    kernel<<<dim3(grid_.x, last > 1 ? 2 : 1), block, 0, stream_>>>(u, v, a);
    TALLY_CHECK_LAUNCH();
    TALLY_CUDA_TRY(cudaEventRecord(boundary_done_, stream_));
    TALLY_CUDA_TRY(cudaStreamWaitEvent(halo_stream_, boundary_done_, 0));
    // The rows between, enqueued before the exchange: the host-staged exchange waits for the boundary
    // rows on the host at its start. On the GPU the exchange's kernel (higher priority) still starts
    // as soon as the boundary rows are done.
    if (last > 2) {
      a.j0 = 2;
      a.rows = last - 2;
      a.jb = -1;
      a.partial_out = res_.data();
      a.partial_in = res_.data() + 1;
      const long long most_y = std::max<long long>(1, a.rows / 4);
      kernel<<<dim3(grid_.x, static_cast<unsigned>(std::min<long long>(grid_.y, most_y))), block, 0, stream_>>>(u, v, a);
      TALLY_CHECK_LAUNCH();
    }
    auto row = [&](long long j) { return std::span<T>(v + j * pitch_, static_cast<std::size_t>(p_.nx)); };
    auto halo = ranks_->start_exchange<T>(row(1), row(0), row(last), row(last + 1), reduce::Memory::device, halo_stream_);
    halo.wait();  // NCCL: returns at once; host-staged: the rows travel now, the copies back go on the stream
    TALLY_CUDA_TRY(cudaEventRecord(halo_done_, halo_stream_));
  }

  Problem p_;
  Coeffs<T> c_;
  const reduce::Comm* ranks_;  // several ranks; nullptr: one (today's path, no exchange)
  long long rows_;             // rows held: the whole field, or the block with its halo rows
  bool async_ = true;  // which sweep kernel
  using Kernel = void (*)(const T*, T*, SweepArgs<T>);
  Kernel checked_ = nullptr, unchecked_ = nullptr;  // its variants with and without the residual
  int warps_ = 4;      // its block's warps
  long long pitch_ = 0;
  dim3 grid_;
  DeviceBuffer<T> u_[2];
  int cur_ = 0;  // which buffer holds the current field
  DeviceBuffer<dev::select_key_t<T>> cell_;
  DeviceBuffer<unsigned int> ticket_;
  DeviceBuffer<DeviceState> state_;
  cudaStream_t stream_ = nullptr;
  cudaStream_t halo_stream_ = nullptr;  // several ranks: the halo exchange
  cudaEvent_t boundary_done_ = nullptr, halo_done_ = nullptr;
  DeviceBuffer<double> res_;
  CheckSlot* h_slots_ = nullptr;
  CheckSlot* d_slots_ = nullptr;
  cudaEvent_t events_[slots] = {};
};

}  // namespace

template <class T>
std::unique_ptr<Solver<T>> make_cuda_solver(const Problem& p, const SolverOptions& o) {
  return std::make_unique<CudaSolver<T>>(p, o);
}
template std::unique_ptr<Solver<float>> make_cuda_solver<float>(const Problem&, const SolverOptions&);
template std::unique_ptr<Solver<double>> make_cuda_solver<double>(const Problem&, const SolverOptions&);

double cuda_copy_bandwidth_gbs(std::int64_t bytes, int repeats, int device) {
  TALLY_CUDA_TRY(cudaSetDevice(device));
  return tally::copy_bandwidth_gbs(static_cast<std::size_t>(bytes), repeats);
}

}  // namespace tally::heat2d
