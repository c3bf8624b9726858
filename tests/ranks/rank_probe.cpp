// A tiny run_ranks program for the tests of its exit paths (run_ranks.cmake):
//   rank_probe ok | throw-last | agree-last | setting
// ok: every rank returns 0 after a barrier; throw-last: the last rank throws while the others wait in
// a barrier (the job must end, not hang); agree-last: the last rank's bad input, agreed by every rank;
// setting: rank 0 prints the TALLY_RANK_TRANSPORT setting the runtime read.
#include <cstdio>
#include <stdexcept>
#include <string>

#include "tally/common/error.hpp"
#include "tally/ranks/session.hpp"

int main(int argc, char** argv) {
  using namespace tally::ranks;
  return run_ranks("rank_probe", argc, argv, [&](Comm& comm) {
    const std::string mode = argc > 1 ? argv[1] : "";
    const bool last = comm.rank() == comm.size() - 1;
    if (mode == "ok") {
      comm.barrier();
      if (comm.is_root()) std::printf("rank_probe: %d ranks ok\n", comm.size());
      return 0;
    }
    if (mode == "throw-last") {
      if (last) throw std::runtime_error("boom");
      comm.barrier();  // never completes: the last rank aborts the job
      return 0;
    }
    if (mode == "setting") {
      comm.barrier();
      if (comm.is_root()) std::printf("rank_probe: TALLY_RANK_TRANSPORT is %s\n", to_string(rank_transport()));
      return 0;
    }
    if (mode == "agree-last") {
      comm.agree(last ? std::make_exception_ptr(tally::InputError("--x: bad")) : nullptr);
      return 0;
    }
    throw tally::InputError("mode: expected ok, throw-last, agree-last or setting, got '" + mode + "'");
  });
}
