#pragma once
// matmul: C = A B (M x K times K x N, row-major) where every element of C is a dot product over K,
// reduced at the level the user picks (the OpenACC placement of the reduction):
//   vector         one warp per C element, lanes split K, warp_reduce
//   worker         a block's warps (y) split K for 32 neighbouring elements (x), worker_reduce
//   worker+vector  one block per C element, every thread splits K, block_reduce
//   gang           K split across blocks, tile partials combined in block order (gang_arrive/gang_combine)
//   tiled          shared-memory/register-tiled product, the K loop folded per thread (thread.cuh)
//   tiled-tc       the tiled product on the tensor cores (CUDA, sm_80+): 3xTF32 in float, DMMA in double
//   ozaki          exact INT8 products of residues, rebuilt by the CRT (the Ozaki scheme: ozaki/ozaki.hpp)
// Host-only interface: no CUDA headers. Each backend (matmul_cpu.cpp, matmul_cuda.cu) implements
// Engine; the driver (driver.cpp) knows no backend.

#include <array>
#include <cmath>
#include <functional>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tally/reduce/config.hpp"

namespace tally::matmul::ozaki {
struct Settings;
}

namespace tally::matmul {

enum class Level { vector, worker, worker_vector, gang, tiled, tiled_tc, ozaki };
/// The reduction-placement levels and ozaki, on every backend.
inline constexpr std::array<Level, 6> all_levels{Level::vector, Level::worker, Level::worker_vector,
                                                 Level::gang,   Level::tiled,  Level::ozaki};
/// Those and tiled-tc, the tiled product on the tensor cores: the CUDA backend's levels.
inline constexpr std::array<Level, 7> cuda_levels{Level::vector, Level::worker,   Level::worker_vector, Level::gang,
                                                  Level::tiled,  Level::tiled_tc, Level::ozaki};
[[nodiscard]] std::string to_string(Level l);
/// "vector", "worker", "worker+vector", "gang", "tiled", "tiled-tc", "ozaki"; throws tally::InputError naming --level
/// otherwise.
[[nodiscard]] Level parse_level(std::string_view s);

struct Shape {
  std::int64_t m = 0, n = 0, k = 0;
  [[nodiscard]] double flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  }
  /// Bytes of input read once (A and B): the floor of any implementation.
  [[nodiscard]] double input_bytes(std::size_t elem) const {
    return static_cast<double>(elem) *
           (static_cast<double>(m) * static_cast<double>(k) + static_cast<double>(k) * static_cast<double>(n));
  }
  /// The A^T A / Gram case: the reduction over K is the whole cost.
  [[nodiscard]] bool tall_skinny() const { return m <= 64 && n <= 64 && k >= 4096; }
  [[nodiscard]] std::string str() const;  ///< "MxNxK"
};

// ---- inputs ------------------------------------------------------------------------------------
// Counter-based generator (splitmix64 of seed, matrix and index): the same values on the host and
// the device, in any order, so a GPU run need not generate gigabytes on the host.
TALLY_HD std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
/// Element `i` of matrix `which` (0 = A, 1 = B): uniform in [-1, 1), 53 random bits (rounded for float).
template <class T>
TALLY_HD T input_value(std::uint64_t seed, int which, std::uint64_t i) {
  const std::uint64_t r = mix64(mix64(seed ^ (static_cast<std::uint64_t>(which + 1) << 56)) + i);
  return static_cast<T>(static_cast<double>(r >> 11) * 0x1.0p-52 - 1.0);
}
template <class T>
void generate_host(std::uint64_t seed, int which, std::span<T> out);
/// A block of matrix `which`: `out` holds rows of `cols` elements from (row0, col0) of the whole
/// matrix, which has `ld` columns; each element takes its value from its index in the whole matrix,
/// so a rank's slab holds exactly the elements of the single-rank problem.
template <class T>
void generate_block_host(std::uint64_t seed, int which, std::span<T> out, std::int64_t cols, std::int64_t row0,
                         std::int64_t col0, std::int64_t ld);

