#pragma once
// mcpi: Monte Carlo estimation of pi. pi ~= 4 * hits / n for n points uniform in the unit square,
// a hit being a point in the quarter disc x*x + y*y <= 1. One interface, one file per backend
// (mcpi_cpu.cpp, mcpi_cuda.cu, mcpi_curand_host.cu); main.cpp knows no backend.
//
// Stream layout (what makes a run splittable and reproducible). Sample k (k = offset, offset+1, ...,
// offset+n-1) is the point (x_k, y_k):
//   philox   : x_k, y_k = uniforms 2k and 2k+1 of cuRAND's host-API Philox4x32-10 ordering, i.e.
//              uniform u is lane u%4 of Philox4x32-10(counter {lo(c), hi(c), s, 0}, key = seed) with
//              block b = u/4, subsequence s = b % 65536, c = b / 65536. In the device API that is
//              curand_init(seed, s, 4*c) followed by curand4/curand_uniform4, so the fused kernel
//              (one thread per subsequence and counter range), the host API and the CPU all
//              produce the same points.
//   xorwow,
//   mrg32k3a : 2^18 streams; sample k comes from stream s = k % 2^18, as uniforms 2r and 2r+1 of
//              cuRAND subsequence s (curand_init(seed, s, 2r)) with r = k / 2^18. States persist
//              across batches. (The host API instead uses cuRAND's host ordering from uniform 2*offset.)
//   sobol,
//   scrambled-sobol: x_k = point k of Sobol dimension 0, y_k = point k of dimension 1 (Joe-Kuo 6
//              direction vectors, cuRAND's scramble constants); the seed is not used. The host API
//              returns dimension by dimension (n/2 values of dimension 0, then n/2 of dimension 1)
//              and is paired accordingly. 32-bit Sobol: offset + n <= 2^32 points.
// Hence the hits of [offset, offset+n1) plus those of [offset+n1, offset+n1+n2) equal the hits of
// [offset, offset+n1+n2): a run can be split into parts or continued with --offset.
//
// Each uniform is curand_uniform's x * 2^-32 + 2^-33 in float (in (0, 1]); the hit test is
// x*x + y*y <= 1 in float with each operation rounded (no fused multiply-add), so the CPU and the GPU
// count exactly the same points.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tally::mcpi {

enum class Generator { philox, xorwow, mrg32k3a, sobol, scrambled_sobol };
enum class Api { device, host };

inline constexpr std::int64_t pseudo_streams = std::int64_t{1} << 18;  ///< xorwow/mrg32k3a device-API streams
inline constexpr std::int64_t sobol_points = std::int64_t{1} << 32;    ///< points per 32-bit Sobol dimension
inline constexpr double pi = 3.141592653589793238462643383279502884;

[[nodiscard]] std::string to_string(Generator g);
[[nodiscard]] std::string to_string(Api a);
/// Throws tally::InputError naming --generator / --api and the allowed names.
[[nodiscard]] Generator parse_generator(std::string_view name);
[[nodiscard]] Api parse_api(std::string_view name);
[[nodiscard]] bool is_quasi(Generator g);
/// Parses a sample count: 100000000, 1e8, 2^30 (exact integers only). Throws InputError naming `option`.
[[nodiscard]] std::int64_t parse_count(std::string_view text, std::string_view option);

struct Params {
  std::int64_t n = 100'000'000;  ///< samples (points)
  std::int64_t offset = 0;       ///< index of the first sample in the stream
  std::uint64_t seed = 20260101;
  std::int64_t batch = std::int64_t{1} << 32;  ///< samples per batch (one kernel launch / per-batch estimate)
  Generator generator = Generator::philox;
  Api api = Api::device;
};

/// Throws tally::InputError for n <= 0, a bad batch size, a negative offset, an offset beyond the
/// generator's period (sobol: offset + n > 2^32; others: beyond the 64-bit sample index).
void validate(const Params& p);

/// Whether this build's CPU backend reproduces (generator, api); when not, *why says why.
[[nodiscard]] bool cpu_supports(Generator g, Api a, std::string* why = nullptr);

struct Result {
  std::int64_t hits = 0;
  std::vector<std::int64_t> batch_n, batch_hits;
  double setup_s = 0;           ///< state initialisation / generator creation
  double generate_count_s = 0;  ///< generation and counting, all batches
};

/// Called after each batch with the samples and hits so far (for the progress line).
using ProgressFn = std::function<void(std::int64_t n_done, std::int64_t hits_done)>;

/// Standard error of the estimate 4 hits / n: sqrt(pi (4 - pi) / n).
[[nodiscard]] double std_error(std::int64_t n);

// ---- the error bound: what a correct count does not exceed ------------------------------------------
// The app fails a run whose estimate lies beyond it, and the tests check every estimate against it:
// one bound, sound for either kind of generator.

/// The chance that a correct run with pseudo-random points fails the check (and a test making k such
/// checks fails with below k times it, by the union bound).
inline constexpr double bound_failure_probability = 1e-20;

/// The |4 hits/n - pi| that n independent uniform points exceed with probability below delta.
/// Bernstein's inequality for the hit fraction (terms in [0, 1], variance p(1-p), p = pi/4):
/// P(|hits/n - p| >= t) <= 2 exp(-n t^2 / (2 p(1-p) + 2t/3)), solved for t with the right side delta:
/// about 10 standard errors for large n at delta = 1e-20.
[[nodiscard]] double pseudo_random_bound(std::int64_t n, double delta = bound_failure_probability);

