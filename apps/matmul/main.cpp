// matmul: C = A B with every element's dot product reduced at the level the user picks. This file is
// the command line: the options parsed on every rank of the launcher's job (one rank without one),
// then the driver (driver.hpp) runs the job. See README.md.
#include <string>

#include <CLI/CLI.hpp>

#include "driver.hpp"
#include "ozaki/ozaki.hpp"
#include "tally/common/cli.hpp"
#include "tally/ranks/session.hpp"
#include "tally/reduce/ranks.hpp"

namespace {

using namespace tally;
using matmul::detail::Options;

int run(int argc, char** argv, ranks::Comm& comm) {
  // Every rank must run the same job (a rank with other options would multiply another problem or
  // wait in another collective): checked before parsing, so that every rank parses the same text.
  std::string args;
  for (int i = 1; i < argc; ++i) args += std::string(i > 1 ? " " : "") + argv[i];
  comm.require_same(args, "the command line (matmul's options)");
  CLI::App app{
      "matmul: C = A B with every element a dot product reduced at the chosen level (vector, worker, "
      "worker+vector, gang, tiled, tiled-tc, ozaki), checked against a double-double reference, cuBLAS and Eigen",
      "matmul"};
  Options o;
  o.common.out = "results/matmul.h5";
  cli::add_common_options(app, o.common);
  cli::add_number(app, "--m", o.m, "Rows of A and C", cli::positive)->capture_default_str();
  cli::add_number(app, "--n", o.n, "Columns of B and C", cli::positive)->capture_default_str();
  cli::add_number(app, "--k", o.k, "Columns of A, rows of B: the length of each dot product", cli::positive)
      ->capture_default_str();
  cli::add_number(app, "--size", o.size, "Sets M = N = K", cli::positive);
  app.add_option("--level", o.levels,
                 "Where the reduction over K runs: vector, worker, worker+vector, gang, tiled, tiled-tc (CUDA: tensor "
                 "cores), ozaki (INT8 products of residues) or all (comma list allowed)")
      ->delimiter(',')
      ->check(CLI::IsMember({"vector", "worker", "worker+vector", "gang", "tiled", "tiled-tc", "ozaki", "all"}))
      ->capture_default_str();
  app.add_option("--ozaki-moduli", o.ozaki_moduli,
                 "Moduli of the ozaki level: auto (as accurate as DGEMM / SGEMM) or a count in [1, 20]")
      ->check(CLI::Validator([](std::string& t) { return matmul::ozaki::moduli_problem(t); }, "auto|1-20"))
      ->capture_default_str();
  app.add_option("--a", o.a_path,
                 "Read A from an HDF5 dataset, FILE:/DATASET (2-D, M x K; floating point, or integers the precision "
                 "holds exactly)");
  app.add_option("--b", o.b_path, "Read B from an HDF5 dataset, FILE:/DATASET (2-D, K x N; as --a)");
  app.add_flag("--write-c", o.write_c, "Write C (of the last level run) into the output file as /C");
  cli::add_number(app, "--repeats", o.repeats, "Timed runs per level (the median is reported)", cli::in_range(1, 1000))
      ->capture_default_str();
  cli::add_number(app, "--warmup", o.warmup, "Untimed runs before timing", cli::in_range(0, 100))
      ->capture_default_str();
  app.add_option("--timing", o.timing,
                 "rounds: cuBLAS and the levels run once each a round (all meet the chip in the same state); "
                 "sequential: each one's "
                 "runs back to back")
      ->check(CLI::IsMember({"rounds", "sequential"}))
      ->capture_default_str();
  cli::add_number(app, "--split-k", o.split_k,
                  "K splits of the gang level (0: one wave of blocks on the GPU, K/1024 up to 64 chunks on the CPU)",
                  cli::in_range(0, 65535))
      ->capture_default_str();
  app.add_flag("--no-eigen", o.no_eigen, "Skip the Eigen comparison on the CPU");
  app.add_flag("--exact", o.exact,
               "Exact dot products: every level gives the correctly rounded C, checked bit for bit against exact dot "
               "products on the CPU "
               "(one rank)");
  app.add_flag("--bench", o.bench,
               "Run the benchmark table (square, rectangular and tall-skinny shapes; float and double unless "
               "--precision is given)");
  if (auto code = cli::parse(app, argc, argv, comm.is_root())) return *code;  // the same on every rank: rank 0 prints
  o.given = {app.count("--m") > 0, app.count("--n") > 0, app.count("--k") > 0, app.count("--precision") > 0};
  o.command = cli::command_line(argc, argv);
  return matmul::detail::run(o, comm);
}

}  // namespace

int main(int argc, char** argv) {
  return tally::ranks::run_ranks("matmul", argc, argv, [&](tally::ranks::Comm& comm) { return run(argc, argv, comm); });
}
