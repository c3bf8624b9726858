// matmul --exact on the CPU (exact.hpp): each level's loop nest over tally::reduce's exact filters
// and superaccumulators. Every path computes each element's exact dot product and rounds it once,
// so the levels, the thread count and the chunking cannot change a bit.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "exact.hpp"
#include "transpose.hpp"
#include "tuning_cpu.hpp"
#include "tally/common/error.hpp"
#include "tally/reduce/exact.hpp"

namespace tally::matmul {
namespace {

using idx = std::int64_t;
namespace ex = reduce::exact;
template <class T>
using Acc = ex::Accumulator<ex::products_of<T>>;

/// A filter's sink: its element's accumulator, normalised before its limbs could overflow.
template <class T>
struct Sink {
  Acc<T>* acc;
  idx adds = 0;
  void touch() {
    if (++adds == (idx{1} << 28)) acc->normalize(), adds = 0;
  }
  void add(double r) { touch(), acc->add(r); }
  void special(double x) { touch(), acc->special(x); }
  void product(double x, double y) { touch(), acc->product(x, y); }
};

/// sum_{k0 <= k < k1} x[k] y[k] into acc (cleared by the caller), exactly, with four filters.
template <class T>
void accumulate(const T* x, const T* y, idx k0, idx k1, Acc<T>& acc) {
  Sink<T> sink{&acc};
  ex::Filter f[4];
  idx k = k0;
  for (; k + 4 <= k1; k += 4)
    for (int w = 0; w < 4; ++w) f[w].add_product(x[k + w], y[k + w], sink);
  for (; k < k1; ++k) f[0].add_product(x[k], y[k], sink);
  for (auto& fw : f) fw.flush_into(acc);
  acc.normalize();
}

/// K cut into `chunks` ranges, each (element, chunk) an accumulator of its own, merged per element.
/// Elements go in blocks so that the accumulators of one block stay small.
template <class T>
void chunked(const T* a, const T* bt, T* c, Shape s, idx chunks) {
  const idx mn = s.m * s.n, block = tuning::cpu::exact_block;
  const idx len = (s.k + chunks - 1) / chunks;
  for (idx e0 = 0; e0 < mn; e0 += block) {
    const idx ne = std::min(block, mn - e0);
    std::vector<Acc<T>> part(static_cast<std::size_t>(ne * chunks));
#pragma omp parallel for collapse(2) schedule(static)
    for (idx e = 0; e < ne; ++e)
      for (idx q = 0; q < chunks; ++q) {
        Acc<T>& acc = part[static_cast<std::size_t>(e * chunks + q)];
        acc.clear();
        const idx i = (e0 + e) / s.n, j = (e0 + e) % s.n;
        accumulate(a + i * s.k, bt + j * s.k, std::min(s.k, q * len), std::min(s.k, (q + 1) * len), acc);
      }
#pragma omp parallel for schedule(static)
    for (idx e = 0; e < ne; ++e) {
      Acc<T>& acc = part[static_cast<std::size_t>(e * chunks)];
      for (idx q = 1; q < chunks; ++q) acc.merge(part[static_cast<std::size_t>(e * chunks + q)]);
      c[e0 + e] = acc.template round<T>();
    }
  }
}

/// 8 x 8 tiles of C, i-k-j order (rows of B read contiguously), a filter and an accumulator per element.
template <class T>
void tiled(const T* a, const T* b, T* c, Shape s) {
  constexpr idx tile = tuning::cpu::exact_tile;
  const idx ti = (s.m + tile - 1) / tile, tj = (s.n + tile - 1) / tile;
#pragma omp parallel for schedule(dynamic)
  for (idx t = 0; t < ti * tj; ++t) {
    const idx i0 = (t / tj) * tile, j0 = (t % tj) * tile;
    const idx ni = std::min(tile, s.m - i0), nj = std::min(tile, s.n - j0);
    auto acc = std::make_unique<Acc<T>[]>(static_cast<std::size_t>(tile * tile));
    std::vector<Sink<T>> sink;
    for (idx e = 0; e < tile * tile; ++e)
      acc[static_cast<std::size_t>(e)].clear(), sink.push_back(Sink<T>{&acc[static_cast<std::size_t>(e)]});
    ex::Filter f[tile * tile];
    for (idx k = 0; k < s.k; ++k)
      for (idx ii = 0; ii < ni; ++ii) {
        const T x = a[(i0 + ii) * s.k + k];
        const T* brow = b + k * s.n + j0;
        for (idx jj = 0; jj < nj; ++jj)
          f[ii * tile + jj].add_product(x, brow[jj], sink[static_cast<std::size_t>(ii * tile + jj)]);
      }
    for (idx ii = 0; ii < ni; ++ii)
      for (idx jj = 0; jj < nj; ++jj) {
        const idx e = ii * tile + jj;
        f[e].flush_into(acc[static_cast<std::size_t>(e)]);
        c[(i0 + ii) * s.n + j0 + jj] = acc[static_cast<std::size_t>(e)].template round<T>();
      }
  }
}

}  // namespace

template <class T>
void exact_cpu_multiply(Level level, std::span<const T> a, std::span<const T> b, std::span<T> c, Shape s,
                        std::int64_t split_k) {
  const idx mn = s.m * s.n;
  if (level == Level::tiled_tc) throw InputError(kNoExactTiledTc);
  if (s.k == 0) {
    std::fill(c.begin(), c.end(), T(0));
    return;
  }
  if (level == Level::tiled) return tiled(a.data(), b.data(), c.data(), s);
  const std::vector<T> bt = transpose<T>(b, s.k, s.n);
  switch (level) {
    case Level::ozaki:  // its exact form: every element by its fallback, an exact dot product
    case Level::vector:
#pragma omp parallel for schedule(dynamic)
      for (idx e = 0; e < mn; ++e)
        c[static_cast<std::size_t>(e)] =
            reduce::exact::dot<T>(a.data() + (e / s.n) * s.k, bt.data() + (e % s.n) * s.k, s.k);
      return;
    case Level::worker:  // threads split K: one range each
      return chunked(a.data(), bt.data(), c.data(), s, std::max<idx>(1, std::min<idx>(omp_get_max_threads(), s.k)));
    case Level::worker_vector:  // a finer split: four ranges per thread
      return chunked(
          a.data(), bt.data(), c.data(), s,
          std::max<idx>(1, std::min<idx>(tuning::cpu::exact_ranges_per_thread * omp_get_max_threads(), s.k)));
    case Level::gang:  // fixed chunks, independent of the thread count (as the ordinary gang level)
      return chunked(a.data(), bt.data(), c.data(), s,
                     split_k > 0 ? std::min(split_k, s.k)
                                 : std::clamp<idx>(s.k / tuning::cpu::gang_min_chunk, 1, tuning::cpu::gang_max_chunks));
    case Level::tiled:
    case Level::tiled_tc: break;  // both above
  }
}

template <class T>
Reference exact_reference(std::span<const T> a, std::span<const T> b, Shape s) {
  Reference r;
  const idx mn = s.m * s.n;
  r.c.resize(static_cast<std::size_t>(mn));
  r.abs.resize(static_cast<std::size_t>(mn));
  const std::vector<T> bt = transpose<T>(b, s.k, s.n);
#pragma omp parallel for schedule(dynamic)
  for (idx e = 0; e < mn; ++e) {
    const T* x = a.data() + (e / s.n) * s.k;
    const T* y = bt.data() + (e % s.n) * s.k;
    Acc<T> acc;  // four filters (exact::dot has one: a chain of dependent additions)
    acc.clear();
    accumulate(x, y, 0, s.k, acc);
    r.c[static_cast<std::size_t>(e)] = static_cast<double>(acc.template round<T>());
    double abs = 0;
    for (idx k = 0; k < s.k; ++k) abs += std::fabs(static_cast<double>(x[k]) * static_cast<double>(y[k]));
    r.abs[static_cast<std::size_t>(e)] = abs;
  }
  return r;
}

#define TALLY_MATMUL_EXACT_CPU(T)                                                                         \
  template void exact_cpu_multiply<T>(Level, std::span<const T>, std::span<const T>, std::span<T>, Shape, \
                                      std::int64_t);                                                      \
  template Reference exact_reference<T>(std::span<const T>, std::span<const T>, Shape);
TALLY_MATMUL_EXACT_CPU(float)
TALLY_MATMUL_EXACT_CPU(double)

}  // namespace tally::matmul