/// The |4 hits/n - pi| that points offset .. offset+n-1 of the 2-D Sobol sequence (scrambled or not)
/// never exceed. Dimensions 0 and 1 of Sobol's sequence form a (0,2)-sequence in base 2 (the digital
/// scramble keeps that): each aligned block of 2^m points is a (0,m,2)-net, one point in each cell of a
/// 2^ceil(m/2) x 2^floor(m/2) grid. The hit set is a down-set of the square (the float conversion and
/// the test x*x + y*y <= 1 are monotone), whose boundary crosses at most 2^ceil(m/2) + 2^floor(m/2) - 1
/// cells; each crossed cell is off by at most one point, the others by none. The range splits into at
/// most two aligned blocks of each size. The hit set's area differs from pi/4 by the band the float
/// rounding blurs (r^2 within 6.02 * 2^-24 of 1): (pi/2) 6.02 2^-24 < 6e-7.
[[nodiscard]] double sobol_bound(std::int64_t offset, std::int64_t n);

/// The bound for generator g: sobol_bound for the Sobol sequences, pseudo_random_bound otherwise.
[[nodiscard]] double error_bound(Generator g, std::int64_t offset, std::int64_t n);

// ---- backends -------------------------------------------------------------------------------------
/// CPU backend: its own Philox4x32-10 (philox), cuRAND's host-side generator (curandCreateGeneratorHost)
/// for the host API and Sobol. Throws InputError for what cpu_supports() rejects.
Result run_cpu(const Params& p, const ProgressFn& progress = {});
/// CUDA backend on `device` (throws tally::Error in a build without CUDA).
Result run_cuda(const Params& p, int device, const ProgressFn& progress = {});

namespace detail {
/// The host backends' batch loop: hits(first, m) counts samples [first, first + m) of the run;
/// each batch is recorded in r and reported to `progress`.
template <class CountFn>
void count_in_batches(std::int64_t n, std::int64_t batch, Result& r, const ProgressFn& progress, CountFn&& hits) {
  for (std::int64_t done = 0; done < n;) {
    const std::int64_t m = std::min(batch, n - done);
    const std::int64_t h = hits(done, m);
    r.batch_n.push_back(m);
    r.batch_hits.push_back(h);
    r.hits += h;
    done += m;
    if (progress) progress(done, r.hits);
  }
}

/// Hits of samples [first, first + n) of the Philox layout above, on the CPU (OpenMP).
std::int64_t philox_hits_cpu(std::uint64_t seed, std::int64_t first, std::int64_t n);
/// cuRAND's host-side generator (CPU): creates the generator at sample `first` (setup), then counts
/// [first, first+n) in batches of `batch`. Only in builds with the CUDA toolkit.
Result curand_host_hits(Generator g, std::uint64_t seed, std::int64_t first, std::int64_t n, std::int64_t batch,
                        const ProgressFn& progress);
/// The first `count` uniforms (floats) of cuRAND's host generator from uniform index `first_uniform`
/// (pseudo) or point `first_uniform` of dimension 0 (quasi, 1 dimension). For the exactness tests.
std::vector<float> curand_host_uniforms(Generator g, std::uint64_t seed, std::uint64_t first_uniform,
                                        std::size_t count);
bool curand_host_available();
/// Hits among m points of a buffer of 2m uniforms: interleaved (x0, y0, x1, ...) or, when `planar`,
/// m values of x then m values of y (cuRAND's quasi-random layout). OpenMP.
std::int64_t count_hits_cpu(const float* buf, std::int64_t m, bool planar);
/// The fused Philox kernels: direct (curand_Philox4x32_10 on explicit counters, the production
/// path), the same capped at 32 registers, and curand_init + curand_uniform4.
enum class PhiloxLoop { direct, direct_full, uniform4 };
/// Hits of samples [first, first + n) with one fused Philox kernel on the current device (tests).
std::int64_t philox_fused_hits_cuda(std::uint64_t seed, std::int64_t first, std::int64_t n, PhiloxLoop loop);
}  // namespace detail

// ---- what the benchmark (bench.cpp) times on the CUDA backend (mcpi_cuda.cu) ------------------------
/// One generator on a CUDA device, positioned at sample `first`: each count() counts the stream's
/// next n samples, as run_cuda's batches do.
class CudaCounter {
 public:
  virtual ~CudaCounter() = default;
  /// The state initialisation's device time.
  [[nodiscard]] virtual double setup_s() const = 0;
  /// The hits of the next n samples; `device_s` (when not null): the device time of their
  /// generation and count (events around the work; the copy of the count after them).
  virtual std::int64_t count(std::int64_t n, double* device_s = nullptr) = 0;
};
/// Throws tally::InputError in a build without CUDA.
std::unique_ptr<CudaCounter> make_cuda_counter(int device, Generator g, Api api, std::uint64_t seed, std::int64_t first,
                                               detail::PhiloxLoop loop = detail::PhiloxLoop::direct);
/// The outside reference: a hand-written kernel (curand_init, then curand_uniform4 in a loop, the hits
/// added by atomics) counting about `samples` samples from `seed`, one launch on a full device.
/// Returns the samples it counted; `device_s`: the launch's device time.
std::int64_t reference_uniform4(int device, std::uint64_t seed, std::int64_t samples, double* device_s);
/// The device's copy bandwidth in GB/s (read + written): the median of `repeats` copies of `bytes`.
double cuda_copy_gbs(int device, std::size_t bytes, int repeats);

}  // namespace tally::mcpi
