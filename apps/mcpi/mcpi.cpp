// Backend-neutral parts: names, parameter checks, statistics.
#include "mcpi.hpp"

#include <array>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <utility>

#include "tally/common/error.hpp"

namespace tally::mcpi {

namespace {
constexpr std::array<std::pair<Generator, const char*>, 5> generator_names{{
    {Generator::philox, "philox"},
    {Generator::xorwow, "xorwow"},
    {Generator::mrg32k3a, "mrg32k3a"},
    {Generator::sobol, "sobol"},
    {Generator::scrambled_sobol, "scrambled-sobol"},
}};
}  // namespace

std::string to_string(Generator g) {
  for (auto [gen, name] : generator_names)
    if (gen == g) return name;
  return "?";
}
std::string to_string(Api a) { return a == Api::device ? "device" : "host"; }

Generator parse_generator(std::string_view name) {
  std::string names;
  for (auto [gen, n] : generator_names) {
    if (name == n) return gen;
    names += (names.empty() ? "" : ", ") + std::string(n);
  }
  throw InputError("--generator: unknown generator '" + std::string(name) + "' (one of: " + names + ")");
}

Api parse_api(std::string_view name) {
  if (name == "device") return Api::device;
  if (name == "host") return Api::host;
  throw InputError("--api: unknown API '" + std::string(name) + "' (device or host)");
}

bool is_quasi(Generator g) { return g == Generator::sobol || g == Generator::scrambled_sobol; }

std::int64_t parse_count(std::string_view text, std::string_view option) {
  const std::string s(text);
  const std::string bad =
      std::string(option) + ": '" + s + "' is not a whole number of samples (e.g. 100000000, 1e8, 2^30)";
  if (s.empty()) throw InputError(bad);
  if (const auto caret = s.find('^'); caret != std::string::npos) {
    if (s.substr(0, caret) != "2") throw InputError(bad);
    const std::int64_t e = parse_count(s.substr(caret + 1), option);
    if (e > 62) throw InputError(std::string(option) + ": 2^" + std::to_string(e) + " is too large (at most 2^62)");
    return std::int64_t{1} << e;
  }
  errno = 0;
  char* end = nullptr;
  if (s.find_first_of("eE.") != std::string::npos) {
    const double v = std::strtod(s.c_str(), &end);
    if (*end != '\0' || errno != 0 || !std::isfinite(v) || v != std::floor(v) || std::fabs(v) > 0x1p62)
      throw InputError(bad);
    return static_cast<std::int64_t>(v);
  }
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (*end != '\0' || errno != 0) throw InputError(bad);
  return v;
}

void validate(const Params& p) {
  if (p.n <= 0) throw InputError("--n: must be a positive integer (got " + std::to_string(p.n) + ")");
  if (p.offset < 0) throw InputError("--offset: must be a non-negative integer (got " + std::to_string(p.offset) + ")");
  if (p.batch <= 0 || p.batch > (std::int64_t{1} << 40))
    throw InputError("--batch: must be an integer in [1, 2^40] (got " + std::to_string(p.batch) + ")");
  if (is_quasi(p.generator)) {
    if (p.offset >= sobol_points || p.n > sobol_points - p.offset)
      throw InputError("--offset/--n: " + to_string(p.generator) +
                       " is a 32-bit Sobol sequence of 2^32 points per dimension; " +
                       "offset + n = " + std::to_string(p.offset) + " + " + std::to_string(p.n) + " is beyond it");
  } else if (p.offset > std::numeric_limits<std::int64_t>::max() - p.n) {
    // Sample k uses uniforms 2k and 2k+1: 64-bit uniform indices end at 2^63 samples.
    throw InputError("--offset/--n: offset + n is beyond the generator's 64-bit stream position (2^63 samples)");
  }
}

bool cpu_supports(Generator g, Api a, std::string* why) {
  auto no = [&](std::string msg) {
    if (why) *why = std::move(msg);
    return false;
  };
  if (g == Generator::philox && a == Api::device) return true;  // our own Philox4x32-10
  if (!detail::curand_host_available())
    return no("the cpu backend of this build (no CUDA toolkit) reproduces philox with --api device only; " +
              to_string(g) + " with --api " + to_string(a) + " needs cuRAND's host generator");
  if (a == Api::device && (g == Generator::xorwow || g == Generator::mrg32k3a))
    return no(
        "the cpu backend reproduces the device-API streams of philox, sobol and scrambled-sobol only; use --api host "
        "(cuRAND's host generator) or --backend cuda for " +
        to_string(g));
  return true;
}

double std_error(std::int64_t n) { return std::sqrt(pi * (4.0 - pi) / static_cast<double>(n)); }

double pseudo_random_bound(std::int64_t n, double delta) {
  const double p = pi / 4, lg = std::log(2 / delta), nn = static_cast<double>(n);
  return 4 * (lg / 3 + std::sqrt(lg * lg / 9 + 2 * nn * lg * p * (1 - p))) / nn;
}

double sobol_bound(std::int64_t offset, std::int64_t n) {
  double miss = 0;
  const auto end = static_cast<std::uint64_t>(offset + n);
  for (auto a = static_cast<std::uint64_t>(offset); a < end;) {
    int m = a ? std::countr_zero(a) : static_cast<int>(std::bit_width(end));  // the largest aligned block at a ...
    while (a + (std::uint64_t{1} << m) > end) --m;                            // ... inside the range
    miss += static_cast<double>((std::uint64_t{1} << ((m + 1) / 2)) + (std::uint64_t{1} << (m / 2)) - 1);
    a += std::uint64_t{1} << m;
  }
  return 4 * (miss + 6e-7 * static_cast<double>(n)) / static_cast<double>(n);
}

double error_bound(Generator g, std::int64_t offset, std::int64_t n) {
  return is_quasi(g) ? sobol_bound(offset, n) : pseudo_random_bound(n);
}

}  // namespace tally::mcpi
