// reduce-bench: tally::reduce's performance table. Prints every table line starting with "| ",
// writes HDF5 (--out) and CSV (--csv). The driver knows no backend beyond choosing one.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "bench.hpp"
#include "tally/common/cli.hpp"
#include "tally/common/device_info.hpp"
#include "tally/common/error.hpp"
#include "tally/common/h5.hpp"
#include "tally/common/json.hpp"
#include "tally/common/provenance.hpp"
#include "tally/ranks/session.hpp"
#include "tally/reduce/backend.hpp"

namespace tally::reduce::bench {

std::string size_name(std::int64_t n) {
  if (n > 0 && (n & (n - 1)) == 0) {
    int lg = 0;
    while ((std::int64_t{1} << lg) < n) ++lg;
    return "2^" + std::to_string(lg);
  }
  return std::to_string(n);
}

namespace {

std::string fmt(double v, const char* f = "%.2f") {
  if (std::isnan(v)) return "-";
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

void write_csv(const std::string& path, const Report& r) {
  std::ofstream f(path);
  if (!f) throw InputError("--csv: cannot write '" + path + "'");
  f << "suite,name,levels,op,type,shape,n,input_bytes,moved_bytes,time_us,call_us,gbs,vs_ceiling,vs_ref,ref\n";
  for (const Row& x : r.rows)
    f << x.suite << ',' << x.name << ',' << x.levels << ',' << x.op << ',' << x.type << ',' << x.shape << ',' << x.n
      << ',' << x.input_bytes << ',' << x.moved_bytes << ',' << x.time_us << ',' << x.call_us << ',' << x.gbs << ','
      << x.vs_ceiling << ',' << x.vs_ref << ",\"" << x.ref << "\"\n";
}

void write_h5(h5::File& f, const Report& r) {
  std::vector<std::string> suites;
  for (const Row& x : r.rows)
    if (std::find(suites.begin(), suites.end(), x.suite) == suites.end()) suites.push_back(x.suite);
  for (const std::string& s : suites) {
    auto g = f.group(s);
    std::vector<std::int64_t> n;
    std::vector<double> in, moved, t, call, gbs, vc, vr;
    std::string labels;
    for (const Row& x : r.rows) {
      if (x.suite != s) continue;
      n.push_back(x.n), in.push_back(x.input_bytes), moved.push_back(x.moved_bytes), t.push_back(x.time_us),
          call.push_back(x.call_us), gbs.push_back(x.gbs), vc.push_back(x.vs_ceiling), vr.push_back(x.vs_ref);
      labels += (labels.empty() ? "" : ";") + x.name + "|" + x.levels + "|" + x.op + "|" + x.type + "|" + x.shape;
    }
    g.write("n", n), g.write("input_bytes", in), g.write("moved_bytes", moved), g.write("time_us", t),
        g.write("call_us", call), g.write("gbs", gbs);
    g.write("vs_ceiling", vc), g.write("vs_ref", vr);
    g.attr("labels", labels);
    g.attr("label_fields", "name|levels|op|type|shape");
  }
}

int run(int argc, char** argv, ranks::Comm& comm) {
  CLI::App app{"reduce-bench: tally::reduce against the copy bandwidth, CUB (CUDA) and Eigen (CPU)", "reduce-bench"};
  cli::CommonOptions common;
  common.out = "results/reduce-bench.h5";
  cli::add_common_options(app, common, /*with_precision=*/false);
  Options o;
  std::string csv, extents;
  bool bench_flag = false;
  app.add_option("--suite", o.suite,
                 "Which table: all, sweep, ladder, levels, shapes, openacc, exact; or ranks (under mpiexec: the full "
                 "sum split over the ranks, not part of all); or ops (arg-max/min, min-max, mean-var against tally's "
                 "sum, CUB and Eigen, not part of all); or segments (segmented sums of 2^28 floats, not part of all)")
      ->check(
          CLI::IsMember({"all", "sweep", "ladder", "levels", "shapes", "openacc", "exact", "ranks", "ops", "segments"}))
      ->capture_default_str();
  app.add_flag("--quick", o.quick, "Small sizes, a few seconds (works on the CPU backend)");
  app.add_flag("--bench", bench_flag, "The full table (the default; accepted for scripts/gpu-check.sh)");
  app.add_option("--extents", extents,
                 "Loop nest ng,nw,nv for --suite openacc (default 256,256,1024) and ranks (default 1024,1024,1024; "
                 "CPU 64,1024,1024)");
  app.add_option("--csv", csv, "Also write the rows as CSV to this file");
  app.add_option("--segment-case", o.segment_case,
                 "--suite segments: time only the case of this name (e.g. \"power law\"), so that a profiler sees "
                 "its launches alone");
  cli::add_number(app, "--threads", o.threads, "CPU threads (default: OpenMP's)", cli::non_negative);
  if (auto rc = cli::parse(app, argc, argv)) return *rc;
  // Checked on every rank alike; agreed, so that a multi-rank job exits 2 everywhere with one message.
  comm.agree([&]() -> std::exception_ptr {
    try {
      if (!extents.empty()) {
        long long a = 0, b = 0, c = 0;
        char tail = 0;
        if (std::sscanf(extents.c_str(), "%lld,%lld,%lld%c", &a, &b, &c, &tail) != 3 || a < 1 || b < 1 || c < 1)
          throw InputError("--extents: must be three positive integers ng,nw,nv (got " + extents + ")");
        o.extents = {a, b, c};
        o.extents_given = true;
      }
      if (!o.segment_case.empty()) {
        if (o.suite != "segments") throw InputError("--segment-case: applies to --suite segments only");
        (void)segment_cases(std::int64_t{1} << 28, o.segment_case);  // a name the suite has
      }
      if (comm.size() > 1 && o.suite != "ranks")
        throw InputError("--suite " + o.suite + ": runs in one process; under an MPI launcher use --suite ranks");
      return nullptr;
    } catch (...) {
      return std::current_exception();
    }
  }());
  o.seed = common.seed, o.device = common.device;
  bool fell_back = false;
  const Backend backend = resolve_backend(common.backend, &fell_back);
  if (fell_back) std::fprintf(stderr, "reduce-bench: no usable GPU, running on the CPU backend\n");
  comm.require_same(cli::command_line(argc, argv), "the command line");
  // Rank 0 writes the file; early, so that a bad --out fails (on every rank) before measuring.
  std::optional<h5::File> out_file;
  comm.agree([&]() -> std::exception_ptr {
    try {
      if (comm.is_root()) out_file.emplace(h5::File::create(common.out));
      return nullptr;
    } catch (...) {
      return std::current_exception();
    }
  }());

  Report rep;
  std::optional<DeviceInfo> dev;
  if (o.suite == "ranks") {
    rep = run_ranks_suite(o, comm, backend);
  } else if (o.suite == "ops") {
    if (backend == Backend::cuda) {
#ifdef TALLY_HAS_CUDA
      dev = query_device(common.device);
      rep = run_cuda_ops(o);
#endif
    } else {
      rep = run_cpu_ops(o);
    }
  } else if (backend == Backend::cuda) {
#ifdef TALLY_HAS_CUDA
    dev = query_device(common.device);
    rep = o.suite == "segments" ? run_segments_cuda(o) : run_cuda(o);
#endif
  } else if (o.suite == "segments") {
    rep = run_segments_cpu(o);
  } else {
    rep = run_cpu(o);
  }
  if (!comm.is_root()) return 0;
  h5::File& file = *out_file;

  if (!common.json) {
    std::printf("| suite | name | levels | op | type | shape | n | time us | call us | GB/s | vs ceiling | vs ref |\n");
    std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (const Row& x : rep.rows)
      std::printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", x.suite.c_str(), x.name.c_str(),
                  x.levels.c_str(), x.op.c_str(), x.type.c_str(), x.shape.c_str(), size_name(x.n).c_str(),
                  fmt(x.time_us).c_str(), fmt(x.call_us).c_str(), fmt(x.gbs, "%.1f").c_str(), fmt(x.vs_ceiling).c_str(),
                  fmt(x.vs_ref).c_str());
    std::printf("\nreduce-bench on %s (%s)", rep.backend.c_str(), rep.device.c_str());
    if (!rep.ceiling_name.empty()) std::printf("; ceiling: %s = %.1f GB/s", rep.ceiling_name.c_str(), rep.ceiling_gbs);
    std::printf("\n");
    for (const std::string& l : rep.summary) std::printf("%s\n", l.c_str());
  }

  file.attr("app", "reduce-bench");
  file.attr("backend", rep.backend);
  file.attr("suite", o.suite);
  file.attr("quick", o.quick);
  file.attr("seed", static_cast<std::int64_t>(o.seed));
  file.attr("extents",
            std::to_string(o.extents[0]) + "," + std::to_string(o.extents[1]) + "," + std::to_string(o.extents[2]));
  file.attr("ceiling_gbs", rep.ceiling_gbs);
  file.attr("ceiling", rep.ceiling_name);
  file.attr("ranks", static_cast<std::int32_t>(comm.size()));
  file.attr("status", "ok");
  write_h5(file, rep);
  write_provenance(file, collect_provenance(cli::command_line(argc, argv), dev), dev);
  if (!csv.empty()) write_csv(csv, rep);
  bool mismatch = false;
  for (const std::string& l : rep.summary) mismatch = mismatch || l.rfind("| MISMATCH", 0) == 0;
  if (mismatch) {
    std::fprintf(stderr,
                 "reduce-bench: results disagree (MISMATCH lines above: production vs CUB, the exact sum on CUDA vs "
                 "CPU, or a segmented sum vs CUB or its rerun); no file written\n");
    return exit_failure;
  }
  file.commit();
  if (common.json) {
    JsonLine j;
    j.add("app", "reduce-bench").add("backend", rep.backend).add("rows", static_cast<std::int64_t>(rep.rows.size()));
    j.add("ceiling_gbs", rep.ceiling_gbs).add("out", common.out);
    std::printf("%s\n", j.str().c_str());
  }
  return 0;
}

}  // namespace
}  // namespace tally::reduce::bench

int main(int argc, char** argv) {
  // One process (no launcher) is exactly the single-process program; under mpiexec only --suite ranks.
  return tally::ranks::run_ranks("reduce-bench", argc, argv,
                                 [&](tally::ranks::Comm& comm) { return tally::reduce::bench::run(argc, argv, comm); });
}
