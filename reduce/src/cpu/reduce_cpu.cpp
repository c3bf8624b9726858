// CPU backend: OpenMP threads over tasks, SIMD inside a task.
//
// Determinism: how the work is cut into tasks depends only on the problem (extents, strides, level
// set), never on the number of threads; each task folds its elements in a fixed order into `lanes`
// interleaved accumulators (lane l takes the elements at positions = l mod lanes), combined in lane
// order; split outputs combine their tasks' partials in task order. So a result is bitwise the same
// whatever OMP_NUM_THREADS is and run to run. Threads only decide who runs which task.
//
// This file is compiled once per instruction set (isa.hpp): TALLY_CPU_ISA names the namespace. The
// arithmetic and its order are the same in each, only the vector width differs, so every build gives
// the same bits (no -mfma: no contraction).
#include <omp.h>

#include <algorithm>
#include <array>
#include <limits>
#include <type_traits>
#include <vector>

#include "instantiate.hpp"
#include "isa.hpp"
#include "plan.hpp"
#include "tally/reduce/detail/tuning_cpu.hpp"

#ifndef TALLY_CPU_ISA
#define TALLY_CPU_ISA base
#endif

namespace tally::reduce::detail::TALLY_CPU_ISA {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

template <class Op, class Acc>
struct LaneAcc {
  std::array<Acc, ReduceCpuPolicy::lanes> v;
  LaneAcc() { v.fill(Op::template identity<Acc>()); }
  // Folds lanes l, l + period, l + 2 period, ... (in that order) into column l of `acc`.
  void combine_into(Acc* acc, int period) const {
    for (int l = 0; l < ReduceCpuPolicy::lanes; ++l)
      acc[l % period] = Op::template combine<Acc>(acc[l % period], v[static_cast<unsigned>(l)]);
  }
};

template <class Op, class Acc>
inline constexpr bool is_fp_maxmin = std::is_floating_point_v<Acc> &&
                                     (std::is_same_v<Op, Max> || std::is_same_v<Op, Min>);

// Folds x[0..n) into the lanes: element i goes to lane i mod lanes. Vectorised across the lanes.
template <class Op, class T, class Acc>
inline void fold_lanes(const T* __restrict x, std::int64_t n, LaneAcc<Op, Acc>& a) {
  Acc* __restrict part = a.v.data();
  const std::int64_t body = n - n % ReduceCpuPolicy::lanes;
  if constexpr (is_fp_maxmin<Op, Acc>) {
    // The NaN-propagating join costs a compare-or-blend chain per step. Instead: a plain
    // part = (part > x ? part : x), one maxps/minps into the accumulator's own register, which a
    // NaN x replaces (and the next x overwrites), and, off the dependency chain, a sticky NaN mask
    // that tests the accumulators just written, one unordered compare for lanes l and l + lanes/2,
    // applied to both lanes at the end. Testing the accumulators instead of the inputs spares SSE a
    // second load of every input. Lanes l and l + lanes/2 always end in the same output (outer_rows'
    // packed path needs nc to divide lanes/2).
    constexpr int H = ReduceCpuPolicy::lanes / 2;
    using Mask = std::conditional_t<sizeof(Acc) == 4, std::int32_t, std::int64_t>;
    Mask nan[H];  // seeded from the incoming lanes: a NaN there would be overwritten, not kept
    for (int l = 0; l < H; ++l) nan[l] = __builtin_isunordered(part[l], part[l + H]) ? Mask(-1) : Mask(0);
    for (std::int64_t i = 0; i < body; i += ReduceCpuPolicy::lanes) {
#pragma omp simd
      for (int l = 0; l < H; ++l) {
        const Acc u = static_cast<Acc>(x[i + l]), v = static_cast<Acc>(x[i + l + H]);
        if constexpr (std::is_same_v<Op, Max>) {
          part[l] = part[l] > u ? part[l] : u;
          part[l + H] = part[l + H] > v ? part[l + H] : v;
        } else {
          part[l] = part[l] < u ? part[l] : u;
          part[l + H] = part[l + H] < v ? part[l + H] : v;
        }
        nan[l] |= __builtin_isunordered(part[l], part[l + H]) ? Mask(-1) : Mask(0);
      }
    }
    for (int l = 0; l < H; ++l)
      if (nan[l] != 0) part[l] = part[l + H] = std::numeric_limits<Acc>::quiet_NaN();
  } else {
    for (std::int64_t i = 0; i < body; i += ReduceCpuPolicy::lanes) {
#pragma omp simd
      for (int l = 0; l < ReduceCpuPolicy::lanes; ++l)
        part[l] = Op::template combine<Acc>(part[l], static_cast<Acc>(x[i + l]));
    }
  }
  for (std::int64_t i = body; i < n; ++i)
    part[i - body] = Op::template combine<Acc>(part[i - body], static_cast<Acc>(x[i]));
}

// Iterates the reduced rows q = a * r_ext2 + b without a division per row.
struct RowCursor {
  std::int64_t a, b;
  RowCursor(const Plan& p, std::int64_t q) : a(q == 0 ? 0 : q / p.r_ext2), b(q == 0 ? 0 : q % p.r_ext2) {}
  [[nodiscard]] std::int64_t offset(const Plan& p) const { return a * p.r_s1 + b * p.r_s2; }
  void next(const Plan& p) {
    if (++b == p.r_ext2) b = 0, ++a;
  }
};

// ---- inner family: the contiguous axis is reduced -------------------------------------------------

// Elements [e0, e1) of one output's segment (element e = q * n + i), into the lanes.
template <class Op, class T, class Acc>
void inner_range(const Plan& p, const T* base, std::int64_t e0, std::int64_t e1, LaneAcc<Op, Acc>& a) {
  RowCursor q(p, e0 == 0 ? 0 : e0 / p.n);  // e0 == 0 (whole outputs): no division per output
  std::int64_t i = e0 == 0 ? 0 : e0 % p.n;
  for (std::int64_t e = e0; e < e1;) {
    const std::int64_t len = std::min(p.n - i, e1 - e);
    fold_lanes<Op, T, Acc>(base + q.offset(p) + i, len, a);
    e += len, i = 0;
    q.next(p);
  }
}

template <class Op, class Acc>
Acc fold_all_lanes(const LaneAcc<Op, Acc>& a) {
  Acc r = Op::template identity<Acc>();
  a.combine_into(&r, 1);
  return r;
}

// Many short contiguous segments of a compile-time length N (0: the runtime n) at a constant
// stride: one output per iteration, the loop over outputs vectorises (strided loads). With
// `accumulate`, each segment's fold is joined to out[o] (one row of a row-by-row reduction).
template <class Op, class T, class Acc, int N, bool accumulate = false>
void inner_short(const T* __restrict in, std::int64_t stride, std::int64_t n, std::int64_t o0, std::int64_t o1,
                 Acc* __restrict out) {
  const std::int64_t len = N > 0 ? N : n;
#pragma omp simd
  for (std::int64_t o = o0; o < o1; ++o) {
    Acc r = Op::template identity<Acc>();
    for (std::int64_t i = 0; i < len; ++i) r = Op::template combine<Acc>(r, static_cast<Acc>(in[o * stride + i]));
    out[o] = accumulate ? Op::template combine<Acc>(out[o], r) : r;
  }
}

// Short segments (n <= row_wise_max_n) spread over strided rows (e.g. gang+vector with a small
// vector extent): reducing output by output would touch a cache line per row per output, so the
// block of outputs walks the rows once, in row order, each row adding its segments to the outputs.
constexpr std::int64_t row_wise_max_n = 64;

// Rows [q0, q1) into out[o0, o1).
template <class Op, class T, class Acc, int N>
void inner_row_wise(const Plan& p, const T* in, std::int64_t o0, std::int64_t o1, Acc* out, std::int64_t q0,
                    std::int64_t q1) {
  std::fill(out + o0, out + o1, Op::template identity<Acc>());
  RowCursor q(p, q0);
  for (std::int64_t r = q0; r < q1; ++r, q.next(p))
    inner_short<Op, T, Acc, N, true>(in + q.offset(p), p.k_s2, p.n, o0, o1, out);
}

template <class Op, class T, class Acc>
void row_wise_rows(const Plan& p, const T* in, std::int64_t o0, std::int64_t o1, Acc* out, std::int64_t q0,
                   std::int64_t q1) {
  switch (p.n) {
    case 1: return inner_row_wise<Op, T, Acc, 1>(p, in, o0, o1, out, q0, q1);
    case 2: return inner_row_wise<Op, T, Acc, 2>(p, in, o0, o1, out, q0, q1);
    case 4: return inner_row_wise<Op, T, Acc, 4>(p, in, o0, o1, out, q0, q1);
    default: return inner_row_wise<Op, T, Acc, 0>(p, in, o0, o1, out, q0, q1);
  }
}

bool row_wise(const Plan& p) { return p.rows > 1 && p.n <= row_wise_max_n && p.k_ext2 == p.n_out; }

// Row-wise with too few output blocks to go round (e.g. gang+vector with 1024 outputs): the rows
// are also cut into fixed chunks, each folded into its own partial outputs, which are then
// combined in chunk order. The cut depends on the problem alone, so results stay thread-independent.
template <class Op, class T, class Acc>
void reduce_row_wise_split(const Plan& p, const T* in, Acc* out, std::int64_t nob, bool team) {
  const std::int64_t rchunk = ceil_div(p.rows, std::min(p.rows, ceil_div(ReduceCpuPolicy::target_tasks, nob)));
  const std::int64_t nrc = ceil_div(p.rows, rchunk);
  std::vector<Acc> partial(static_cast<std::size_t>(nrc * p.n_out));
#pragma omp parallel for schedule(static) if (team)
  for (std::int64_t t = 0; t < nob * nrc; ++t) {
    const std::int64_t ob = t / nrc, rc = t % nrc;
    row_wise_rows<Op, T, Acc>(p, in, ob * ReduceCpuPolicy::row_wise_block,
                              std::min(p.n_out, (ob + 1) * ReduceCpuPolicy::row_wise_block),
                              partial.data() + rc * p.n_out, rc * rchunk, std::min(p.rows, (rc + 1) * rchunk));
  }
#pragma omp parallel for schedule(static) if (team)
  for (std::int64_t o = 0; o < p.n_out; ++o) {
    Acc r = partial[static_cast<std::size_t>(o)];
    for (std::int64_t rc = 1; rc < nrc; ++rc)
      r = Op::template combine<Acc>(r, partial[static_cast<std::size_t>(rc * p.n_out + o)]);
    out[o] = r;
  }
}

// Outputs [o0, o1), each reduced whole.
template <class Op, class T, class Acc>
void inner_outputs(const Plan& p, const T* in, std::int64_t o0, std::int64_t o1, Acc* out) {
  const std::int64_t per = p.per_output();
  if (p.rows == 1 && p.k_ext2 == p.n_out) {  // one kept axis at stride k_s2: offset o * k_s2
    switch (p.n) {
      case 1: return inner_short<Op, T, Acc, 1>(in, p.k_s2, 1, o0, o1, out);  // nothing reduced: a converting copy
      case 2: return inner_short<Op, T, Acc, 2>(in, p.k_s2, 2, o0, o1, out);
      case 3: return inner_short<Op, T, Acc, 3>(in, p.k_s2, 3, o0, o1, out);
      case 4: return inner_short<Op, T, Acc, 4>(in, p.k_s2, 4, o0, o1, out);
      case 8: return inner_short<Op, T, Acc, 8>(in, p.k_s2, 8, o0, o1, out);
      case 16: return inner_short<Op, T, Acc, 16>(in, p.k_s2, 16, o0, o1, out);
      default: break;
    }
  }
  if (row_wise(p)) return row_wise_rows<Op, T, Acc>(p, in, o0, o1, out, 0, p.rows);
  std::int64_t ka = o0 / p.k_ext2, kb = o0 % p.k_ext2;
  for (std::int64_t o = o0; o < o1; ++o) {
    LaneAcc<Op, Acc> a;
    inner_range<Op, T, Acc>(p, in + ka * p.k_s1 + kb * p.k_s2, 0, per, a);
    out[o] = fold_all_lanes(a);
    if (++kb == p.k_ext2) kb = 0, ++ka;
  }
}

template <class Op, class T, class Acc>
void reduce_inner(const Plan& p, const T* in, Acc* out) {
  const std::int64_t per = p.per_output();
  const bool team = p.n_out * per >= ReduceCpuPolicy::serial_below;
  if (p.n_out >= ReduceCpuPolicy::target_tasks || per <= 2 * ReduceCpuPolicy::grain) {
    // Enough outputs to go round: blocks of whole outputs, at least `grain` elements each.
    const std::int64_t ob = row_wise(p)
                                ? ReduceCpuPolicy::row_wise_block
                                : std::max<std::int64_t>(1, ReduceCpuPolicy::grain / std::max<std::int64_t>(per, 1));
    const std::int64_t nblocks = ceil_div(p.n_out, ob);
    if (row_wise(p) && team && nblocks < ReduceCpuPolicy::target_tasks / 4)
      return reduce_row_wise_split<Op, T, Acc>(p, in, out, nblocks, team);
#pragma omp parallel for schedule(static) if (team)
    for (std::int64_t t = 0; t < nblocks; ++t)
      inner_outputs<Op, T, Acc>(p, in, t * ob, std::min(p.n_out, (t + 1) * ob), out);
    return;
  }
  // Few long outputs: each is cut into `split` fixed chunks; partials combined in chunk order.
  // n_out < target_tasks, split <= ceil(target_tasks / n_out): fewer than 2 * target_tasks partials.
  const std::int64_t split =
      std::min(ceil_div(per, ReduceCpuPolicy::grain), ceil_div(ReduceCpuPolicy::target_tasks, p.n_out));
  const std::int64_t chunk = ceil_div(ceil_div(per, split), ReduceCpuPolicy::lanes) * ReduceCpuPolicy::lanes;
  const std::int64_t nchunks = ceil_div(per, chunk);
  const std::int64_t tasks = p.n_out * nchunks;
  std::array<Acc, 2 * ReduceCpuPolicy::target_tasks> partial;
#pragma omp parallel for schedule(static) if (team)
  for (std::int64_t t = 0; t < tasks; ++t) {
    const std::int64_t o = t / nchunks, c = t % nchunks;
    LaneAcc<Op, Acc> a;
    inner_range<Op, T, Acc>(p, in + p.koff(o), c * chunk, std::min(per, (c + 1) * chunk), a);
    partial[static_cast<std::size_t>(t)] = fold_all_lanes(a);
  }
  for (std::int64_t o = 0; o < p.n_out; ++o) {
    Acc r = Op::template identity<Acc>();
    for (std::int64_t c = 0; c < nchunks; ++c)
      r = Op::template combine<Acc>(r, partial[static_cast<std::size_t>(o * nchunks + c)]);
    out[o] = r;
  }
}

// ---- outer family: the contiguous axis is kept (nc columns), rows are reduced -----------------------

// acc[c] = acc[c] (+) row[c]: a function of its own, so that the vectoriser sees two plain
// restrict pointers (inside outer_rows' loop it did not vectorise for every type).
template <class Op, class T, class Acc>
inline void join_row(Acc* __restrict acc, const T* __restrict row, std::int64_t w) {
#pragma omp simd
  for (std::int64_t c = 0; c < w; ++c) acc[c] = Op::template combine<Acc>(acc[c], static_cast<Acc>(row[c]));
}

// Four rows at once, joined in row order: a quarter of the partials' loads and stores, four streams.
template <class Op, class T, class Acc>
inline void join_rows4(Acc* __restrict acc, const T* __restrict r0, const T* __restrict r1, const T* __restrict r2,
                       const T* __restrict r3, std::int64_t w) {
#pragma omp simd
  for (std::int64_t c = 0; c < w; ++c) {
    Acc a = Op::template combine<Acc>(acc[c], static_cast<Acc>(r0[c]));
    a = Op::template combine<Acc>(a, static_cast<Acc>(r1[c]));
    a = Op::template combine<Acc>(a, static_cast<Acc>(r2[c]));
    acc[c] = Op::template combine<Acc>(a, static_cast<Acc>(r3[c]));
  }
}

// Rows [q0, q1) of slab b, columns [c0, c0 + w), folded in row order into acc[0..w).
template <class Op, class T, class Acc>
void outer_rows(const Plan& p, const T* in, std::int64_t b, std::int64_t c0, std::int64_t w, std::int64_t q0,
                std::int64_t q1, Acc* __restrict acc) {
  for (std::int64_t c = 0; c < w; ++c) acc[c] = Op::template identity<Acc>();
  const T* slab = in + b * p.sb + c0;
  RowCursor q(p, q0);
  if (w == p.nc && p.r_s2 == p.nc && (ReduceCpuPolicy::lanes / 2) % p.nc == 0) {
    // Narrow packed rows (nc = 2, 4, 8): a run of rows is one contiguous stretch whose element i
    // belongs to column i mod nc; fold it into lanes (lane l -> column l mod nc), runs in order.
    for (std::int64_t r = q0; r < q1;) {
      const std::int64_t run = std::min(q1 - r, p.r_ext2 - q.b);
      LaneAcc<Op, Acc> a;
      fold_lanes<Op, T, Acc>(slab + q.offset(p), run * p.nc, a);
      a.combine_into(acc, static_cast<int>(p.nc));
      r += run, q.b += run - 1;
      q.next(p);
    }
    return;
  }
  std::int64_t r = q0;
  for (; r + 4 <= q1; r += 4) {
    const T* rows[4];
    for (auto& row : rows) row = slab + q.offset(p), q.next(p);
    join_rows4<Op, T, Acc>(acc, rows[0], rows[1], rows[2], rows[3], w);
  }
  for (; r < q1; ++r, q.next(p)) join_row<Op, T, Acc>(acc, slab + q.offset(p), w);
}

template <class Op, class T, class Acc>
void reduce_outer(const Plan& p, const T* in, Acc* out) {
  const std::int64_t cw = std::min(p.nc, ReduceCpuPolicy::col_block);
  const std::int64_t ncb = ceil_div(p.nc, cw);
  const std::int64_t units = p.nb * ncb;  // (slab, column block) pairs
  const bool team = p.nb * p.nc * p.rows >= ReduceCpuPolicy::serial_below;
  // Split the rows only when the (slab, column block) pairs are too few to go round.
  std::int64_t nrb = 1;
  if (units < ReduceCpuPolicy::target_tasks && p.rows * cw > 2 * ReduceCpuPolicy::grain)
    nrb = std::min(ceil_div(p.rows * cw, ReduceCpuPolicy::grain), ceil_div(ReduceCpuPolicy::target_tasks, units));
  const std::int64_t rb_rows = ceil_div(p.rows, nrb);
  nrb = ceil_div(p.rows, rb_rows);

  if (nrb == 1) {
#pragma omp parallel for schedule(static) if (team)
    for (std::int64_t t = 0; t < units; ++t) {
      const std::int64_t b = t / ncb, c0 = (t % ncb) * cw;
      Acc acc[ReduceCpuPolicy::col_block];
      const std::int64_t w = std::min(cw, p.nc - c0);
      outer_rows<Op, T, Acc>(p, in, b, c0, w, 0, p.rows, acc);
      std::copy(acc, acc + w, out + b * p.nc + c0);
    }
    return;
  }
  // units < target_tasks and nrb <= ceil(target_tasks / units): fewer than 2 * target_tasks * cw partials.
  std::vector<Acc> partial(static_cast<std::size_t>(units * nrb * cw));
#pragma omp parallel for schedule(static) if (team)
  for (std::int64_t t = 0; t < units * nrb; ++t) {
    const std::int64_t u = t / nrb, rb = t % nrb, b = u / ncb, c0 = (u % ncb) * cw;
    outer_rows<Op, T, Acc>(p, in, b, c0, std::min(cw, p.nc - c0), rb * rb_rows, std::min(p.rows, (rb + 1) * rb_rows),
                           partial.data() + t * cw);
  }
  // Combine the row blocks in order, a unit's columns at a time (contiguous, vectorised).
#pragma omp parallel for schedule(static) if (team)
  for (std::int64_t u = 0; u < units; ++u) {
    const std::int64_t b = u / ncb, c0 = (u % ncb) * cw, w = std::min(cw, p.nc - c0);
    Acc* __restrict o = out + b * p.nc + c0;
    const Acc* part = partial.data() + u * nrb * cw;
    std::copy(part, part + w, o);
    for (std::int64_t rb = 1; rb < nrb; ++rb) {
#pragma omp simd
      for (std::int64_t c = 0; c < w; ++c) o[c] = Op::template combine<Acc>(o[c], part[rb * cw + c]);
    }
  }
}

}  // namespace

template <class Op, class T, class Acc>
void reduce_cpu_isa(const Problem& prob, Acc* out) {
  const Plan p = make_plan(prob);
  const T* in = static_cast<const T*>(prob.data);
  if (p.empty) {
    std::fill(out, out + p.n_out, Op::template identity<Acc>());
  } else if (p.kind == Plan::Kind::inner) {
    reduce_inner<Op, T, Acc>(p, in, out);
  } else {
    reduce_outer<Op, T, Acc>(p, in, out);
  }
}

#define TALLY_INSTANTIATE_CPU(Op, T, Acc) template void reduce_cpu_isa<Op, T, Acc>(const Problem&, Acc*);
TALLY_REDUCE_FOR_EACH(TALLY_INSTANTIATE_CPU)

}  // namespace tally::reduce::detail::TALLY_CPU_ISA
