#pragma once
// The CPU engine of the generic reducers (tally/reduce/generic.hpp states what it computes): the
// walk over the outputs' and the reduced axes (the CUDA engine's too) and the chunked folds.

#include <algorithm>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

#include "tally/reduce/detail/tuning_cpu.hpp"
#include "tally/reduce/reduce.hpp"

// OpenMP where the including translation unit has it (nvcc's host pass usually does not); the loops
// below name their condition `team`.
#if defined(_OPENMP)
#define TALLY_GENERIC_OMP_FOR_TEAM _Pragma("omp parallel for schedule(static) if (team)")
#else
#define TALLY_GENERIC_OMP_FOR_TEAM
#endif

namespace tally::reduce {

namespace detail {

/// The input of a generic reduction as kept axes (the outputs) and reduced axes (each output's
/// elements), extent-1 axes dropped and neighbours merged where contiguous (which keeps the
/// row-major numbering). Host and device.
struct Walk {
  std::int64_t n_out = 1;  ///< outputs
  std::int64_t per = 1;    ///< elements per output
  int nk = 0, nr = 0;      ///< kept / reduced axes, outermost first
  std::int64_t kext[3] = {1, 1, 1}, kstr[3] = {0, 0, 0};
  std::int64_t rext[3] = {1, 1, 1}, rstr[3] = {0, 0, 0};
  // The innermost reduced axis (m elements at stride s) and the rows over the others.
  [[nodiscard]] TALLY_HD std::int64_t m() const { return rext[nr - 1]; }
  [[nodiscard]] TALLY_HD std::int64_t s() const { return rstr[nr - 1]; }
  [[nodiscard]] TALLY_HD std::int64_t rows() const { return m() == 0 ? 0 : per / m(); }
  /// Offset of output o's first element.
  [[nodiscard]] TALLY_HD std::int64_t out_offset(std::int64_t o) const {
    if (nk == 0) return 0;
    if (nk == 1) return o * kstr[0];
    return (o / kext[1]) * kstr[0] + (o % kext[1]) * kstr[1];  // two kept axes at most
  }
  /// Offset of row r (all reduced axes but the innermost) from the output's first element.
  [[nodiscard]] TALLY_HD std::int64_t row_offset(std::int64_t r) const {
    if (nr == 1) return 0;
    if (nr == 2) return r * rstr[0];
    return (r / rext[1]) * rstr[0] + (r % rext[1]) * rstr[1];
  }
};

template <class T>
Walk make_walk(View<const T> in, Levels levels) {
  Walk w;
  struct Axis {
    std::int64_t ext, str;
    bool red;
  };
  const Axis full[3] = {{in.ext.ng, in.stride_g, levels.contains(Level::gang)},
                        {in.ext.nw, in.stride_w, levels.contains(Level::worker)},
                        {in.ext.nv, 1, levels.contains(Level::vector)}};
  for (const Axis& a : full) {
    if (a.red) w.per *= a.ext;
    else w.n_out *= a.ext;
    if (a.ext == 1) continue;
    std::int64_t* ext = a.red ? w.rext : w.kext;
    std::int64_t* str = a.red ? w.rstr : w.kstr;
    int& n = a.red ? w.nr : w.nk;
    if (n > 0 && str[n - 1] == a.ext * a.str) {  // the outer neighbour steps over exactly this axis
      ext[n - 1] *= a.ext;
      str[n - 1] = a.str;
    } else {
      ext[n] = a.ext, str[n] = a.str, ++n;
    }
  }
  if (w.nr == 0) w.rext[0] = 1, w.rstr[0] = 0, w.nr = 1;  // every reduced axis has extent 1
  return w;
}

/// The N elements at x[0], x[s], ... (flat indices index0, index0 + 1, ...) as a pairwise tree of
/// values, not an array: the compiler keeps it in registers and folds what the loads make constant
/// (MeanVar's counts, so its tree has no division).
template <class R, int N, class T>
[[gnu::always_inline]] inline typename R::value_type cpu_tree(const T* x, std::int64_t s, std::int64_t index0) {
  if constexpr (N == 1) return reducer_load<R>(x[0], index0);
  else return R::combine(cpu_tree<R, N / 2>(x, s, index0), cpu_tree<R, N / 2>(x + (N / 2) * s, s, index0 + N / 2));
}

/// Elements [c0, c1) along the innermost reduced axis of row `r` of an output at `base`, into acc.
template <class R, class T>
typename R::value_type cpu_fold_run(typename R::value_type acc, const T* base, std::int64_t s, std::int64_t c0,
                                    std::int64_t c1, std::int64_t index0) {
  if constexpr (HasFoldRun<R, T>)
    if (s == 1) return R::fold_run(acc, base + c0, c1 - c0, index0 + c0);
  std::int64_t c = c0;
  for (; c + GenericCpuPolicy::batch <= c1; c += GenericCpuPolicy::batch)
    acc = R::combine(acc, cpu_tree<R, GenericCpuPolicy::batch>(base + c * s, s, index0 + c));
  for (; c < c1; ++c) acc = R::combine(acc, reducer_load<R>(base[c * s], index0 + c));
  return acc;
}

/// Flat elements [e0, e1) of output o, in order.
template <class R, class T>
typename R::value_type cpu_fold_range(const Walk& w, const T* in, std::int64_t o, std::int64_t e0, std::int64_t e1) {
  typename R::value_type acc = R::identity();
  const std::int64_t m = w.m(), s = w.s();
  const T* out_base = in + w.out_offset(o);
  std::int64_t r = e0 / m, c = e0 % m;
  for (std::int64_t e = e0; e < e1; ++r, c = 0) {
    const std::int64_t c1 = std::min(m, c + (e1 - e));
    acc = cpu_fold_run<R>(acc, out_base + w.row_offset(r), s, c, c1, r * m);
    e += c1 - c;
  }
  return acc;
}

template <class R, class T>
void generic_cpu(View<const T> in, Levels levels, typename R::value_type* out) {
  using Val = typename R::value_type;
  const Walk w = make_walk(in, levels);
  if (w.n_out == 0) return;
  if (w.per == 0) {
    std::fill(out, out + w.n_out, R::identity());
    return;
  }
  // Chunks of at least grain elements, about target_tasks of them in a long reduction: fixed by the problem.
  const std::int64_t chunk =
      std::max(GenericCpuPolicy::grain, (w.per + GenericCpuPolicy::target_tasks - 1) / GenericCpuPolicy::target_tasks);
  const std::int64_t nc = (w.per + chunk - 1) / chunk;
  [[maybe_unused]] const bool team = w.n_out * w.per >= GenericCpuPolicy::serial_below;
  if (nc == 1) {
    TALLY_GENERIC_OMP_FOR_TEAM
    for (std::int64_t o = 0; o < w.n_out; ++o) out[o] = cpu_fold_range<R>(w, in.data, o, 0, w.per);
    return;
  }
  std::vector<Val> part(static_cast<std::size_t>(w.n_out * nc));
  TALLY_GENERIC_OMP_FOR_TEAM
  for (std::int64_t t = 0; t < w.n_out * nc; ++t) {
    const std::int64_t o = t / nc, c = t % nc;
    part[static_cast<std::size_t>(t)] = cpu_fold_range<R>(w, in.data, o, c * chunk, std::min(w.per, (c + 1) * chunk));
  }
  for (std::int64_t o = 0; o < w.n_out; ++o) {
    Val acc = part[static_cast<std::size_t>(o * nc)];
    for (std::int64_t c = 1; c < nc; ++c) acc = R::combine(acc, part[static_cast<std::size_t>(o * nc + c)]);
    out[o] = acc;
  }
}

}  // namespace detail

}  // namespace tally::reduce