/// A rank's slab of the inner dimension (matmul across ranks): the Engine's shape is the slab's
/// (M x kr times kr x N), which holds columns [k0, k0 + kr) of A and the same rows of B of a
/// problem whose K is k_total.
struct KSlab {
  std::int64_t k0 = 0, k_total = 0;
};

// ---- validation ---------------------------------------------------------------------------------
/// One element's reference, on the host and the device: the dot product in double-double (FMA
/// TwoProduct, then TwoSum: error ~ K 2^-106, far below every tolerance), sum |x y| (the scale of the
/// element's rounding error), and the sum of the products that are not finite. That last one is 0
/// while every product is finite; otherwise it is the element's IEEE value whatever the order of the
/// sum: NaN where a product is NaN (a NaN input, 0 x Inf) or infinities of both signs meet, else
/// that infinity.
struct RefSum {
  double hi = 0, lo = 0, abs = 0, special = 0;
  /// x - x is 0 for every number and NaN for an infinity or NaN (no isfinite in host-device code).
  TALLY_HD static bool finite(double x) { return x - x == 0; }
  TALLY_HD void add_product(double x, double y) {
    const double p = x * y;
    abs += fabs(p);
    if (!finite(p)) {
      special += p;
      return;
    }
    add(p, fma(x, y, -p));
  }
  /// Adds another K range's sum (its hi and lo, or its special value in hi).
  TALLY_HD void add_sum(double o_hi, double o_lo, double o_abs) {
    abs += o_abs;
    if (!finite(o_hi)) special += o_hi;
    else add(o_hi, o_lo);
  }
  /// hi + lo: the sum; its special value where one is set.
  [[nodiscard]] TALLY_HD double value() const { return special != 0 ? special : hi + lo; }
  /// What a K range hands on to add_sum: hi and lo, or the special value and 0.
  [[nodiscard]] TALLY_HD double partial_hi() const { return special != 0 ? special : hi; }
  [[nodiscard]] TALLY_HD double partial_lo() const { return special != 0 ? 0.0 : lo; }

 private:
  /// (hi, lo) += p + pe: Knuth's TwoSum of hi and p, the rest folded into lo.
  TALLY_HD void add(double p, double pe) {
    const double s = hi + p, z = s - hi;
    double e = (hi - (s - z)) + (p - z);
    e += lo + pe;
    hi = s + e;
    lo = e - (hi - s);
  }
};

/// The reference: C (RefSum::value) and |A| |B| (RefSum::abs) per element.
struct Reference {
  std::vector<double> c, abs;
};
/// The forward-error bound of a level's order of summation (Higham, Accuracy and Stability, 2nd ed.,
/// §3.1): when every product meets at most `depth` roundings on its way into C (its multiplication or
/// the fused multiply-add that takes it, then each addition of a partial sum holding it),
///     |C_ij - (AB)_ij| <= (gamma_depth + extra_u u (1 + gamma_depth)) (|A||B|)_ij,   gamma_n = n u / (1 - n u),
/// with u T's unit roundoff, in any order of those operations. The depth is the order's: a sequential
/// sum of n products has depth n, one split over w ranges and then added in turn ceil(n / w) + w - 1,
/// a tree of pairs over 32 lanes adds 5. `extra_u` bounds, in units of u, what is no plain sum
/// (3xTF32's split and its tensor-core chains, tc_mma.cuh) or what a level promises instead of a sum
/// (ozaki: a certificate per tile, ozaki/ozaki.hpp). Each engine states the bound of the order its
/// last run of a level took (Engine::error_bound); an order nobody states (cuBLAS, Eigen) has depth K.
struct ErrorBound {
  std::int64_t depth = 0;
  double extra_u = 0;
};
/// Any order of summation of K products: depth K.
[[nodiscard]] inline ErrorBound any_order(std::int64_t k) { return {k, 0}; }
/// The bound of the orders summing `ranks` slabs' partial Cs, each taken with `local` (the largest
/// slab's), in rank order or any other: depth + ranks - 1.
[[nodiscard]] inline ErrorBound across_ranks(ErrorBound local, int ranks) {
  return {local.depth + ranks - 1, local.extra_u};
}
/// The tolerance on |C_ij - ref_ij| / (|A||B|)_ij of a product computed in T with `bound`: the bound
/// (gamma evaluated upwards), plus the reference's own error, at most (ranks + 1) 2^-53 (|A||B|)_ij
/// (double-double per slab rounded to double: 2^-52 with K below 2^50, then the ranks' slabs added in
/// double), times 1 + 2^-20 for |A||B| and the comparison evaluated in double (K below 2^31).
/// Deterministic: a correct run never exceeds it, whatever the inputs, while no result or partial sum
/// leaves T's range (compare() allows for both ends).
template <class T>
[[nodiscard]] double tolerance(ErrorBound bound, int ranks = 1);

