#pragma once
// The CPU backend's work-splitting constants: one policy per engine (as tuning_cuda.hpp for CUDA).
// Every engine cuts its work by the problem alone, never by the thread count, so a result does not
// depend on OMP_NUM_THREADS; the cut and the lanes are part of the summation order, so a new value
// is a new set of floating-point bits (recorded again in data/, tests/checksums). The same values
// for every instruction set (src/cpu/isa.hpp): only the vector width differs between those builds.

#include <cstdint>

namespace tally::reduce::detail {

namespace tuning {

/// How every CPU engine cuts a long reduction into tasks.
struct TasksCpu {
  static constexpr std::int64_t grain = std::int64_t{1} << 14;         ///< elements: least work worth a task
  static constexpr std::int64_t target_tasks = 256;                    ///< tasks a long reduction is cut into
  static constexpr std::int64_t serial_below = std::int64_t{1} << 16;  ///< elements: below this, no thread team
};

/// The ordinary reductions (src/cpu/reduce_cpu.cpp).
struct ReduceCpu : TasksCpu {
  static constexpr int lanes = 16;                      ///< interleaved accumulators: 4 SSE registers of floats
                                                        ///< hide the add latency
  static constexpr std::int64_t col_block = 2048;       ///< outer family: columns a task (8-16 KB of partials)
  static constexpr std::int64_t row_wise_block = 2048;  ///< short strided segments: outputs a task
};

/// The exact sum and dot product (src/cpu/exact_cpu.cpp, exact_dot_cpu.cpp).
struct ExactCpu : TasksCpu {
  static constexpr int lanes = 16;               ///< filters a task (hi and lo: 4 AVX2 or 2 AVX-512 registers)
  static constexpr std::int64_t short_seg = 64;  ///< segments up to this long: one scalar filter, no accumulator
  static constexpr int col_block = 64;           ///< outer family: columns a task (a filter and accumulator each)
  static constexpr std::int64_t bin_min = 256;   ///< runs shorter than this: the filters alone, not binned
  static constexpr std::int64_t dot_chunk = std::int64_t{1} << 15;  ///< the dot product's scheduling unit
  static constexpr int dot_ways = 4;                                ///< the dot product's filters a thread
};

/// The generic reducers (detail/generic.hpp).
struct GenericCpu : TasksCpu {
  static constexpr int batch = 16;  ///< elements a pairwise tree: kept in registers, MeanVar's counts constant
};

/// Segmented reductions (detail/segmented_generic.hpp).
struct SegmentedCpu : TasksCpu {
  static constexpr std::int64_t long_seg = std::int64_t{1} << 15;  ///< longer segments: chunks over the threads
  static constexpr int lanes = 8;                                  ///< interleaved accumulators of a segment
  static constexpr std::int64_t seg_block = 256;                   ///< segments a parallel-loop iteration
};

}  // namespace tuning

// The policies the CPU engines are compiled with.
using ReduceCpuPolicy = tuning::ReduceCpu;
using ExactCpuPolicy = tuning::ExactCpu;
using GenericCpuPolicy = tuning::GenericCpu;
using SegmentedCpuPolicy = tuning::SegmentedCpu;

}  // namespace tally::reduce::detail
