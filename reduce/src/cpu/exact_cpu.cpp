// CPU backend of the exact sum (ExactSum, tally/reduce/exact.hpp): OpenMP threads over tasks, SIMD
// inside a task. Each task runs `lanes` expansion filters (hi, lo) side by side, vectorised, flushing
// the rare residual into its own superaccumulator; tasks' accumulators are merged by integer adds.
// The result is the exact sum rounded once, so it does not depend on how the work is cut, on the
// thread count or on the instruction set; the cut below only serves speed.
//
// Compiled once per instruction set like reduce_cpu.cpp (isa.hpp): TALLY_CPU_ISA names the namespace.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "isa.hpp"
#include "plan.hpp"
#include "tally/reduce/exact.hpp"

#ifndef TALLY_CPU_ISA
#define TALLY_CPU_ISA base
#endif

namespace tally::reduce::detail::TALLY_CPU_ISA {

namespace {

using exact::Accumulator;
using exact::Filter;
using exact::result_of;

constexpr std::int64_t grain = std::int64_t{1} << 14;        // elements: least work worth a task of its own
constexpr std::int64_t target_tasks = 256;                    // a long reduction is split into about this many tasks
constexpr std::int64_t serial_below = std::int64_t{1} << 16;  // elements: below this, no thread team
constexpr int lanes = 16;                // filters per task (hi and lo: 4 AVX2 or 2 AVX-512 registers each)
#if defined(__AVX512F__)
constexpr int vw = 8;  // doubles per vector register
#else
constexpr int vw = 4;  // AVX2 (the baseline build splits each into SSE2 pairs)
#endif
constexpr std::int64_t short_seg = 64;   // segments up to this long: one scalar filter, no accumulator
constexpr int col_block = 64;            // outer family: columns per task (each with a filter and an accumulator)
constexpr std::int64_t renorm_every = std::int64_t{1} << 30;  // flushes between normalisations (limit 2^31)

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

/// A superaccumulator as the filters' sink: counts its flushes to normalise in time.
template <class T>
struct Sink {
  Accumulator<T>* acc;
  std::int64_t adds = 0;
  bool used = false;
  void touch() {
    if (!used) acc->clear(), used = true;
    if (++adds == renorm_every) acc->normalize(), adds = 0;
  }
  void add(double r) { touch(), acc->add(r); }
  void special(double x) { touch(), acc->special(x); }
};

/// W consecutive values, value l into filter l (W <= lanes; a compile-time W for the vectoriser,
/// 0: the runtime w). All lanes' TwoSums at once; when one of them meets a special value, the block
/// is redone lane by lane with the scalar filter (the same arithmetic, so the same result).
template <int W, class T, class SinkOf>
inline void fold_block(const T* __restrict x, int w, double* __restrict hi, double* __restrict lo, SinkOf&& sink_of) {
  const int n = W > 0 ? W : w;
  double nh[lanes], nl[lanes], res[lanes];
  long long bad = 0, nz = 0;
#pragma omp simd reduction(| : bad, nz)
  for (int l = 0; l < n; ++l) {
    const double v = static_cast<double>(x[l]);
    const double s = hi[l] + v;
    bad |= static_cast<long long>(!(exact::abs(s) < exact::kBig));
    const double b1 = s - hi[l];
    const double e1 = (hi[l] - (s - b1)) + (v - b1);
    const double t = lo[l] + e1;
    const double b2 = t - lo[l];
    const double e2 = (lo[l] - (t - b2)) + (e1 - b2);
    nh[l] = s, nl[l] = t, res[l] = e2;
    nz |= static_cast<long long>(e2 != 0);
  }
  if (bad == 0) {
#pragma omp simd
    for (int l = 0; l < n; ++l) hi[l] = nh[l], lo[l] = nl[l];
    if (nz != 0)
      for (int l = 0; l < n; ++l)
        if (res[l] != 0) sink_of(l).add(res[l]);
    return;
  }
  for (int l = 0; l < n; ++l) {
    Filter f{hi[l], lo[l]};
    f.add(x[l], sink_of(l));
    hi[l] = f.hi, lo[l] = f.lo;
  }
}

/// A task's filters over one run of contiguous values, all into one accumulator.
template <class T>
struct LaneFilters {
  double hi[lanes], lo[lanes];
  LaneFilters() { std::fill(hi, hi + lanes, -0.0), std::fill(lo, lo + lanes, 0.0); }
  /// The hot loop: the filters stay in registers (local copies), the first TwoSum of 16 values at
  /// once, the second only when one of their errors is non-zero (for float inputs mostly none is),
  /// anything rarer (a residual, a special value) through fold_block's general path.
  void fold(const T* __restrict x, std::int64_t n, Sink<T>& sink) {
    const auto one = [&sink](int) -> Sink<T>& { return sink; };
    // GCC vector types: the 16 filters as R registers of vw doubles each for hi and lo (AVX-512:
    // two of eight; AVX2: four of four; SSE2 pairs in the baseline build). Float inputs take the
    // first sum only and fall back to fold_block when one of 16 is inexact; doubles take both.
    // Anything rarer (a residual to flush, a special value) goes through fold_block from the stored
    // state: the same arithmetic.
    using vd = double __attribute__((vector_size(8 * vw)));
    using vf = float __attribute__((vector_size(4 * vw)));
    using vm = long long __attribute__((vector_size(8 * vw)));
    constexpr int R = lanes / vw;
    static_assert(R * vw == lanes);
    constexpr bool is_float = std::is_same_v<T, float>;
    vd H[R], O[R];
    std::memcpy(H, hi, sizeof H), std::memcpy(O, lo, sizeof O);
    std::int64_t i = 0;
    for (; i + lanes <= n; i += lanes) {
      vd S[R], L[R];
      vm flag = {};
      for (int k = 0; k < R; ++k) {
        vd v;
        if constexpr (is_float) {
          vf f;
          std::memcpy(&f, x + i + vw * k, sizeof f);
          v = __builtin_convertvector(f, vd);
        } else {
          std::memcpy(&v, x + i + vw * k, sizeof v);
        }
        S[k] = H[k] + v;
        if constexpr (is_float) {
          // s = h + v is exact iff s - h == v and s - v == h: for the operand of larger magnitude
          // one of the two differences is exact (Sterbenz/Dekker), and it equals the other operand
          // only when nothing was rounded off; when exact, both hold. Four operations instead of
          // TwoSum's five and the test. NaN and Inf fail a comparison: flagged. (A float filter's
          // |h| stays below 2^178, far from overflow.)
          flag |= (S[k] - H[k] != v) | (S[k] - v != H[k]);
        } else {
          const vd b1 = S[k] - H[k];
          const vd e1 = (H[k] - (S[k] - b1)) + (v - b1);
          L[k] = O[k] + e1;
          // lo + e1 exact, by the same test; an overflow anywhere leaves an Inf or NaN that fails it.
          flag |= (L[k] - O[k] != e1) | (L[k] - e1 != O[k]);
        }
      }
      long long any = 0;
      for (int l = 0; l < vw; ++l) any |= flag[l];
      if (any == 0) {
        for (int k = 0; k < R; ++k) {
          H[k] = S[k];
          if constexpr (!is_float) O[k] = L[k];
        }
        continue;
      }
      std::memcpy(hi, H, sizeof H), std::memcpy(lo, O, sizeof O);
      fold_block<lanes, T>(x + i, lanes, hi, lo, one);
      std::memcpy(H, hi, sizeof H), std::memcpy(O, lo, sizeof O);
    }
    std::memcpy(hi, H, sizeof H), std::memcpy(lo, O, sizeof O);
    if (i < n) fold_block<0, T>(x + i, static_cast<int>(n - i), hi, lo, one);
  }
  /// Everything into the accumulator (cleared first if the sink never used it).
  void drain(Sink<T>& sink) {
    if (!sink.used) sink.acc->clear(), sink.used = true;
    for (int l = 0; l < lanes; ++l) {
      Filter f{hi[l], lo[l]};
      f.flush_into(*sink.acc);
    }
    sink.acc->normalize();
  }
};

struct RowCursor {  // as in reduce_cpu.cpp: rows q = a * r_ext2 + b without a division per row
  std::int64_t a, b;
  RowCursor(const Plan& p, std::int64_t q) : a(q / p.r_ext2), b(q % p.r_ext2) {}
  [[nodiscard]] std::int64_t offset(const Plan& p) const { return a * p.r_s1 + b * p.r_s2; }
  void next(const Plan& p) {
    if (++b == p.r_ext2) b = 0, ++a;
  }
};

// ---- inner family: out[o] = sum_{q < rows, i < n} in[koff(o) + roff(q) + i] ---------------------------

/// Elements [e0, e1) of the segment at `base` (element e = q * n + i) into the filters.
template <class T>
void inner_range(const Plan& p, const T* base, std::int64_t e0, std::int64_t e1, LaneFilters<T>& f, Sink<T>& sink) {
  RowCursor q(p, e0 / p.n);
  std::int64_t i = e0 % p.n;
  for (std::int64_t e = e0; e < e1;) {
    const std::int64_t len = std::min(p.n - i, e1 - e);
    f.fold(base + q.offset(p) + i, len, sink);
    e += len, i = 0;
    q.next(p);
  }
}

template <class T, class Out>
Out inner_output(const Plan& p, const T* base, Accumulator<T>& acc) {
  const std::int64_t per = p.per_output();
  Sink<T> sink{&acc};
  if (per <= short_seg) {  // one filter: mostly no accumulator at all
    Filter f;
    RowCursor q(p, 0);
    for (std::int64_t r = 0; r < p.rows; ++r, q.next(p)) {
      const T* row = base + q.offset(p);
      for (std::int64_t i = 0; i < p.n; ++i) f.add(row[i], sink);
    }
    if (sink.used) sink.acc->normalize();
    return result_of<Out>(f, acc, sink.used);
  }
  LaneFilters<T> f;
  inner_range<T>(p, base, 0, per, f, sink);
  f.drain(sink);
  return result_of<Out>(acc);
}

template <class T, class Out>
void exact_inner(const Plan& p, const T* in, Out* out) {
  const std::int64_t per = p.per_output();
  const bool team = p.n_out * per >= serial_below;
  if (p.n_out >= target_tasks || per <= 2 * grain) {
    const std::int64_t ob = std::max<std::int64_t>(1, grain / std::max<std::int64_t>(per, 1));
#pragma omp parallel for schedule(static) if (team)
    for (std::int64_t t = 0; t < ceil_div(p.n_out, ob); ++t) {
      Accumulator<T> acc;
      for (std::int64_t o = t * ob; o < std::min(p.n_out, (t + 1) * ob); ++o)
        out[o] = inner_output<T, Out>(p, in + p.koff(o), acc);
    }
    return;
  }
  // Few long outputs: fixed chunks, each into an accumulator of its own, merged per output.
  const std::int64_t split = std::min(ceil_div(per, grain), ceil_div(target_tasks, p.n_out));
  const std::int64_t chunk = ceil_div(per, split);
  const std::int64_t nchunks = ceil_div(per, chunk);
  std::vector<Accumulator<T>> part(static_cast<std::size_t>(p.n_out * nchunks));
#pragma omp parallel for schedule(static) if (team)
  for (std::int64_t t = 0; t < p.n_out * nchunks; ++t) {
    const std::int64_t o = t / nchunks, c = t % nchunks;
    Sink<T> sink{&part[static_cast<std::size_t>(t)]};
    LaneFilters<T> f;
    inner_range<T>(p, in + p.koff(o), c * chunk, std::min(per, (c + 1) * chunk), f, sink);
    f.drain(sink);
  }
  for (std::int64_t o = 0; o < p.n_out; ++o) {
    Accumulator<T>& a = part[static_cast<std::size_t>(o * nchunks)];
    for (std::int64_t c = 1; c < nchunks; ++c) a.merge(part[static_cast<std::size_t>(o * nchunks + c)]);
    out[o] = result_of<Out>(a);
  }
}

// ---- outer family: out[b * nc + c] = sum_{q < rows} in[b * sb + roff(q) + c] ---------------------------

/// Rows [q0, q1) of slab b, columns [c0, c0 + w): a filter and a (lazily cleared) accumulator per column.
template <class T>
struct ColumnTask {
  double hi[col_block], lo[col_block];
  Accumulator<T> acc[col_block];
  Sink<T> sink[col_block];
  int w;
  ColumnTask(const Plan& p, const T* in, std::int64_t b, std::int64_t c0, int w_, std::int64_t q0, std::int64_t q1) : w(w_) {
    std::fill(hi, hi + w, -0.0), std::fill(lo, lo + w, 0.0);
    for (int c = 0; c < w; ++c) sink[c] = Sink<T>{&acc[c]};
    const T* slab = in + b * p.sb + c0;
    RowCursor q(p, q0);
    for (std::int64_t r = q0; r < q1; ++r, q.next(p)) {
      const T* row = slab + q.offset(p);
      for (int c = 0; c < w; c += lanes) {
        const auto of = [this, c](int l) -> Sink<T>& { return sink[c + l]; };
        if (c + lanes <= w) fold_block<lanes, T>(row + c, lanes, hi + c, lo + c, of);
        else fold_block<0, T>(row + c, w - c, hi + c, lo + c, of);
      }
    }
  }
  template <class Out>
  Out result(int c) {
    Filter f{hi[c], lo[c]};
    if (sink[c].used) acc[c].normalize();
    return result_of<Out>(f, acc[c], sink[c].used);
  }
  /// Column c's whole sum in its accumulator.
  Accumulator<T>& drained(int c) {
    if (!sink[c].used) acc[c].clear(), sink[c].used = true;
    Filter f{hi[c], lo[c]};
    f.flush_into(acc[c]);
    acc[c].normalize();
    return acc[c];
  }
};

template <class T, class Out>
void exact_outer(const Plan& p, const T* in, Out* out) {
  const std::int64_t cw = std::min<std::int64_t>(p.nc, col_block);
  const std::int64_t ncb = ceil_div(p.nc, cw);
  const std::int64_t units = p.nb * ncb;
  const bool team = p.nb * p.nc * p.rows >= serial_below;
  std::int64_t nrb = 1;
  if (units < target_tasks && p.rows * cw > 2 * grain) nrb = std::min(ceil_div(p.rows * cw, grain), ceil_div(target_tasks, units));
  const std::int64_t rb_rows = ceil_div(p.rows, nrb);
  nrb = ceil_div(p.rows, rb_rows);
  if (nrb == 1) {
#pragma omp parallel for schedule(static) if (team)
    for (std::int64_t t = 0; t < units; ++t) {
      const std::int64_t b = t / ncb, c0 = (t % ncb) * cw;
      const int w = static_cast<int>(std::min(cw, p.nc - c0));
      auto task = std::make_unique<ColumnTask<T>>(p, in, b, c0, w, 0, p.rows);
      for (int c = 0; c < w; ++c) out[b * p.nc + c0 + c] = task->template result<Out>(c);
    }
    return;
  }
  // Rows split too: each (unit, row block) leaves its columns' accumulators, merged per column.
  std::vector<Accumulator<T>> part(static_cast<std::size_t>(units * nrb * cw));
#pragma omp parallel for schedule(static) if (team)
  for (std::int64_t t = 0; t < units * nrb; ++t) {
    const std::int64_t u = t / nrb, rb = t % nrb, b = u / ncb, c0 = (u % ncb) * cw;
    const int w = static_cast<int>(std::min(cw, p.nc - c0));
    auto task = std::make_unique<ColumnTask<T>>(p, in, b, c0, w, rb * rb_rows, std::min(p.rows, (rb + 1) * rb_rows));
    for (int c = 0; c < w; ++c) part[static_cast<std::size_t>(t * cw + c)] = task->drained(c);
  }
#pragma omp parallel for schedule(static) if (team)
  for (std::int64_t u = 0; u < units; ++u) {
    const std::int64_t b = u / ncb, c0 = (u % ncb) * cw;
    const int w = static_cast<int>(std::min(cw, p.nc - c0));
    for (int c = 0; c < w; ++c) {
      Accumulator<T>& a = part[static_cast<std::size_t>((u * nrb) * cw + c)];
      for (std::int64_t rb = 1; rb < nrb; ++rb) a.merge(part[static_cast<std::size_t>((u * nrb + rb) * cw + c)]);
      out[b * p.nc + c0 + c] = result_of<Out>(a);
    }
  }
}

}  // namespace

template <class T, class Out>
void exact_cpu_isa(const Problem& prob, Out* out) {
  const Plan p = make_plan(prob);
  const T* in = static_cast<const T*>(prob.data);
  if (p.empty) {
    if constexpr (std::is_same_v<Out, Accumulator<T>>) std::for_each(out, out + p.n_out, [](Out& a) { a.clear(); });
    else std::fill(out, out + p.n_out, Out(0));
  }
  else if (p.kind == Plan::Kind::inner) exact_inner<T, Out>(p, in, out);
  else exact_outer<T, Out>(p, in, out);
}

template void exact_cpu_isa<float, float>(const Problem&, float*);
template void exact_cpu_isa<float, double>(const Problem&, double*);
template void exact_cpu_isa<double, double>(const Problem&, double*);
template void exact_cpu_isa<float, Accumulator<float>>(const Problem&, Accumulator<float>*);
template void exact_cpu_isa<double, Accumulator<double>>(const Problem&, Accumulator<double>*);

}  // namespace tally::reduce::detail::TALLY_CPU_ISA
