#pragma once
// SIGINT and SIGTERM for the apps. A first signal asks the app to stop at its next safe point (a
// checked sweep, a batch, a benchmark case): check() then throws Interrupted, run_app prints what
// happened and exits 128 + signal (130, 143). A second signal ends the process at once (exit 128 +
// signal). Either way the temporary files registered here (every h5::File being written) are
// removed, so an interrupted run leaves nothing half-written.
//
// In a multi-rank job (set_immediate(true)) the first signal already ends the process: there a
// SIGTERM means the launcher is tearing the job down (MPI_Abort from a failed rank, a scheduler's
// time limit), and the peers that a safe point would wait for may already be gone.

#include <string>

#include "tally/common/error.hpp"

namespace tally::interrupt {

/// Installs the SIGINT/SIGTERM handlers (idempotent; run_app calls it).
void install();
/// The signal received so far (SIGINT, SIGTERM), 0 when none.
[[nodiscard]] int requested();
/// The first signal ends the process at once (multi-rank jobs).
void set_immediate(bool on);

class Interrupted : public Error {
 public:
  Interrupted(int signal, const std::string& what) : Error(what), signal_(signal) {}
  [[nodiscard]] int signal() const { return signal_; }
  [[nodiscard]] int exit_code() const { return 128 + signal_; }

 private:
  int signal_;
};

/// Throws Interrupted ("interrupted by SIGINT <where>") when a signal has arrived. `where` says
/// where the run stopped, e.g. "at sweep 1200".
void check(const std::string& where = "");
/// "SIGINT", "SIGTERM", ...
[[nodiscard]] std::string signal_name(int signal);

/// Temporary files to remove on a signal (async-signal-safe removal). register_temp returns a slot
/// (-1 when all are taken: the file is then only removed by its owner); release it when the file is
/// committed or removed.
int register_temp(const std::string& path);
void release_temp(int slot);

}  // namespace tally::interrupt
