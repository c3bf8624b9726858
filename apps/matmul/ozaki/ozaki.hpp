#pragma once
// matmul --level ozaki: C = A B at FP64 / FP32 accuracy from exact INT8 products (the Ozaki scheme
// II: Ozaki, Uchino, Imamura 2025; Uchino, Ozaki, Imamura, SC'25). Host-only interface.
//
//   1. Scaling (a first pass over each input, for its lines' maxima): row i of A by 2^e_i, column j of
//      B by 2^f_j, the largest exponents with max|A_i:| 2^e_i <= Q and max|B_:j| 2^f_j <= Q, truncated
//      toward zero to integers a'_ik, b'_kj (|a'|, |b'| <= Q) by integer operations on the bits.
//   2. Residues (a second pass): a'_ik mod m_l, b'_kj mod m_l in [-128, 127] for N pairwise coprime
//      moduli m_l <= 256 (256, 255, 253, 251, 247, 241, ...), written as N INT8 matrices each (B's
//      transposed: both operands K-contiguous, the layout of INT8 tensor-core GEMMs).
//   3. Products: C_l = A'_l B'_l, INT8 x INT8 -> INT32, exact while K 2^14 < 2^31 (K beyond that in
//      chunks of kChunkK whose sums are added exactly).
//   4. Reconstruction: C'_ij is the integer congruent to C_l,ij modulo every m_l with |C'| < P / 2
//      (P = prod m_l), by the CRT in exact FP64 limbs (ozaki_arith.hpp), scaled back by 2^-(e_i+f_j).
//
// Exactness of C': |C'_ij| <= sum_k |a'_ik| |b'_kj| <= K Q^2, and Q = floor(sqrt(P (1/2 - 2^-20) / K))
// (at most 2^52) keeps it below P / 2 with room for the reconstruction's rounding of the quotient.
//
// The error bound, element by element: with sigma_i = 2^-e_i, sigma_j = 2^-f_j, truncation leaves
// A_ik = sigma_i a'_ik + alpha_ik with |alpha_ik| < sigma_i (and 0 where A_ik is an integer multiple
// of sigma_i), so
//     |C_ij - (AB)_ij| <= sigma_i sum_k |B_kj| + sigma_j sum_k |A_ik|          (truncation)
//                        + u |C_ij| + 2^(B-130) sigma_i sigma_j                 (reconstruction, B = log2 P)
//                        + the rounding to T,
// where sigma_i <= 2 max_k |A_ik| / Q: each row's largest element keeps log2 Q bits. The level promises
// u_T (1 + min(K, 10 sqrt K)) of |A||B|, element by element (`promise`: the size of a floating-point
// sum's typical error, 10 sqrt K u, and its worst case below K = 100). Against that componentwise
// measure (error / (|A||B|)_ij) the truncation
// term depends on how each row's and column's magnitudes pair up, so every 32 x 32 tile of C carries
// a certificate (ozaki_arith.hpp, `certified`): the bound above against a lower bound of |A||B| from
// quarter-octave histograms of the tile's rows and columns (rearrangement: the smallest possible overlap
// of their large elements). A tile whose certificate fails, and the elements of rows or columns
// holding Inf or NaN, are computed by exact dot products (tally::reduce::exact, rounded once: IEEE's
// NaN and Inf, and the same bits on the CPU and the GPU): the level keeps its promise on every
// input, and reports such tiles (the note below). matmul's check holds it to the promise
// (error_bound: a deterministic bound, as each level's order of summation gives the others').
//
// The number of moduli (--ozaki-moduli auto): a tile is certified when
//     kappa <= theta(K) Q / 2,   kappa = (Q / 2) (s_I rho_J + s_J rho_I) / lambda_IJ,
// theta(K) ~ u_T min(K, 10 sqrt K) (the promise less the roundings, ozaki_plan.cpp), s = sigma / max
// in [1/Q, 2/Q). kappa depends on the inputs alone: (max_i sum_k |B_kj| + max_j sum_k |A_ik|) / |A||B|_ij
// as the bins bound it; the certificate sees 4-8 for inputs uniform in [-1, 1) and 33-58 for Gaussian
// ones (K = 256 ... 16384). auto takes the fewest N whose Q(N, K) certifies kappa = kAutoKappa / 2 = 32
// (Q >= kAutoKappa / theta): in double 15 moduli at K = 4096 ... 16384 (Q = 2^51.4 ... 2^52, which
// certifies kappa up to 210-320: Gaussian inputs too), in float 7 (Q = 2^20.4 ... 2^21.4, up to 51).
// Those also keep the measured error below cuBLAS's: the truncation errors are terms of independent
// signs, so the largest over C is about 11 sigma / sqrt(K) of |A||B| (sigma 2^-51 or 2^-20 at K = 8192:
// 5e-17 and 1.1e-7), against DGEMM's measured 6.7e-16 and SGEMM's 3.5e-7 (apps/matmul/README.md).
//
// Determinism: the INT8 products are exact integers whatever cuBLAS's algorithm or split; scaling,
// residues (congruent representatives: any choice gives the same C'), the CRT and the final scaling
// are fixed sequences of integer and IEEE operations (ozaki_arith.hpp), the same on the CPU and the
// GPU; the certificate is computed from integer counts in a fixed order; the fallback is exact. So C
// is bitwise the same run to run, on the H100 and the H200, and on the CPU. Not across rank counts:
// the rank level adds the ranks' rounded partial Cs (driver.cpp), as for every level.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>

