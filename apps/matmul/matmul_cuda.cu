// The CUDA backend: device buffers, launches of the level kernels (kernels.cuh, tensor_core.cuh,
// tiled_tc.cuh, tiled_wgmma.cuh) with the shapes of tuning.cuh, cuBLAS without TF32, the device
// reference and the copy-bandwidth ceiling. Which kernel a level runs depends on the shape, the
// precision and the device (launch()); none on anything else, so a run's bits follow from those.
#include <cublas_v2.h>
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled: the driver entry point, found through the runtime
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <type_traits>
#include <vector>

#include "exact.hpp"
#include "kernels.cuh"
#include "matmul.hpp"
#include "tensor_core.cuh"
#include "tiled_tc.cuh"
#include "tiled_wgmma.cuh"
#include "tuning.cuh"
#include "ozaki/ozaki.hpp"
#include "tally/common/copy_bandwidth.cuh"
#include "tally/common/cuda_check.cuh"
#include "tally/common/device_buffer.cuh"
#include "tally/common/device_timer.cuh"
#include "tally/common/error.hpp"

namespace tally::matmul {
namespace {

using idx = std::int64_t;
namespace k = kernels;

void cublas_try(cublasStatus_t s, const char* expr) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string("cuBLAS: ") + expr + " failed with status " + std::to_string(static_cast<int>(s)));
}
#define MATMUL_CUBLAS_TRY(expr) cublas_try((expr), #expr)

using namespace tuning;  // the tile configurations and launch constants

template <class T>
class CudaEngine final : public Engine<T> {
 public:
  CudaEngine(Shape s, int device) : s_(s) {
    TALLY_CUDA_TRY(cudaSetDevice(device));
    TALLY_CUDA_TRY(cudaGetDeviceProperties(&prop_, device));
    std::size_t free_b = 0, total_b = 0;
    TALLY_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    // A, B, C, the gang partials (bounded below), the reference (two doubles per C element, plus
    // three per split while it is computed): refuse what cannot fit rather than fail half-way.
    const double need =
        static_cast<double>(sizeof(T)) *
            (static_cast<double>(s.m * s.k) + static_cast<double>(s.k * s.n) + 2.0 * static_cast<double>(s.m * s.n)) +
        16.0 * static_cast<double>(s.m * s.n) +
        24.0 * std::max<double>(static_cast<double>(s.m * s.n), static_cast<double>(reference_threads)) +
        64.0 * (1 << 20);
    if (need > 0.95 * static_cast<double>(free_b))
      throw InputError("matrices of " + s.str() + " in " + (sizeof(T) == 4 ? "float" : "double") + " need " +
                       std::to_string(need / (1 << 30)) + " GiB of device memory; device " + std::to_string(device) +
                       " has " + std::to_string(static_cast<double>(free_b) / (1 << 30)) + " GiB free");
    a_ = DeviceBuffer<T>(static_cast<std::size_t>(s.m * s.k));
    b_ = DeviceBuffer<T>(static_cast<std::size_t>(s.k * s.n));
    c_ = DeviceBuffer<T>(static_cast<std::size_t>(s.m * s.n));
    TALLY_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    MATMUL_CUBLAS_TRY(cublasCreate(&blas_));
    MATMUL_CUBLAS_TRY(cublasSetStream(blas_, stream_));
    // FP32/FP64 as asked: no TF32 tensor-core path (DEFAULT_MATH uses TF32 only when told to).
    MATMUL_CUBLAS_TRY(cublasSetMathMode(blas_, CUBLAS_DEFAULT_MATH));
  }
  ~CudaEngine() override {
    cublasDestroy(blas_);
    cudaStreamDestroy(stream_);
  }
  CudaEngine(const CudaEngine&) = delete;
  CudaEngine& operator=(const CudaEngine&) = delete;

