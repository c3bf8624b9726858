// The CPU backend: each level as an OpenMP + SIMD loop nest mirroring the GPU placement of the
// reduction over K, and Eigen as the CPU comparison.
//   vector         threads over C elements, each dot product an `omp simd` reduction over K
//   worker         threads split K (one contiguous range each), private partial C, combined in thread order
//   worker+vector  threads split K, and within each range per-element SIMD dot products
//   gang           K cut into fixed chunks independent of the thread count (deterministic whatever
//                  OMP_NUM_THREADS is), partials combined in chunk order
//   tiled          cache-blocked i-k-j product, threads over C tiles, K folded in order
//   ozaki          INT8 residue products and the CRT (ozaki/ozaki_cpu.cpp: the GPU's bits)
#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <optional>
#include <vector>

#include "exact.hpp"
#include "matmul.hpp"
#include "ozaki/ozaki.hpp"
#include "tally/common/error.hpp"
#include "tally/common/timing.hpp"
#include "transpose.hpp"
#include "tuning_cpu.hpp"

namespace tally::matmul {
namespace {

using idx = std::int64_t;

template <class T>
inline T dot(const T* x, const T* y, idx n) {
  T acc = 0;
#pragma omp simd reduction(+ : acc)
  for (idx k = 0; k < n; ++k) acc += x[k] * y[k];
  return acc;
}

// Partial products of the K range [k0, k1) into p (M x N), per-element SIMD dots on B^T.
template <class T>
void partial_dots(const T* a, const T* bt, T* p, Shape s, idx k0, idx k1) {
  for (idx i = 0; i < s.m; ++i)
    for (idx j = 0; j < s.n; ++j) p[i * s.n + j] = dot(a + i * s.k + k0, bt + j * s.k + k0, k1 - k0);
}

// The gang level's K chunks: fixed, independent of the thread count (tuning_cpu.hpp).
idx gang_chunks(Shape s, idx split_k) {
  using namespace tuning::cpu;
  if (split_k > 0) return std::min(split_k, s.k);
  idx chunks = std::clamp<idx>(s.k / gang_min_chunk, 1, gang_max_chunks);
  while (chunks > 1 && chunks * s.m * s.n > gang_max_partials) chunks /= 2;
  return chunks;
}

// Sums partials[0..count) (each M x N) into c, in order.
template <class T>
void combine_in_order(const std::vector<T>& partials, idx count, T* c, idx mn) {
#pragma omp parallel for schedule(static)
  for (idx e = 0; e < mn; ++e) {
    T acc = 0;
    for (idx t = 0; t < count; ++t) acc += partials[static_cast<std::size_t>(t * mn + e)];
    c[e] = acc;
  }
}

}  // namespace

template <class T>
void cpu_multiply(Level level, std::span<const T> a_, std::span<const T> b_, std::span<T> c_, Shape s,
                  std::int64_t split_k) {
  const T* a = a_.data();
  const T* b = b_.data();
  T* c = c_.data();
  const idx mn = s.m * s.n;
  switch (level) {
    case Level::vector: {
      const auto bt = transpose(b_, s.k, s.n);
#pragma omp parallel for collapse(2) schedule(static)
      for (idx i = 0; i < s.m; ++i)
        for (idx j = 0; j < s.n; ++j) c[i * s.n + j] = dot(a + i * s.k, bt.data() + j * s.k, s.k);
      return;
    }
    case Level::worker: {
      const idx nt = std::min<idx>(omp_get_max_threads(), s.k);
      const int threads = static_cast<int>(nt);
      std::vector<T> partials(static_cast<std::size_t>(nt * mn));
#pragma omp parallel num_threads(threads)
      {
        const idx t = omp_get_thread_num();
        const idx k0 = s.k * t / nt, k1 = s.k * (t + 1) / nt;
        T* p = partials.data() + t * mn;
        std::fill(p, p + mn, T(0));
        for (idx i = 0; i < s.m; ++i)
          for (idx k = k0; k < k1; ++k) {
            const T x = a[i * s.k + k];
            const T* brow = b + k * s.n;
            T* prow = p + i * s.n;
#pragma omp simd
            for (idx j = 0; j < s.n; ++j) prow[j] += x * brow[j];
          }
      }
      combine_in_order(partials, nt, c, mn);
      return;
    }
    case Level::worker_vector: {
      const auto bt = transpose(b_, s.k, s.n);
      const idx nt = std::min<idx>(omp_get_max_threads(), s.k);
      const int threads = static_cast<int>(nt);
      std::vector<T> partials(static_cast<std::size_t>(nt * mn));
#pragma omp parallel num_threads(threads)
      {
        const idx t = omp_get_thread_num();
        partial_dots(a, bt.data(), partials.data() + t * mn, s, s.k * t / nt, s.k * (t + 1) / nt);
      }
      combine_in_order(partials, nt, c, mn);
      return;
    }
    case Level::gang: {
      const auto bt = transpose(b_, s.k, s.n);
      const idx chunks = gang_chunks(s, split_k);
      std::vector<T> partials(static_cast<std::size_t>(chunks * mn));
#pragma omp parallel for schedule(dynamic, 1)
      for (idx g = 0; g < chunks; ++g)
        partial_dots(a, bt.data(), partials.data() + g * mn, s, s.k * g / chunks, s.k * (g + 1) / chunks);
      combine_in_order(partials, chunks, c, mn);
      return;
    }
    case Level::tiled: {
      constexpr idx bi = tuning::cpu::tile_rows, bj = tuning::cpu::tile_cols, bk = tuning::cpu::tile_depth;
      const idx ti = (s.m + bi - 1) / bi, tj = (s.n + bj - 1) / bj;
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
      for (idx I = 0; I < ti; ++I)
        for (idx J = 0; J < tj; ++J) {
          const idx i1 = std::min(s.m, (I + 1) * bi), j0 = J * bj, j1 = std::min(s.n, (J + 1) * bj);
          for (idx i = I * bi; i < i1; ++i) std::fill(c + i * s.n + j0, c + i * s.n + j1, T(0));
          for (idx K0 = 0; K0 < s.k; K0 += bk) {
            const idx k1 = std::min(s.k, K0 + bk);
            for (idx i = I * bi; i < i1; ++i)
              for (idx k = K0; k < k1; ++k) {
                const T x = a[i * s.k + k];
                const T* brow = b + k * s.n;
                T* crow = c + i * s.n;
#pragma omp simd
                for (idx j = j0; j < j1; ++j) crow[j] += x * brow[j];
              }
          }
        }
      return;
    }
    case Level::tiled_tc:
      throw InputError("--level tiled-tc: runs on the tensor cores of a CUDA GPU; the CPU backend has no such level");
    case Level::ozaki: (void)ozaki::multiply_cpu<T>(a_, b_, c_, s, ozaki::make_plan<T>(s.k, 0)); return;
  }
}

template <class T>
ErrorBound cpu_error_bound(Level level, Shape s, std::int64_t split_k, int threads) {
  const idx k = std::max<idx>(s.k, 1);
  // K cut into w ranges summed one after another: a range of at most ceil(K / w) products, each
  // summed in turn or by an `omp simd` reduction (lanes of the compiler's choosing, then the lanes:
  // any order, so at most its length), then w - 1 additions of the ranges' sums.
  const auto ranges = [k](idx w) { return ErrorBound{(k + w - 1) / w + w - 1, 0}; };
  switch (level) {
    case Level::worker:
    case Level::worker_vector: return ranges(std::min<idx>(threads, k));
    case Level::gang: return ranges(gang_chunks(s, split_k));
    case Level::ozaki: return ozaki::error_bound<T>(k);
    case Level::vector:  // one `omp simd` reduction over K: any order
    case Level::tiled:   // each element's products added in K order
    default: return any_order(k);
  }
}

template <class T>
double eigen_multiply(std::span<const T> a, std::span<const T> b, std::span<T> c, Shape s, int warmup, int repeats) {
  using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<const Mat> A(a.data(), s.m, s.k), B(b.data(), s.k, s.n);
  Eigen::Map<Mat> C(c.data(), s.m, s.n);
  std::vector<double> times;
  for (int r = 0; r < warmup + repeats; ++r) {
    HostTimer t;
    C.noalias() = A * B;
    if (r >= warmup) times.push_back(t.seconds());
  }
  return median(std::move(times));
}

namespace {

template <class T>
class CpuEngine final : public Engine<T> {
 public:
  explicit CpuEngine(Shape s)
      : s_(s), a_(static_cast<std::size_t>(s.m * s.k)), b_(static_cast<std::size_t>(s.k * s.n)),
        c_(static_cast<std::size_t>(s.m * s.n)) {}
  void generate(std::uint64_t seed, KSlab slab) override {
    generate_block_host<T>(seed, 0, a_, s_.k, 0, slab.k0, slab.k_total);  // A[:, k0:k0+kr]
    generate_block_host<T>(seed, 1, b_, s_.n, slab.k0, 0, s_.n);          // B[k0:k0+kr, :]
  }
  void set_combine(typename Engine<T>::Combine combine) override { combine_ = std::move(combine); }
  void set_inputs(std::span<const T> a, std::span<const T> b) override {
    if (a.size() != a_.size() || b.size() != b_.size()) throw Error("CpuEngine::set_inputs: size mismatch");
    std::copy(a.begin(), a.end(), a_.begin());
    std::copy(b.begin(), b.end(), b_.begin());
  }
  double run(Level level) override {
    std::fill(c_.begin(), c_.end(), std::numeric_limits<T>::quiet_NaN());  // poison: unwritten shows
    HostTimer t;
    if (exact_) exact_cpu_multiply<T>(level, a_, b_, c_, s_, split_k_);
    else if (level == Level::ozaki) ozaki_stats_ = ozaki::multiply_cpu<T>(a_, b_, c_, s_, ozaki_plan());
    else cpu_multiply<T>(level, a_, b_, c_, s_, split_k_);
    if (combine_) combine_(c_, nullptr);
    const double seconds = t.seconds();
    if (level == Level::ozaki && !exact_) ozaki::note_once(ozaki_stats_, ozaki_plan(), ozaki_noted_);
    return seconds;
  }
  std::vector<T> c() override { return c_; }
  std::vector<T> a() override { return a_; }
  std::vector<T> b() override { return b_; }
  Reference reference() override { return reference_cpu<T>(a_, b_, s_); }
  std::optional<double> run_vendor() override { return std::nullopt; }
  std::optional<double> copy_bandwidth_gbs() override { return std::nullopt; }
  void set_split_k(std::int64_t splits) override { split_k_ = splits; }
  void set_exact(bool on) override { exact_ = on; }
  void set_ozaki(const ozaki::Settings& settings) override {
    if (settings.moduli != ozaki_moduli_) plan_.reset();
    ozaki_moduli_ = settings.moduli;
  }
  Shape shape() const override { return s_; }
  ErrorBound error_bound(Level level) override {
    return cpu_error_bound<T>(level, s_, split_k_, omp_get_max_threads());
  }

