// The Ozaki level on CUDA (ozaki.hpp): line statistics and residues in two passes over each input,
// the tiles' certificates, the INT8 products through cuBLAS (strided-batched, one batch entry per
// modulus), the CRT reconstruction, and exact dot products for the tiles and the Inf/NaN lines the
// INT8 products cannot serve. The arithmetic is ozaki_arith.hpp's, as on the CPU.
//
// Layouts: residues of A as moduli planes of M x Kp int8 (row-major, K padded with zeros to a
// multiple of 16), of B as planes of Nc x Kp (B transposed, Nc = N rounded up to 4, the rows past N
// zeros): both operands K-contiguous, cuBLAS's TN form for INT8 (lda = ldb = Kp, pointers 16-byte
// aligned). The products C_l (INT32) as planes of M x Nc, one set per chunk of K. Row-major C = A B
// is column-major C^T = B^T A^T: cuBLAS's m = Nc, n = M, op(A) = T on B's planes, op(B) = N on A's.
// Nc and Kp keep m, k and every leading dimension multiples of 4, as cuBLAS's IMMA kernels require
// (some GPUs refuse INT8 GEMMs without).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "ozaki.hpp"
#include "tally/common/cuda_check.cuh"
#include "tally/common/device_buffer.cuh"
#include "tally/common/error.hpp"
#include "tally/reduce/device/exact.cuh"

namespace tally::matmul::ozaki {
namespace {

using idx = std::int64_t;
namespace ex = tally::reduce::exact;

void check_cublas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string("ozaki: cuBLAS ") + what + " failed with status " + std::to_string(static_cast<int>(s)));
}

idx ceil_div(idx x, idx y) { return (x + y - 1) / y; }
idx round_up(idx x, idx y) { return ceil_div(x, y) * y; }
/// A grid's y extent (at most 65535; the kernels loop over the rest).
unsigned grid_y(idx pieces) { return static_cast<unsigned>(std::clamp<idx>(pieces, 1, 65535)); }

/// A line's scaling as the residue kernels take it (its LineStats has the certificate's part).
struct LineScale {
  int kind = kLineZero;
  int e = 0;
  Decomposed top;
  double inv = 0;  ///< fl(1 / top.mant): the bins' ratios
};

// ---- pass 1: each line's largest magnitude and whether it holds Inf/NaN -------------------------
/// |x| as the bits of a double (for non-negative doubles the bits order as the values: atomicMax).
template <class T>
__device__ __forceinline__ unsigned long long magnitude_bits(T x) {
  return static_cast<unsigned long long>(__double_as_longlong(fabs(static_cast<double>(x))));
}

/// Rows of A (M x K): block (i, split) covers row i's K range [split * chunk, ...).
template <class T>
__global__ void __launch_bounds__(256) row_max(const T* __restrict__ a, idx k, idx chunk,
                                               unsigned long long* __restrict__ amax, int* __restrict__ special) {
  __shared__ unsigned long long part[8];
  __shared__ int bad[8];
  const idx i = blockIdx.x, k0 = blockIdx.y * chunk, k1 = min(k, k0 + chunk);
  unsigned long long mx = 0;
  int sp = 0;
  for (idx q = k0 + threadIdx.x; q < k1; q += 256) {
    const T v = a[i * k + q];
    sp |= !isfinite(v);
    mx = max(mx, magnitude_bits(v));
  }
  for (int o = 16; o > 0; o /= 2)
    mx = max(mx, __shfl_xor_sync(0xffffffffu, mx, o)), sp |= __shfl_xor_sync(0xffffffffu, sp, o);
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = mx, bad[threadIdx.x / 32] = sp;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < 8; ++w) mx = max(mx, part[w]), sp |= bad[w];
    if (sp) atomicOr(&special[i], 1);
    else atomicMax(&amax[i], mx);  // NaN's bits would top every number: a special line keeps none
  }
}