  void generate(std::uint64_t seed, KSlab slab) override {
    const int blocks = prop_.multiProcessorCount * fill_blocks_per_sm;
    k::generate<T><<<blocks, fill_threads, 0, stream_>>>(a_.data(), static_cast<idx>(a_.size()), seed, 0, s_.k, 0,
                                                         slab.k0, slab.k_total);
    TALLY_CHECK_LAUNCH();
    k::generate<T>
        <<<blocks, fill_threads, 0, stream_>>>(b_.data(), static_cast<idx>(b_.size()), seed, 1, s_.n, slab.k0, 0, s_.n);
    TALLY_CHECK_LAUNCH();
    TALLY_CUDA_TRY(cudaStreamSynchronize(stream_));
    specials_ = false;  // uniform in [-1, 1)
  }
  void set_inputs(std::span<const T> a, std::span<const T> b) override {
    a_.upload(a, stream_);
    b_.upload(b, stream_);
    if constexpr (sizeof(T) == 4) {  // 3xTF32 takes its IEEE split where an infinity is (tc_mma.cuh)
      const auto inf = [](T x) { return std::isinf(x); };
      specials_ = std::any_of(a.begin(), a.end(), inf) || std::any_of(b.begin(), b.end(), inf);
    }
    TALLY_CUDA_TRY(cudaStreamSynchronize(stream_));
  }

  double run(Level level) override {
    const double t = time([&] { launch(level); });
    if (level == Level::ozaki && !exact_ && !ozaki_noted_)
      ozaki::note_once(ozaki_->stats(), *ozaki_plan_, ozaki_noted_);
    return t;
  }
  std::optional<double> run_vendor() override {
    return time([&] { cublas(); });
  }
  std::optional<double> run_vendor_tf32() override {
    if constexpr (sizeof(T) == 4) return time([&] { cublas_tf32(); });
    else return std::nullopt;
  }
  void set_combine(typename Engine<T>::Combine combine) override { combine_ = std::move(combine); }

  std::vector<T> c() override { return c_.to_host(stream_); }
  std::vector<T> a() override { return a_.to_host(stream_); }
  std::vector<T> b() override { return b_.to_host(stream_); }
  Shape shape() const override { return s_; }

  Reference reference() override {
    const idx mn = s_.m * s_.n;
    const idx splits = std::clamp<idx>(reference_threads / mn, 1,
                                       std::min<idx>(65535, (s_.k + reference_min_chunk - 1) / reference_min_chunk));
    const idx chunk = (s_.k + splits - 1) / splits;
    const auto parts = static_cast<std::size_t>(splits * mn);
    DeviceBuffer<double> hi(parts), lo(parts), abs(parts), ref(static_cast<std::size_t>(mn)),
        ref_abs(static_cast<std::size_t>(mn));
    constexpr int threads = reference_threads_per_block;
    const dim3 grid(static_cast<unsigned>((mn + threads - 1) / threads), static_cast<unsigned>(splits));
    k::reference_partial<T><<<grid, threads, 0, stream_>>>(a_.data(), b_.data(), s_.m, s_.n, s_.k, chunk, hi.data(),
                                                           lo.data(), abs.data());
    TALLY_CHECK_LAUNCH();
    k::reference_combine<<<prop_.multiProcessorCount * fill_blocks_per_sm, fill_threads, 0, stream_>>>(
        mn, splits, hi.data(), lo.data(), abs.data(), ref.data(), ref_abs.data());
    TALLY_CHECK_LAUNCH();
    Reference r;
    r.c = ref.to_host(stream_);
    r.abs = ref_abs.to_host(stream_);
    return r;
  }

  void set_split_k(std::int64_t splits) override { split_k_ = splits; }
  ErrorBound error_bound(Level level) override {
    if (level == Level::ozaki) return ozaki::error_bound<T>(s_.k);
    const idx k = std::max<idx>(s_.k, 1);
    switch (level) {  // the orders of kernels.cuh: a lane's two accumulators over K, then the lanes
      case Level::vector: return {ceil_div(k, 2 * 32) + 1 + 5};  // 32 lanes, warp_reduce: 5 levels of pairs
      case Level::worker: return {ceil_div(k, 2 * worker_workers) + 1 + worker_workers - 1};  // worker_reduce: in turn
      case Level::worker_vector:  // block_reduce: a warp's 5 levels, then the warps' in warp 0
        return {ceil_div(k, 2 * worker_vector_threads) + 1 + 5 + 5};
      case Level::tiled: return any_order(k);                    // a thread's register tile, K in order
      default: return bounds_[static_cast<std::size_t>(level)];  // recorded by the launch
    }
  }
  void set_ozaki(const ozaki::Settings& settings) override {
    if (settings.moduli != ozaki_settings_.moduli) ozaki_plan_.reset();
    ozaki_settings_ = settings;
  }
  void set_exact(bool on) override {
    if (on && !exact_) exact_ = std::make_unique<ExactCuda>();
    if (!on) exact_.reset();
  }