/// What compare() allows an element: |c - ref| <= rel (|A||B|)_ij + abs. `abs` covers underflow:
/// a product rounded in the subnormal range is off by up to half the smallest subnormal (additions
/// there are exact), so K products by K of those (underflow_allowance).
struct Allowance {
  double rel = std::numeric_limits<double>::infinity();
  double abs = 0;
};
/// K halves of T's smallest subnormal, doubled for the roundings of the sums that carry them.
template <class T>
[[nodiscard]] double underflow_allowance(std::int64_t k) {
  return static_cast<double>(k) * static_cast<double>(std::numeric_limits<T>::denorm_min());
}

/// How a C compares with a reference, element by element. Where the reference rounded to T is NaN
/// or an infinity, IEEE arithmetic gives that value in any summation order, so C must hold it: NaN
/// in, NaN out at the same places (the library's NaN rule), an infinity with its sign. Elsewhere C
/// must be a number within the allowance, except where the products of one sign add up to more than
/// half T's largest value: there a partial sum may overflow in some order, so an infinity of that
/// sign (NaN where both signs can) is IEEE's result too (counted in `overflow`, not a mismatch). An
/// element the run left unwritten (NaN-poisoned) counts as NaN where the reference has none. (An
/// infinite input meeting finite products that overflow the other way is left out: NaN there fails.)
struct Comparison {
  /// max |c - ref| / (|A||B|) over the elements where the reference and C are numbers (0/0 counts
  /// as 0); infinite when any element mismatches below.
  double rel_error = 0;
  std::int64_t ref_nan = 0, ref_inf = 0;  ///< elements where the reference is NaN, an infinity
  std::int64_t nan_extra = 0;             ///< NaN where the reference is not NaN
  std::int64_t nan_missing = 0;           ///< not NaN where the reference is NaN: a NaN lost
  std::int64_t inf_wrong =
      0;  ///< an infinity where the reference has a number or the other infinity, or not where it has one
  std::int64_t beyond = 0;    ///< numbers outside the allowance
  std::int64_t overflow = 0;  ///< an infinity or NaN a partial sum's overflow gives, the reference a number
  [[nodiscard]] std::int64_t mismatches() const { return nan_extra + nan_missing + inf_wrong; }
  /// No mismatch and every number within the allowance.
  [[nodiscard]] bool passed() const { return mismatches() == 0 && beyond == 0; }
};
template <class T>
[[nodiscard]] Comparison compare(std::span<const T> c, const Reference& ref, Allowance allowance = {});
/// compare(c, ref).rel_error.
template <class T>
[[nodiscard]] double relative_error(std::span<const T> c, const Reference& ref);
/// The reference on the CPU (OpenMP), for the CPU backend and the tests.
template <class T>
[[nodiscard]] Reference reference_cpu(std::span<const T> a, std::span<const T> b, Shape s);