/// Columns of B (K x N): block (32 columns, 8 row groups) over pieces of 256 rows.
template <class T>
__global__ void __launch_bounds__(256)
    col_max(const T* __restrict__ b, idx k, idx n, unsigned long long* __restrict__ amax, int* __restrict__ special) {
  __shared__ unsigned long long part[8][32];
  __shared__ int bad[8][32];
  const int x = threadIdx.x, y = threadIdx.y;
  const idx j = idx{blockIdx.x} * 32 + x;
  unsigned long long mx = 0;
  int sp = 0;
  if (j < n)
    for (idx k0 = idx{blockIdx.y} * 256; k0 < k; k0 += idx{gridDim.y} * 256)
      for (idx q = k0 + y; q < min(k, k0 + 256); q += 8) {
        const T v = b[q * n + j];
        sp |= !isfinite(v);
        mx = max(mx, magnitude_bits(v));
      }
  part[y][x] = mx, bad[y][x] = sp;
  __syncthreads();
  if (y == 0 && j < n) {
    for (int w = 1; w < 8; ++w) mx = max(mx, part[w][x]), sp |= bad[w][x];
    if (sp) atomicOr(&special[j], 1);
    else atomicMax(&amax[j], mx);
  }
}

/// Each line's kind, scale exponent and s (LineStats, counts cleared for the bins to come), its
/// LineScale, and (kind, scale) alone for the reconstruction and the fallback. amax converts back
/// to T exactly (it is |x| of a T), so the decompositions are the CPU's.
template <class T>
__global__ void line_finish(idx lines, const unsigned long long* __restrict__ amax, const int* __restrict__ special,
                            std::uint64_t q, LineStats* __restrict__ stats, LineScale* __restrict__ scales,
                            int2* __restrict__ kinds) {
  const idx l = idx{blockIdx.x} * blockDim.x + threadIdx.x;
  if (l >= lines) return;
  LineStats st;
  LineScale sc;
  if (special[l]) {
    st.kind = sc.kind = kLineSpecial;
  } else if (amax[l] == 0) {
    st.kind = sc.kind = kLineZero;
  } else {
    const T top = static_cast<T>(__longlong_as_double(static_cast<long long>(amax[l])));
    sc.kind = st.kind = kLineOk;
    sc.top = decompose(top);
    sc.e = st.scale = scale_exponent(sc.top, q);
    st.s = line_s(sc.top, sc.e);
    sc.inv = div_rn(1.0, static_cast<double>(sc.top.mant));
  }
  stats[l] = st;
  scales[l] = sc;
  kinds[l] = make_int2(st.kind, st.scale);
}

// ---- pass 2: residues and bins --------------------------------------------------------------------
__device__ __forceinline__ std::uint32_t pack4(int r0, int r1, int r2, int r3) {
  return (static_cast<std::uint32_t>(r0) & 0xFFu) | ((static_cast<std::uint32_t>(r1) & 0xFFu) << 8) |
         ((static_cast<std::uint32_t>(r2) & 0xFFu) << 16) | ((static_cast<std::uint32_t>(r3) & 0xFFu) << 24);
}

/// Rows of A: block (i, y) takes pieces of 1024 elements of row i, 4 consecutive a thread, into every
/// modulus' plane (the zero padding of K included) and the row's bins (shared, then global).
template <class T>
__global__ void __launch_bounds__(256)
    row_residues(const T* __restrict__ a, idx k, idx kp, const LineScale* __restrict__ scales,
                 LineStats* __restrict__ stats, std::int8_t* __restrict__ out, idx plane, Tables t) {
  __shared__ std::uint32_t hist[kBins + 1];
  for (int b = threadIdx.x; b <= kBins; b += 256) hist[b] = 0;
  __syncthreads();
  const idx i = blockIdx.x;
  const LineScale sc = scales[i];
  for (idx q0 = idx{blockIdx.y} * 1024 + 4 * idx{threadIdx.x}; q0 < kp; q0 += idx{gridDim.y} * 1024) {
    std::int64_t v[4];
    double dv[4];
    for (int u = 0; u < 4; ++u) {
      v[u] = 0;
      const idx q = q0 + u;
      if (sc.kind == kLineOk && q < k) {
        const T x = a[i * k + q];
        if (x != T(0)) {
          const Decomposed d = decompose(x);
          atomicAdd(&hist[bin_of(d, sc.top, sc.inv)], 1u);
          v[u] = scaled_integer(d, sc.e);
        }
      }
      dv[u] = static_cast<double>(v[u]);
    }
    std::int8_t* row = out + i * kp + q0;
    for (int l = 0; l < t.moduli; ++l)
      *reinterpret_cast<std::uint32_t*>(row + l * plane) =
          pack4(residue_fast(v[0], dv[0], t, l), residue_fast(v[1], dv[1], t, l), residue_fast(v[2], dv[2], t, l),
                residue_fast(v[3], dv[3], t, l));
  }
  __syncthreads();
  if (sc.kind == kLineOk)
    for (int b = threadIdx.x; b <= kBins; b += 256)
      if (hist[b]) atomicAdd(&stats[i].count[b], hist[b]);
}

