#pragma once
// The matmul driver (driver.cpp): a job's set-up, agreed over the ranks, then the single run or
// --bench (bench.cpp). A case: the inputs (generated, given or read: inputs.hpp), the reference, each
// level, cuBLAS and Eigen, each judged against the reference. What it writes and prints:
// matmul_output.hpp. Shared by the executable (main.cpp) and the Python module; no backend in sight
// (Engine, matmul.hpp).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "matmul.hpp"
#include "tally/common/cli.hpp"
#include "tally/common/ranks_report.hpp"
#include "tally/common/timing.hpp"
#include "tally/reduce/backend.hpp"

namespace tally::ranks {
class Comm;
}

namespace tally::matmul::detail {

using reduce::Backend;

/// The job as the command line (main.cpp) or the Python module asks for it.
struct Options {
  cli::CommonOptions common;
  std::int64_t m = 256, n = 256, k = 256, size = 0;
  /// Which of these the user gave (the rest are defaults): --m/--n/--k are checked against --a/--b,
  /// --precision limits --bench to one precision.
  struct Given {
    bool m = false, n = false, k = false, precision = false;
  } given;
  std::vector<std::string> levels{"all"};
  std::string a_path, b_path;  ///< --a, --b: FILE:/DATASET, or empty (generated)
  bool write_c = false, bench = false, no_eigen = false;
  bool exact = false;  ///< --exact: every level the correctly rounded C, checked bit for bit (exact.hpp)
  int repeats = 5, warmup = 1;
  std::string timing = "rounds";  ///< --timing: rounds or sequential (run_case)
  std::int64_t split_k = 0;
  std::string ozaki_moduli = "auto";  ///< --ozaki-moduli: auto or a count (ozaki/ozaki.hpp)
  std::string command;                ///< the command line as run, for the provenance
};

struct Measured {  // one level, cuBLAS or Eigen on one case
  std::string name;
  double time_s = std::numeric_limits<double>::quiet_NaN();
  double gflops = 0, gbps = 0, pct_vendor = std::numeric_limits<double>::quiet_NaN(), rel_error = 0, tolerance = 0;
  /// max |C - C_cublas| / (|A||B|) and the same against Eigen (NaN when that comparison did not run).
  double diff_cublas = std::numeric_limits<double>::quiet_NaN(), diff_eigen = std::numeric_limits<double>::quiet_NaN();
  std::int64_t mismatches =
      -1;  ///< --exact: elements whose bits differ from the correctly rounded C (-1: not compared)
  /// NaN and infinities against the reference's (Comparison): elements that are NaN where the
  /// reference is not, not NaN where it is, or disagree on an infinity.
  std::int64_t nan_extra = 0, nan_missing = 0, inf_wrong = 0;
  bool passed = false;
};

struct Case {
  Shape shape;
  std::string precision;
  std::vector<Measured> levels;
  std::optional<Measured> vendor, eigen;
  /// cuBLAS in its fast-TF32 mode (float, GPU): shown for comparison, not part of passed() (its
  /// error is TF32's, above the FP32 tolerance).
  std::optional<Measured> vendor_tf32;
  std::optional<double> bandwidth_gbs;
  /// The largest of the levels', cuBLAS's and Eigen's tolerances (each is judged by its own: Measured;
  /// --exact holds the levels to their bits instead).
  double tolerance = 0;
  /// Elements where the reference (rounded to the precision) is NaN, an infinity: where every level
  /// must give the same (Comparison).
  std::int64_t ref_nan = 0, ref_inf = 0;
  Timings timings;  ///< this rank's
  int ranks = 1;
  [[nodiscard]] bool passed() const {
    bool ok = std::all_of(levels.begin(), levels.end(), [](const Measured& x) { return x.passed; });
    if (vendor) ok = ok && vendor->passed;
    if (eigen) ok = ok && eigen->passed;
    return ok;
  }
};

/// A and B given in memory (the Python module's arrays), whole: M x K and K x N, row-major. An empty
/// one is generated (as a missing --a/--b).
template <class T>
struct HostInputs {
  std::vector<T> a, b;
};

/// The job: set-up agreed over the ranks of `comm` (a failure anywhere is every rank's), then --bench
/// or the single run, rank 0 writing the file and printing. Collective. Returns the exit code; bad
/// input throws InputError.
int run(const Options& o, ranks::Comm& comm);

/// Runs one case (inputs, reference, each level, the vendor library, Eigen) on the ranks of `comm`,
/// K split across them. Collective. Instantiated for float and double. The inputs: `given`, else
/// --a/--b, else generated.
template <class T>
Case run_case(const ranks::Comm& comm, Backend backend, int device, Shape s, const std::vector<Level>& levels,
              const Options& o, bool eigen, int eigen_repeats, std::vector<T>* c_out, bool with_bandwidth,
              const HostInputs<T>* given = nullptr);
/// --level's names as the executable takes them: "all" is every level of the backend (tiled-tc on
/// CUDA only; asking for it on the CPU throws InputError); repeats are dropped. With `exact` (--exact)
/// "all" leaves tiled-tc out and asking for it throws: its tensor-core products are rounded, so it has
/// no exact form.
std::vector<Level> resolve_levels(const std::vector<std::string>& names, Backend backend, bool exact = false);
/// The /ranks group of a case: the decomposition and every phase's seconds over ranks. Collective.
RanksReport ranks_report(const ranks::Comm& comm, Backend backend, const Case& cs);
/// --bench (bench.cpp; --level ozaki alone: the ozaki level's table, on one rank). Collective.
int run_bench(const ranks::Comm& comm, Backend backend, int device, const Options& o);

}  // namespace tally::matmul::detail
