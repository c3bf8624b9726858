// The three apps' solvers for Python: the solver-level functions the executables call (heat2d's
// run_problem, matmul's Engine per level, mcpi's run_cpu/run_cuda) on one rank, with the executables'
// option checks in the same order, so that bad input raises ValueError with the executable's message
// (tally::InputError -> ValueError in module.cpp; std::invalid_argument -> ValueError by nanobind).
// Results come back as dicts of Python numbers and NumPy arrays; the Python wrappers
// (tally/heat2d.py, matmul.py, mcpi.py) give them names and documentation. With `out`, each writes
// the executable's HDF5 file through the app's own writer (the same code as the executable's), its
// provenance recording the Python call (`call`) instead of a command line.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "driver.hpp"  // heat2d
#include "heat2d.hpp"
#include "heat2d_output.hpp"
#include "implicit/job.hpp"
#include "implicit/output.hpp"
#include "matmul.hpp"
#include "matmul_output.hpp"
#include "mcpi.hpp"
#include "mcpi_output.hpp"
#include "ozaki/ozaki.hpp"
#include "tally/common/device_info.hpp"
#include "tally/common/error.hpp"
#include "tally/common/h5.hpp"
#include "tally/common/provenance.hpp"
#include "tally/common/timing.hpp"
#include "tally/reduce/backend.hpp"

namespace nb = nanobind;