/// Columns of B, transposed: block (32 columns, y) over pieces of 128 rows of K. Each thread loads 16 elements (a
/// warp a row: coalesced), their scaled integers go to shared memory, then each thread takes 16
/// consecutive K of one column and writes 16 bytes per modulus (a warp: 4 columns x 128 bytes).
/// Columns n .. nc - 1 (nc <= 32 ceil(n / 32)) get zeros.
template <class T>
__global__ void __launch_bounds__(256)
    col_residues(const T* __restrict__ b, idx k, idx n, idx nc, idx kp, const LineScale* __restrict__ scales,
                 LineStats* __restrict__ stats, std::int8_t* __restrict__ out, idx plane, Tables t) {
  __shared__ std::int64_t vals[128][33];
  __shared__ std::uint32_t hist[32][kBins + 1];
  const int tid = threadIdx.x, x = tid % 32, y = tid / 32;
  for (int w = tid; w < 32 * (kBins + 1); w += 256) hist[w / (kBins + 1)][w % (kBins + 1)] = 0;
  __syncthreads();
  const idx j0 = idx{blockIdx.x} * 32, j = j0 + x;
  const LineScale sc = j < n ? scales[j] : LineScale{};
  for (idx k0 = idx{blockIdx.y} * 128; k0 < kp; k0 += idx{gridDim.y} * 128) {
    for (int r = y; r < 128; r += 8) {
      const idx q = k0 + r;
      std::int64_t v = 0;
      if (j < n && sc.kind == kLineOk && q < k) {
        const T xv = b[q * n + j];
        if (xv != T(0)) {
          const Decomposed d = decompose(xv);
          atomicAdd(&hist[x][bin_of(d, sc.top, sc.inv)], 1u);
          v = scaled_integer(d, sc.e);
        }
      }
      vals[r][x] = v;
    }
    __syncthreads();
    const int col = tid / 8, r0 = (tid % 8) * 16;
    if (j0 + col < nc && k0 + r0 < kp) {
      std::int64_t v[16];
      double dv[16];
      for (int u = 0; u < 16; ++u) v[u] = vals[r0 + u][col], dv[u] = static_cast<double>(v[u]);
      std::int8_t* dst = out + (j0 + col) * kp + k0 + r0;
      for (int l = 0; l < t.moduli; ++l) {
        uint4 w;
        w.x = pack4(residue_fast(v[0], dv[0], t, l), residue_fast(v[1], dv[1], t, l), residue_fast(v[2], dv[2], t, l),
                    residue_fast(v[3], dv[3], t, l));
        w.y = pack4(residue_fast(v[4], dv[4], t, l), residue_fast(v[5], dv[5], t, l), residue_fast(v[6], dv[6], t, l),
                    residue_fast(v[7], dv[7], t, l));
        w.z = pack4(residue_fast(v[8], dv[8], t, l), residue_fast(v[9], dv[9], t, l), residue_fast(v[10], dv[10], t, l),
                    residue_fast(v[11], dv[11], t, l));
        w.w = pack4(residue_fast(v[12], dv[12], t, l), residue_fast(v[13], dv[13], t, l),
                    residue_fast(v[14], dv[14], t, l), residue_fast(v[15], dv[15], t, l));
        *reinterpret_cast<uint4*>(dst + l * plane) = w;
      }
    }
    __syncthreads();  // vals is refilled for the next piece
  }
  if (j < n && sc.kind == kLineOk && y == 0)
    for (int bin = 0; bin <= kBins; ++bin)
      if (hist[x][bin]) atomicAdd(&stats[j].count[bin], hist[x][bin]);
}