  std::optional<double> copy_bandwidth_gbs() override {
    std::size_t free_b = 0, total_b = 0;
    TALLY_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    const std::size_t bytes = std::min<std::size_t>(std::size_t{1} << 30, free_b / 4) & ~std::size_t{255};
    return tally::copy_bandwidth_gbs(bytes, 10, stream_);
  }

 private:
  // Seconds of one event-timed run; C is poisoned (NaN) before it, outside the timed region, so an
  // element a kernel leaves unwritten fails the check.
  template <class F>
  double time(F&& f) {
    EventTimer timer;
    c_.fill_bytes(0xFF, stream_);
    timer.start(stream_);
    f();
    if (combine_) combine_(std::span<T>(c_.data(), c_.size()), stream_);
    timer.stop(stream_);
    return timer.elapsed_s();
  }

  void cublas() {
    const T one = 1, zero = 0;
    // Row-major C = A B is column-major C^T = B^T A^T.
    if constexpr (sizeof(T) == 4)
      MATMUL_CUBLAS_TRY(cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(s_.n), static_cast<int>(s_.m),
                                    static_cast<int>(s_.k), &one, b_.data(), static_cast<int>(s_.n), a_.data(),
                                    static_cast<int>(s_.k), &zero, c_.data(), static_cast<int>(s_.n)));
    else
      MATMUL_CUBLAS_TRY(cublasDgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(s_.n), static_cast<int>(s_.m),
                                    static_cast<int>(s_.k), &one, b_.data(), static_cast<int>(s_.n), a_.data(),
                                    static_cast<int>(s_.k), &zero, c_.data(), static_cast<int>(s_.n)));
  }

  /// SGEMM with CUBLAS_COMPUTE_32F_FAST_TF32: cuBLAS's own single-pass TF32 tensor-core mode (its
  /// error is TF32's, ~2^-11 per product: for the table only, it fails the FP32 tolerance).
  void cublas_tf32() {
    const float one = 1, zero = 0;
    MATMUL_CUBLAS_TRY(cublasGemmEx(blas_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(s_.n), static_cast<int>(s_.m),
                                   static_cast<int>(s_.k), &one, b_.data(), CUDA_R_32F, static_cast<int>(s_.n),
                                   a_.data(), CUDA_R_32F, static_cast<int>(s_.k), &zero, c_.data(), CUDA_R_32F,
                                   static_cast<int>(s_.n), CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
  }

  unsigned grid_for(idx work, idx per_block) const {
    return static_cast<unsigned>(
        std::clamp<idx>((work + per_block - 1) / per_block, 1, idx{prop_.multiProcessorCount} * max_blocks_per_sm));
  }

  static idx ceil_div(idx a, idx b) { return (a + b - 1) / b; }
  void record(Level level, ErrorBound b) { bounds_[static_cast<std::size_t>(level)] = b; }
  /// The error bound of TcProduct::run over a K range (tensor_core.cuh): 3xTF32, chains of
  /// chain_steps k-steps folded into FP32 in turn; DMMA, FMAs in place over the group's k-steps; then
  /// the worker groups added in turn.
  template <class Cfg>
  static ErrorBound tc_product_bound(idx k_range) {
    using M = typename Cfg::Math;
    const idx slices = ceil_div(std::max<idx>(k_range, 1), Cfg::BK);
    if constexpr (M::promote)
      return {ceil_div(slices, Cfg::chain_slices) + Cfg::KG - 1, M::chain_error_u(Cfg::chain_steps)};
    else return {slices * Cfg::steps * M::km + Cfg::KG - 1, 0};
  }
  /// The gang level's bound: a split's (`in_split`, over its chunk), then the splits' partials
  /// combined (split_k_combine).
  void record_gang(ErrorBound in_split, const dim3& grid) {
    record(Level::gang, {in_split.depth + k::split_k_combine_depth(grid.y), in_split.extra_u});
  }

  template <class Cfg>
  void launch_tiled() {
    using L = k::TileLayout<T, Cfg>;
    auto kernel = k::tiled_level<T, Cfg>;
    TALLY_CUDA_TRY(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(L::smem_bytes)));
    const idx tiles = ((s_.m + Cfg::BM - 1) / Cfg::BM) * ((s_.n + Cfg::BN - 1) / Cfg::BN);
    kernel<<<static_cast<unsigned>(tiles), dim3(Cfg::group_threads, Cfg::G), L::smem_bytes, stream_>>>(
        a_.data(), b_.data(), c_.data(), s_.m, s_.n, s_.k, s_.k % L::V == 0, s_.n % L::V == 0);
    TALLY_CHECK_LAUNCH();
  }

  // The gang level: K split across blocks (grid.y), one wave of the machine (every block resident, so
  // none waits for a second wave while the last block combines), K split at least in two, each split
  // a whole number of bk slices; no empty split. `kernel` has gang_level's arguments.
  struct SplitGrid {
    dim3 grid;
    idx chunk;
  };
  template <class Kernel>
  /// `sizing`: the kernel whose occupancy sizes the grid (the plain kernel of a 3xTF32 tile whose IEEE
  /// variant runs: the same splits, so the same order and bits off the infinities).
  SplitGrid split_k_grid(Kernel kernel, int bm, int bn, int bk, dim3 block, std::size_t smem, Kernel sizing = nullptr) {
    TALLY_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    if (!sizing || sizing == kernel) sizing = kernel;
    else
      TALLY_CUDA_TRY(cudaFuncSetAttribute(sizing, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    int per_sm = 0;
    TALLY_CUDA_TRY(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, sizing, static_cast<int>(block.x * block.y), smem));
    const idx tiles = ((s_.m + bm - 1) / bm) * ((s_.n + bn - 1) / bn);
    const idx slices = (s_.k + bk - 1) / bk;
    const idx want = idx{prop_.multiProcessorCount} * std::max(per_sm, 1);
    idx ksplit = split_k_ > 0 ? std::min<idx>(split_k_, 65535) : std::clamp<idx>((want + tiles - 1) / tiles, 2, 65535);
    ksplit = std::min(ksplit, slices);
    const idx chunk = ((slices + ksplit - 1) / ksplit) * bk;
    ksplit = (s_.k + chunk - 1) / chunk;
    const auto width = static_cast<std::size_t>(bm) * static_cast<std::size_t>(bn);
    const idx groups = k::split_groups(ksplit);  // the combine's second level (1: none)
    if (partials_.size() < static_cast<std::size_t>(tiles * (ksplit + (groups > 1 ? groups : 0))) * width)
      partials_ = DeviceBuffer<T>(static_cast<std::size_t>(tiles * (ksplit + (groups > 1 ? groups : 0))) * width);
    if (tickets_.size() < static_cast<std::size_t>(tiles * (1 + groups))) {
      tickets_ = DeviceBuffer<unsigned int>(static_cast<std::size_t>(tiles * (1 + groups)));
      tickets_.fill_bytes(0, stream_);  // zero once; the last block to arrive at a ticket re-arms it
    }
    return {dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(ksplit)), chunk};
  }
  /// in_split(chunk): the bound of one split's product over `chunk` K.
  template <class Kernel, class InSplit>
  void launch_split_k(Kernel kernel, int bm, int bn, int bk, dim3 block, std::size_t smem, bool vec_a, bool vec_b,
                      InSplit&& in_split, Kernel sizing = nullptr) {
    const SplitGrid g = split_k_grid(kernel, bm, bn, bk, block, smem, sizing);
    record_gang(in_split(g.chunk), g.grid);
    kernel<<<g.grid, block, smem, stream_>>>(a_.data(), b_.data(), c_.data(), s_.m, s_.n, s_.k, g.chunk,
                                             partials_.data(), tickets_.data(), vec_a, vec_b);
    TALLY_CHECK_LAUNCH();
  }

  template <class Cfg>
  void launch_gang() {
    using L = k::TileLayout<T, Cfg>;
    // A thread's G-th of each slice's K in turn, then the groups in turn (TileProduct::run).
    launch_split_k(k::gang_level<T, Cfg>, Cfg::BM, Cfg::BN, Cfg::BK, dim3(Cfg::group_threads, Cfg::G), L::smem_bytes,
                   s_.k % L::V == 0, s_.n % L::V == 0, [](idx chunk) {
                     return ErrorBound{ceil_div(chunk, Cfg::BK) * (Cfg::BK / Cfg::G) + Cfg::G - 1, 0};
                   });
  }

  template <class Cfg>
  void launch_gang_tc() {
    const bool vec_a = s_.k % Cfg::CH == 0, vec_b = s_.n % Cfg::CH == 0;
    const auto plain = vec_a && vec_b ? k::tc::gang_level_tc<Cfg, true> : k::tc::gang_level_tc<Cfg, false>;
    auto kernel = plain;
    if constexpr (std::is_same_v<typename Cfg::Math, k::tc::Tf32x3>)
      if (specials_) {
        using Ieee = typename Cfg::template with_math<k::tc::Tf32x3Specials>;
        kernel = vec_a && vec_b ? k::tc::gang_level_tc<Ieee, true> : k::tc::gang_level_tc<Ieee, false>;
      }
    launch_split_k(
        kernel, Cfg::BM, Cfg::BN, Cfg::BK, dim3(Cfg::group_threads, Cfg::KG), Cfg::smem_bytes, vec_a, vec_b,
        [](idx chunk) { return tc_product_bound<Cfg>(chunk); }, plain);
  }

  /// A rows x cols row-major matrix as a 2-D tensor map of box_rows x box_cols boxes, 128-byte
  /// swizzled, zeros outside; L2 promotion of 256 bytes or none.
  CUtensorMap tensor_map(const T* base, idx rows, idx cols, unsigned box_cols, unsigned box_rows, bool l2_promote) {
    if (!encode_) {
      void* fn = nullptr;
      cudaDriverEntryPointQueryResult found{};
      TALLY_CUDA_TRY(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
      if (found != cudaDriverEntryPointSuccess || !fn) throw Error("the CUDA driver has no cuTensorMapEncodeTiled");
      encode_ = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
    }
    CUtensorMap map{};
    const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
    const cuuint64_t strides[1] = {static_cast<cuuint64_t>(cols) * sizeof(T)};
    const cuuint32_t box[2] = {box_cols, box_rows}, unit[2] = {1, 1};
    const CUresult r = encode_(&map, sizeof(T) == 4 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
                               2, const_cast<T*>(base), dims, strides, box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE,
                               CU_TENSOR_MAP_SWIZZLE_128B,
                               l2_promote ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B : CU_TENSOR_MAP_L2_PROMOTION_NONE,
                               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
      throw Error("cuTensorMapEncodeTiled failed with error " + std::to_string(static_cast<int>(r)));
    return map;
  }

  /// The Gram tiles fed by tensor copies: sm_90, K and N multiples of 16 bytes' worth (row strides).
  template <class Cfg>
  void launch_gang_tma(bool l2_promote) {
    const auto plain = k::tc::gang_level_tma<Cfg>;
    auto kernel = plain;
    if constexpr (std::is_same_v<typename Cfg::Math, k::tc::Tf32x3>)
      if (specials_) kernel = k::tc::gang_level_tma<typename Cfg::template with_math<k::tc::Tf32x3Specials>>;
    const dim3 block(Cfg::group_threads, Cfg::KG);
    const SplitGrid g = split_k_grid(kernel, Cfg::BM, Cfg::BN, Cfg::BK, block, Cfg::smem_bytes, plain);
    record_gang(tc_product_bound<Cfg>(g.chunk), g.grid);
    if (!maps_)
      maps_ = {tensor_map(a_.data(), s_.m, s_.k, Cfg::tile_w, Cfg::BM, l2_promote),
               tensor_map(b_.data(), s_.k, s_.n, Cfg::tile_w, Cfg::BK, l2_promote)};
    kernel<<<g.grid, block, Cfg::smem_bytes, stream_>>>(maps_->first, maps_->second, c_.data(), s_.m, s_.n, s_.k,
                                                        g.chunk, partials_.data(), tickets_.data());
    TALLY_CHECK_LAUNCH();
  }
  [[nodiscard]] bool use_tma() const {
    constexpr idx ch = 16 / sizeof(T);
    return prop_.major >= 9 && s_.k % ch == 0 && s_.n % ch == 0;
  }

  /// The tensor-core Gram path: max(M, N) in (32, 64] (below, the CUDA-core tiles; float C of at
  /// most 16 x 16 has its own tensor-core tile), sm_80+ (TF32 and DMMA mma.sync), K large enough.
  [[nodiscard]] bool use_tensor_cores() const {
    using Cfg = std::conditional_t<sizeof(T) == 4, TcFloat, TcDouble>;
    return std::max(s_.m, s_.n) > Ts32::BM && tensor_cores_ok<Cfg>();
  }
  template <class Cfg>
  [[nodiscard]] bool tensor_cores_ok() const {
    return s_.m <= Cfg::BM && s_.n <= Cfg::BN && prop_.major >= 8 && s_.k >= Cfg::min_k;
  }

  void launch(Level level) {
    if (exact_)
      return exact_->multiply<T>(level, a_.data(), b_.data(), c_.data(), s_, stream_, prop_.multiProcessorCount);
    const idx mn = s_.m * s_.n;
    switch (level) {
      case Level::vector:  // a warp an element
        k::vector_level<T, vector_threads><<<grid_for(mn, vector_threads / 32), vector_threads, 0, stream_>>>(
            a_.data(), b_.data(), c_.data(), s_.m, s_.n, s_.k);
        TALLY_CHECK_LAUNCH();
        return;
      case Level::worker:  // a block 32 elements of a row
        k::worker_level<T, worker_workers>
            <<<grid_for(s_.m * ((s_.n + 31) / 32), 1), dim3(32, worker_workers), 0, stream_>>>(
                a_.data(), b_.data(), c_.data(), s_.m, s_.n, s_.k);
        TALLY_CHECK_LAUNCH();
        return;
      case Level::worker_vector:  // a block an element
        k::worker_vector_level<T, worker_vector_threads>
            <<<grid_for(mn, 1), worker_vector_threads, 0, stream_>>>(a_.data(), b_.data(), c_.data(), s_.m, s_.n, s_.k);
        TALLY_CHECK_LAUNCH();
        return;
      case Level::gang: {  // the smallest tile that covers C, or Big's tiles
        const idx big = std::max(s_.m, s_.n);
        if (big <= Ts16::BM) {
          if constexpr (sizeof(T) == 8) {
            if (use_tma() && tensor_cores_ok<TcDouble16Tma>()) launch_gang_tma<TcDouble16Tma>(gram_double_l2_promote);
            else launch_gang<Ts16d>();  // double: half the slice, the same bytes
          } else if (tensor_cores_ok<Tc16Float>()) launch_gang_tc<Tc16Float>();
          else launch_gang<Ts16>();
        } else if (big <= Ts32::BM) launch_gang<Ts32>();
        else if (big <= Ts64::BM) {
          if (!use_tensor_cores()) launch_gang<Ts64>();
          else if constexpr (sizeof(T) == 4) {
            if (use_tma()) launch_gang_tma<TcFloatTma>(gram_float_l2_promote);
            else launch_gang_tc<TcFloat>();
          } else if (use_tma()) launch_gang_tma<TcDoubleTma>(gram_double_l2_promote);
          else launch_gang_tc<TcDouble>();
        } else launch_gang<Big>();
        return;
      }
      case Level::tiled: launch_tiled<Big>(); return;
      case Level::ozaki:
        if (!ozaki_plan_) ozaki_plan_ = ozaki::make_plan<T>(s_.k, ozaki_settings_.moduli);
        if (!ozaki_) ozaki_ = std::make_unique<ozaki::Cuda>();
        ozaki_->multiply<T>(a_.data(), b_.data(), c_.data(), s_, *ozaki_plan_, stream_, ozaki_settings_.profile);
        return;
      case Level::tiled_tc:
        if (prop_.major < 8)
          throw InputError("--level tiled-tc: needs the tensor cores of sm_80 or later; device " +
                           std::string(prop_.name) + " is sm_" + std::to_string(prop_.major * 10 + prop_.minor));
        if constexpr (sizeof(T) == 4) {
          if (use_wgmma()) {
            launch_tiled_wgmma();
            record(level, {ceil_div(ceil_div(s_.k, k::wg::BK), k::wg::chain_slices),
                           k::tc::Tf32x3::chain_error_u(k::wg::chain_steps)});
          } else if (k::tc::tf32x3_pays(s_.k, TcTiled::chain_steps)) {
            launch_tiled_tc<TcTiled>();
            record(level, tc_product_bound<TcTiled>(s_.k));
          } else {
            launch_tiled<Big>();  // small K: FP32 on the CUDA cores (tiled_tc.cuh)
            record(level, any_order(s_.k));
          }
        } else {
          launch_tiled_tc<TcTiledD>();
          record(level, tc_product_bound<TcTiledD>(s_.k));
        }
        return;
    }
  }

  /// tiled-tc's wgmma kernel (tiled_wgmma.cuh): built for sm_90a, run on sm_90 with K and N multiples
  /// of 4 (the tensor maps' 16-byte row strides) and K where 3xTF32 pays (tf32x3_pays).
  [[nodiscard]] bool use_wgmma() const {
    return k::wg::built() && prop_.major == 9 && prop_.minor == 0 && s_.k % 4 == 0 && s_.n % 4 == 0 &&
           k::tc::tf32x3_pays(s_.k, k::wg::chain_steps);
  }
  void launch_tiled_wgmma() {
#if TALLY_MATMUL_WGMMA_BUILT
    if constexpr (sizeof(T) == 4) {
      if (!wg_maps_)
        wg_maps_ = {tensor_map(a_.data(), s_.m, s_.k, 32, k::wg::BM, wgmma_l2_promote),
                    tensor_map(b_.data(), s_.k, s_.n, 32, k::wg::BK, wgmma_l2_promote)};
      k::wg::launch_tiled(wg_maps_->first, wg_maps_->second, c_.data(), s_.m, s_.n, s_.k, specials_, stream_);
    }
#endif
  }

  template <class Cfg>
  void launch_tiled_tc() {
    if constexpr (std::is_same_v<typename Cfg::Math, k::tc::Tf32x3>)
      if (specials_) return launch_tiled_tc<typename Cfg::template with_math<k::tc::Tf32x3Specials>>();
    const bool vec = s_.k % Cfg::CH == 0 && s_.n % Cfg::CH == 0;
    auto kernel = vec ? k::tc::tiled_level_tc<Cfg, true> : k::tc::tiled_level_tc<Cfg, false>;
    TALLY_CUDA_TRY(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(Cfg::smem_bytes)));
    const idx tiles = ((s_.m + Cfg::BM - 1) / Cfg::BM) * ((s_.n + Cfg::BN - 1) / Cfg::BN);
    kernel<<<static_cast<unsigned>(tiles), dim3(Cfg::group_threads, Cfg::KG), Cfg::smem_bytes, stream_>>>(
        a_.data(), b_.data(), c_.data(), s_.m, s_.n, s_.k);
    TALLY_CHECK_LAUNCH();
  }

  Shape s_;
  idx split_k_ = 0;
  std::unique_ptr<ExactCuda> exact_;  // set: matmul --exact
  bool specials_ = false;             // A or B holds an infinity: 3xTF32's IEEE split (float)
  ozaki::Settings ozaki_settings_;
  std::optional<ozaki::Plan> ozaki_plan_;
  std::unique_ptr<ozaki::Cuda> ozaki_;  // made on the ozaki level's first run
  bool ozaki_noted_ = false;
  typename Engine<T>::Combine combine_;
  cudaDeviceProp prop_{};
  cudaStream_t stream_{};
  cublasHandle_t blas_{};
  DeviceBuffer<T> a_, b_, c_, partials_;
  DeviceBuffer<unsigned int> tickets_;
  PFN_cuTensorMapEncodeTiled_v12000 encode_ = nullptr;
  std::optional<std::pair<CUtensorMap, CUtensorMap>> maps_;     // A and B for the tensor-copy tile, made once
  std::optional<std::pair<CUtensorMap, CUtensorMap>> wg_maps_;  // A and B for tiled-tc's wgmma kernel, made once
  std::array<ErrorBound, cuda_levels.size()> bounds_{};         // gang, tiled-tc: their last launch's order
};

}  // namespace

template <class T>
std::unique_ptr<Engine<T>> make_cuda_engine(Shape s, int device) {
  if (s.m > INT32_MAX || s.n > INT32_MAX || s.k > INT32_MAX)
    throw InputError("sizes above 2^31-1 are not supported by cuBLAS");
  return std::make_unique<CudaEngine<T>>(s, device);
}
template std::unique_ptr<Engine<float>> make_cuda_engine<float>(Shape, int);
template std::unique_ptr<Engine<double>> make_cuda_engine<double>(Shape, int);

}  // namespace tally::matmul