// ---- backends ------------------------------------------------------------------------------------
/// One backend holding A, B and C. run() and the vendor's runs time one run each (the driver times
/// them in rounds and takes medians); C is poisoned (NaN) before each, outside the timed region, and
/// the run's C stays available through c().
template <class T>
class Engine {
 public:
  virtual ~Engine() = default;
  /// Generates this engine's slab of the inputs (generate_block_host's values).
  virtual void generate(std::uint64_t seed, KSlab slab) = 0;
  void generate(std::uint64_t seed) { generate(seed, KSlab{0, shape().k}); }
  /// The cross-rank step: called after every run of a level or of the vendor library, inside the
  /// timed region, with C's storage (device memory on the CUDA backend) and the engine's stream.
  using Combine = std::function<void(std::span<T> c, stream_t stream)>;
  virtual void set_combine(Combine combine) = 0;
  virtual void set_inputs(std::span<const T> a, std::span<const T> b) = 0;
  /// One run of the level, seconds.
  virtual double run(Level level) = 0;
  [[nodiscard]] virtual std::vector<T> c() = 0;
  [[nodiscard]] virtual std::vector<T> a() = 0;
  [[nodiscard]] virtual std::vector<T> b() = 0;
  [[nodiscard]] virtual Reference reference() = 0;
  /// One run of the vendor library (cuBLAS without TF32) on this backend, seconds; nullopt on the CPU.
  virtual std::optional<double> run_vendor() = 0;
  /// cuBLAS SGEMM in its fast-TF32 compute mode (float on the GPU; nullopt elsewhere), for comparison:
  /// its error is TF32's, above the FP32 tolerance.
  virtual std::optional<double> run_vendor_tf32() { return std::nullopt; }
  /// Exact mode (matmul --exact, exact.hpp): every level computes each element's exact dot product
  /// rounded once (the vendor library stays ordinary).
  virtual void set_exact(bool on) = 0;
  /// Number of K splits of the gang level (0: chosen from the device and the shape).
  virtual void set_split_k(std::int64_t splits) = 0;
  /// The error bound of the order of summation the last run of `level` took (ErrorBound; after
  /// run(level)): it depends on the shape, the device and the thread count, as the order does.
  [[nodiscard]] virtual ErrorBound error_bound(Level level) = 0;
  /// The ozaki level's moduli (--ozaki-moduli) and, for the bench, its profile (ozaki/ozaki.hpp).
  virtual void set_ozaki(const ozaki::Settings& settings) = 0;
  /// Measured device copy bandwidth (GB/s, bytes read + written), nullopt on the CPU.
  virtual std::optional<double> copy_bandwidth_gbs() = 0;
  [[nodiscard]] virtual Shape shape() const = 0;
};

template <class T>
std::unique_ptr<Engine<T>> make_cpu_engine(Shape s);
/// Throws tally::InputError when the build has no CUDA backend or the matrices do not fit.
template <class T>
std::unique_ptr<Engine<T>> make_cuda_engine(Shape s, int device);

/// C = A B with Eigen (the CPU comparison), median seconds; c receives the product.
template <class T>
double eigen_multiply(std::span<const T> a, std::span<const T> b, std::span<T> c, Shape s, int warmup, int repeats);

/// The error bound of a CPU level's order on shape `s` with `threads` OpenMP threads (ErrorBound;
/// ozaki: its promise).
template <class T>
[[nodiscard]] ErrorBound cpu_error_bound(Level level, Shape s, std::int64_t split_k, int threads);

/// One CPU level (OpenMP + SIMD), exposed for the tests.
template <class T>
void cpu_multiply(Level level, std::span<const T> a, std::span<const T> b, std::span<T> c, Shape s,
                  std::int64_t split_k = 0);

}  // namespace tally::matmul