// ---- the certificate -------------------------------------------------------------------------------
/// Tile side s: lines [kTile s, kTile (s + 1)) merged in order.
__global__ void tile_sides(idx lines, const LineStats* __restrict__ stats, TileSide* __restrict__ sides) {
  const idx s = idx{blockIdx.x} * blockDim.x + threadIdx.x;
  if (s * kTile >= lines) return;
  TileSide side;
  for (idx l = s * kTile; l < min(lines, (s + 1) * kTile); ++l) tile_add(side, stats[l]);
  sides[s] = side;
}

/// Tile (I, J)'s flag; counters[0] and [1] count the exact and the special tiles.
__global__ void tile_flags(idx tm, idx tn, const TileSide* __restrict__ sa, const TileSide* __restrict__ sb, idx k,
                           Tables t, std::uint8_t* __restrict__ flags, unsigned long long* __restrict__ counters) {
  const idx tile = idx{blockIdx.x} * blockDim.x + threadIdx.x;
  if (tile >= tm * tn) return;
  const std::uint8_t f = tile_flag(sa[tile / tn], sb[tile % tn], k, t);
  flags[tile] = f;
  if (f == kTileExact) atomicAdd(&counters[0], 1ull);
  if (f == kTileSpecial) atomicAdd(&counters[1], 1ull);
}

__device__ __forceinline__ bool exact_element(std::uint8_t flag, int row_kind, int col_kind) {
  return flag == kTileExact || (flag == kTileSpecial && (row_kind == kLineSpecial || col_kind == kLineSpecial));
}

// ---- reconstruction ---------------------------------------------------------------------------------
/// One thread per element (x: columns, coalesced): the moduli's sums over the chunks of K, the CRT
/// digits into the limbs, Y rounded once and scaled by 2^-(e_i + f_j). Elements the fallback takes
/// are left to it. kinds: (kind, scale) of the rows, then of the columns.
template <class T, int Limbs>
__global__ void __launch_bounds__(256)
    reconstruct(const std::int32_t* __restrict__ c32, idx m, idx n, idx nc, idx plane, idx chunks,
                const int2* __restrict__ kinds, const std::uint8_t* __restrict__ flags, idx tn, T* __restrict__ c,
                Tables t) {
  const idx j = idx{blockIdx.x} * blockDim.x + threadIdx.x;
  if (j >= n) return;
  const int2 col = kinds[m + j];
  for (idx i = blockIdx.y; i < m; i += gridDim.y) {
    const int2 row = kinds[i];
    if (exact_element(flags[(i / kTile) * tn + j / kTile], row.x, col.x)) continue;
    double acc[Limbs] = {};
    const idx at = i * nc + j;
    for (int l = 0; l < t.moduli; ++l) {
      double x = 0;
      for (idx ch = 0; ch < chunks; ++ch)
        x = __dadd_rn(x, static_cast<double>(__ldcs(c32 + (ch * t.moduli + l) * plane + at)));
      crt_accumulate(acc, crt_digit(x, t, l), t, l);
    }
    const double y = scale_pow2(crt_finish(acc, t), -(row.y + col.y));
    if constexpr (std::is_same_v<T, float>) c[i * n + j] = __double2float_rn(y);
    else c[i * n + j] = y;
  }
}

