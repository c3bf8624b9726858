#pragma once
// heat2d's launch and loop constants, both modes and both backends in one place, one line of reason
// each; the measurements behind them: BENCHMARKS.md (heat2d). None of them changes a result's bits:
// the sweeps' arithmetic is per point, the residual a Max (exact in any order), the implicit mode's
// dot products exact. Only the speed.
#include <cstdint>

namespace tally::heat2d::tuning {

// ---- explicit mode, CUDA (sweep_kernels.cuh, sweep_persistent.cuh, solver_cuda.cu) -------------------
/// async: 8 warps side by side (4 KiB of each row), 10 ring rows: 7 rows in flight a lane for 40 KiB of
/// shared memory a block.
inline constexpr int async_warps = 8, ring_rows = 10;
/// registers: 8 warps side by side, 4 rows queued a lane, 2 blocks an SM (up to 128 registers); the
/// fastest of the shapes measured (fewer warps a block, deeper queues).
inline constexpr int registers_warps = 8, queue_rows = 4, registers_blocks_sm = 2;
/// persistent: the registers kernel's blocks (4 warps x 4 blocks an SM measured the same).
inline constexpr int persistent_warps = 8, persistent_blocks_sm = 2;
/// blocked (t sweeps a pass): 8 warps, 2 blocks an SM, 4 rows of the field loaded ahead in registers.
inline constexpr int blocked_warps = 8, blocked_blocks_sm = 2, blocked_queue = 4;
/// Residual slots in mapped host memory: the checks the host may leave unread (half of them at most).
inline constexpr int check_slots = 128;
/// Launches queued beyond the oldest unread check: enough to hide the host's reads, few enough that a
/// stop is seen soon.
inline constexpr std::int64_t lookahead_launches = 16;
/// persistent: sweeps a launch (its boundary, where the whole GPU drains, comes once in so many) and
/// launches queued beyond the oldest unread check.
inline constexpr std::int64_t chain_sweeps = 32, chain_lookahead = 3;
/// Across ranks, the rows between the boundary rows in two waves of the registers kernel's blocks: in
/// one wave no block ends before the sweep does, so the exchange's and the residual's NCCL kernels
/// found no free SM slot and the next sweep waited for them (four waves measured as two).
inline constexpr long long rank_interior_waves = 2;
/// --sweeps-per-pass auto: the deepest pass that pays (the largest t up to it dividing --check-every).
inline constexpr int cuda_preferred_sweeps_per_pass = 4;

// ---- explicit mode, CPU (solver_cpu.cpp) ------------------------------------------------------------
/// A sweep over fewer points runs on one thread: the parallel region would cost more than the sweep.
inline constexpr std::int64_t cpu_parallel_points = 32768;
/// --sweeps-per-pass auto on the CPU: a pass of 8 keeps each band's rows in cache.
inline constexpr int cpu_preferred_sweeps_per_pass = 8;

// ---- implicit mode, CUDA (implicit/kernel_blocks.cuh, implicit/engine_cuda.cu) ----------------------
/// A block: 32 x 8 threads, each thread a column of a strip of 4 rows (one jac_block block: the strip
/// is kJacBlock rows, which the kernels assert).
inline constexpr int implicit_tile_x = 32, implicit_warps = 8, implicit_strip = 4;
/// Iterations enqueued between two looks at the solve's state: the host never waits a chunk's end.
inline constexpr long long implicit_chunk = 32;
/// Blocked Chebyshev (implicit/cheby_blocked.cuh): a thread keeps 2 columns x 4 rows of the region in
/// registers (a region of 64 x 32 cells), 2 blocks an SM (up to 128 registers a thread, no spills).
inline constexpr int implicit_cheby_rows = 4, implicit_cheby_blocks_sm = 2;
/// --cheby-steps-per-pass auto on CUDA: 5, the deepest pass (a step moves 11 bytes a cell from memory
/// instead of 56) and the fastest of 1, 2, 5 (BENCHMARKS.md, heat2d / implicit); t must divide 10,
/// Chebyshev's test interval.
inline constexpr int implicit_cheby_auto_steps = 5;

}  // namespace tally::heat2d::tuning
