// --restart: reading and checking a heat2d output to continue from (restart.hpp).
#include "restart.hpp"

#include <bit>
#include <cstdio>
#include <filesystem>
#include <tuple>

#include "tally/common/error.hpp"
#include "tally/common/h5.hpp"

namespace tally::heat2d {

namespace {

bool same_bits(double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }
std::string num17(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

}  // namespace

Restart read_restart(const std::string& path, const Problem& p, const std::string& precision, StopRule& rule) {
  const std::string what = "--restart " + path;
  if (!std::filesystem::is_regular_file(path)) throw InputError(what + ": no such file");
  const h5::File f = [&] {
    try {
      return h5::File::open(path);
    } catch (const InputError& e) {
      throw InputError(what + ": " + e.what());
    }
  }();
  if (!f.has_attr("app") || f.read_attr_string("app") != "heat2d")
    throw InputError(what + ": not a heat2d output (its 'app' attribute is " +
                     (f.has_attr("app") ? "'" + f.read_attr_string("app") + "'" : "missing") + ")");
  if (f.has_attr("status") && f.read_attr_string("status") == "bench")
    throw InputError(what + ": a --bench table, not a solve output");
  for (const char* a : {"status", "iterations", "nx", "ny", "precision", "mode", "alpha", "dt", "bc_top", "bc_bottom",
                        "bc_left", "bc_right", "init"})
    if (!f.has_attr(a)) throw InputError(what + ": not a heat2d solve output (no '" + std::string(a) + "' attribute)");
  for (const char* d : {"field", "residual/iteration", "residual/value"})
    if (!f.has(d)) throw InputError(what + ": not a heat2d solve output (no /" + std::string(d) + ")");
  auto mismatch = [&](const std::string& option, const std::string& file_v, const std::string& ours) {
    if (file_v != ours)
      throw InputError(option + " " + ours + " differs from " + what + "'s " + file_v +
                       " (a restart continues the same problem)");
  };
  mismatch("--nx", std::to_string(f.read_attr<std::int64_t>("nx")), std::to_string(p.nx));
  mismatch("--ny", std::to_string(f.read_attr<std::int64_t>("ny")), std::to_string(p.ny));
  mismatch("--precision", f.read_attr_string("precision"), precision);
  mismatch("--mode", f.read_attr_string("mode"), to_string(p.mode));
  for (auto [option, attr, ours] : {std::tuple{"--bc-top", "bc_top", &p.top},
                                    {"--bc-bottom", "bc_bottom", &p.bottom},
                                    {"--bc-left", "bc_left", &p.left},
                                    {"--bc-right", "bc_right", &p.right},
                                    {"--init", "init", &p.init}}) {
    const Spec theirs = parse_spec(f.read_attr_string(attr), option);
    if (theirs.is_sin != ours->is_sin || (!ours->is_sin && !same_bits(theirs.value, ours->value)))
      mismatch(option, theirs.text, ours->text);
  }
  if (p.mode == Mode::transient) {
    const double alpha = f.read_attr<double>("alpha"), dt = f.read_attr<double>("dt");
    if (!same_bits(alpha, p.alpha)) mismatch("--alpha", num17(alpha), num17(p.alpha));
    if (!same_bits(dt, p.dt)) mismatch("--dt (after fitting --t-end)", num17(dt), num17(p.dt));
  }
  const auto dims = f.dataset_dims("field");
  if (dims.size() != 2 || dims[0] != static_cast<std::uint64_t>(p.ny) || dims[1] != static_cast<std::uint64_t>(p.nx))
    throw InputError(what + ": its /field is not " + std::to_string(p.ny) + " x " + std::to_string(p.nx));
  Restart r;
  r.iterations = f.read_attr<std::int64_t>("iterations");
  if (r.iterations < 0) throw InputError(what + ": iterations " + std::to_string(r.iterations) + " is negative");
  if (r.iterations >= rule.last)
    throw InputError(what + " has " + std::to_string(r.iterations) + " sweeps already, this run ends at sweep " +
                     std::to_string(rule.last) + " (--max-iter counts all sweeps, --t-end the whole time)");
  const auto its = f.read<std::int64_t>("residual/iteration");
  const auto vals = f.read<double>("residual/value");
  if (its.size() != vals.size()) throw InputError(what + ": /residual/iteration and /residual/value differ in length");
  for (std::size_t i = 0; i < its.size(); ++i) {
    if (its[i] > r.iterations || (its[i] == r.iterations && r.iterations % rule.check_every != 0)) break;
    r.check_iteration.push_back(its[i]);
    r.check_residual.push_back(vals[i]);
  }
  rule.first = r.iterations;
  return r;
}

}  // namespace tally::heat2d
