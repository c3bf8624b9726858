// CUDA backend: one kernel per sweep that updates the field and, on checked sweeps, computes the
// residual max |u_new - u| in the same pass with the library's gang reduction (the last block to
// finish writes it). The host never waits for the sweep it just launched:
//  * the residual of each checked sweep goes to a slot of a ring in mapped pinned host memory, and
//    an event after that sweep tells the host when the slot is valid; the host reads it while the
//    next sweeps are already queued (up to `lookahead_launches` ahead);
//  * the last block also sets a device-side stop flag (converged or diverged); every later sweep
//    already queued reads it first and returns at once, so the field stops exactly at the sweep
//    that converged and the iteration count equals the CPU backend's.
// Across ranks (solve() with ranks_) a sweep is: the block's first and last rows (one launch),
// their exchange with the neighbours on a second stream (NCCL, or host-staged when ranks share a
// GPU) while the rows between are updated on the main stream; on checked sweeps the local maximum
// goes through the cross-rank Max on the device on a third stream, and a one-thread kernel
// publishes it (slot, stop flag) as the last block does on one rank, while the next sweep already
// runs: it writes the other buffer, so sweep k's field survives it, and sweep k + 2 waits for
// sweep k's verdict (a stop at k makes every sweep from k + 2 return at once; the result is k's).
// The host reads checks only at fixed distances (no polling), so every rank enqueues the same
// sweeps and collectives.
// With --sweeps-per-pass t > 1 a launch is a pass of up to t sweeps (sweep_blocked), checked at its
// last sweep; "sweep" above then reads "launch". Across ranks such a pass covers the own rows in one
// launch and is followed by the exchange of t rows a side (the next launch waits for it).
//
// The sweep kernels are in sweep_kernels.cuh.
#include <cuda_runtime.h>

#include <algorithm>
#include <deque>
#include <vector>

#include "solver.hpp"
#include "sweep_kernels.cuh"
#include "sweep_persistent.cuh"
#include "tally/common/copy_bandwidth.cuh"
#include "tally/common/cuda_check.cuh"
#include "tally/common/device_buffer.cuh"
#include "tally/common/device_timer.cuh"
#include "tally/common/error.hpp"
#include "tally/common/timing.hpp"
#include "tally/reduce/ranks.hpp"

