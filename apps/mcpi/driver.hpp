#pragma once
// The mcpi driver (driver.cpp): the job as the command line (main.cpp) asks for it -- its set-up,
// agreed over the ranks; each rank's stretch of the stream counted on its backend (mcpi.hpp); the
// result gathered, written and reported by rank 0 (mcpi_output.hpp) -- or --bench (bench.cpp).
#include <optional>
#include <string>

#include "mcpi.hpp"
#include "tally/common/cli.hpp"
#include "tally/common/device_info.hpp"
#include "tally/common/provenance.hpp"
#include "tally/reduce/backend.hpp"

namespace tally::ranks {
class Comm;
}

namespace tally::mcpi {

/// The job as the command line asks for it (the counts as given: parse_count reads them).
struct Options {
  cli::CommonOptions common;
  std::string n = "1e8", batch = "2^32", offset = "0";
  std::string generator = "philox", api = "device";
  bool bench = false;
  int repeats = 5;      ///< --bench: timed repeats a row
  std::string command;  ///< the command line as run, for the provenance
};

/// The job on the ranks of `comm`: every rank checks the options and sets up (a failure anywhere is
/// every rank's, rank 0 naming it), counts its stretch of the samples, and rank 0 writes the file and
/// reports; or --bench. Collective. Returns the exit code: 1 when the estimate lies beyond its error
/// bound (error_bound); bad input throws InputError.
int run(const Options& o, ranks::Comm& comm);

/// --bench (bench.cpp): the table of every generator and API on rank 0's GPU, then on several ranks
/// the fused Philox kernel's scaling; rank 0 prints and writes the file. Collective.
int run_bench(const Options& o, const Params& p, int device, const std::optional<DeviceInfo>& dev,
              const Provenance& prov, ranks::Comm& comm);

}  // namespace tally::mcpi
