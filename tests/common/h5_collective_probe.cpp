// A run_ranks program that writes a collective HDF5 file as heat2d does, for the tests of its
// failure paths (h5_collective_probe.cmake):  h5_collective_probe <mode> <out>
//   ok:          every rank writes its rows, rank 0 finishes and renames the file;
//   throw-last:  the last rank fails after the file was created, while the others are in the
//                collective write (the job must end, not hang, and leave no file);
//   agree-last:  the last rank fails after the collective close: every rank agrees on it, rank 0
//                removes the temporary file.
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "tally/common/error.hpp"
#include "tally/common/h5.hpp"
#include "tally/ranks/session.hpp"
#include "tally/ranks/split.hpp"

int main(int argc, char** argv) {
  using namespace tally;
  return ranks::run_ranks("h5_collective_probe", argc, argv, [&](ranks::Comm& comm) {
    if (argc != 3) throw InputError("usage: h5_collective_probe ok|throw-last|agree-last <out>");
    const std::string mode = argv[1], out = argv[2];
    if (mode != "ok" && mode != "throw-last" && mode != "agree-last") throw InputError("mode: '" + mode + "'");
    const bool last = comm.rank() == comm.size() - 1;
    const std::uint64_t ny = 40, nx = 1000;  // 320 KB: chunked and compressed
    const ranks::Range mine = ranks::split_range(static_cast<std::int64_t>(ny), comm.size(), comm.rank());
    std::vector<double> rows(static_cast<std::size_t>(mine.size()) * nx);
    for (std::size_t k = 0; k < rows.size(); ++k) rows[k] = static_cast<double>(mine.begin * nx + k);
    auto f = h5::File::create_collective(out, {comm.mpi_handle(), comm.rank(), comm.size()});
    if (mode == "throw-last" && last) throw std::runtime_error("boom while writing");
    f.write_rows<double>("field", rows, {ny, nx}, static_cast<std::uint64_t>(mine.begin));
    f.close_collective();
    comm.agree(mode == "agree-last" && last ? std::make_exception_ptr(Error("boom after writing")) : nullptr);
    if (!comm.is_root()) {
      f.abandon();
      return 0;
    }
    auto g = f.reopen();
    g.attr("ranks", static_cast<std::int32_t>(comm.size()));
    g.commit();
    std::printf("h5_collective_probe: %d ranks wrote %s\n", comm.size(), out.c_str());
    return 0;
  });
}
