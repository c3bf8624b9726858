// CPU backend: OpenMP threads over outputs or over fixed chunks of one output, SIMD inside a row.
// The chunking depends only on the problem (never on the thread count), and partials are combined
// in chunk order, so results are identical whatever OMP_NUM_THREADS is.
#include <omp.h>

#include <algorithm>
#include <vector>

#include "instantiate.hpp"
#include "plan.hpp"

namespace tally::reduce::detail {

namespace {

constexpr std::int64_t chunk_elems = std::int64_t{1} << 15;  // per task when one output is split
constexpr int lanes = 16;                                      // independent accumulators in a row (SIMD width)

// Folds a contiguous row into acc with `lanes` interleaved accumulators (vectorisable), then
// combines the lanes in order. Fixed order for a given n.
template <class Op, class T, class Acc>
Acc fold_row(const T* x, std::int64_t n, Acc acc) {
  if (n < 4 * lanes) {
    for (std::int64_t i = 0; i < n; ++i) acc = Op::template combine<Acc>(acc, static_cast<Acc>(x[i]));
    return acc;
  }
  Acc part[lanes];
  for (int l = 0; l < lanes; ++l) part[l] = Op::template identity<Acc>();
  const std::int64_t body = n - n % lanes;
  for (std::int64_t i = 0; i < body; i += lanes) {
#pragma omp simd
    for (int l = 0; l < lanes; ++l) part[l] = Op::template combine<Acc>(part[l], static_cast<Acc>(x[i + l]));
  }
  for (std::int64_t i = body; i < n; ++i) part[i - body] = Op::template combine<Acc>(part[i - body], static_cast<Acc>(x[i]));
  for (int l = 0; l < lanes; ++l) acc = Op::template combine<Acc>(acc, part[l]);
  return acc;
}

// Reduces elements [e0, e1) of output o's segment (inner family): segment element e = q * n + i.
template <class Op, class T, class Acc>
Acc inner_range(const Plan& p, const T* in, std::int64_t o, std::int64_t e0, std::int64_t e1) {
  Acc acc = Op::template identity<Acc>();
  const T* base = in + p.koff(o);
  std::int64_t e = e0;
  while (e < e1) {
    const std::int64_t q = e / p.n, i = e % p.n;
    const std::int64_t len = std::min(p.n - i, e1 - e);
    acc = fold_row<Op, T, Acc>(base + p.roff(q) + i, len, acc);
    e += len;
  }
  return acc;
}

template <class Op, class T, class Acc>
void reduce_inner(const Plan& p, const T* in, Acc* out) {
  const std::int64_t per = p.rows * p.n;
  const std::int64_t nchunks = (per + chunk_elems - 1) / chunk_elems;
  if (p.n_out >= omp_get_max_threads() || nchunks <= 1) {
#pragma omp parallel for schedule(static) if (p.n_out * per > chunk_elems)
    for (std::int64_t o = 0; o < p.n_out; ++o) out[o] = inner_range<Op, T, Acc>(p, in, o, 0, per);
    return;
  }
  // Few outputs, long segments: split each into fixed chunks, combine in chunk order.
  std::vector<Acc> partial(static_cast<std::size_t>(nchunks));
  for (std::int64_t o = 0; o < p.n_out; ++o) {
#pragma omp parallel for schedule(static)
    for (std::int64_t c = 0; c < nchunks; ++c)
      partial[static_cast<std::size_t>(c)] =
          inner_range<Op, T, Acc>(p, in, o, c * chunk_elems, std::min(per, (c + 1) * chunk_elems));
    Acc acc = Op::template identity<Acc>();
    for (Acc v : partial) acc = Op::template combine<Acc>(acc, v);
    out[o] = acc;
  }
}

// Outer family: out[b * nc + c] = reduce_q in[b * sb + roff(q) + c]. Rows are split into fixed
// blocks; each task folds its rows into a column-vector of partials (SIMD across columns).
template <class Op, class T, class Acc>
void reduce_outer(const Plan& p, const T* in, Acc* out) {
  const std::int64_t col_block = 1024;  // columns per task: partials stay in L1
  const std::int64_t row_block = std::max<std::int64_t>(1, chunk_elems / std::min(p.nc, col_block));
  const std::int64_t ncb = (p.nc + col_block - 1) / col_block;
  const std::int64_t nrb = (p.rows + row_block - 1) / row_block;
  const std::int64_t tasks = p.nb * ncb * nrb;
  std::vector<Acc> partial(static_cast<std::size_t>(tasks * std::min(p.nc, col_block)));
#pragma omp parallel for schedule(static) if (tasks > 1)
  for (std::int64_t t = 0; t < tasks; ++t) {
    const std::int64_t rb = t % nrb, cb = (t / nrb) % ncb, b = t / (nrb * ncb);
    const std::int64_t c0 = cb * col_block, nc = std::min(col_block, p.nc - c0);
    Acc* acc = partial.data() + t * std::min(p.nc, col_block);
    for (std::int64_t c = 0; c < nc; ++c) acc[c] = Op::template identity<Acc>();
    const std::int64_t q1 = std::min(p.rows, (rb + 1) * row_block);
    for (std::int64_t q = rb * row_block; q < q1; ++q) {
      const T* row = in + b * p.sb + p.roff(q) + c0;
#pragma omp simd
      for (std::int64_t c = 0; c < nc; ++c) acc[c] = Op::template combine<Acc>(acc[c], static_cast<Acc>(row[c]));
    }
  }
  // Combine the row blocks in order.
#pragma omp parallel for schedule(static) if (p.n_out > chunk_elems)
  for (std::int64_t o = 0; o < p.n_out; ++o) {
    const std::int64_t b = o / p.nc, c = o % p.nc, cb = c / col_block, cc = c % col_block;
    Acc acc = Op::template identity<Acc>();
    for (std::int64_t rb = 0; rb < nrb; ++rb)
      acc = Op::template combine<Acc>(acc, partial[static_cast<std::size_t>(((b * ncb + cb) * nrb + rb) * std::min(p.nc, col_block) + cc)]);
    out[o] = acc;
  }
}

}  // namespace

template <class Op, class T, class Acc>
void reduce_cpu(const Problem& prob, Acc* out) {
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

#define TALLY_INSTANTIATE_CPU(Op, T, Acc) template void reduce_cpu<Op, T, Acc>(const Problem&, Acc*);
TALLY_REDUCE_FOR_EACH(TALLY_INSTANTIATE_CPU)

}  // namespace tally::reduce::detail
