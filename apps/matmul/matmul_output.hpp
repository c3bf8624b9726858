#pragma once
// matmul's result file of a single run (not --bench), written by the executable (driver.cpp) and the
// Python module (tally.matmul) alike (output.cpp):
//   /           attributes app, m, n, k, precision, backend, levels, status, seed, repeats, warmup, a, b,
//               tolerance, split_k, exact (copy_bandwidth_gbs on the GPU); C with --write-c
//   levels/<name>, cublas, eigen   each one's attributes (write_case)
//   timings     rank 0's seconds; ranks/ (write_ranks); provenance/, device/
#include <optional>
#include <string>
#include <vector>

#include "driver.hpp"
#include "tally/common/device_info.hpp"
#include "tally/common/provenance.hpp"

namespace tally::matmul::detail {

/// Rank 0, into a file just created (the caller commits it). `c`: C of the last level, written as /C
/// when not null; a_source, b_source: where A and B came from ("generated", FILE:/DATASET, ...).
template <class T>
void write_result(h5::Location& f, const Case& cs, const Options& o, Backend backend, const std::vector<T>* c,
                  const RanksReport& rr, const Provenance& prov, const std::optional<DeviceInfo>& dev,
                  const std::string& a_source, const std::string& b_source);

}  // namespace tally::matmul::detail
