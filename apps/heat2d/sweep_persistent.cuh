#pragma once
// heat2d's persistent sweep kernel (--cuda-kernel persistent, one rank, one sweep a pass): one
// cooperative launch runs a chunk of sweeps k0..k1, each sweep the registers kernel's strip pass
// (one read and one write of the field, the same bits), without a grid-wide barrier between sweeps.
// A block starts sweep m as soon as its eight neighbouring blocks (the only ones whose rows and end
// lanes' halo columns it reads, and the only ones that read what it writes) have finished sweep
// m - 1, so the GPU never drains between sweeps: no launch gap, no tail, no pipeline ramp of a
// whole grid (the per-sweep fixed cost that keeps the one-launch-a-sweep kernels further from the
// copy bandwidth on grids of a few waves; BENCHMARKS.md, heat2d).
//
// The stop stays exact, as across ranks (sweep_kernels.cuh, stopped()): sweep m may overwrite only
// the field of sweep m - 2, so a block waits before sweep m for the verdicts of the checks up to
// m - 2 (published in order by each check's last block, in `published`) and does nothing from the
// first sweep two past a stop: every block runs exactly the same sweeps (no block can wait for a
// neighbour that left), the field of the stopping sweep survives, and its number is stop_at. The
// residual of each checked sweep is the library's selecting gang max, through one of two cells
// (sweep parity): a cell is re-armed by its last block before the verdict that any later user of
// it waits for. Included by solver_cuda.cu alone (it defines a kernel).
#include <cuda/atomic>

#include "sweep_kernels.cuh"

namespace tally::heat2d::kernels {

// Its blocks: warps side by side as in the registers kernel (tuning::persistent_warps).
using tuning::persistent_blocks_sm;
using tuning::persistent_warps;

template <class T>
struct ChainArgs {
  SweepArgs<T> a;  // the field's shape and coefficients, the state; a.k, a.slot and the cell unused
  T* buf[2];
  int cur;                      // buf[cur] holds sweep `base`'s field
  long long base;               // the sweeps done before this solve (counters count from it)
  long long k0, k1;             // this launch's sweeps
  long long check_every, last;  // the stop rule's checked sweeps: multiples of check_every, and last
  CheckSlot* slots;             // the ring of residual slots (mapped host memory)
  int nslots, slot0;            // ... and the slot of the first check in k0..k1
  long long* progress;          // per block: sweeps done since base (0 at the solve's start)
  long long* published;         // the latest check (since base) whose verdict is out
  dev::select_key_t<T>* cells;  // [2]: the gang max's cell and ticket, by the sweep's parity
  unsigned int* tickets;
};

__device__ __forceinline__ long long load_acquire(const long long* p) {
  long long v;
  asm volatile("ld.acquire.gpu.global.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void store_release(long long* p, long long v) {
  asm volatile("st.release.gpu.global.b64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

/// Spins until *p >= want (true), or until a stop at or before sweep `before` is seen (false): then
/// what it waits for may never come (the sweeps after the stop do nothing; a launch queued after it
/// waits for sweeps that never ran), and the sweep is skipped anyway. The wait is otherwise for
/// blocks a sweep behind (microseconds); one of 20 s can only be a broken invariant, and traps (the
/// launch fails with an error) rather than hangs.
__device__ __forceinline__ bool wait_at_least(const long long* p, long long want, const long long* stop_at,
                                              long long before) {
  if (load_acquire(p) >= want) return true;
  unsigned long long t0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  while (load_acquire(p) < want) {
    const long long at = load_acquire(stop_at);
    if (at > 0 && at <= before) return false;
    __nanosleep(64);
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (t - t0 > 20'000'000'000ull) __trap();
  }
  return true;
}

template <class T>
__global__ void __launch_bounds__(tile_lanes* persistent_warps, persistent_blocks_sm)
    sweep_persistent(const ChainArgs<T> c) {
  __shared__ dev::GangStorage<T> tmp;
  __shared__ bool skip;
  const int tid = static_cast<int>(dev::block_thread_rank());
  const long long me = static_cast<long long>(blockIdx.y) * gridDim.x + blockIdx.x;
  SweepArgs<T> a = c.a;
  const Strip<T> st(a);
  for (long long m = c.k0; m <= c.k1; ++m) {
    const long long rel = m - c.base;  // 1 for the solve's first sweep
    // Skipped exactly when a check at or before m - 2 stopped the run: once the verdicts up to the
    // last check <= m - 2 are in, stop_at says so; a wait cut short by such a stop skips too. The
    // neighbours' waits may be cut short only by such a stop, which thread 0 then sees as well.
    const long long* stop_at = &a.d_state->stop_at;
    if (tid == 0) {
      const long long latest = (m - 2) / c.check_every * c.check_every;  // the last check <= m - 2
      bool in = true;
      if (latest > c.base) in = wait_at_least(c.published, latest - c.base, stop_at, m - 2);
      const long long at = load_acquire(stop_at);
      skip = !in || (at > 0 && at <= m - 2);
    } else if (tid <= 9 && tid != 5) {  // threads 1..9 but 5: the 3 x 3 neighbourhood but this block
      const long long bx = static_cast<long long>(blockIdx.x) + (tid - 1) % 3 - 1;
      const long long by = static_cast<long long>(blockIdx.y) + (tid - 1) / 3 - 1;
      if (bx >= 0 && bx < gridDim.x && by >= 0 && by < gridDim.y)
        (void)wait_at_least(c.progress + by * gridDim.x + bx, rel - 1, stop_at, m - 2);
    }
    __syncthreads();   // the acquires above reach the whole block
    if (skip) return;  // the same for every block: a stop at or before m - 2
    const T* u = c.buf[c.cur ^ static_cast<int>((rel - 1) & 1)];
    T* v = c.buf[c.cur ^ static_cast<int>(rel & 1)];
    T local = Max::identity<T>();
    const bool check = m % c.check_every == 0 || m == c.last;
    if (check) stream_strip<T, true, true>(st, a, u, v, local);
    else stream_strip<T, false, true>(st, a, u, v, local);
    __syncthreads();  // the block's rows are written: the neighbours may go on before the residual
    if (tid == 0) {
      if (me == 0) a.d_state->done = m;
      __threadfence();
      store_release(c.progress + me, rel);
    }
    if (check) {
      T r;
      if (dev::gang_reduce_select<Max>(local, c.cells + (rel & 1), c.tickets + (rel & 1), r, tmp) && tid == 0) {
        // The checks up to m - 1 have published (the last block of m - 1 published before it joined
        // this ticket): after a stop, the checks still running publish nothing.
        if (__ldcg(&a.d_state->stop) == running) {
          const long long n = m / c.check_every - (c.k0 - 1) / c.check_every + (m == c.last && m % c.check_every != 0);
          publish(static_cast<double>(r), a.d_state, c.slots + (c.slot0 + n - 1) % c.nslots, m, a.tol);
        }
        __threadfence();
        store_release(c.published, rel);
      }
    }
  }
}

}  // namespace tally::heat2d::kernels
