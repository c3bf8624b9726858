#pragma once
// matmul's output (output.cpp): the result file of a single run, written by the executable
// (driver.cpp) and the Python module (tally.matmul) alike, and the executable's JSON line and summary.
//   /           attributes app, m, n, k, precision, backend, levels, status, seed, repeats, warmup, a, b,
//               tolerance, split_k, exact (copy_bandwidth_gbs on the GPU; reference_nan, reference_inf
//               where the reference has NaN or infinities); C with --write-c
//   levels/<name>, cublas, cublas_tf32, eigen   each one's attributes (write_case)
//   timings     rank 0's seconds; ranks/ (write_ranks); provenance/, device/
#include <optional>
#include <string>
#include <vector>

#include "driver.hpp"
#include "tally/common/device_info.hpp"
#include "tally/common/h5.hpp"
#include "tally/common/provenance.hpp"

namespace tally::matmul::detail {

/// Rank 0, into a file just created (the caller commits it). `c`: C of the last level, written as /C
/// when not null; a_source, b_source: where A and B came from ("generated", FILE:/DATASET, ...).
template <class T>
void write_result(h5::Location& f, const Case& cs, const Options& o, Backend backend, const std::vector<T>* c,
                  const RanksReport& rr, const Provenance& prov, const std::optional<DeviceInfo>& dev,
                  const std::string& a_source, const std::string& b_source);
/// Each level's, cuBLAS's and Eigen's group of attributes under `where`.
void write_case(h5::Location& where, const Case& cs);
/// The group "ranks" (tally::write) with each rank's K slab of `s` (datasets part_begin, part_end).
void write_ranks(h5::Location& where, const RanksReport& rr, Shape s);
/// The single run's report on stdout (rank 0): the JSON line with --json, else the summary line
/// unless --quiet; on a failed check, what failed on stderr either way.
void print_report(const Case& cs, const Options& o, Backend backend, const RanksReport& rr);
/// printf's rendering of one number.
std::string fmt(const char* f, double x);

}  // namespace tally::matmul::detail