// ---- the fallback: exact dot products -----------------------------------------------------------------
/// One block per tile of C whose flag asks for it: row by row, its 32 columns' elements (x) with the
/// 8 warps splitting K (y), each element's accumulator in shared memory (matmul --exact's worker
/// mapping), rounded once. counters[2] counts the elements.
template <class T>
__global__ void __launch_bounds__(256)
    exact_tiles(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, idx m, idx n, idx k,
                const std::uint8_t* __restrict__ flags, idx tn, const int2* __restrict__ kinds,
                unsigned long long* __restrict__ counters) {
  using Products = ex::products_of<T>;  // the exact accumulator of products of T
  constexpr int W = ex::Accumulator<Products>::words;
  __shared__ ex::Accumulator<Products> acc[32];
  __shared__ unsigned int done;
  const std::uint8_t flag = flags[blockIdx.x];
  if (flag == kTileInt8) return;
  const int x = threadIdx.x, y = threadIdx.y, tid = y * 32 + x;
  const idx i0 = (idx{blockIdx.x} / tn) * kTile, j0 = (idx{blockIdx.x} % tn) * kTile, j = j0 + x;
  const int ck = j < n ? kinds[m + j].x : kLineZero;
  if (tid == 0) done = 0;
  for (idx i = i0; i < min(m, i0 + kTile); ++i) {
    const int rk = kinds[i].x;
    const bool want = j < n && exact_element(flag, rk, ck);
    if (!__syncthreads_or(want)) continue;
    for (int w = tid; w < 32 * W; w += 256) acc[w / W].w[w % W] = 0;
    __syncthreads();
    ex::Filter f;
    reduce::device::SharedSink<Products> sink{&acc[x]};
    bool seen = false;
    if (want)
      for (idx q = y; q < k; q += 8) f.add_product(a[i * k + q], b[q * n + j], sink), seen = true;
    reduce::device::exact_thread_flush(f, sink, seen);
    __syncthreads();
    for (int el = y; el < 32; el += 8) {
      const T r = reduce::device::exact_warp_round<T>(acc[el]);
      const idx je = j0 + el;
      if (x == 0 && je < n && exact_element(flag, rk, kinds[m + je].x)) c[i * n + je] = r, atomicAdd(&done, 1u);
    }
    __syncthreads();
  }
  if (tid == 0 && done) atomicAdd(&counters[2], static_cast<unsigned long long>(done));
}

}  // namespace

// ---- the engine -------------------------------------------------------------------------------------------
struct Cuda::Impl {
  cublasHandle_t blas = nullptr;
  DeviceBuffer<std::int8_t> ra, rb;
  DeviceBuffer<std::int32_t> c32;
  DeviceBuffer<unsigned long long> amax;  // rows then columns
  DeviceBuffer<int> special;
  DeviceBuffer<LineStats> stats;
  DeviceBuffer<LineScale> scales;
  DeviceBuffer<int2> kinds;  // (kind, scale): rows then columns
  DeviceBuffer<TileSide> sides;
  DeviceBuffer<std::uint8_t> flags;
  DeviceBuffer<unsigned long long> counters{3};
  cudaEvent_t ev[5] = {};
  Stats last;
  bool pending = false;           ///< counters not yet read for `last`
  cudaStream_t last_stream = {};  ///< the stream `last` ran on

  Impl() {
    check_cublas(cublasCreate(&blas), "cublasCreate");
    for (auto& e : ev) TALLY_CUDA_TRY(cudaEventCreate(&e));
  }
  ~Impl() {
    for (auto& e : ev) cudaEventDestroy(e);
    cublasDestroy(blas);
  }
  /// The old buffer is freed before the new one is allocated (cudaFree waits for the work using
  /// it): the footprint never holds both, as multiply's check of the free memory assumes.
  template <class U>
  static void grow(DeviceBuffer<U>& buf, idx n) {
    if (buf.size() >= static_cast<std::size_t>(n)) return;
    buf = DeviceBuffer<U>();
    buf = DeviceBuffer<U>(static_cast<std::size_t>(n));
  }
};

Cuda::Cuda() : impl_(std::make_unique<Impl>()) {}
Cuda::~Cuda() = default;