#include "matmul.hpp"
#include "ozaki_arith.hpp"

namespace tally::matmul::ozaki {

/// The plan of a product: the moduli, Q and the tables of the reconstruction, for K and T.
struct Plan {
  Tables tables;
  std::int64_t k = 0;
  std::int64_t chunks = 1;  ///< INT8 GEMMs per modulus (K in pieces of kChunkK)
  int bits_kept = 0;        ///< floor(log2 Q): the bits each row's and column's largest element keeps
  double log2_p = 0;
};

/// Twice the kappa that auto's count certifies (see above): Q >= kAutoKappa / theta(K).
inline constexpr double kAutoKappa = 64;

/// The fewest moduli with Q >= kAutoKappa / theta(K) (or, where the cap 2^52 on Q comes first, the
/// fewest reaching it).
template <class T>
[[nodiscard]] int auto_moduli(std::int64_t k);
/// The plan for `moduli` (0: auto) moduli. Throws InputError naming --ozaki-moduli when the moduli's
/// product cannot hold even one bit per element (P / 2 <= K) or `moduli` is outside 1 .. kMaxModuli.
template <class T>
[[nodiscard]] Plan make_plan(std::int64_t k, int moduli);
/// What the level promises each element of C: |C_ij - (AB)_ij| <= promise (|A||B|)_ij, promise =
/// u_T (1 + min(K, 10 sqrt K)) (see above).
template <class T>
[[nodiscard]] double promise(std::int64_t k) {
  const double kk = static_cast<double>(k);
  return std::numeric_limits<T>::epsilon() / 2 * (1 + std::min(kk, 10 * std::sqrt(kk)));
}
/// The promise as matmul's checks take it (matmul.hpp, ErrorBound): depth 0, the promise in units of u.
template <class T>
[[nodiscard]] ErrorBound error_bound(std::int64_t k) {
  return {0, promise<T>(k) / (std::numeric_limits<T>::epsilon() / 2)};
}
/// The certificate's threshold for T and K: the truncation bound may be this fraction of |A||B|
/// (the promise less the reconstruction's and the final roundings).
template <class T>
[[nodiscard]] double certificate_threshold(std::int64_t k);
/// Q for the product P of the first `moduli` moduli and K (0 when P / 2 <= K).
[[nodiscard]] std::uint64_t q_bound(int moduli, std::int64_t k);
/// The table of moduli (pairwise coprime, largest first).
[[nodiscard]] std::span<const int> moduli_table();

/// Where the elements of one product came from.
struct Stats {
  std::int64_t tiles = 0;           ///< 32 x 32 tiles of C
  std::int64_t exact_tiles = 0;     ///< tiles whose certificate failed (all elements exact)
  std::int64_t special_tiles = 0;   ///< certified tiles with Inf/NaN rows or columns
  std::int64_t exact_elements = 0;  ///< elements computed by exact dot products
};
/// The note a product with exact elements leaves (empty when every element came from INT8 products).
[[nodiscard]] std::string note(const Stats& s, const Plan& p);

/// One run's phases on the GPU (seconds, CUDA events) and its plan.
struct Profile {
  double scale_s = 0, int8_s = 0, reconstruct_s = 0, exact_s = 0, total_s = 0;
  int moduli = 0, bits_kept = 0;
  std::int64_t chunks = 0;
  Stats stats;
};

/// Why `text` is no --ozaki-moduli value ("auto" or an integer in [1, kMaxModuli]), empty if it is one.
[[nodiscard]] std::string moduli_problem(const std::string& text);
/// --ozaki-moduli's count (0: auto); throws InputError naming the option otherwise.
[[nodiscard]] int parse_moduli(const std::string& text);
/// Prints the note of a product with exact elements to stderr ("matmul: level ozaki ..."), once: sets noted.
void note_once(const Stats& s, const Plan& p, bool& noted);

/// What matmul's options pass to an engine (Engine::set_ozaki): the moduli (0: auto), and for the
/// bench a profile that the next runs fill (the CUDA engine; null otherwise).
struct Settings {
  int moduli = 0;
  Profile* profile = nullptr;
};

/// The CPU engine: the same plan, residues, certificate and reconstruction as the GPU's (C bitwise
/// the GPU's), the integer products as plain loops (int64 sums: no chunks needed), OpenMP over rows.
template <class T>
Stats multiply_cpu(std::span<const T> a, std::span<const T> b, std::span<T> c, Shape s, const Plan& plan);

/// The CUDA engine's state: residue matrices, INT32 products, line statistics, tile flags, a cuBLAS
/// handle; grown on use. multiply() is asynchronous on `stream` (a, b, c device memory); with a
/// profile it synchronises and fills it.
class Cuda {
 public:
  Cuda();
  ~Cuda();
  Cuda(const Cuda&) = delete;
  Cuda& operator=(const Cuda&) = delete;
  template <class T>
  void multiply(const T* a, const T* b, T* c, Shape s, const Plan& plan, stream_t stream, Profile* profile = nullptr);
  /// The last product's Stats (waits for it).
  [[nodiscard]] Stats stats();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Median seconds of a plain INT8 GEMM (cuBLAS, INT32 out, the layout the level uses) of M x N x K on
/// `device`: the INT8 products' ceiling for the bench. Throws InputError without the CUDA backend.
[[nodiscard]] double int8_gemm_seconds(Shape s, int device, int repeats);

}  // namespace tally::matmul::ozaki