 private:
  const ozaki::Plan& ozaki_plan() {
    if (!plan_) plan_ = ozaki::make_plan<T>(s_.k, ozaki_moduli_);
    return *plan_;
  }

  Shape s_;
  std::int64_t split_k_ = 0;
  bool exact_ = false;
  std::vector<T> a_, b_, c_;
  typename Engine<T>::Combine combine_;
  int ozaki_moduli_ = 0;
  std::optional<ozaki::Plan> plan_;
  ozaki::Stats ozaki_stats_;
  bool ozaki_noted_ = false;
};

}  // namespace

template <class T>
std::unique_ptr<Engine<T>> make_cpu_engine(Shape s) {
  return std::make_unique<CpuEngine<T>>(s);
}

#define TALLY_MATMUL_CPU(T)                                                                                        \
  template void cpu_multiply<T>(Level, std::span<const T>, std::span<const T>, std::span<T>, Shape, std::int64_t); \
  template ErrorBound cpu_error_bound<T>(Level, Shape, std::int64_t, int);                                         \
  template double eigen_multiply<T>(std::span<const T>, std::span<const T>, std::span<T>, Shape, int, int);        \
  template std::unique_ptr<Engine<T>> make_cpu_engine<T>(Shape);
TALLY_MATMUL_CPU(float)
TALLY_MATMUL_CPU(double)

}  // namespace tally::matmul
