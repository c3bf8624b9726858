// The Ozaki level on the CPU (ozaki.hpp): the GPU's plan, line statistics, certificate and
// reconstruction (ozaki_arith.hpp), with the residue products as integer loops (exact in int64, so
// K needs no chunks), OpenMP over rows. Built with -ffp-contract=off: the reconstruction's IEEE
// operations are the GPU's, one by one.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "ozaki.hpp"
#include "ozaki_lines.hpp"
#include "tally/reduce/exact.hpp"
#include "transpose.hpp"

namespace tally::matmul::ozaki {
namespace {

using idx = std::int64_t;

/// sum_k x_k y_k over int8 residues, exact: int32 partial sums over 2^16 terms (|x y| <= 2^14).
std::int64_t int_dot(const std::int8_t* x, const std::int8_t* y, idx k) {
  std::int64_t total = 0;
  for (idx k0 = 0; k0 < k; k0 += idx{1} << 16) {
    const idx k1 = std::min(k, k0 + (idx{1} << 16));
    std::int32_t part = 0;
#pragma omp simd reduction(+ : part)
    for (idx q = k0; q < k1; ++q) part += static_cast<std::int32_t>(x[q]) * static_cast<std::int32_t>(y[q]);
    total += part;
  }
  return total;
}

/// The residues of one line (row of A, or column of B at stride `stride`) into `out` (plane l at
/// out + l * plane), zeros for lines that are not ordinary.
template <class T>
void line_residues(const T* x, idx stride, idx k, const LineStats& l, const Tables& t, std::int8_t* out, idx plane) {
  for (idx q = 0; q < k; ++q) {
    const std::int64_t v = l.kind == kLineOk ? scaled_integer(decompose(x[q * stride]), l.scale) : 0;
    for (int m = 0; m < t.moduli; ++m) out[m * plane + q] = static_cast<std::int8_t>(residue(v, t.m_int[m]));
  }
}

}  // namespace

template <class T>
Stats multiply_cpu(std::span<const T> a, std::span<const T> b, std::span<T> c, Shape s, const Plan& plan) {
  const Tables& t = plan.tables;
  const idx M = s.m, N = s.n, K = s.k, planes = t.moduli;
  std::vector<LineStats> rows(static_cast<std::size_t>(M)), cols(static_cast<std::size_t>(N));
#pragma omp parallel for schedule(static)
  for (idx i = 0; i < M; ++i) rows[static_cast<std::size_t>(i)] = line_stats(a.data() + i * K, 1, K, t.q);
#pragma omp parallel for schedule(static)
  for (idx j = 0; j < N; ++j) cols[static_cast<std::size_t>(j)] = line_stats(b.data() + j, N, K, t.q);

  // Residues: A's rows and B's columns, K-contiguous, plane by plane.
  std::vector<std::int8_t> ra(static_cast<std::size_t>(planes * M * K)), rb(static_cast<std::size_t>(planes * N * K));
#pragma omp parallel for schedule(static)
  for (idx i = 0; i < M; ++i)
    line_residues(a.data() + i * K, 1, K, rows[static_cast<std::size_t>(i)], t, ra.data() + i * K, M * K);
#pragma omp parallel for schedule(static)
  for (idx j = 0; j < N; ++j)
    line_residues(b.data() + j, N, K, cols[static_cast<std::size_t>(j)], t, rb.data() + j * K, N * K);

  // The tiles' certificates.
  const idx tm = (M + kTile - 1) / kTile, tn = (N + kTile - 1) / kTile;
  const std::vector<TileSide> side_a = tile_sides(rows), side_b = tile_sides(cols);
  std::vector<std::uint8_t> flag(static_cast<std::size_t>(tm * tn));
  Stats st;
  st.tiles = tm * tn;
  for (idx ti = 0; ti < tm; ++ti)
    for (idx tj = 0; tj < tn; ++tj) {
      const std::uint8_t f =
          tile_flag(side_a[static_cast<std::size_t>(ti)], side_b[static_cast<std::size_t>(tj)], K, t);
      flag[static_cast<std::size_t>(ti * tn + tj)] = f;
      st.exact_tiles += f == kTileExact;
      st.special_tiles += f == kTileSpecial;
    }
  const auto exact_here = [&](idx i, idx j) {
    const std::uint8_t f = flag[static_cast<std::size_t>((i / kTile) * tn + j / kTile)];
    return f == kTileExact || (f == kTileSpecial && (rows[static_cast<std::size_t>(i)].kind == kLineSpecial ||
                                                     cols[static_cast<std::size_t>(j)].kind == kLineSpecial));
  };

  // Products and reconstruction, element by element.
  std::int64_t exact_count = 0;
#pragma omp parallel for schedule(static) reduction(+ : exact_count)
  for (idx i = 0; i < M; ++i)
    for (idx j = 0; j < N; ++j) {
      if (exact_here(i, j)) {
        ++exact_count;
        continue;
      }
      const double y = with_limbs(t, [&](auto limbs) {
        double acc[decltype(limbs)::value] = {};
        for (int m = 0; m < t.moduli; ++m) {
          const std::int64_t x = int_dot(ra.data() + m * M * K + i * K, rb.data() + m * N * K + j * K, K);
          crt_accumulate(acc, crt_digit(static_cast<double>(x), t, m), t, m);
        }
        return crt_finish(acc, t);
      });
      c[static_cast<std::size_t>(i * N + j)] = static_cast<T>(
          scale_pow2(y, -(rows[static_cast<std::size_t>(i)].scale + cols[static_cast<std::size_t>(j)].scale)));
    }
  st.exact_elements = exact_count;

  // The rest: exact dot products, rounded once.
  if (exact_count > 0) {
    const std::vector<T> bt = transpose<T>(b, K, N);
#pragma omp parallel for schedule(dynamic)
    for (idx i = 0; i < M; ++i)
      for (idx j = 0; j < N; ++j)
        if (exact_here(i, j))
          c[static_cast<std::size_t>(i * N + j)] = reduce::exact::dot<T>(a.data() + i * K, bt.data() + j * K, K);
  }
  return st;
}

template Stats multiply_cpu<float>(std::span<const float>, std::span<const float>, std::span<float>, Shape,
                                   const Plan&);
template Stats multiply_cpu<double>(std::span<const double>, std::span<const double>, std::span<double>, Shape,
                                    const Plan&);

}  // namespace tally::matmul::ozaki