namespace tally::heat2d {
namespace {

using namespace kernels;

using tuning::chain_lookahead;
using tuning::chain_sweeps;
using tuning::lookahead_launches;
using tuning::rank_interior_waves;
constexpr int slots = tuning::check_slots;  // the ring of residual slots in mapped host memory
// A persistent launch holds at most chain_sweeps checks: with slots / 2 unread at most, the ring
// never wraps onto an unread slot.
static_assert(chain_sweeps <= slots / 2);

template <class T>
using Kernel = void (*)(const T*, T*, SweepArgs<T>);

/// sweep_blocked<T, s, Check> for s in 2..max_sweeps_per_pass.
template <class T, bool Check, int S = 2>
Kernel<T> blocked_kernel(int s) {
  if constexpr (S > max_sweeps_per_pass) {
    return nullptr;
  } else {
    if (s == S) return sweep_blocked<T, S, Check>;
    return blocked_kernel<T, Check, S + 1>(s);
  }
}
template <class T>
int blocked_width(int s) {  // columns a warp stores
  constexpr int V = dev::vec16<T>;
  return tile_lanes * V - 2 * ((s + V - 1) / V * V);
}

template <class T>
class CudaSolver final : public Solver<T> {
 public:
  CudaSolver(const Problem& p, const SolverOptions& o)
      : p_(p), c_(coeffs<T>(p)), dec_(solver_decomposition(p, o)), ranks_(dec_.several() ? o.comm : nullptr),
        t_(o.sweeps_per_pass), deepest_(deepest_pass(dec_)),
        // Across ranks the halos are as deep as the deepest pass this solver may run (t = 1: one row).
        lay_(halo_layout(dec_, t_ == 1 || !ranks_ ? 1 : deepest_)), rows_(lay_.rows()) {
    (void)resolve_sweeps_per_pass(t_, std::max(t_, 1), reduce::Backend::cuda, deepest_);  // the range and the ranks
    if (o.cuda_kernel != "async" && o.cuda_kernel != "registers" && o.cuda_kernel != "persistent")
      throw InputError("--cuda-kernel '" + o.cuda_kernel + "': expected async, registers or persistent");
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
    TALLY_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, checked_, tile_lanes * warps_, 0));
    const long long target = static_cast<long long>(sms) * std::max(per_sm, 1);
    const long long grid_x = (tiles_x + warps_ - 1) / warps_;
    const long long most_y = std::max<long long>(1, rows_ / 4);  // >= 4 rows a strip
    grid_ = dim3(static_cast<unsigned>(grid_x),
                 static_cast<unsigned>(std::clamp<long long>(target / grid_x, 1, std::min<long long>(most_y, 65535))));
    // The persistent kernel (one rank, t = 1): the registers kernel's grid, all of it resident at
    // once (a cooperative launch; its blocks wait for each other). A grid too wide for one wave, or
    // several ranks: the registers kernel, one launch a sweep.
    if (o.cuda_kernel == "persistent" && !ranks_) {
      chain_warps_ = static_cast<int>(std::min<long long>(persistent_warps, tiles_x));
      int chain_sm = 0;
      TALLY_CUDA_TRY(
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&chain_sm, sweep_persistent<T>, tile_lanes * chain_warps_, 0));
      const long long resident = static_cast<long long>(sms) * chain_sm,
                      chain_x = (tiles_x + chain_warps_ - 1) / chain_warps_;
      const dim3 g(static_cast<unsigned>(chain_x), static_cast<unsigned>(std::clamp<long long>(
                                                       resident / chain_x, 1, std::min<long long>(most_y, 65535))));
      if (static_cast<long long>(g.x) * g.y <= resident) {
        chain_grid_ = g;
        chain_ = true;
        chain_counters_ = DeviceBuffer<long long>(1 + static_cast<std::size_t>(g.x) * g.y);
      }
    }
    // The blocked kernels: one wave of 8-warp blocks; strips of at least 8 S rows, so that the S rows
    // each strip recomputes above and below stay a small part of it.
    for (int s = 2; s <= max_sweeps_per_pass; ++s) {
      blocked_[s][0] = blocked_kernel<T, false>(s);
      blocked_[s][1] = blocked_kernel<T, true>(s);
      int bs_sm = 0;
      TALLY_CUDA_TRY(
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bs_sm, blocked_[s][1], tile_lanes * blocked_warps, 0));
      const long long bx = ((p.nx + blocked_width<T>(s) - 1) / blocked_width<T>(s) + blocked_warps - 1) / blocked_warps;
      const long long by =
          std::clamp<long long>(static_cast<long long>(sms) * std::max(bs_sm, 1) / bx, 1,
                                std::min<long long>(std::max<long long>(1, (rows_ - 2) / (8 * s)), 65535));
      blocked_grid_[s] = dim3(static_cast<unsigned>(bx), static_cast<unsigned>(by));
    }

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
    cell_ = DeviceBuffer<dev::select_key_t<T>>(2);  // [1]: the persistent kernel's odd sweeps
    const dev::select_key_t<T> cell0[2] = {dev::select_identity_key<Max, T>(), dev::select_identity_key<Max, T>()};
    TALLY_CUDA_TRY(cudaMemcpy(cell_.data(), cell0, sizeof cell0, cudaMemcpyHostToDevice));
    ticket_ = DeviceBuffer<unsigned int>(2);
    state_ = DeviceBuffer<DeviceState>(1);
    TALLY_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    ticket_.fill_bytes(0, stream_);
    if (ranks_) {
      // The halo stream at the highest priority: its transfers' blocks start as soon as the
      // boundary rows are done, ahead of the interior's blocks.
      int least = 0, greatest = 0;
      TALLY_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest));
      TALLY_CUDA_TRY(cudaStreamCreateWithPriority(&halo_stream_, cudaStreamNonBlocking, greatest));
      TALLY_CUDA_TRY(cudaStreamCreateWithPriority(&res_stream_, cudaStreamNonBlocking, greatest));
      for (auto* ev : {&boundary_done_, &halo_done_, &swept_, &res_done_})
        TALLY_CUDA_TRY(cudaEventCreateWithFlags(ev, cudaEventDisableTiming));
      // Per sweep parity: [0] this rank's, then the global residual; [1] the boundary rows'.
      res_ = DeviceBuffer<double>(4);
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
    for (auto st : {halo_stream_, res_stream_})
      if (st) cudaStreamDestroy(st);
    for (auto ev : {boundary_done_, halo_done_, swept_, res_done_})
      if (ev) cudaEventDestroy(ev);
  }
  CudaSolver(const CudaSolver&) = delete;
  CudaSolver& operator=(const CudaSolver&) = delete;

  void set_field(std::span<const T> u) override {
    for (auto& b : u_) {
      b.fill_bytes(0, stream_);  // the padding: never updated, but read as a neighbour of the last column
      TALLY_CUDA_TRY(cudaMemcpy2DAsync(b.data() + (lay_.first() - 1) * pitch_, pitch_ * sizeof(T), u.data(),
                                       p_.nx * sizeof(T), p_.nx * sizeof(T), lay_.own + 2, cudaMemcpyHostToDevice,
                                       stream_));
    }
    TALLY_CUDA_TRY(cudaStreamSynchronize(stream_));
    cur_ = 0;
  }

  void get_field(std::span<T> u) override {
    TALLY_CUDA_TRY(cudaMemcpy2DAsync(u.data(), p_.nx * sizeof(T), u_[cur_].data() + (lay_.first() - 1) * pitch_,
                                     pitch_ * sizeof(T), p_.nx * sizeof(T), lay_.own + 2, cudaMemcpyDeviceToHost,
                                     stream_));
    TALLY_CUDA_TRY(cudaStreamSynchronize(stream_));
  }

  SolveResult solve(const StopRule& rule, const ProgressFn& progress) override {
    SolveResult r;
    // t sweeps a launch (passes end at multiples of t, and at the last sweep); across ranks t is at
    // most the smallest block's rows (deepest_).
    const int t = resolve_sweeps_per_pass(t_, rule.check_every, reduce::Backend::cuda, deepest_);
    struct Pending {
      long long k;
      int slot;
      long long launch = 0;
      int ev = -1;  // the event that marks the slot valid: events_[ev], or events_[slot] when -1
    };
    std::deque<Pending> pending;
    bool stopped = false;
    HostTimer clock;
    // Reads the oldest pending check (waiting for it when `wait`); false when not ready.
    auto take = [&](bool wait) {
      const Pending f = pending.front();
      if (wait) {
        TALLY_CUDA_TRY(cudaEventSynchronize(events_[f.ev < 0 ? f.slot : f.ev]));
      } else {
        const cudaError_t q = cudaEventQuery(events_[f.ev < 0 ? f.slot : f.ev]);
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
    if (chain_ && t == 1) return solve_chained(rule, take, pending, stopped, r);
    if (ranks_ && !connected_) connect_ranks();
    EventTimer timer;
    timer.start(stream_);
    if (ranks_ && t > 1) exchange(u_[cur_].data(), t, stream_);  // set_field filled one halo row a side
    long long checks = 0;
    Pending last_check{0, 0}, prev_check{0, 0};  // several ranks: the two latest checks
    std::vector<long long> ends;                 // each launch's last sweep
    long long gated = 0;                         // the latest check the main stream waits for
    // One rank: a stop request (a signal) ends the enqueueing after the next checked sweep not yet
    // enqueued; the sweeps before it are already queued, so the field is exactly that sweep's.
    long long end = rule.last;
    for (long long k0 = rule.first + 1; k0 <= end && !stopped;) {
      if (!ranks_ && end == rule.last && rule.wants_stop())
        end = std::min<long long>(rule.last, (k0 + rule.check_every - 1) / rule.check_every * rule.check_every);
      const long long len = pass_length(k0, end, t), k = k0 + len - 1;  // this launch: sweeps k0..k
      k0 = k + 1;
      const long long launch = static_cast<long long>(ends.size());
      ends.push_back(k);
      const int src = cur_ ^ static_cast<int>(launch & 1);
      SweepArgs<T> a{pitch_,       p_.nx,          rows_,         0,       rows_, -1,      c_,
                     cell_.data(), ticket_.data(), state_.data(), nullptr, k,     rule.tol};
      dim3 grid = grid_, block(tile_lanes, static_cast<unsigned>(warps_));
      Kernel<T> checked = checked_, unchecked = unchecked_;
      if (len > 1) {  // the blocked kernel over the own rows
        checked = blocked_[len][1];
        unchecked = blocked_[len][0];
        grid = blocked_grid_[len];
        block = dim3(tile_lanes, blocked_warps);
        a.j0 = lay_.first();
        a.rows = lay_.own;
      }
      if (ranks_) {
        // Launch L waits for the verdict of the latest check up to launch L - 2 (and so of all before it).
        const Pending* gate = last_check.k > 0 && last_check.launch <= launch - 2   ? &last_check
                              : prev_check.k > 0 && prev_check.launch <= launch - 2 ? &prev_check
                                                                                    : nullptr;
        if (gate && gate->k != gated) {
          TALLY_CUDA_TRY(cudaStreamWaitEvent(stream_, events_[gate->slot], 0));
          gated = gate->k;
        }
        a.lagged = true;
        a.lag_k = launch >= 2 ? ends[static_cast<std::size_t>(launch - 2)] : 0;
        double* res = res_.data() + 2 * (launch & 1);
        if (t == 1) {
          sweep_ranks(a, u_[src].data(), u_[src ^ 1].data(), rule.is_check(k), res);
        } else {
          // One launch over the own rows, then the t rows next to each neighbour to it (the next
          // launch waits for them); the residual is this rank's own rows' max.
          TALLY_CUDA_TRY(cudaStreamWaitEvent(stream_, halo_done_, 0));
          a.j0 = lay_.first();  // a pass of one sweep: the one-sweep kernel over the own rows
          a.rows = lay_.own;
          a.partial_out = res;
          (rule.is_check(k) ? checked : unchecked)<<<grid, block, 0, stream_>>>(u_[src].data(), u_[src ^ 1].data(), a);
          TALLY_CHECK_LAUNCH();
          exchange(u_[src ^ 1].data(), t, stream_);
        }
        if (rule.is_check(k)) {
          const int slot = static_cast<int>(checks++ % slots);
          h_slots_[slot].iteration = -1;
          // The cross-rank Max and its publication on their own stream, while the next sweep runs.
          TALLY_CUDA_TRY(cudaEventRecord(swept_, stream_));
          TALLY_CUDA_TRY(cudaStreamWaitEvent(res_stream_, swept_, 0));
          reduce::allreduce<Max, double>(*ranks_, std::span<const double>(res, 1), std::span<double>(res, 1),
                                         ranks::Memory::device, res_stream_);
          publish_global<<<1, 1, 0, res_stream_>>>(res, state_.data(), d_slots_ + slot, k, rule.tol);
          TALLY_CHECK_LAUNCH();
          TALLY_CUDA_TRY(cudaEventRecord(events_[slot], res_stream_));
          pending.push_back({k, slot, launch});
          prev_check = last_check;
          last_check = {k, slot, launch};
        }
      } else if (rule.is_check(k)) {
        const int slot = static_cast<int>(checks++ % slots);
        a.slot = d_slots_ + slot;
        h_slots_[slot].iteration = -1;
        checked<<<grid, block, 0, stream_>>>(u_[src].data(), u_[src ^ 1].data(), a);
        TALLY_CHECK_LAUNCH();
        TALLY_CUDA_TRY(cudaEventRecord(events_[slot], stream_));
        pending.push_back({k, slot, launch});
      } else {
        unchecked<<<grid, block, 0, stream_>>>(u_[src].data(), u_[src ^ 1].data(), a);
        TALLY_CHECK_LAUNCH();
      }
      // Read what is ready; wait only when too much is queued beyond the oldest unread check. Across
      // ranks only the waits: they come at the same sweeps on every rank, so every rank sees the
      // stop after the same sweep and enqueues the same collectives.
      while (!pending.empty() && !stopped) {
        const bool must_wait = launch - pending.front().launch >= lookahead_launches || pending.size() >= slots / 2;
        if ((ranks_ && !must_wait) || !take(must_wait)) break;
      }
    }
    if (ranks_) {  // the last exchange and the last verdict count
      TALLY_CUDA_TRY(cudaStreamWaitEvent(stream_, halo_done_, 0));
      TALLY_CUDA_TRY(cudaEventRecord(res_done_, res_stream_));
      TALLY_CUDA_TRY(cudaStreamWaitEvent(stream_, res_done_, 0));
    }
    timer.stop(stream_);
    TALLY_CUDA_TRY(cudaStreamSynchronize(stream_));
    while (!pending.empty() && !stopped) take(true);
    r.solve_s = timer.elapsed_s();

    conclude(rule, end, r);
    const auto done = std::find(ends.begin(), ends.end(), r.iterations);
    if (done == ends.end())
      throw Error("heat2d: the device stopped at sweep " + std::to_string(r.iterations) + ", no launch's end");
    cur_ ^= static_cast<int>((done - ends.begin() + 1) & 1);  // the launches run, each writing the other buffer
    return r;
  }

 private:
  /// The sweep the device stopped at and why (`end`: the last sweep enqueued); the host must have
  /// seen that sweep's check.
  void conclude(const StopRule& rule, long long end, SolveResult& r) {
    DeviceState st{};
    TALLY_CUDA_TRY(cudaMemcpy(&st, state_.data(), sizeof st, cudaMemcpyDeviceToHost));
    // Across ranks and in the persistent kernel one sweep may run past the stop.
    r.iterations = st.stop_at > 0 ? st.stop_at : st.done;
    r.status = st.stop == stop_diverged    ? Status::diverged
               : st.stop == stop_converged ? Status::converged
               : end < rule.last           ? Status::interrupted
                                           : rule.at_last;
    if (r.check_iteration.empty() || r.check_iteration.back() != r.iterations)
      throw Error("heat2d: the device stopped at sweep " + std::to_string(r.iterations) +
                  " but its last check seen was another");
  }

  /// One rank, one sweep a pass, the persistent kernel: launches of up to chain_sweeps sweeps, each
  /// polling the stop request before each of its sweeps as solve() does before each launch, so a
  /// request ends at the same checked sweep. The checks of a launch are read after its event. The
  /// device stops as the kernel's header says (a stop at k: sweep k + 1 may still run, on the other
  /// buffer); the result is sweep stop_at's field.
  template <class Take, class Queue>
  SolveResult solve_chained(const StopRule& rule, Take& take, Queue& pending, bool& stopped, SolveResult& r) {
    using Pending = typename Queue::value_type;
    chain_counters_.fill_bytes(0, stream_);  // progress and published count from this solve's start
    EventTimer timer;
    timer.start(stream_);
    const dim3 block(tile_lanes, static_cast<unsigned>(chain_warps_));
    long long end = rule.last, checks = 0, launch = 0;
    for (long long k0 = rule.first + 1; k0 <= end && !stopped; ++launch) {
      long long k1 = k0 - 1;
      while (k1 < end && k1 - k0 + 1 < chain_sweeps) {
        const long long k = k1 + 1;
        if (end == rule.last && rule.wants_stop())
          end = std::min<long long>(rule.last, (k + rule.check_every - 1) / rule.check_every * rule.check_every);
        k1 = k;
      }
      ChainArgs<T> c{};
      c.a = SweepArgs<T>{pitch_, p_.nx, rows_, 0, rows_, -1, c_, nullptr, nullptr, state_.data(), nullptr, 0, rule.tol};
      c.buf[0] = u_[0].data();
      c.buf[1] = u_[1].data();
      c.cur = cur_;
      c.base = rule.first;
      c.k0 = k0;
      c.k1 = k1;
      c.check_every = rule.check_every;
      c.last = rule.last;
      c.slots = d_slots_;
      c.nslots = slots;
      c.slot0 = static_cast<int>(checks % slots);
      c.published = chain_counters_.data();
      c.progress = chain_counters_.data() + 1;
      c.cells = cell_.data();
      c.tickets = ticket_.data();
      const std::size_t first_new = pending.size();
      for (long long k = k0; k <= k1; ++k)
        if (rule.is_check(k)) {
          const int slot = static_cast<int>(checks++ % slots);
          h_slots_[slot].iteration = -1;
          pending.push_back(Pending{k, slot, launch, -1});
        }
      void* args[] = {&c};
      TALLY_CUDA_TRY(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(sweep_persistent<T>), chain_grid_, block,
                                                 args, 0, stream_));
      TALLY_CHECK_LAUNCH();
      if (pending.size() > first_new) {  // one event for the launch's checks: its last check's
        const int ev = pending.back().slot;
        TALLY_CUDA_TRY(cudaEventRecord(events_[ev], stream_));
        for (std::size_t i = first_new; i < pending.size(); ++i) pending[i].ev = ev;
      }
      k0 = k1 + 1;
      while (!pending.empty() && !stopped) {
        const bool must_wait = launch - pending.front().launch >= chain_lookahead || pending.size() >= slots / 2;
        if (!take(must_wait)) break;
      }
    }
    timer.stop(stream_);
    TALLY_CUDA_TRY(cudaStreamSynchronize(stream_));
    while (!pending.empty() && !stopped) take(true);
    r.solve_s = timer.elapsed_s();

    conclude(rule, end, r);
    cur_ ^= static_cast<int>((r.iterations - rule.first) & 1);  // each sweep writes the other buffer
    return r;
  }

  /// One sweep across ranks: the boundary rows, their exchange on the halo stream, the rows between.
  /// Checked: this rank's residual in res[0] (res[1]: the boundary rows'). The next sweep's kernels
  /// wait for the exchange.
  void sweep_ranks(SweepArgs<T> a, const T* u, T* v, bool check, double* res) {
    const long long first = lay_.first(), last = lay_.end() - 1;  // the block's own rows: first..last
    const dim3 block(tile_lanes, static_cast<unsigned>(warps_));
    const Kernel<T> kernel = check ? checked_ : unchecked_;
    TALLY_CUDA_TRY(cudaStreamWaitEvent(stream_, halo_done_, 0));  // u's halo rows have arrived
    // Rows first and last (one row when they coincide, two when nothing lies between).
    a.j0 = first;
    a.rows = 1;
    a.jb = last > first ? last : -1;
    a.partial_out = res + (last > first + 1 ? 1 : 0);
    kernel<<<dim3(grid_.x, last > first ? 2 : 1), block, 0, stream_>>>(u, v, a);
    TALLY_CHECK_LAUNCH();
    TALLY_CUDA_TRY(cudaEventRecord(boundary_done_, stream_));
    TALLY_CUDA_TRY(cudaStreamWaitEvent(halo_stream_, boundary_done_, 0));
    // The rows between, enqueued before the exchange: the host-staged exchange waits for the boundary
    // rows on the host at its start. On the GPU the exchange's kernel (higher priority) still starts
    // as soon as the boundary rows are done.
    if (last > first + 1) {
      a.j0 = first + 1;
      a.rows = last - first - 1;
      a.jb = -1;
      a.partial_out = res;
      a.partial_in = res + 1;
      const long long most_y = std::min<long long>(std::max<long long>(1, a.rows / 4), 65535);
      const auto grid_y = static_cast<unsigned>(std::min<long long>(rank_interior_waves * grid_.y, most_y));
      kernel<<<dim3(grid_.x, grid_y), block, 0, stream_>>>(u, v, a);
      TALLY_CHECK_LAUNCH();
    }
    auto row = [&](long long j) { return std::span<T>(v + j * pitch_, static_cast<std::size_t>(p_.nx)); };
    auto halo = ranks_->start_exchange<T>(row(first), row(first - 1), row(last), row(last + 1), ranks::Memory::device,
                                          halo_stream_);
    halo.wait();  // NCCL: returns at once; host-staged: the rows travel now, the copies back go on the stream
    TALLY_CUDA_TRY(cudaEventRecord(halo_done_, halo_stream_));
  }

  /// NCCL connects to its peers at the first exchange and all-gather (lazily, by default): one of
  /// each before the first solve's timer, so that its time is the sweeps' (the connection costs
  /// seconds, several times a short solve). Collective: every rank's first solve, after the set-up they agreed on. The
  /// exchange sends the current field's boundary rows into its neighbours' halo rows, which hold
  /// those rows already.
  void connect_ranks() {
    exchange(u_[cur_].data(), 1, stream_);
    res_.fill_bytes(0, res_stream_);
    reduce::allreduce<Max, double>(*ranks_, std::span<const double>(res_.data(), 1), std::span<double>(res_.data(), 1),
                                   ranks::Memory::device, res_stream_);
    for (auto st : {stream_, halo_stream_, res_stream_}) TALLY_CUDA_TRY(cudaStreamSynchronize(st));
    connected_ = true;
  }

  /// Several ranks (passes of t > 1, and connect_ranks with n = 1): after the work on `after` so far,
  /// the n own rows of v next to each neighbour to it, its n into v's halo rows, on the halo stream
  /// (halo_done_ marks the end).
  void exchange(T* v, long long n, cudaStream_t after) {
    const long long js = lay_.first(), je = lay_.end();
    const bool prev = dec_.below() >= 0, next = dec_.above() >= 0;
    auto rows = [&](bool there, long long j) {  // rows j..j+n-1 (with their padding), or none
      return there ? std::span<T>(v + j * pitch_, static_cast<std::size_t>(n * pitch_)) : std::span<T>();
    };
    TALLY_CUDA_TRY(cudaEventRecord(boundary_done_, after));
    TALLY_CUDA_TRY(cudaStreamWaitEvent(halo_stream_, boundary_done_, 0));
    auto halo = ranks_->start_exchange<T>(rows(prev, js), rows(prev, js - n), rows(next, je - n), rows(next, je),
                                          ranks::Memory::device, halo_stream_);
    halo.wait();
    TALLY_CUDA_TRY(cudaEventRecord(halo_done_, halo_stream_));
  }

  Problem p_;
  Coeffs<T> c_;
  Decomposition dec_;         // this rank's rows and neighbours
  const ranks::Comm* ranks_;  // several ranks; nullptr: one (no exchange)
  int t_ = 1;                 // sweeps a pass asked for (0: auto)
  int deepest_ = 1;           // the deepest pass the ranks' blocks allow
  HaloLayout lay_;            // the rows held: own rows and halos (one rank: the whole field)
  long long rows_;            // = lay_.rows()
  bool async_ = true;         // which sweep kernel
  bool chain_ = false;        // the persistent kernel (one rank; t = 1 solves)
  bool connected_ = false;    // several ranks: connect_ranks() has run
  dim3 chain_grid_;
  int chain_warps_ = 8;
  DeviceBuffer<long long> chain_counters_;              // [0] the latest check published, then each block's sweeps done
  Kernel<T> checked_ = nullptr, unchecked_ = nullptr;   // its variants with and without the residual
  Kernel<T> blocked_[max_sweeps_per_pass + 1][2] = {};  // [s][checked]: s sweeps a launch
  dim3 blocked_grid_[max_sweeps_per_pass + 1];
  int warps_ = 4;  // its block's warps
  long long pitch_ = 0;
  dim3 grid_;
  DeviceBuffer<T> u_[2];
  int cur_ = 0;  // which buffer holds the current field
  DeviceBuffer<dev::select_key_t<T>> cell_;
  DeviceBuffer<unsigned int> ticket_;
  DeviceBuffer<DeviceState> state_;
  cudaStream_t stream_ = nullptr;
  cudaStream_t halo_stream_ = nullptr;  // several ranks: the halo exchange
  cudaStream_t res_stream_ = nullptr;   // and the cross-rank residual
  cudaEvent_t boundary_done_ = nullptr, halo_done_ = nullptr, swept_ = nullptr, res_done_ = nullptr;
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