namespace tally::python {
namespace {

/// A NumPy array that owns `v` (moved in), of the given shape.
template <class T>
nb::object to_numpy(std::vector<T>&& v, std::initializer_list<std::size_t> shape) {
  auto* heap = new std::vector<T>(std::move(v));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T>(heap->data(), shape, owner).cast();
}
template <class T>
nb::object to_numpy(std::vector<T>&& v) {
  const std::size_t n = v.size();
  return to_numpy(std::move(v), {n});
}

nb::dict timings_dict(const Timings& t) {
  nb::dict d;
  for (const auto& [name, s] : t.entries()) d[name.c_str()] = s;
  return d;
}

reduce::Backend backend_of(const std::string& request, bool& fell_back) {
  return reduce::resolve_backend(request, &fell_back);  // std::invalid_argument -> ValueError
}

void check_precision(const std::string& precision) {
  if (precision != "float" && precision != "double")
    throw InputError("--precision: '" + precision + "' is not one of float, double");
}

// ---- out= --------------------------------------------------------------------------------------------
// As the executables' --out: a bad path fails before any work, the file is written once the solve is
// done, under a temporary name, and renamed when complete (h5::File), so that bad input, a failed
// solve or an interrupt leaves no file.
void check_out(const std::optional<std::string>& out) {
  if (!out) return;
  try {
    (void)h5::File::create(*out);  // created and removed again
  } catch (const InputError& e) {
    std::string msg = e.what();
    if (msg.rfind("--out: ", 0) == 0) msg.erase(0, 7);
    throw InputError("out: " + msg);
  }
}

/// Writes the file with `write(h5::File&)` (without the GIL) and commits it.
template <class Write>
void write_out(const std::optional<std::string>& out, Write&& write) {
  if (!out) return;
  nb::gil_scoped_release unlocked;
  auto f = h5::File::create(*out);
  write(f);
  f.commit();
}

std::optional<DeviceInfo> device_of(reduce::Backend b, int device) {
  if (b != reduce::Backend::cuda) return std::nullopt;
  return query_device(device);
}

/// Ctrl-C during a solve: at the solver's safe points (a batch, a checked sweep) the GIL is taken
/// briefly to run Python's signal handlers; KeyboardInterrupt (or whatever a handler raised) stops the
/// solve, before any file is written. Called without the GIL.
void check_python_signals() {
  nb::gil_scoped_acquire locked;
  if (PyErr_CheckSignals() != 0) throw nb::python_error();
}

// ---- heat2d -------------------------------------------------------------------------------------------
/// StopRule::stop_requested of a solve from Python, polled at checked sweeps without the GIL: at most
/// every 20 ms it takes the GIL to run Python's signal handlers; when one raises (KeyboardInterrupt),
/// the error is kept for the caller to raise and the solver stops at this sweep.
thread_local std::optional<nb::python_error> pending_python_error;
bool python_stop_requested() {
  thread_local std::chrono::steady_clock::time_point last{};
  if (pending_python_error) return true;
  const auto now = std::chrono::steady_clock::now();
  if (now - last < std::chrono::milliseconds(20)) return false;
  last = now;
  nb::gil_scoped_acquire locked;
  if (PyErr_CheckSignals() == 0) return false;
  pending_python_error.emplace();  // fetches (and clears) Python's error indicator
  return true;
}

template <class T>
nb::dict heat2d_report(const heat2d::Problem& p, heat2d::StopRule rule, heat2d::RunOptions ro, std::int64_t max_iter,
                       const std::optional<std::string>& out, const std::string& call,
                       const std::optional<DeviceInfo>& dev) {
  using namespace heat2d;
  Report<T> rep;
  ranks::RankStats total_s;
  const ranks::Comm one;  // the executable's one-rank job
  HostTimer total;
  {
    nb::gil_scoped_release unlocked;
    ro.comm = &one;
    rule.stop_requested = &python_stop_requested;
    pending_python_error.reset();
    rep = run_problem<T>(p, rule, ro);
    total_s = one.stats(total.seconds());
  }
  if (pending_python_error) {  // Ctrl-C: raised, nothing written
    nb::python_error e = std::move(*pending_python_error);
    pending_python_error.reset();
    throw e;
  }
  HostTimer tw;
  write_out(out, [&](h5::File& f) {
    write_result<T>(f, p, rule, ro, {max_iter, ""}, rep, one, total_s, collect_provenance(call, dev), dev, tw, total);
  });
  nb::dict d;
  const heat2d::SolveResult& r = rep.result;
  d["status"] = heat2d::to_string(r.status);
  d["iterations"] = r.iterations;
  d["final_residual"] = r.final_residual;
  d["residual_iteration"] = to_numpy(std::vector<std::int64_t>(r.check_iteration));
  d["residual_value"] = to_numpy(std::vector<double>(r.check_residual));
  d["solve_s"] = r.solve_s;
  d["field"] = to_numpy(std::move(rep.field), {static_cast<std::size_t>(p.ny), static_cast<std::size_t>(p.nx)});
  d["sim_time"] = rep.sim_time;
  if (rep.analytic) {
    nb::dict a;
    a["max"] = rep.analytic->max;
    a["l2"] = rep.analytic->l2;
    d["analytic_error"] = a;
  } else {
    d["analytic_error"] = nb::none();
  }
  d["eigen_max_abs_diff"] = rep.eigen_max_abs_diff ? nb::cast(*rep.eigen_max_abs_diff) : nb::none();
  d["eigen_tolerance"] = rep.eigen_tolerance;
  d["validation_passed"] = rep.validation_passed;
  d["timings"] = timings_dict(rep.timings);
  d["dt"] = p.dt;
  d["r"] = p.r();
  d["out"] = out ? nb::cast(*out) : nb::none();
  return d;
}

nb::dict heat2d_solve(std::int64_t nx, std::optional<std::int64_t> ny, const std::string& mode, double tol,
                      std::int64_t max_iter, std::int64_t check_every, double alpha, double dt, double t_end,
                      const std::string& bc_top, const std::string& bc_bottom, const std::string& bc_left,
                      const std::string& bc_right, const std::string& init, const std::string& precision,
                      const std::string& backend, int device, const std::string& cuda_kernel, bool validate,
                      int sweeps_per_pass, bool xdmf, const std::optional<std::string>& out, const std::string& call) {
  using namespace heat2d;
  // As heat2d's main(): everything is checked before anything is computed.
  if (mode != "steady" && mode != "transient")
    throw InputError("--mode: '" + mode + "' is not one of steady, transient");
  if (cuda_kernel != "async" && cuda_kernel != "registers" && cuda_kernel != "persistent")
    throw InputError("--cuda-kernel: '" + cuda_kernel + "' is not one of async, registers, persistent");
  check_precision(precision);
  Problem p;
  p.nx = nx;
  p.ny = ny ? *ny : nx;
  p.mode = mode == "transient" ? Mode::transient : Mode::steady;
  p.alpha = alpha;
  p.dt = dt;
  p.t_end = t_end;
  p.top = parse_spec(bc_top, "--bc-top");
  p.bottom = parse_spec(bc_bottom, "--bc-bottom");
  p.left = parse_spec(bc_left, "--bc-left");
  p.right = parse_spec(bc_right, "--bc-right");
  p.init = parse_spec(init, "--init");
  finalize(p);
  const StopRule rule = make_stop_rule(p, tol, max_iter, check_every);
  RunOptions ro;
  bool fell_back = false;
  ro.backend = backend_of(backend, fell_back);
  ro.device = device;
  ro.cuda_kernel = cuda_kernel;
  ro.validate = validate;
  ro.progress = false;
  ro.sweeps_per_pass = sweeps_per_pass;  // 0: auto; checked against --check-every as the executable does
  const Decomposition one_rank = decompose(p);
  ro.decomposition = &one_rank;
  (void)resolve_sweeps_per_pass(sweeps_per_pass, rule.check_every, ro.backend, deepest_pass(one_rank));
  const std::optional<DeviceInfo> dev = device_of(ro.backend, device);
  check_out(out);
  nb::dict d = precision == "float" ? heat2d_report<float>(p, rule, ro, max_iter, out, call, dev)
                                    : heat2d_report<double>(p, rule, ro, max_iter, out, call, dev);
  if (out && xdmf) write_xdmf(*out, p, precision == "float" ? 4 : 8);
  d["backend"] = reduce::to_string(ro.backend);
  d["fell_back"] = fell_back;
  d["precision"] = precision;
  return d;
}

// ---- heat2d's implicit mode (--deck, --set) -------------------------------------------------------------
/// The implicit mode's run of a deck on one rank, as `heat2d --deck ... --json` runs it: the JSON
/// line's text (the Python wrapper parses it) and the final fields; `out` gets the executable's file.
nb::dict heat2d_deck(const std::string& deck, const std::vector<std::string>& set, const std::string& solver,
                     double eps, const std::string& eps_norm, std::int64_t max_iters, const std::string& preconditioner,
                     const std::string& reproducible, const std::string& cheby_steps, const std::string& backend,
                     int device, bool xdmf, const std::optional<std::string>& out, const std::string& call) {
  using namespace heat2d::implicit;
  HostTimer total;
  // As the executable's options: everything is checked before anything is computed.
  Options o;
  o.deck = deck;
  o.set = set;
  o.solver = solver;
  o.preconditioner = preconditioner;
  o.eps_norm = eps_norm;
  o.reproducible = reproducible;
  o.cheby_steps = cheby_steps;
  o.eps = eps;
  o.max_iters = max_iters;
  if (!o.solver.empty() && o.solver != "cg" && o.solver != "cheby" && o.solver != "ppcg" && o.solver != "jacobi" &&
      o.solver != "pipecg")
    throw InputError("--solver: '" + o.solver + "' is not one of cg, cheby, ppcg, jacobi, pipecg");
  if (eps < 0.0 || !std::isfinite(eps))
    throw InputError("--eps: must be a number > 0 (got " + std::to_string(eps) + ")");
  if (max_iters < 0) throw InputError("--max-iters: must be positive (got " + std::to_string(max_iters) + ")");
  if (!o.preconditioner.empty() && o.preconditioner != "none" && o.preconditioner != "jac_diag" &&
      o.preconditioner != "jac_block")
    throw InputError("--preconditioner: '" + o.preconditioner + "' is not one of none, jac_diag, jac_block");
  const Deck d = make_deck(o);
  RunOptions ro;
  ro.solve = make_solve_options(d, o);
  bool fell_back = false;
  ro.backend = engine_backend(backend_of(backend, fell_back), backend, ro.solve.solver, 1, &fell_back);
  ro.device = device;
  const heat2d::Decomposition one_rank = decompose(d);
  ro.decomposition = &one_rank;
  const std::optional<DeviceInfo> dev = device_of(ro.backend, device);
  check_out(out);
  RunReport rep;
  {
    nb::gil_scoped_release unlocked;
    ro.on_step = [](std::int64_t, std::int64_t, const SolveStats&) { check_python_signals(); };
    rep = run_deck(d, ro);
  }
  OutputRecord rec;
  rec.deck_file = deck;
  rec.backend = reduce::to_string(ro.backend);
  HostTimer tw;
  rec.total_s = total.seconds();
  write_out(out, [&](h5::File& f) { write_result(f, rep, rec, collect_provenance(call, dev), dev); });
  if (out && (xdmf || d.visit_frequency > 0)) write_xdmf(*out, rep);
  rec.write_s = tw.seconds();
  rec.total_s = total.seconds();
  nb::dict r;
  r["json"] = json_summary(rep, rec, out ? *out : "");
  const std::initializer_list<std::size_t> shape{static_cast<std::size_t>(d.y_cells),
                                                 static_cast<std::size_t>(d.x_cells)};
  r["field"] = to_numpy(std::move(rep.u), shape);
  r["energy"] = to_numpy(std::move(rep.energy), shape);
  r["density"] = to_numpy(std::move(rep.density), shape);
  r["fell_back"] = fell_back;
  return r;
}

// ---- mcpi ---------------------------------------------------------------------------------------------
nb::dict mcpi_estimate(const std::string& n, const std::string& generator, const std::string& api,
                       const std::string& offset, std::uint64_t seed, const std::string& batch,
                       const std::string& backend, int device, const std::optional<std::string>& out,
                       const std::string& call) {
  using namespace mcpi;
  Params p;  // as mcpi's main()
  p.n = parse_count(n, "--n");
  p.batch = parse_count(batch, "--batch");
  p.offset = parse_count(offset, "--offset");
  p.seed = seed;
  p.generator = parse_generator(generator);
  p.api = parse_api(api);
  validate(p);
  bool fell_back = false;
  const reduce::Backend b = backend_of(backend, fell_back);
  if (b == reduce::Backend::cpu) {
    std::string why;
    if (!cpu_supports(p.generator, p.api, &why)) throw InputError(why);
  }
  const std::optional<DeviceInfo> dev = device_of(b, device);
  check_out(out);
  Job job;
  {
    nb::gil_scoped_release unlocked;
    HostTimer total;
    const ProgressFn progress = [](std::int64_t, std::int64_t) { check_python_signals(); };
    Result r = b == reduce::Backend::cuda ? run_cuda(p, device, progress) : run_cpu(p, progress);
    const ranks::Comm one;  // the executable's one-rank job
    job = gather_job(one, p, b, std::move(r), total);
  }
  write_out(out, [&](h5::File& f) { write_result(f, job, collect_provenance(call, dev), dev); });
  nb::dict d;
  Result& r = job.result;
  d["estimate"] = job.outcome.estimate;
  d["hits"] = r.hits;
  d["n"] = p.n;
  d["std_error"] = job.outcome.std_error;
  d["abs_error"] = job.outcome.abs_error;
  d["error_bound"] = job.outcome.error_bound;
  d["passed"] = job.outcome.ok;  // the executable's check: within error_bound of pi
  d["batch_n"] = to_numpy(std::move(r.batch_n));
  d["batch_hits"] = to_numpy(std::move(r.batch_hits));
  d["setup_s"] = r.setup_s;
  d["generate_count_s"] = r.generate_count_s;
  d["total_s"] = job.total_s;
  d["generator"] = to_string(p.generator);
  d["api"] = to_string(p.api);
  d["offset"] = p.offset;
  d["seed"] = p.seed;
  d["backend"] = reduce::to_string(b);
  d["fell_back"] = fell_back;
  d["out"] = out ? nb::cast(*out) : nb::none();
  return d;
}

// ---- matmul -------------------------------------------------------------------------------------------
nb::dict measured(const matmul::detail::Measured& m) {
  nb::dict d;
  d["name"] = m.name;
  d["time_s"] = m.time_s;
  d["gflops"] = m.gflops;
  d["gbps"] = m.gbps;
  d["rel_error"] = m.rel_error;
  d["tolerance"] = m.tolerance;
  d["passed"] = m.passed;
  if (!std::isnan(m.diff_cublas)) d["rel_diff_cublas"] = m.diff_cublas;
  if (!std::isnan(m.diff_eigen)) d["rel_diff_eigen"] = m.diff_eigen;
  return d;
}

template <class T>
std::vector<T> host_matrix(const nb::ndarray<>& a, const char* opt, std::int64_t rows, std::int64_t cols) {
  if (a.ndim() != 2 || static_cast<std::int64_t>(a.shape(0)) != rows || static_cast<std::int64_t>(a.shape(1)) != cols)
    throw InputError(std::string(opt) + ": expected a " + std::to_string(rows) + " x " + std::to_string(cols) +
                     " matrix");
  if (a.dtype() != nb::dtype<T>() || a.device_type() != nb::device::cpu::value)
    throw InputError(std::string(opt) + ": expected host " + (sizeof(T) == 4 ? "float32" : "float64") +
                     " data (--precision)");
  if (a.stride(0) != cols || a.stride(1) != 1) throw InputError(std::string(opt) + ": expected a C-contiguous matrix");
  const T* p = static_cast<const T*>(a.data());
  return std::vector<T>(p, p + rows * cols);
}

// The executable's single run on one rank (detail::run_case, its ranks report and its writer).
template <class T>
nb::dict matmul_case(reduce::Backend b, int device, matmul::Shape s, const std::vector<matmul::Level>& levels,
                     const matmul::detail::Options& o, const std::optional<nb::ndarray<>>& a_in,
                     const std::optional<nb::ndarray<>>& b_in, bool return_c, const std::optional<std::string>& out,
                     const std::string& call) {
  using namespace matmul::detail;
  HostInputs<T> given;  // as the executable's --a/--b: a missing one is generated
  if (a_in) given.a = host_matrix<T>(*a_in, "--a", s.m, s.k);
  if (b_in) given.b = host_matrix<T>(*b_in, "--b", s.k, s.n);
  const std::optional<DeviceInfo> dev = device_of(b, device);
  check_out(out);
  std::vector<T> c;
  Case cs;
  RanksReport rr;
  {
    nb::gil_scoped_release unlocked;
    HostTimer total;
    const ranks::Comm one;  // the executable's one-rank job
    cs = run_case<T>(one, b, device, s, levels, o, !o.no_eigen, o.repeats, return_c || o.write_c ? &c : nullptr,
                     b == reduce::Backend::cuda, &given);
    cs.timings.set("total_s", total.seconds());
    rr = ranks_report(one, b, cs);
  }
  write_out(out, [&](h5::File& f) {
    write_result<T>(f, cs, o, b, o.write_c ? &c : nullptr, rr, collect_provenance(call, dev), dev,
                    a_in ? "python array" : "generated", b_in ? "python array" : "generated");
  });
  nb::dict d;
  nb::list rows;
  for (const Measured& m : cs.levels) rows.append(measured(m));
  d["levels"] = rows;
  d["vendor"] = cs.vendor ? nb::object(measured(*cs.vendor)) : nb::none();
  d["eigen"] = cs.eigen ? nb::object(measured(*cs.eigen)) : nb::none();
  d["passed"] = cs.passed();
  d["timings"] = timings_dict(cs.timings);
  d["copy_bandwidth_gbs"] = cs.bandwidth_gbs ? nb::cast(*cs.bandwidth_gbs) : nb::none();
  d["c"] =
      return_c ? to_numpy(std::move(c), {static_cast<std::size_t>(s.m), static_cast<std::size_t>(s.n)}) : nb::none();
  d["out"] = out ? nb::cast(*out) : nb::none();
  return d;
}

nb::dict matmul_run(std::int64_t m, std::int64_t n, std::int64_t k, const std::string& precision,
                    const std::vector<std::string>& level_names, const std::string& backend, int device,
                    std::uint64_t seed, int warmup, int repeats, std::int64_t split_k, bool eigen,
                    std::optional<nb::ndarray<>> a, std::optional<nb::ndarray<>> b, bool return_c, bool write_c,
                    bool exact, const std::optional<std::string>& out, const std::string& call,
                    const std::string& ozaki_moduli) {
  using namespace matmul;
  check_precision(precision);
  for (auto [opt, v] : {std::pair{"--m", m}, std::pair{"--n", n}, std::pair{"--k", k}})
    if (v <= 0) throw InputError(std::string(opt) + ": must be positive (got " + std::to_string(v) + ")");
  if (repeats < 1) throw InputError("--repeats: must be at least 1");
  if (warmup < 0) throw InputError("--warmup: must not be negative");
  if (split_k < 0) throw InputError("--split-k: must not be negative");
  (void)ozaki::parse_moduli(ozaki_moduli);  // InputError naming --ozaki-moduli
  bool fell_back = false;
  const reduce::Backend be = backend_of(backend, fell_back);
  const std::vector<Level> levels = detail::resolve_levels(level_names, be, exact);  // InputError naming --level
  if (levels.empty()) throw InputError("--level: no level given");
  const Shape s{m, n, k};
  detail::Options o;  // what the executable's options would hold
  o.common.seed = seed;
  o.common.precision = precision;
  o.common.backend = backend;
  o.common.device = device;
  o.m = m, o.n = n, o.k = k;
  o.levels = level_names;
  o.write_c = write_c;
  o.no_eigen = !eigen;
  o.repeats = repeats;
  o.warmup = warmup;
  o.split_k = split_k;
  o.exact = exact;
  o.ozaki_moduli = ozaki_moduli;
  nb::dict d = precision == "float" ? matmul_case<float>(be, device, s, levels, o, a, b, return_c, out, call)
                                    : matmul_case<double>(be, device, s, levels, o, a, b, return_c, out, call);
  d["shape"] = nb::make_tuple(m, n, k);
  d["precision"] = precision;
  d["backend"] = reduce::to_string(be);
  d["fell_back"] = fell_back;
  return d;
}

}  // namespace

void bind_solvers(nb::module_& m) {
  using nb::arg;
  m.def("heat2d_solve", &heat2d_solve, arg("nx"), arg("ny").none(), arg("mode"), arg("tol"), arg("max_iter"),
        arg("check_every"), arg("alpha"), arg("dt"), arg("t_end"), arg("bc_top"), arg("bc_bottom"), arg("bc_left"),
        arg("bc_right"), arg("init"), arg("precision"), arg("backend"), arg("device"), arg("cuda_kernel"),
        arg("validate"), arg("sweeps_per_pass"), arg("xdmf"), arg("out").none(), arg("call"));
  m.def("heat2d_deck", &heat2d_deck, arg("deck"), arg("set"), arg("solver"), arg("eps"), arg("eps_norm"),
        arg("max_iters"), arg("preconditioner"), arg("reproducible"), arg("cheby_steps"), arg("backend"), arg("device"),
        arg("xdmf"), arg("out").none(), arg("call"));
  m.def(
      "mcpi_error_bound",
      [](const std::string& generator, std::int64_t offset, std::int64_t n) {
        if (n < 1) throw InputError("n: must be positive (got " + std::to_string(n) + ")");
        if (offset < 0) throw InputError("offset: must not be negative (got " + std::to_string(offset) + ")");
        return mcpi::error_bound(mcpi::parse_generator(generator), offset, n);
      },
      arg("generator"), arg("offset"), arg("n"));
  m.def("mcpi_estimate", &mcpi_estimate, arg("n"), arg("generator"), arg("api"), arg("offset"), arg("seed"),
        arg("batch"), arg("backend"), arg("device"), arg("out").none(), arg("call"));
  m.def("matmul_run", &matmul_run, arg("m"), arg("n"), arg("k"), arg("precision"), arg("levels"), arg("backend"),
        arg("device"), arg("seed"), arg("warmup"), arg("repeats"), arg("split_k"), arg("eigen"), arg("a").none(),
        arg("b").none(), arg("return_c"), arg("write_c"), arg("exact"), arg("out").none(), arg("call"),
        arg("ozaki_moduli"));
}

}  // namespace tally::python