template <class T>
void Cuda::multiply(const T* a, const T* b, T* c, Shape s, const Plan& plan, stream_t stream_, Profile* profile) {
  const auto stream = static_cast<cudaStream_t>(stream_);
  Impl& im = *impl_;
  const Tables& t = plan.tables;
  if (s.k != plan.k)
    throw Error("ozaki: the plan is for K = " + std::to_string(plan.k) + ", the product has " + std::to_string(s.k));
  const idx M = s.m, N = s.n, K = s.k, L = t.moduli;
  const idx kp = round_up(K, 16), nc = round_up(N, 4);
  const idx plane_a = round_up(M * kp, 256), plane_b = round_up(nc * kp, 256), plane_c = round_up(M * nc, 64);
  const idx tm = ceil_div(M, kTile), tn = ceil_div(N, kTile);
  // Refuse what cannot fit (the INT32 products dominate: 4 L chunks bytes per element of C).
  const double need = static_cast<double>(L) * static_cast<double>(plane_a + plane_b) +
                      4.0 * static_cast<double>(plan.chunks * L * plane_c) +
                      static_cast<double>(M + N) * (sizeof(LineStats) + sizeof(LineScale) + 16.0);
  const double have = static_cast<double>(im.ra.bytes() + im.rb.bytes() + im.c32.bytes());
  if (need > have) {
    std::size_t free_b = 0, total_b = 0;
    TALLY_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    if (need - have > 0.95 * static_cast<double>(free_b))
      throw InputError("--level ozaki: " + s.str() + " with " + std::to_string(L) + " moduli needs " +
                       std::to_string(need / (1 << 30)) +
                       " GiB of device memory for its residues and INT32 products; " +
                       std::to_string(static_cast<double>(free_b) / (1 << 30)) +
                       " GiB are free (fewer moduli or a smaller product)");
  }
  Impl::grow(im.ra, L * plane_a);
  Impl::grow(im.rb, L * plane_b);
  Impl::grow(im.c32, plan.chunks * L * plane_c);
  Impl::grow(im.amax, M + N);
  Impl::grow(im.special, M + N);
  Impl::grow(im.stats, M + N);
  Impl::grow(im.scales, M + N);
  Impl::grow(im.kinds, M + N);
  Impl::grow(im.sides, tm + tn);
  Impl::grow(im.flags, tm * tn);
  LineStats* rows = im.stats.data();
  LineStats* cols = rows + M;
  LineScale* rscale = im.scales.data();
  LineScale* cscale = rscale + M;

  TALLY_CUDA_TRY(cudaEventRecord(im.ev[0], stream));
  TALLY_CUDA_TRY(
      cudaMemsetAsync(im.amax.data(), 0, static_cast<std::size_t>(M + N) * sizeof(unsigned long long), stream));
  TALLY_CUDA_TRY(cudaMemsetAsync(im.special.data(), 0, static_cast<std::size_t>(M + N) * sizeof(int), stream));
  TALLY_CUDA_TRY(cudaMemsetAsync(im.counters.data(), 0, 3 * sizeof(unsigned long long), stream));
  // Pass 1: the lines' largest magnitudes, then their scaling.
  const idx row_chunk = 16384;
  row_max<T><<<dim3(static_cast<unsigned>(M), grid_y(ceil_div(K, row_chunk))), 256, 0, stream>>>(
      a, K, row_chunk, im.amax.data(), im.special.data());
  TALLY_CHECK_LAUNCH();
  col_max<T><<<dim3(static_cast<unsigned>(ceil_div(N, 32)), grid_y(ceil_div(K, 256))), dim3(32, 8), 0, stream>>>(
      b, K, N, im.amax.data() + M, im.special.data() + M);
  TALLY_CHECK_LAUNCH();
  line_finish<T><<<static_cast<unsigned>(ceil_div(M, 256)), 256, 0, stream>>>(M, im.amax.data(), im.special.data(), t.q,
                                                                              rows, rscale, im.kinds.data());
  TALLY_CHECK_LAUNCH();
  line_finish<T><<<static_cast<unsigned>(ceil_div(N, 256)), 256, 0, stream>>>(
      N, im.amax.data() + M, im.special.data() + M, t.q, cols, cscale, im.kinds.data() + M);
  TALLY_CHECK_LAUNCH();
  // Pass 2: residues (zero padding of K included) and bins.
  row_residues<T><<<dim3(static_cast<unsigned>(M), grid_y(ceil_div(kp, 1024))), 256, 0, stream>>>(
      a, K, kp, rscale, rows, im.ra.data(), plane_a, t);
  TALLY_CHECK_LAUNCH();
  col_residues<T><<<dim3(static_cast<unsigned>(ceil_div(N, 32)), grid_y(ceil_div(kp, 128))), 256, 0, stream>>>(
      b, K, N, nc, kp, cscale, cols, im.rb.data(), plane_b, t);
  TALLY_CHECK_LAUNCH();
  // The certificates.
  tile_sides<<<static_cast<unsigned>(ceil_div(tm, 128)), 128, 0, stream>>>(M, rows, im.sides.data());
  TALLY_CHECK_LAUNCH();
  tile_sides<<<static_cast<unsigned>(ceil_div(tn, 128)), 128, 0, stream>>>(N, cols, im.sides.data() + tm);
  TALLY_CHECK_LAUNCH();
  tile_flags<<<static_cast<unsigned>(ceil_div(tm * tn, 128)), 128, 0, stream>>>(
      tm, tn, im.sides.data(), im.sides.data() + tm, K, t, im.flags.data(), im.counters.data());
  TALLY_CHECK_LAUNCH();
  TALLY_CUDA_TRY(cudaEventRecord(im.ev[1], stream));

  // The INT8 products: per chunk of K, one strided batch over the moduli.
  check_cublas(cublasSetStream(im.blas, stream), "cublasSetStream");
  const std::int32_t one = 1, zero = 0;
  for (idx ch = 0; ch < plan.chunks; ++ch) {
    const idx k0 = ch * kChunkK, kc = std::min(kp, k0 + kChunkK) - k0;
    check_cublas(cublasGemmStridedBatchedEx(
                     im.blas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(nc), static_cast<int>(M), static_cast<int>(kc),
                     &one, im.rb.data() + k0, CUDA_R_8I, static_cast<int>(kp), plane_b, im.ra.data() + k0, CUDA_R_8I,
                     static_cast<int>(kp), plane_a, &zero, im.c32.data() + ch * L * plane_c, CUDA_R_32I,
                     static_cast<int>(nc), plane_c, static_cast<int>(L), CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmStridedBatchedEx (INT8)");
  }
  TALLY_CUDA_TRY(cudaEventRecord(im.ev[2], stream));

  with_limbs(t, [&](auto limbs) {
    reconstruct<T, decltype(limbs)::value>
        <<<dim3(static_cast<unsigned>(ceil_div(N, 256)), grid_y(M)), 256, 0, stream>>>(
            im.c32.data(), M, N, nc, plane_c, plan.chunks, im.kinds.data(), im.flags.data(), tn, c, t);
  });
  TALLY_CHECK_LAUNCH();
  TALLY_CUDA_TRY(cudaEventRecord(im.ev[3], stream));
  exact_tiles<T><<<static_cast<unsigned>(tm * tn), dim3(32, 8), 0, stream>>>(a, b, c, M, N, K, im.flags.data(), tn,
                                                                             im.kinds.data(), im.counters.data());
  TALLY_CHECK_LAUNCH();
  TALLY_CUDA_TRY(cudaEventRecord(im.ev[4], stream));
  im.last = Stats{};
  im.last.tiles = tm * tn;
  im.pending = true;
  im.last_stream = stream;
  if (profile) {
    float ms[4] = {};
    TALLY_CUDA_TRY(cudaEventSynchronize(im.ev[4]));
    for (int p = 0; p < 4; ++p) TALLY_CUDA_TRY(cudaEventElapsedTime(&ms[p], im.ev[p], im.ev[p + 1]));
    profile->scale_s = 1e-3 * ms[0], profile->int8_s = 1e-3 * ms[1], profile->reconstruct_s = 1e-3 * ms[2],
    profile->exact_s = 1e-3 * ms[3];
    profile->total_s = profile->scale_s + profile->int8_s + profile->reconstruct_s + profile->exact_s;
    profile->moduli = t.moduli, profile->bits_kept = plan.bits_kept, profile->chunks = plan.chunks;
    profile->stats = stats();
  }
}

Stats Cuda::stats() {
  Impl& im = *impl_;
  if (im.pending) {
    unsigned long long h[3] = {};
    // On the product's stream, then waited for: a plain cudaMemcpy would not wait for a
    // non-blocking stream (matmul's engines make theirs so).
    TALLY_CUDA_TRY(cudaMemcpyAsync(h, im.counters.data(), sizeof h, cudaMemcpyDeviceToHost, im.last_stream));
    TALLY_CUDA_TRY(cudaStreamSynchronize(im.last_stream));
    im.last.exact_tiles = static_cast<std::int64_t>(h[0]);
    im.last.special_tiles = static_cast<std::int64_t>(h[1]);
    im.last.exact_elements = static_cast<std::int64_t>(h[2]);
    im.pending = false;
  }
  return im.last;
}

template void Cuda::multiply<float>(const float*, const float*, float*, Shape, const Plan&, stream_t, Profile*);
template void Cuda::multiply<double>(const double*, const double*, double*, Shape, const Plan&, stream_t, Profile*);

namespace {
__global__ void fill_bytes_pattern(std::int8_t* p, idx n, std::uint64_t seed) {
  for (idx e = idx{blockIdx.x} * blockDim.x + threadIdx.x; e < n; e += idx{gridDim.x} * blockDim.x)
    p[e] = static_cast<std::int8_t>((e * 0x9E3779B97F4A7C15ull + seed) >> 56);
}
}  // namespace

double int8_gemm_seconds(Shape s, int device, int repeats) {
  TALLY_CUDA_TRY(cudaSetDevice(device));
  const idx kp = round_up(s.k, 16), nc = round_up(s.n, 4);
  DeviceBuffer<std::int8_t> a8(static_cast<std::size_t>(s.m * kp)), b8(static_cast<std::size_t>(nc * kp));
  DeviceBuffer<std::int32_t> c32(static_cast<std::size_t>(s.m * nc));
  fill_bytes_pattern<<<1024, 256>>>(a8.data(), static_cast<idx>(a8.size()), 1);
  TALLY_CHECK_LAUNCH();
  fill_bytes_pattern<<<1024, 256>>>(b8.data(), static_cast<idx>(b8.size()), 2);
  TALLY_CHECK_LAUNCH();
  // The handle and the events are released on every path out, a throw included.
  cublasHandle_t h = nullptr;
  check_cublas(cublasCreate(&h), "cublasCreate");
  const std::unique_ptr<cublasContext, decltype(&cublasDestroy)> handle(h, &cublasDestroy);
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  TALLY_CUDA_TRY(cudaEventCreate(&e0));
  const std::unique_ptr<CUevent_st, decltype(&cudaEventDestroy)> event0(e0, &cudaEventDestroy);
  TALLY_CUDA_TRY(cudaEventCreate(&e1));
  const std::unique_ptr<CUevent_st, decltype(&cudaEventDestroy)> event1(e1, &cudaEventDestroy);
  std::vector<double> times;
  const std::int32_t one = 1, zero = 0;
  for (int r = 0; r <= repeats; ++r) {  // the first run untimed
    TALLY_CUDA_TRY(cudaEventRecord(e0));
    check_cublas(
        cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(nc), static_cast<int>(s.m), static_cast<int>(kp),
                     &one, b8.data(), CUDA_R_8I, static_cast<int>(kp), a8.data(), CUDA_R_8I, static_cast<int>(kp),
                     &zero, c32.data(), CUDA_R_32I, static_cast<int>(nc), CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT),
        "cublasGemmEx (INT8)");
    TALLY_CUDA_TRY(cudaEventRecord(e1));
    TALLY_CUDA_TRY(cudaEventSynchronize(e1));
    float ms = 0;
    TALLY_CUDA_TRY(cudaEventElapsedTime(&ms, e0, e1));
    if (r > 0) times.push_back(1e-3 * ms);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace tally::matmul::ozaki
