// The generic suite (reduce_checks.hpp) on the CPU backend, plus what only the CPU has: results
// that do not depend on the number of OpenMP threads, nor on the instruction-set build.
#include <omp.h>

#include "backend_cpu.hpp"
#include "cpu/isa.hpp"

#define TALLY_TEST_BACKEND "cpu"
using TestBackend = tally::test::CpuBackend;
#include "reduce_checks.hpp"
#include "mean_checks.hpp"
#include "exact_checks.hpp"
#include "dot_checks.hpp"
#include "reducer_checks.hpp"
#include "segmented_checks.hpp"
#include "segmented_reducer_checks.hpp"

namespace tally::test::reduce_checks {

namespace {
/// Sets the OpenMP thread count for a scope.
class Threads {
 public:
  explicit Threads(int n) : saved_(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~Threads() { omp_set_num_threads(saved_); }
  Threads(const Threads&) = delete;
  Threads& operator=(const Threads&) = delete;

 private:
  int saved_;
};
}  // namespace

TEST_CASE("cpu: results are bitwise the same whatever the number of threads", "[reduce][determinism]") {
  Workspace ws(Backend::cpu);
  std::uint64_t salt = 7000;
  // Shapes that take every path: split long outputs, many short ones, split rows, narrow rows.
  for (const Extents& e : {Extents{1, 1, (int64_t{1} << 22) + 3}, Extents{3, 1025, 1023}, Extents{4099, 2, 257},
                           Extents{2, 16411, 8}, Extents{1023, 33, 2}}) {
    const auto x = make_input<Sum, float, float>(static_cast<std::size_t>(e.size()), e.size(), ++salt);
    const auto in = View<const float>::contiguous(x.data(), e.ng, e.nw, e.nv);
    for (Levels lv : Levels::all_sets()) {
      std::vector<float> one;
      std::vector<double> one_d;
      std::vector<float> one_mean;
      {
        Threads t(1);
        one = run_once<CpuBackend, Sum, float, float>(ws, in, lv);
        one_d = run_once<CpuBackend, Sum, float, double>(ws, in, lv);
        one_mean = run_once<CpuBackend, Mean, float, float>(ws, in, lv);
      }
      for (int threads : {2, 3, 8}) {
        Threads t(threads);
        INFO("sum and mean over " << lv.to_string() << " of " << shape_name(e, false) << ", 1 vs " << threads
                                  << " threads");
        CHECK(bitwise_equal(one, run_once<CpuBackend, Sum, float, float>(ws, in, lv)));
        CHECK(bitwise_equal(one_d, run_once<CpuBackend, Sum, float, double>(ws, in, lv)));
        CHECK(bitwise_equal(one_mean, run_once<CpuBackend, Mean, float, float>(ws, in, lv)));
      }
    }
  }
}

#if defined(TALLY_HAVE_CPU_AVX2)
TEST_CASE("cpu: the AVX2 and baseline builds give bitwise the same results", "[reduce][determinism][isa]") {
  if (!__builtin_cpu_supports("avx2")) {
    WARN("this CPU has no AVX2: only the baseline build can run");
    return;
  }
  INFO("reduce() runs the " << (reduce::detail::cpu_uses_avx2() ? "AVX2" : "baseline") << " build");
  std::uint64_t salt = 7100;
  const auto both = [&]<class Op, class T, class Acc>(const Extents& e, Levels lv, bool with_nan) {
    auto x = make_input<Op, T, Acc>(static_cast<std::size_t>(e.size()), e.size(), ++salt);
    if constexpr (std::is_floating_point_v<T>)
      if (with_nan && !x.empty()) x[x.size() / 3] = std::numeric_limits<T>::quiet_NaN();
    const reduce::detail::Problem p{x.data(), e, e.nv, e.nw * e.nv, lv, output_shape(e, lv).size()};
    std::vector<Acc> a(static_cast<std::size_t>(p.out_size)), b(a.size());
    reduce::detail::base::reduce_cpu_isa<Op, T, Acc>(p, a.data());
    reduce::detail::avx2::reduce_cpu_isa<Op, T, Acc>(p, b.data());
    INFO((case_name<Op, T, Acc>()) << " over " << lv.to_string() << " of " << shape_name(e, false)
                                   << (with_nan ? ", one NaN" : ""));
    CHECK(bitwise_equal(a, b));
  };
  for (const Extents& e : {Extents{1, 1, (int64_t{1} << 20) + 3}, Extents{3, 1025, 1023}, Extents{4099, 2, 257},
                           Extents{2, 16411, 8}, Extents{1023, 33, 2}, Extents{64, 40, 1000}}) {
    for (Levels lv : Levels::all_sets()) {
      both.operator()<Sum, float, float>(e, lv, false);
      both.operator()<Sum, float, double>(e, lv, false);
      both.operator()<Sum, double, double>(e, lv, false);
      both.operator()<Max, float, float>(e, lv, true);
      both.operator()<Min, double, double>(e, lv, false);
      both.operator()<Sum, std::int32_t, std::int64_t>(e, lv, false);
    }
  }
}
#endif

}  // namespace tally::test::reduce_checks

namespace tally::test::exact_checks {

TEST_CASE("cpu: the exact sum is bitwise the same for 1, 2 and 3 threads and every instruction-set build",
          "[reduce][exact][determinism]") {
  Workspace ws(Backend::cpu);
  std::uint64_t salt = 9400;
  for (const Extents& e :
       {Extents{1, 1, (int64_t{1} << 20) + 3}, Extents{3, 1025, 1023}, Extents{2, 16411, 8}, Extents{1023, 33, 2}}) {
    const auto x = wide_values<double>(static_cast<std::size_t>(e.size()), ++salt);
    const auto in = View<const double>::contiguous(x.data(), e.ng, e.nw, e.nv);
    for (Levels lv : Levels::all_sets()) {
      std::vector<double> one;
      {
        reduce_checks::Threads t(1);
        one = run<CpuBackend, double, double>(ws, Backend::cpu, in, lv);
      }
      for (int threads : {2, 3}) {
        reduce_checks::Threads t(threads);
        INFO("exact sum over " << lv.to_string() << " of " << shape_name(e, false) << ", 1 vs " << threads
                               << " threads");
        CHECK(bitwise_equal(one, run<CpuBackend, double, double>(ws, Backend::cpu, in, lv)));
      }
      const reduce::detail::Problem p{x.data(), e, e.nv, e.nw * e.nv, lv, output_shape(e, lv).size()};
      std::vector<double> isa_out(one.size());
#if defined(TALLY_HAVE_CPU_AVX2)
      reduce::detail::base::exact_cpu_isa<double, double>(p, isa_out.data());
      CHECK(bitwise_equal(one, isa_out));
      if (__builtin_cpu_supports("avx2")) {
        reduce::detail::avx2::exact_cpu_isa<double, double>(p, isa_out.data());
        CHECK(bitwise_equal(one, isa_out));
      }
#endif
#if defined(TALLY_HAVE_CPU_AVX512)
      if (__builtin_cpu_supports("avx512f")) {
        reduce::detail::avx512::exact_cpu_isa<double, double>(p, isa_out.data());
        CHECK(bitwise_equal(one, isa_out));
      }
#endif
    }
  }
}

TEST_CASE("cpu: the exact sum of floats is bitwise the same in every instruction-set build", "[reduce][exact][isa]") {
  std::uint64_t salt = 9450;
  for (const Extents& e : {Extents{1, 1, (int64_t{1} << 20) + 3}, Extents{3, 1025, 1023}, Extents{1023, 33, 2}}) {
    const auto x = wide_values<float>(static_cast<std::size_t>(e.size()), ++salt);
    for (Levels lv : {Levels::all(), Levels(Level::vector), Levels(Level::gang)}) {
      const reduce::detail::Problem p{x.data(), e, e.nv, e.nw * e.nv, lv, output_shape(e, lv).size()};
      std::vector<float> base_out(static_cast<std::size_t>(p.out_size)), isa_out(base_out.size());
      reduce::detail::base::exact_cpu_isa<float, float>(p, base_out.data());
      INFO(lv.to_string() << " of " << shape_name(e, false));
#if defined(TALLY_HAVE_CPU_AVX2)
      if (__builtin_cpu_supports("avx2")) {
        reduce::detail::avx2::exact_cpu_isa<float, float>(p, isa_out.data());
        CHECK(bitwise_equal(base_out, isa_out));
      }
#endif
#if defined(TALLY_HAVE_CPU_AVX512)
      if (__builtin_cpu_supports("avx512f")) {
        reduce::detail::avx512::exact_cpu_isa<float, float>(p, isa_out.data());
        CHECK(bitwise_equal(base_out, isa_out));
      }
#endif
      Workspace ws(Backend::cpu);
      CHECK(bitwise_equal(
          base_out, run<CpuBackend, float, float>(ws, Backend::cpu,
                                                  View<const float>::contiguous(x.data(), e.ng, e.nw, e.nv), lv)));
    }
  }
}

TEST_CASE("cpu: the exact sum of 2^26 + 3 floats, each 1 + 2^-23, with a cancelling pair", "[reduce][exact][large]") {
  // n (1 + 2^-23) needs 50 bits: the float sum, any order, loses the 2^-23 parts; the exact one keeps
  // them and rounds once. A pair (2^100, -2^100) at the ends of the array cancels.
  const int64_t n = (int64_t{1} << 26) + 3;
  std::vector<float> x(static_cast<std::size_t>(n), 1.0f + std::ldexp(1.0f, -23));
  x.front() = std::ldexp(1.0f, 100), x.back() = -std::ldexp(1.0f, 100);
  Workspace ws(Backend::cpu);
  const auto in = View<const float>::flat(x.data(), n);
  // Exact: (n - 2)(1 + 2^-23) = (n - 2) + (n - 2) 2^-23, two doubles of non-overlapping bits.
  Expansion e;
  e.add(static_cast<double>(n - 2));
  e.add(std::ldexp(static_cast<double>(n - 2), -23));
  CHECK(reduce_to_host<ExactSum, float, double>(Backend::cpu, in, ws) == e.round());
  const float f = reduce_to_host<ExactSum, float, float>(Backend::cpu, in, ws);
  CHECK(f == exact_reference<float>(
                 std::vector<double>{static_cast<double>(n - 2), std::ldexp(static_cast<double>(n - 2), -23)}));
  CHECK(f == static_cast<float>(e.round()));  // not a float midpoint here
}

// ---- the CPU's binned chunks (exact_cpu.cpp: 2048 values per chunk, two levels of bins below the
// chunk's largest |x|, non-zero remainders and chunks it cannot take to the filters) ----------------

enum class BinCase { uniform, huge_per_chunk, subnormal, rewindow, near_top, ties, least_remainders, specials, cancel };

const char* bin_case_name(BinCase c) {
  switch (c) {
    case BinCase::uniform: return "uniform in (-1, 1), full precision";
    case BinCase::huge_per_chunk: return "one huge value in every chunk (remainders everywhere)";
    case BinCase::subnormal: return "all-subnormal chunks beside least normals";
    case BinCase::rewindow: return "runs scaled by 2^s, s changing (re-windowing)";
    case BinCase::near_top: return "values just below the binning limit, cancelling, small ones among them";
    case BinCase::ties: return "odd multiples of half a bin's ulp (ties in both levels)";
    case BinCase::least_remainders:
      return "chunks of (3/4, -3/4) and odd multiples of half level 2's ulp in [2^(1-p), 2^(2-p))";
    case BinCase::specials: return "uniform with a NaN or an Inf";
    case BinCase::cancel: return "values and their exact negations after -0s (sum +0)";
  }
  return "?";
}

/// Inputs aimed at one path of the binning, n of them (n about 2^17).
template <class T>
std::vector<T> bin_values(BinCase c, std::size_t n, std::uint64_t salt) {
  auto g = tally::test::rng(salt);
  constexpr bool is_float = std::is_same_v<T, float>;
  constexpr int p = std::numeric_limits<T>::digits, emin = std::numeric_limits<T>::min_exponent - 1;  // 24 / -126
  constexpr int top = is_float ? 125 : 900;  // exact_cpu.cpp's BinTraits<T>::top
  constexpr std::size_t chunk = 2048;
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const auto unit = [&] { return static_cast<T>(u(g)); };  // doubles: 53 random bits; floats: rounded
  std::vector<T> v;
  v.reserve(n + 8);
  switch (c) {
    case BinCase::uniform:
      while (v.size() < n) v.push_back(unit());
      break;
    case BinCase::huge_per_chunk:
      while (v.size() < n) v.push_back(unit());
      for (std::size_t b = 0; b < n; b += chunk)
        v[b + g() % std::min(chunk, n - b)] = static_cast<T>(std::ldexp((g() & 1) ? 1.5 : -1.25, is_float ? 40 : 80));
      break;
    case BinCase::subnormal:
      for (int run = 0; v.size() < n; ++run) {
        const std::size_t len = 100 + g() % 6000;
        for (std::size_t i = 0; i < len && v.size() < n; ++i) {
          double x = std::ldexp(static_cast<double>(g() >> (64 - (p - 1))), emin - (p - 1));  // a subnormal (or 0)
          if (run % 3 == 1 && g() % 4 == 0) x = std::ldexp(1.0 + std::fabs(u(g)), emin);      // a least normal
          if (run % 3 == 2) x = std::ldexp(u(g), emin + 10);
          v.push_back(static_cast<T>((g() & 1) ? x : -x));
        }
      }
      break;
    case BinCase::rewindow:
      while (v.size() < n) {
        const std::size_t len = 1 + g() % 5000;
        // Scales down to the subnormals; often one where level 2's exponent meets T's least normal one
        // (clamped below it: largest |x| under 2^(emin + p - 2)).
        int s = is_float ? static_cast<int>(g() % 251) - 150 : static_cast<int>(g() % 1951) - 1100;
        if (g() % 3 == 0) s = emin + p - 2 - static_cast<int>(g() % 4);
        for (std::size_t i = 0; i < len && v.size() < n; ++i) v.push_back(static_cast<T>(std::ldexp(u(g), s)));
      }
      break;
    case BinCase::near_top:
      // Chunks of pairs (a, -a) and small values: |a| < 2^top (binned), or some |a| in [2^top, 2^(top+1))
      // (the filters).
      for (int k = 0; v.size() < n; ++k) {
        const std::size_t b = v.size();
        const int s = top + k % 2;
        while (v.size() + 3 <= std::min(n, b + chunk)) {
          const T a = static_cast<T>(std::ldexp(u(g), s));
          v.push_back(a), v.push_back(-a), v.push_back(unit());
        }
        if (k < 2 && v.size() >= b + 2) {  // the largest binned value; the largest below 2^(top+1) (not binned)
          v[b] = std::nextafter(static_cast<T>(std::ldexp(1.0, top + k)), T(0));
          v[b + 1] = -v[b];
        }
        std::shuffle(v.begin() + static_cast<std::ptrdiff_t>(b), v.end(), g);
        while (v.size() < std::min(n, b + chunk)) v.push_back(unit());
      }
      break;
    case BinCase::ties:
      // Chunks with largest |x| in [1/2, 1): bin ulps 2^(2-p) and 2^(3-2p); odd multiples of half of
      // each: below 2^(1-p) for level 1, in [2^(1-p), 2^(2-p)) for level 2 (the least values that
      // can leave a remainder).
      while (v.size() < n) {
        if (v.size() % 512 == 0) v.push_back(T(0.75));
        const bool lvl2 = g() % 4 == 0;
        const int h = lvl2 ? 2 - 2 * p : 1 - p;  // exponent of half the ulp
        const std::uint64_t odd = lvl2 ? (g() >> (65 - p)) | (std::uint64_t{1} << (p - 1)) | 1 : (g() >> (66 - p)) | 1;
        const double a = std::ldexp(static_cast<double>(odd), h);
        v.push_back(static_cast<T>((g() & 1) ? a : -a));
      }
      break;
    case BinCase::least_remainders:
      // The values nearest the largest that leave a remainder (each r2 = +-2^(2-2p)), alone: their
      // sum (about 2^(7-p)) shows r2 in its last bits.
      while (v.size() < n) {
        if (v.size() % chunk == 0) v.push_back(T(0.75)), v.push_back(T(-0.75));
        const std::uint64_t odd = (g() >> (65 - p)) | (std::uint64_t{1} << (p - 1)) | 1;
        const double a = std::ldexp(static_cast<double>(odd), 2 - 2 * p);
        v.push_back(static_cast<T>((g() & 1) ? a : -a));
      }
      break;
    case BinCase::specials:
      while (v.size() < n) v.push_back(unit());
      v[g() % n] = (salt & 1) ? std::numeric_limits<T>::quiet_NaN() : std::numeric_limits<T>::infinity();
      break;
    case BinCase::cancel:
      v.assign(4096, T(-0.0));
      for (std::size_t i = 0; v.size() + 2 <= n; ++i) {
        const T a = unit();
        v.push_back(a), v.push_back(-a);
      }
      std::shuffle(v.begin() + 4096, v.end(), g);
      break;
  }
  v.resize(n);
  return v;
}

TEST_CASE("cpu: the exact sum's binned chunks: remainders, re-windowing, huge and subnormal chunks, ties",
          "[reduce][exact][bins]") {
  Workspace ws(Backend::cpu);
  std::uint64_t salt = 9500;
  for (BinCase c : {BinCase::uniform, BinCase::huge_per_chunk, BinCase::subnormal, BinCase::rewindow, BinCase::near_top,
                    BinCase::ties, BinCase::least_remainders, BinCase::specials, BinCase::cancel}) {
    for_each_pair([&]<class T, class Out>() {
      // A multiple of the task and chunk sizes for the zero signs (every non-zero value binned, none
      // seen by a filter), a ragged length (tails to the filters) otherwise.
      const std::size_t n = (std::size_t{1} << 17) + (c == BinCase::cancel ? 0 : 37);
      const auto x = bin_values<T>(c, n, ++salt);
      const Out want = exact_reference<Out>(x);
      INFO(bin_case_name(c) << ", exact_sum<" << reduce_checks::type_name<T>() << "->"
                            << reduce_checks::type_name<Out>() << ">");
      const auto same = [&](Out got) { return compare_bits(std::vector<Out>{got}, std::vector<Out>{want}).empty(); };
      for (int threads : {1, 3}) {
        reduce_checks::Threads t(threads);
        INFO(threads << " threads: got " << reduce_checks::show(full<CpuBackend, T, Out>(ws, x)) << ", exact "
                     << reduce_checks::show(want));
        CHECK(same(full<CpuBackend, T, Out>(ws, x)));
      }
      // Every instruction-set build, straight (one call: the library picks one).
      const Extents e{1, 1, static_cast<int64_t>(n)};
      const reduce::detail::Problem pr{x.data(), e, e.nv, e.nv, Levels::all(), 1};
      Out o = Out(1234);
      reduce::detail::base::exact_cpu_isa<T, Out>(pr, &o);
      CHECK(same(o));
#if defined(TALLY_HAVE_CPU_AVX2)
      if (__builtin_cpu_supports("avx2")) {
        reduce::detail::avx2::exact_cpu_isa<T, Out>(pr, &o);
        CHECK(same(o));
      }
#endif
#if defined(TALLY_HAVE_CPU_AVX512)
      if (__builtin_cpu_supports("avx512f")) {
        reduce::detail::avx512::exact_cpu_isa<T, Out>(pr, &o);
        CHECK(same(o));
      }
#endif
    });
  }
  // Rows of every length around the chunk and vector sizes (tails to the filters), every level set.
  for_each_pair([&]<class T, class Out>() {
    for (const Extents& e : {Extents{3, 5, 9000}, Extents{2, 3, 2048 + 17}, Extents{1, 7, 255}, Extents{4, 2, 4096}})
      for (bool strided : {false, true}) {
        auto x = bin_values<T>(BinCase::rewindow, static_cast<std::size_t>(e.size()), ++salt);
        check_levels<CpuBackend, T, Out>(ws, e, strided, x);
      }
  });
}

}  // namespace tally::test::exact_checks

namespace tally::test::exact_checks {

TEST_CASE("exact::Accumulator rounds sparse, wide and cancelling limb patterns correctly", "[reduce][exact][round]") {
  // round() normalises only the window of non-zero limbs: values anywhere in the range (the top and
  // bottom limbs included), of either sign, cancelling pairs and carries across empty limbs.
  auto g = tally::test::rng(9601);
  std::uniform_real_distribution<double> m(1.0, 2.0);
  std::uniform_int_distribution<int> count(1, 12);
  for (int trial = 0; trial < 4000; ++trial) {
    const bool as_float = trial % 2 == 1;
    const int lo_e = as_float ? -149 : -1074, hi_e = as_float ? 100 : 1000;
    std::uniform_int_distribution<int> ex(lo_e, hi_e);
    const int base = ex(g), spread = trial % 3 == 0 ? hi_e - lo_e : 70;  // clustered or anywhere
    std::vector<double> x;
    for (int i = count(g); i > 0; --i) {
      const int e = std::clamp(base + static_cast<int>(g() % (spread + 1)) - spread / 2, lo_e, hi_e);
      double v = std::ldexp(m(g), e) * ((g() & 1) ? 1 : -1);
      if (as_float) v = static_cast<float>(v);         // a float: a multiple of 2^-149
      else v = std::ldexp(v, std::max(e, -1022) - e);  // normal: 53 bits, a multiple of 2^-1074
      if (v != 0) x.push_back(v);
      // -v/2 twice cancels v exactly (carries across limbs) where v/2 is still a multiple of 2^emin.
      if (g() % 4 == 0 && std::fabs(v) >= std::ldexp(1.0, as_float ? -125 : -1021))
        x.push_back(-v * 0.5), x.push_back(-v * 0.5);
    }
    INFO("trial " << trial << " (" << (as_float ? "float" : "double") << " accumulator), " << x.size() << " terms");
    if (as_float) {
      exact::Accumulator<float> a;
      a.clear();
      for (double v : x) a.add(v);
      CHECK(bits_of(a.round<float>()) == bits_of(exact_reference<float>(x)));
      CHECK(bits_of(a.round<double>()) == bits_of(exact_reference<double>(x)));
    } else {
      exact::Accumulator<double> a;
      a.clear();
      for (double v : x) a.add(v);
      CHECK(bits_of(a.round<double>()) == bits_of(exact_reference<double>(x)));
      CHECK(bits_of(a.round<float>()) == bits_of(exact_reference<float>(x)));
    }
  }
}

TEST_CASE("exact::dot of float vectors is the exact dot product correctly rounded", "[reduce][exact][dot]") {
  auto g = tally::test::rng(9600);
  std::uniform_real_distribution<double> m(1.0, 2.0);
  std::uniform_int_distribution<int> e(-149, 127);
  for (std::size_t n : {std::size_t{0}, std::size_t{3}, std::size_t{1000}, std::size_t{100000}}) {
    std::vector<float> a(n), b(n);
    for (std::size_t i = 0; i < n; ++i) {
      a[i] = static_cast<float>(std::ldexp(m(g), e(g)) * ((g() & 1) ? 1 : -1));
      b[i] = static_cast<float>(std::ldexp(m(g), e(g) / 2));
      if (i > 0 && g() % 3 == 0) a[i] = -a[i - 1], b[i] = b[i - 1];  // a cancelling product
    }
    std::vector<double> prod(n);  // each exact: 24 + 24 bits
    for (std::size_t i = 0; i < n; ++i) prod[i] = static_cast<double>(a[i]) * static_cast<double>(b[i]);
    INFO(n << " elements");
    CHECK(bits_of(exact::dot<double>(a.data(), b.data(), static_cast<int64_t>(n))) ==
          bits_of(exact_reference<double>(prod)));
    CHECK(bits_of(exact::dot<float>(a.data(), b.data(), static_cast<int64_t>(n))) ==
          bits_of(exact_reference<float>(prod)));
  }
  // (1e20 x 1e10) + 1 - (1e20 x 1e10): a float sum of products loses the 1.
  const std::vector<float> a = {1e20f, 1.0f, -1e20f}, b = {1e10f, 1.0f, 1e10f};
  CHECK(exact::dot<float>(a.data(), b.data(), 3) == 1.0f);
  CHECK(exact::dot<double>(a.data(), b.data(), 3) == 1.0);
}

}  // namespace tally::test::exact_checks

namespace tally::test::segmented_checks {

TEST_CASE("cpu: segmented reductions are bitwise the same for 1, 2 and 3 threads", "[reduce][segmented][determinism]") {
  Workspace ws(Backend::cpu);
  std::uint64_t salt = 25000;
  for (int mix = 0; mix < kMixes; ++mix) {
    salt += 2;
    const Problem<Sum, float, float> p(mix_lengths(mix, salt), 0, salt + 1, false);
    std::vector<float> one;
    {
      reduce_checks::Threads t(1);
      one = run_segments<CpuBackend, Sum, float, float, int64_t>(ws, p);
    }
    for (int threads : {2, 3}) {
      reduce_checks::Threads t(threads);
      INFO(mix_name(mix) << ", 1 vs " << threads << " threads");
      CHECK(bitwise_equal(one, run_segments<CpuBackend, Sum, float, float, int64_t>(ws, p)));
    }
  }
}

}  // namespace tally::test::segmented_checks
