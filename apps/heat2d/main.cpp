// heat2d: the command line and the output (the HDF5 file through heat2d_output.hpp, XDMF sidecar,
// JSON line, summary line), on one rank or several (mpiexec): every rank checks the same options and
// sets up, agreeing on failures, solves its row block, and rank 0 alone writes.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "driver.hpp"
#include "heat2d_output.hpp"
#include "implicit/cli.hpp"
#include "restart.hpp"
#include "tally/common/app.hpp"
#include "tally/common/cli.hpp"
#include "tally/common/device_info.hpp"
#include "tally/common/error.hpp"
#include "tally/common/h5.hpp"
#include "tally/common/interrupt.hpp"
#include "tally/common/json.hpp"
#include "tally/common/provenance.hpp"
#include "tally/common/ranks_report.hpp"
#include "tally/ranks/session.hpp"

namespace {

using namespace tally;
using namespace tally::heat2d;
using ranks::Comm;

struct Options {
  cli::CommonOptions common;
  Problem p;
  std::string mode = "steady", bc_top = "sin", bc_bottom = "0", bc_left = "0", bc_right = "0", init = "0";
  std::int64_t ny = 0;  // 0: same as nx
  double tol = 1e-10;
  std::int64_t max_iter = 1'000'000, check_every = 1;
  std::string cuda_kernel = "persistent";
  std::string sweeps_per_pass = "auto";
  int t = 0;  // --sweeps-per-pass as a number (0: auto)
  bool validate = false, xdmf = false, bench = false, keep_partial = false;
  std::vector<std::int64_t> bench_sizes;
  std::string restart;  // a heat2d output to continue from
};

/// --sweeps-per-pass: "auto" (0) or a whole number (its range is resolve_sweeps_per_pass's to check).
int parse_sweeps_per_pass(const std::string& text) {
  if (text == "auto") return 0;
  std::size_t used = 0;
  int t = -1;
  try {
    t = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || t < 1 || t > max_sweeps_per_pass)
    throw InputError("--sweeps-per-pass '" + text + "': expected auto or a number of sweeps (1.." +
                     std::to_string(max_sweeps_per_pass) + ")");
  return t;
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

void write_xdmf(const std::string& h5_path, const Problem& p, int precision_bytes) {
  namespace fs = std::filesystem;
  const fs::path xmf = fs::path(h5_path).replace_extension(".xmf");
  const std::string dims = std::to_string(p.ny) + " " + std::to_string(p.nx);
  std::ofstream f(xmf);
  f.precision(17);
  f << "<?xml version=\"1.0\" ?>\n<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n<Xdmf Version=\"3.0\">\n  <Domain>\n"
    << "    <Grid Name=\"heat2d\" GridType=\"Uniform\">\n"
    << "      <Topology TopologyType=\"2DCoRectMesh\" Dimensions=\"" << dims << "\"/>\n"
    << "      <Geometry GeometryType=\"ORIGIN_DXDY\">\n"
    << "        <DataItem Dimensions=\"2\" NumberType=\"Float\" Precision=\"8\" Format=\"XML\">0 0</DataItem>\n"
    << "        <DataItem Dimensions=\"2\" NumberType=\"Float\" Precision=\"8\" Format=\"XML\">" << p.h() << " "
    << p.h() << "</DataItem>\n      </Geometry>\n"
    << "      <Attribute Name=\"u\" AttributeType=\"Scalar\" Center=\"Node\">\n"
    << "        <DataItem Dimensions=\"" << dims << "\" NumberType=\"Float\" Precision=\"" << precision_bytes
    << "\" Format=\"HDF\">" << fs::path(h5_path).filename().string() << ":/field</DataItem>\n"
    << "      </Attribute>\n    </Grid>\n  </Domain>\n</Xdmf>\n";
  if (!f) throw Error("cannot write " + xmf.string());
}

std::optional<DeviceInfo> device_of(const RunOptions& ro) {
  if (ro.backend == reduce::Backend::cuda) return query_device(ro.device);
  return std::nullopt;
}

std::string shared_gpu_note(const Comm& comm) {
  const int gpus = tally::cuda_device_count();
  return "(" + std::to_string(comm.local_size()) + " ranks share " +
         (gpus > 1 ? std::to_string(gpus) + " GPUs)" : "a GPU)");
}

template <class T>
int solve_and_write(const Options& o, const StopRule& rule, const RunOptions& ro, const Comm& comm, HostTimer& total,
                    const std::string& cmdline, const Restart& restart) {
  const Problem& p = o.p;
  const Decomposition& dec = *ro.decomposition;
  std::vector<T> start;  // --restart: this rank's block of the file's field
  if (!o.restart.empty()) {
    std::exception_ptr failed;
    try {
      const Block b = local_block(dec);
      start = h5::File::open(o.restart).read<T>("field", {static_cast<std::uint64_t>(b.row0), 0},
                                                {static_cast<std::uint64_t>(b.rows), static_cast<std::uint64_t>(p.nx)});
    } catch (...) {
      if (comm.size() == 1) throw;
      failed = std::current_exception();
    }
    comm.agree(failed);
  }
  Report<T> rep = run_problem<T>(p, rule, ro, std::span<const T>(start));
  if (!o.restart.empty()) {  // the history continues the file's
    auto& r = rep.result;
    r.check_iteration.insert(r.check_iteration.begin(), restart.check_iteration.begin(), restart.check_iteration.end());
    r.check_residual.insert(r.check_residual.begin(), restart.check_residual.begin(), restart.check_residual.end());
  }
  const SolveResult& res = rep.result;
  const ranks::RankStats total_s = comm.stats(total.seconds());  // collective: before rank 0 alone writes
  // Every rank exits as rank 0 does: the status and the verdict are the same everywhere.
  const int rank_exit = res.status == Status::diverged || !rep.validation_passed ? exit_failure : exit_ok;
  HostTimer tw;
  // Created only now, with every rank's part in hand: a run that fails or is aborted before this
  // leaves nothing (the early probe in run() found --out writable).
  std::optional<h5::File> parallel;  // rank 0: the file every rank wrote its rows of the field into
  if (!ro.gather) {
    h5::File f = h5::File::create_collective(o.common.out, {comm.mpi_handle(), comm.rank(), comm.size()});
    const Decomposition::Rows own = own_rows(dec, comm.rank());
    const std::span<const T> mine(rep.block_field.data() + (own.begin - rep.block.row0) * p.nx,
                                  static_cast<std::size_t>(own.size() * p.nx));
    f.write_rows<T>("field", mine, {static_cast<std::uint64_t>(p.ny), static_cast<std::uint64_t>(p.nx)},
                    static_cast<std::uint64_t>(own.begin));
    std::exception_ptr failed;
    try {
      f.close_collective();
    } catch (...) {
      failed = std::current_exception();
    }
    comm.agree(failed);  // every rank's rows are on disk: rank 0 finishes the file and renames it
    if (!comm.is_root()) {
      f.abandon();
      return rank_exit;
    }
    parallel = f.reopen();
  }
  if (!comm.is_root()) return rank_exit;
  const bool converged = res.status == Status::converged;
  const auto [points_per_s, gb_per_s] = throughput(p, rule, rep);

  h5::File file = parallel ? std::move(*parallel) : h5::File::create(o.common.out);
  parallel.reset();
  const auto dev = device_of(ro);
  write_result<T>(file, p, rule, ro, {o.max_iter, o.restart}, rep, comm, total_s, collect_provenance(cmdline, dev), dev,
                  tw, total);
  file.commit();
  if (o.xdmf) write_xdmf(o.common.out, p, static_cast<int>(sizeof(T)));

  if (o.common.json) {
    JsonLine j;
    j.add("app", "heat2d").add("mode", to_string(p.mode)).add("nx", p.nx).add("ny", p.ny);
    j.add("precision", o.common.precision).add("backend", reduce::to_string(ro.backend));
    j.add("ranks", static_cast<std::int64_t>(comm.size())).add("transport", transport_of(comm, ro));
    j.add("writer", writer_of(comm, ro));
    if (shared_gpu(comm, ro)) j.add("shares_device", true);
    j.add("sweeps_per_pass",
          static_cast<std::int64_t>(resolve_sweeps_per_pass(o.t, o.check_every, ro.backend, deepest_pass(dec))));
    j.add("status", to_string(res.status)).add("converged", converged).add("iterations", res.iterations);
    j.add("final_residual", res.final_residual).add("tol", rule.tol).add("sim_time", rep.sim_time);
    if (rep.analytic) j.add("analytic_max", rep.analytic->max).add("analytic_l2", rep.analytic->l2);
    if (rep.eigen_max_abs_diff)
      j.add("eigen_max_abs_diff", *rep.eigen_max_abs_diff).add("eigen_tolerance", rep.eigen_tolerance);
    j.add("solve_s", res.solve_s).add("per_sweep_s", rep.timings.get("per_sweep"));
    j.add("points_per_s", points_per_s).add("gb_per_s", gb_per_s).add("out", o.common.out);
    std::printf("%s\n", j.str().c_str());
  } else if (!o.common.quiet) {
    std::string what = to_string(p.mode) + " " + std::to_string(p.nx) + "x" + std::to_string(p.ny) + " " +
                       o.common.precision + " on " + reduce::to_string(ro.backend);
    if (comm.size() > 1) {
      what += " x " + std::to_string(comm.size()) + " ranks (" + transport_of(comm, ro) + ")";
      if (shared_gpu(comm, ro)) what += " " + shared_gpu_note(comm);
      what += ", field " + std::string(ro.gather ? "gathered to rank 0" : "written with parallel HDF5");
    }
    std::string check;
    switch (res.status) {
      case Status::converged:
        check = "converged, residual " + fmt("%.2e", res.final_residual) + " <= tol " + fmt("%.0e", rule.tol);
        break;
      case Status::t_end:
        check = "reached t = " + fmt("%.4g", rep.sim_time) + ", residual " + fmt("%.2e", res.final_residual);
        break;
      case Status::max_iter:
        check = "NOT converged: --max-iter reached, residual " + fmt("%.2e", res.final_residual);
        break;
      case Status::diverged: check = "DIVERGED, residual " + fmt("%g", res.final_residual); break;
      case Status::interrupted: check = "INTERRUPTED, residual " + fmt("%.2e", res.final_residual); break;
    }
    if (rep.analytic)
      check += "; analytic error max " + fmt("%.2e", rep.analytic->max) + ", L2 " + fmt("%.2e", rep.analytic->l2);
    if (rep.eigen_max_abs_diff)
      check += std::string("; Eigen ") + (rep.validation_passed ? "agrees" : "DISAGREES") + ", max diff " +
               fmt("%.1e", *rep.eigen_max_abs_diff) + " (tol " + fmt("%.1e", rep.eigen_tolerance) + ")";
    if (!o.restart.empty()) check += "; restarted at sweep " + std::to_string(rule.first);
    std::printf("heat2d: %s: %lld sweeps, %s; %.3g s, %.3g points/s, %.3g GB/s\n", what.c_str(),
                static_cast<long long>(res.iterations), check.c_str(), res.solve_s, points_per_s, gb_per_s);
  }
  if (const int sig = interrupt::requested(); sig != 0) {  // --keep-partial (one rank): written, now stop
    std::fflush(stdout);
    const std::string at = res.status == Status::interrupted
                               ? "at sweep " + std::to_string(res.iterations)
                               : "after the last sweep (" + std::to_string(res.iterations) + ")";
    throw interrupt::Interrupted(sig, "interrupted by " + interrupt::signal_name(sig) + " " + at +
                                          "; the field so far was written to " + o.common.out + " (status " +
                                          to_string(res.status) + ", --restart continues it)");
  }
  if (res.status == Status::diverged) {
    std::fprintf(stderr, "heat2d: diverged at sweep %lld (residual %g); the field was written to %s\n",
                 static_cast<long long>(res.iterations), res.final_residual, o.common.out.c_str());
    return exit_failure;
  }
  if (!rep.validation_passed) {
    std::fprintf(stderr, "heat2d: validation failed: max |u - u_eigen| = %g > %g\n", *rep.eigen_max_abs_diff,
                 rep.eigen_tolerance);
    return exit_failure;
  }
  return exit_ok;
}

std::vector<std::int64_t> bench_sizes(const Options& o, reduce::Backend b, int ranks) {
  std::vector<std::int64_t> sizes = o.bench_sizes;
  if (sizes.empty()) {
    if (ranks > 1)  // the scaling goals' sizes
      sizes =
          b == reduce::Backend::cuda ? std::vector<std::int64_t>{8192, 16384} : std::vector<std::int64_t>{512, 1024};
    else
      sizes = b == reduce::Backend::cuda ? std::vector<std::int64_t>{1024, 2048, 4096, 8192}
                                         : std::vector<std::int64_t>{256, 512, 1024};
  }
  for (auto n : sizes)
    if (n < 3 || n - 2 < ranks)
      throw InputError("--bench-sizes " + std::to_string(n) + ": needs at least 3 points and an interior row per rank");
  return sizes;
}

/// Several ranks: strong and weak scaling against one rank (run_scaling), a table on rank 0.
int bench_ranks(const Options& o, const RunOptions& ro, const Comm& comm, const std::string& cmdline) {
  const ScalingTable t = run_scaling(ro, bench_sizes(o, ro.backend, comm.size()), o.common.quiet || o.common.json);
  if (!comm.is_root()) return exit_ok;
  const auto dev = device_of(ro);
  const int N = t.ranks;
  std::printf("| heat2d scaling on %d ranks of %s (%s), checked every sweep; times per sweep, median of %d |\n", N,
              dev ? dev->name.c_str() : "cpu", transport_of(comm, ro).c_str(), t.repeats);
  std::printf("| %-6s | %-7s | %-11s | %-14s | %-9s | %-14s | %-9s |\n", "type", "n", "1 rank us", "strong n^2 us",
              "strong %", "weak n x Nn us", "weak %");
  std::vector<std::int64_t> n, sweeps;
  std::vector<std::int32_t> bytes;
  std::vector<double> one, strong, weak, se, we;
  for (const auto& r : t.rows) {
    std::printf("| %-6s | %-7lld | %11.2f | %14.2f | %8.1f%% | %14.2f | %8.1f%% |\n", r.precision.c_str(),
                static_cast<long long>(r.n), r.one_rank_s * 1e6, r.strong_s * 1e6, 100.0 * r.strong_efficiency(N),
                r.weak_s * 1e6, 100.0 * r.weak_efficiency());
    n.push_back(r.n), sweeps.push_back(r.sweeps), bytes.push_back(r.precision == "float" ? 4 : 8);
    one.push_back(r.one_rank_s), strong.push_back(r.strong_s), weak.push_back(r.weak_s);
    se.push_back(r.strong_efficiency(N)), we.push_back(r.weak_efficiency());
  }
  auto file = h5::File::create(o.common.out);
  file.attr("app", "heat2d");
  file.attr("backend", reduce::to_string(ro.backend));
  file.attr("status", "bench");
  auto g = file.group("bench/scaling");
  g.attr("ranks", static_cast<std::int64_t>(N));
  g.attr("transport", transport_of(comm, ro));
  g.attr("shares_device", shared_gpu(comm, ro));
  g.attr("repeats", static_cast<std::int64_t>(t.repeats));
  g.write<std::int64_t>("n", n);
  g.write<std::int32_t>("precision_bytes", bytes);
  g.write<std::int64_t>("sweeps", sweeps);
  g.write<double>("one_rank_per_sweep_s", one);
  g.write<double>("strong_per_sweep_s", strong);
  g.write<double>("weak_per_sweep_s", weak);
  g.write<double>("strong_efficiency", se);
  g.write<double>("weak_efficiency", we);
  write_provenance(file, collect_provenance(cmdline, dev), dev);
  file.commit();
  return exit_ok;
}

int bench(const Options& o, const RunOptions& ro, const Comm& comm, const std::string& cmdline) {
  if (comm.size() > 1) return bench_ranks(o, ro, comm, cmdline);
  const BenchTable t = run_bench(ro, bench_sizes(o, ro.backend, 1), o.common.quiet || o.common.json);
  const auto dev = device_of(ro);
  std::printf("| heat2d bench on %s: copy bandwidth %.0f GB/s (memcpy of %lld MiB, read + write, median) |\n",
              dev ? dev->name.c_str() : "cpu", t.copy_gb_per_s, static_cast<long long>(t.copy_bytes >> 20));
  // GB/s and % copy: the field read and written once a pass (nominal: the overlap the blocked
  // kernel recomputes is not counted); equivalent % copy: once a sweep, as a t = 1 kernel would need.
  std::printf("| %-10s | %-6s | %-11s | %-11s | %-2s | %-10s | %-7s | %-8s | %-13s |\n", "kernel", "type", "grid",
              "check-every", "t", "us/sweep", "GB/s", "% copy", "equiv. % copy");
  std::vector<std::int64_t> n, ce, sweeps, tpp;
  std::vector<double> per, gbs, frac, equiv;
  std::vector<std::int32_t> bytes, kernel_async, kernel_persistent;
  for (const auto& r : t.rows) {
    const std::string grid = std::to_string(r.n) + "^2";
    std::printf("| %-10s | %-6s | %-11s | %11lld | %2d | %10.2f | %7.0f | %7.1f%% | %12.1f%% |\n", r.kernel.c_str(),
                r.precision.c_str(), grid.c_str(), static_cast<long long>(r.check_every), r.sweeps_per_pass,
                r.per_sweep_s * 1e6, r.gb_per_s, 100.0 * r.fraction_of_copy, 100.0 * r.equivalent_fraction_of_copy);
    n.push_back(r.n), ce.push_back(r.check_every), sweeps.push_back(r.sweeps), tpp.push_back(r.sweeps_per_pass);
    per.push_back(r.per_sweep_s), gbs.push_back(r.gb_per_s), frac.push_back(r.fraction_of_copy);
    equiv.push_back(r.equivalent_fraction_of_copy);
    bytes.push_back(r.precision == "float" ? 4 : 8);
    kernel_async.push_back(r.kernel == "async" ? 1 : 0);
    kernel_persistent.push_back(r.kernel == "persistent" ? 1 : 0);
  }
  auto file = h5::File::create(o.common.out);
  file.attr("app", "heat2d");
  file.attr("backend", reduce::to_string(ro.backend));
  file.attr("status", "bench");
  auto g = file.group("bench");
  g.attr("copy_gb_per_s", t.copy_gb_per_s);
  g.attr("copy_bytes", t.copy_bytes);
  g.attr("repeats", static_cast<std::int64_t>(t.repeats));
  g.write<std::int64_t>("n", n);
  g.write<std::int32_t>("precision_bytes", bytes);
  g.write<std::int32_t>("kernel_async", kernel_async);
  g.write<std::int32_t>("kernel_persistent", kernel_persistent);
  g.write<std::int64_t>("check_every", ce);
  g.write<std::int64_t>("sweeps", sweeps);
  g.write<double>("per_sweep_s", per);
  g.write<double>("gb_per_s", gbs);
  g.write<double>("fraction_of_copy", frac);
  g.write<std::int64_t>("sweeps_per_pass", tpp);
  g.write<double>("equivalent_fraction_of_copy", equiv);
  write_provenance(file, collect_provenance(cmdline, dev), dev);
  file.commit();
  return exit_ok;
}

int run(int argc, char** argv, Comm& comm) {
  HostTimer total;
  Options o;
  o.common.out = "results/heat2d.h5";
  CLI::App app{
      "heat2d: the 2-D heat equation (Jacobi for the steady state, or explicit time steps) with a\n"
      "max-residual convergence test computed inside the update sweep.",
      "heat2d"};
  cli::add_common_options(app, o.common);
  cli::add_number(app, "--nx", o.p.nx, "Grid points along x, edges included (h = 1/(nx-1))", cli::at_least(3))
      ->capture_default_str();
  cli::add_number(app, "--ny", o.ny, "Grid points along y, edges included (default: nx)", cli::at_least(3));
  app.add_option("--mode", o.mode, "steady (Jacobi for Laplace) or transient (explicit steps)")
      ->check(CLI::IsMember({"steady", "transient"}))
      ->capture_default_str();
  cli::add_number(app, "--tol", o.tol, "Stop when max |u_new - u| <= tol", cli::positive)->capture_default_str();
  cli::add_number(app, "--max-iter", o.max_iter, "Most sweeps", cli::positive)->capture_default_str();
  cli::add_number(app, "--check-every", o.check_every, "Test the residual every k sweeps (and at the last)",
                  cli::positive)
      ->capture_default_str();
  cli::add_number(app, "--alpha", o.p.alpha, "Diffusivity (transient)", cli::positive)->capture_default_str();
  cli::add_number(app, "--dt", o.p.dt, "Time step (transient; default r = alpha dt/h^2 = 0.2; at most r = 1/4)",
                  cli::non_negative);
  cli::add_number(app, "--t-end", o.p.t_end, "End time (transient; 0: run to steady state or --max-iter)",
                  cli::non_negative)
      ->capture_default_str();
  app.add_option("--bc-top", o.bc_top, "Top edge (y = Ly): a number or sin (sin(pi x))")->capture_default_str();
  app.add_option("--bc-bottom", o.bc_bottom, "Bottom edge (y = 0): a number or sin")->capture_default_str();
  app.add_option("--bc-left", o.bc_left, "Left edge (x = 0): a number or sin (sin(pi y/Ly))")->capture_default_str();
  app.add_option("--bc-right", o.bc_right, "Right edge (x = 1): a number or sin")->capture_default_str();
  app.add_option("--init", o.init, "Initial interior: a number or sin (sin(pi x) sin(pi y/Ly))")->capture_default_str();
  app.add_option("--cuda-kernel", o.cuda_kernel,
                 "CUDA sweep kernel: registers (rows queued in registers), async (cp.async ring in shared memory) or "
                 "persistent (the registers kernel's sweeps, many a launch, blocks waiting only for their neighbours)")
      ->check(CLI::IsMember({"async", "registers", "persistent"}))
      ->capture_default_str();
  app.add_option("--sweeps-per-pass", o.sweeps_per_pass,
                 "Sweeps a pass over memory (temporal blocking): 1.." + std::to_string(max_sweeps_per_pass) +
                     ", dividing --check-every, or auto: the deepest that does, up to " +
                     std::to_string(cuda_preferred_sweeps_per_pass) + " on CUDA and " +
                     std::to_string(cpu_preferred_sweeps_per_pass) + " on the CPU; the same bits for every value")
      ->capture_default_str();
  app.add_flag("--validate", o.validate, "Repeat the iteration on the CPU with Eigen arrays and compare the fields");
  app.add_flag("--xdmf", o.xdmf, "Write an XDMF sidecar (<out> with .xmf) for ParaView/VisIt");
  app.add_flag("--bench", o.bench, "Benchmark table: per-sweep time and GB/s against the copy bandwidth");
  app.add_flag("--keep-partial", o.keep_partial,
               "On SIGINT/SIGTERM (one process), write the field reached (status interrupted) before exiting 130/143");
  app.add_option(
      "--restart", o.restart,
      "Continue from a heat2d output of the same problem (its field and sweep count; --max-iter counts all sweeps)");
  cli::add_number(app, "--bench-sizes", o.bench_sizes,
                  "Grid sides for --bench (default cuda: 1024 2048 4096 8192, cpu: 256 512 1024)", cli::at_least(3))
      ->delimiter(',');
  {
    // A parse failure on some ranks only (different command lines) must not leave the others
    // waiting in the next collective; --help and --version stop every rank alike.
    const auto rc = cli::parse(app, argc, argv);
    if (comm.size() == 1 && rc) return *rc;
    const std::vector<int> codes = comm.allgather<int>(rc ? *rc : -1);
    for (int r = 0; r < comm.size(); ++r)
      if (codes[static_cast<std::size_t>(r)] > 0)
        throw ranks::AgreedError("rank " + std::to_string(r) + ": bad options (its message above)", true);
    if (rc) return *rc;
  }
  // All options, defaults and config files included, must be the same on every rank (one line, so
  // that the message quotes the difference in place). An agreed input error when they differ.
  std::string config = app.config_to_str(true, false);
  std::replace(config.begin(), config.end(), '\n', ' ');
  comm.require_same(config, "the configuration (all options)");

  // Everything the user gave is checked before anything is computed or written; a failure on any
  // rank stops every rank with rank 0 naming it.
  Problem& p = o.p;
  StopRule rule;
  Restart restart;
  RunOptions ro;
  Decomposition dec;  // the grid's rows over the ranks: made here, once, and handed down
  bool fell_back = false;
  std::exception_ptr failed;
  try {
    p.ny = o.ny > 0 ? o.ny : p.nx;
    if (app.count("--ny") && o.ny < 3) p.ny = o.ny;  // let finalize() name the bad value
    p.mode = o.mode == "transient" ? Mode::transient : Mode::steady;
    p.top = parse_spec(o.bc_top, "--bc-top");
    p.bottom = parse_spec(o.bc_bottom, "--bc-bottom");
    p.left = parse_spec(o.bc_left, "--bc-left");
    p.right = parse_spec(o.bc_right, "--bc-right");
    p.init = parse_spec(o.init, "--init");
    if (!o.bench) {
      finalize(p);
      dec = decompose(p, comm.size(), comm.rank());  // refuses more ranks than interior rows
    } else {
      (void)bench_sizes(o, reduce::Backend::cpu, comm.size());
    }
    rule = make_stop_rule(p, o.tol, o.max_iter, o.check_every);
    o.t = parse_sweeps_per_pass(o.sweeps_per_pass);
    // Refuses what cannot work (the backend does not matter for that; --bench sets its own t).
    (void)resolve_sweeps_per_pass(o.t, o.check_every, reduce::Backend::cpu,
                                  o.bench ? max_sweeps_per_pass : deepest_pass(dec));
    if (!o.restart.empty()) {
      if (o.bench) throw InputError("--restart: not with --bench");
      restart = read_restart(o.restart, p, o.common.precision, rule);
    }
    ro.backend = reduce::resolve_backend(o.common.backend, &fell_back);
    if (comm.is_root()) {
      // Probe --out now (create, then drop the empty temporary): a bad path fails before the run.
      std::filesystem::path out(o.common.out);
      if (out.has_parent_path()) {
        std::error_code ec;
        std::filesystem::create_directories(out.parent_path(), ec);
        if (ec) throw InputError("--out " + o.common.out + ": cannot create its folder (" + ec.message() + ")");
      }
      (void)h5::File::create(o.common.out);
    }
  } catch (...) {
    if (comm.size() == 1) throw;
    failed = std::current_exception();
  }
  comm.agree(failed);
  // --backend auto: the CPU everywhere unless every rank has a GPU (the ranks' transports must match).
  const std::vector<int> on_gpu = comm.allgather<int>(ro.backend == reduce::Backend::cuda ? 1 : 0);
  if (std::find(on_gpu.begin(), on_gpu.end(), 0) != on_gpu.end() && ro.backend == reduce::Backend::cuda) {
    ro.backend = reduce::Backend::cpu;  // only "auto" gets here: "cuda" without a GPU failed above
    fell_back = true;
  }
  if (fell_back && comm.is_root()) std::fprintf(stderr, "heat2d: no usable CUDA device, running on the CPU backend\n");
  ro.device = o.common.device;
  if (ro.backend == reduce::Backend::cuda && comm.size() > 1) {
    ro.device = comm.pick_device(o.common.device);
    comm.use_device(ro.device);  // collective: NCCL, or host staging when ranks share a GPU
  }
  ro.cuda_kernel = o.cuda_kernel;
  ro.sweeps_per_pass = o.t;
  ro.validate = o.validate;
  ro.progress = !o.common.quiet && !o.common.json;
  ro.keep_partial = o.keep_partial;
  ro.comm = &comm;
  ro.decomposition = o.bench ? nullptr : &dec;            // --bench decomposes each of its problems
  ro.gather = comm.size() == 1 || !h5::parallel_built();  // else each rank writes its rows (parallel HDF5)

  const std::string cmdline = cli::command_line(argc, argv);
  if (o.bench) return bench(o, ro, comm, cmdline);
  if (o.common.precision == "float") return solve_and_write<float>(o, rule, ro, comm, total, cmdline, restart);
  return solve_and_write<double>(o, rule, ro, comm, total, cmdline, restart);
}

}  // namespace

int main(int argc, char** argv) {
  if (tally::heat2d::implicit::wants(argc, argv)) return tally::heat2d::implicit::main(argc, argv);  // --deck, --set
  return tally::ranks::run_ranks("heat2d", argc, argv, [&](Comm& comm) { return run(argc, argv, comm); });
}
