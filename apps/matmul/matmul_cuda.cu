// The CUDA backend: device buffers, launches of the level kernels (kernels.cuh), cuBLAS without TF32,
// the device reference and the copy-bandwidth ceiling. The gang level's Gram case (32 < max(M, N) <= 64)
// runs its block products on the tensor cores (tensor_core.cuh) on sm_80 and later.
#include <cublas_v2.h>
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled: the driver entry point, found through the runtime
#include <cuda_runtime.h>

#include <algorithm>
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
  if (s != CUBLAS_STATUS_SUCCESS) throw Error(std::string("cuBLAS: ") + expr + " failed with status " + std::to_string(static_cast<int>(s)));
}
#define MATMUL_CUBLAS_TRY(expr) cublas_try((expr), #expr)

// Tile shapes: 128 x 128 with 8 x 8 per thread for large C; for the Gram case (M, N <= 64) a tile
// that covers all of C, with 4 worker groups splitting each K slice.
using Big = k::TileConfig<128, 128, 8, 8, 8, 1>;
using Ts64 = k::TileConfig<64, 64, 32, 8, 8, 4>;
// The small tiles do little arithmetic per byte: deep K slices keep 64 bytes of loads in flight per
// thread, and 16 x 16 uses 4 x 4 register tiles in 16 worker groups (a 2 x 2 tile spent one shared
// load per FMA and ran at 41-51% of the copy bandwidth on an H200).
using Ts32 = k::TileConfig<32, 32, 64, 4, 4, 4>;
using Ts16 = k::TileConfig<16, 16, 128, 4, 4, 16>;
using Ts16d = k::TileConfig<16, 16, 64, 4, 4, 16>;
// Tensor-core Gram tiles: C up to 64 x 64.
// Float on sm_90 with K and N multiples of 4 (16-byte rows): slices by TMA tensor copies (TcFloatTma),
// 64 x 32 of C per warp, 4 worker groups each taking 32 of a 128-deep slice, 3 slices (193 KiB, one
// block per SM): 2.27 ms at 64 x 64 x 2^24 on an H200 (90% of copy, 1.67x cuBLAS), against 2.38-2.43
// ms for 64-deep slices in two 3-stage blocks per SM and 2.73 ms for the cp.async tile below (two runs
// of 2026-11-23). The copies leave the warps: one thread issues six tensor copies per 128-deep slice,
// where cp.async has every thread issue 16 per 64-deep slice. Padding-free tiles need the 128-byte
// swizzle for conflict-free fragment loads (Tf32x3::SwizzleLane).
using TcFloatTma = k::tc::TcConfig<k::tc::Tf32x3, 64, 64, 64, 32, 4, 128, 3, 1, true>;
// Otherwise (sm_80/89, odd K or N), cp.async into padded tiles, 2 worker groups splitting each
// slice, 2 blocks per SM. Float: 64 x 32 per warp (128 threads, up to 255 registers), 64-deep
// slices, 3 of them (2 in flight, 105 KiB per block): 2.70-2.73 ms at 64 x 64 x 2^24 on an H200,
// against 2.83-2.86 ms for 32 x 32 per warp (256 threads, capped at 128 registers) in the same runs
// (the H100, memory-bound here, ran it at 3.25 ms against 3.17-3.19 for 32 x 32: kept for the
// H200's sake); 32 x 64 per warp 2.82-2.90, one group 3.20, 32-deep slices (5 stages) 2.71. Its
// pace is set by the latency of each warp's shared loads, split and MMA chain, not by memory (ncu:
// the tensor pipe 52% busy, a warp waiting on a fixed-latency dependency 1.4 cycles per issue, 2
// warps a scheduler). Tried and no faster: chains over two slices (2.83 ms), the three products of
// a k-step issued pass by pass (ptxas interleaves them four apart anyway), hi truncated instead of
// rounded, and a Hopper warpgroup-MMA (wgmma) version with the A slice split once in shared memory
// (3.15 ms). Double: 32 x 32 per warp, 16-deep slices, 4 of them: 4.63 ms (88% of the H200's copy
// rate); 64 x 32 per warp 4.80, 32-deep slices 4.84-4.86.
using TcFloat = k::tc::TcConfig<k::tc::Tf32x3, 64, 64, 64, 32, 2, 64, 3, 2>;
using TcDouble = k::tc::TcConfig<k::tc::Dmma<8>, 64, 64, 32, 32, 2, 16, 4, 2>;
// 16 x 16 float: two warps cover C, four worker groups split 128-deep slices. The CUDA-core Ts16
// tile spends an instruction per FMA and fell behind the H200's bandwidth (2.83 ms, 72% of copy, at
// 16 x 16 x 2^26); this one streams it at 2.20 ms.
using Tc16Float = k::tc::TcConfig<k::tc::Tf32x3, 16, 16, 16, 8, 4, 128, 4, 2>;
// Double on sm_90 with K and N even (16-byte rows): slices by TMA tensor copies too, DMMA m16n8k8 from
// 128-byte-swizzled tiles (Dmma::load_a_swizzled): one thread's few large copies per slice, where the
// cp.async / register-staged tiles spend every thread's issue slots on 16-byte pieces. 16 x 16: one
// warp a worker group (C as two m16n8 tiles), 8 groups each taking 16 of a 128-deep slice, 6 stages
// of 32 KiB (5 slices in flight per SM); 64 x 64 below.
// The 16 x 16 tile's tensor maps ask for no L2 promotion: with the 256-byte promotion (the default
// of the other TMA tiles) 16 x 16 x 2^26 took 4.030-4.040 ms (4.26 TB/s, 0.97x cuBLAS), without it
// 3.753-3.756 ms (4.57 TB/s, 1.03x; 128-byte promotion 3.773), H200, 2026-11-24; per-block times
// showed the promoted run's blocks ending anywhere from 2.9 to 4.0 ms, so some SMs' streams were
// starved. 64 x 64 asks for none either (below).
using TcDouble16Tma = k::tc::TcConfig<k::tc::Dmma<8>, 16, 16, 16, 16, 8, 128, 6, 1, true>;
// 64 x 64: 64 x 32 per warp (2 warps a group), 4 groups each taking 24 of a 96-deep slice (3 k-steps,
// in a rolled loop: one step's fragments live, 240 registers, no spills), 2 stages of 96 KiB, one
// block of 8 warps per SM, each slice issued before the wait for the previous one (EarlyIssue). A
// 64 x 32 warp reads half the shared-memory fragment bytes per DMMA of a 32 x 16 one. H200,
// 2026-11-24: 4.05-4.32 ms, 0.90-0.96x cuBLAS (96-101% of copy), against 4.65-5.36 for the earlier
// 32 x 16 tile. What held it there was the 256-byte L2 promotion, not the DMMA work: with the DMMAs
// taken out the tile streamed at 4.15-4.20 TB/s whatever its boxes, stages or slice order, and
// without promotion at 4.66 (H200, 2026-11-29); so its maps ask for none: 3.84-4.05 ms. The
// alternatives measured slower (a decoupled pipeline, other warp tiles, depths and stages, two blocks
// per SM, a warp-specialised pipeline) are in apps/matmul/README.md.
using TcDoubleTma = k::tc::TcConfig<k::tc::Dmma<8>, 64, 64, 64, 32, 4, 96, 2, 1, true, 1, true, true>;
// tiled-tc (tiled_tc.cuh). Float: 128 x 64 of C per block, 4 warps of 64 x 32, 32-deep slices in 3
// cp.async stages (88 KiB), two blocks per SM (237 registers a thread), MMA chains over two slices
// (8 k-steps). H100, 2026-11-24, 4096^3 / 8192^3 (ms): this 2.073 / 15.97; chains of one slice
// 2.048-2.065 / 16.01-16.15; 64-deep slices in 2 stages 1.991 / 15.43 (not adopted: its odd-shape
// tests have not run on a GPU yet); 64 x 128 blocks 2.101 / 16.29; 128 x 128 blocks of 8 warps (one
// block per SM) 2.164-2.181 / 16.83-17.11, the same with 64-deep slices 2.107 / 16.49, with 16 warps
// of 32 x 32 2.348 / 18.57. Double: 128 x 128, 16 warps of 32 x 32, 16-deep slices, 4 stages.
using TcTiled = k::tc::TcConfig<k::tc::Tf32x3, 128, 64, 64, 32, 1, 32, 3, 2, false, 2>;
using TcTiledD = k::tc::TcConfig<k::tc::Dmma<8>, 128, 128, 32, 32, 1, 16, 4, 1>;

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
    const double need = static_cast<double>(sizeof(T)) * (static_cast<double>(s.m * s.k) + static_cast<double>(s.k * s.n) + 2.0 * static_cast<double>(s.m * s.n)) +
                        16.0 * static_cast<double>(s.m * s.n) + 24.0 * std::max<double>(static_cast<double>(s.m * s.n), ref_threads) + 64.0 * (1 << 20);
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
    const int blocks = prop_.multiProcessorCount * 8;
    k::generate<T><<<blocks, 256, 0, stream_>>>(a_.data(), static_cast<idx>(a_.size()), seed, 0, s_.k, 0, slab.k0, slab.k_total);
    TALLY_CHECK_LAUNCH();
    k::generate<T><<<blocks, 256, 0, stream_>>>(b_.data(), static_cast<idx>(b_.size()), seed, 1, s_.n, slab.k0, 0, s_.n);
    TALLY_CHECK_LAUNCH();
    TALLY_CUDA_TRY(cudaStreamSynchronize(stream_));
  }
  void set_inputs(std::span<const T> a, std::span<const T> b) override {
    a_.upload(a, stream_);
    b_.upload(b, stream_);
    TALLY_CUDA_TRY(cudaStreamSynchronize(stream_));
  }

  double run(Level level) override { return time([&] { launch(level); }); }
  std::optional<double> run_vendor() override { return time([&] { cublas(); }); }
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
    const idx splits = std::clamp<idx>(static_cast<idx>(ref_threads) / mn, 1, std::min<idx>(65535, (s_.k + 255) / 256));
    const idx chunk = (s_.k + splits - 1) / splits;
    const auto parts = static_cast<std::size_t>(splits * mn);
    DeviceBuffer<double> hi(parts), lo(parts), abs(parts), ref(static_cast<std::size_t>(mn)), ref_abs(static_cast<std::size_t>(mn));
    const dim3 grid(static_cast<unsigned>((mn + 255) / 256), static_cast<unsigned>(splits));
    k::reference_partial<T><<<grid, 256, 0, stream_>>>(a_.data(), b_.data(), s_.m, s_.n, s_.k, chunk, hi.data(), lo.data(), abs.data());
    TALLY_CHECK_LAUNCH();
    k::reference_combine<<<prop_.multiProcessorCount * 8, 256, 0, stream_>>>(mn, splits, hi.data(), lo.data(), abs.data(), ref.data(), ref_abs.data());
    TALLY_CHECK_LAUNCH();
    Reference r;
    r.c = ref.to_host(stream_);
    r.abs = ref_abs.to_host(stream_);
    return r;
  }

  void set_split_k(std::int64_t splits) override { split_k_ = splits; }
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
  static constexpr double ref_threads = 1 << 21;

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
      MATMUL_CUBLAS_TRY(cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(s_.n), static_cast<int>(s_.m), static_cast<int>(s_.k), &one,
                                    b_.data(), static_cast<int>(s_.n), a_.data(), static_cast<int>(s_.k), &zero, c_.data(), static_cast<int>(s_.n)));
    else
      MATMUL_CUBLAS_TRY(cublasDgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(s_.n), static_cast<int>(s_.m), static_cast<int>(s_.k), &one,
                                    b_.data(), static_cast<int>(s_.n), a_.data(), static_cast<int>(s_.k), &zero, c_.data(), static_cast<int>(s_.n)));
  }

  /// SGEMM with CUBLAS_COMPUTE_32F_FAST_TF32: cuBLAS's own single-pass TF32 tensor-core mode (its
  /// error is TF32's, ~2^-11 per product: for the table only, it fails the FP32 tolerance).
  void cublas_tf32() {
    const float one = 1, zero = 0;
    MATMUL_CUBLAS_TRY(cublasGemmEx(blas_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(s_.n), static_cast<int>(s_.m), static_cast<int>(s_.k),
                                   &one, b_.data(), CUDA_R_32F, static_cast<int>(s_.n), a_.data(), CUDA_R_32F, static_cast<int>(s_.k), &zero,
                                   c_.data(), CUDA_R_32F, static_cast<int>(s_.n), CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
  }

  unsigned grid_for(idx work, idx per_block) const {
    return static_cast<unsigned>(std::clamp<idx>((work + per_block - 1) / per_block, 1, idx{prop_.multiProcessorCount} * 64));
  }

  template <class Cfg>
  void launch_tiled() {
    using L = k::TileLayout<T, Cfg>;
    auto kernel = k::tiled_level<T, Cfg>;
    TALLY_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(L::smem_bytes)));
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
  SplitGrid split_k_grid(Kernel kernel, int bm, int bn, int bk, dim3 block, std::size_t smem) {
    TALLY_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    int per_sm = 0;
    TALLY_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, static_cast<int>(block.x * block.y), smem));
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
  template <class Kernel>
  void launch_split_k(Kernel kernel, int bm, int bn, int bk, dim3 block, std::size_t smem, bool vec_a, bool vec_b) {
    const SplitGrid g = split_k_grid(kernel, bm, bn, bk, block, smem);
    kernel<<<g.grid, block, smem, stream_>>>(a_.data(), b_.data(), c_.data(), s_.m, s_.n, s_.k, g.chunk, partials_.data(),
                                             tickets_.data(), vec_a, vec_b);
    TALLY_CHECK_LAUNCH();
  }

  template <class Cfg>
  void launch_gang() {
    using L = k::TileLayout<T, Cfg>;
    launch_split_k(k::gang_level<T, Cfg>, Cfg::BM, Cfg::BN, Cfg::BK, dim3(Cfg::group_threads, Cfg::G), L::smem_bytes,
                   s_.k % L::V == 0, s_.n % L::V == 0);
  }

  template <class Cfg>
  void launch_gang_tc() {
    const bool vec_a = s_.k % Cfg::CH == 0, vec_b = s_.n % Cfg::CH == 0;
    launch_split_k(vec_a && vec_b ? k::tc::gang_level_tc<Cfg, true> : k::tc::gang_level_tc<Cfg, false>, Cfg::BM, Cfg::BN,
                   Cfg::BK, dim3(Cfg::group_threads, Cfg::KG), Cfg::smem_bytes, vec_a, vec_b);
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
    const CUresult r = encode_(&map, sizeof(T) == 4 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : CU_TENSOR_MAP_DATA_TYPE_FLOAT64, 2, const_cast<T*>(base), dims, strides, box, unit,
                               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                               l2_promote ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B : CU_TENSOR_MAP_L2_PROMOTION_NONE,
                               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) throw Error("cuTensorMapEncodeTiled failed with error " + std::to_string(static_cast<int>(r)));
    return map;
  }

  /// The Gram tiles fed by tensor copies: sm_90, K and N multiples of 16 bytes' worth (row strides).
  template <class Cfg>
  void launch_gang_tma(bool l2_promote = true) {
    auto kernel = k::tc::gang_level_tma<Cfg>;
    const dim3 block(Cfg::group_threads, Cfg::KG);
    const SplitGrid g = split_k_grid(kernel, Cfg::BM, Cfg::BN, Cfg::BK, block, Cfg::smem_bytes);
    if (!maps_)
      maps_ = {tensor_map(a_.data(), s_.m, s_.k, Cfg::tile_w, Cfg::BM, l2_promote), tensor_map(b_.data(), s_.k, s_.n, Cfg::tile_w, Cfg::BK, l2_promote)};
    kernel<<<g.grid, block, Cfg::smem_bytes, stream_>>>(maps_->first, maps_->second, c_.data(), s_.m, s_.n, s_.k, g.chunk,
                                                       partials_.data(), tickets_.data());
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
    return std::max(s_.m, s_.n) > 32 && tensor_cores_ok<Cfg>();
  }
  template <class Cfg>
  [[nodiscard]] bool tensor_cores_ok() const {
    return s_.m <= Cfg::BM && s_.n <= Cfg::BN && prop_.major >= 8 && s_.k >= Cfg::min_k;
  }

  void launch(Level level) {
    if (exact_) return exact_->multiply<T>(level, a_.data(), b_.data(), c_.data(), s_, stream_, prop_.multiProcessorCount);
    const idx mn = s_.m * s_.n;
    switch (level) {
      case Level::vector:
        k::vector_level<T><<<grid_for(mn, 8), 256, 0, stream_>>>(a_.data(), b_.data(), c_.data(), s_.m, s_.n, s_.k);
        TALLY_CHECK_LAUNCH();
        return;
      case Level::worker:
        k::worker_level<T><<<grid_for(s_.m * ((s_.n + 31) / 32), 1), dim3(32, 8), 0, stream_>>>(a_.data(), b_.data(), c_.data(), s_.m, s_.n, s_.k);
        TALLY_CHECK_LAUNCH();
        return;
      case Level::worker_vector:
        k::worker_vector_level<T><<<grid_for(mn, 1), 256, 0, stream_>>>(a_.data(), b_.data(), c_.data(), s_.m, s_.n, s_.k);
        TALLY_CHECK_LAUNCH();
        return;
      case Level::gang: {
        const idx big = std::max(s_.m, s_.n);
        if (big <= 16) {
          if constexpr (sizeof(T) == 8) {
            if (use_tma() && tensor_cores_ok<TcDouble16Tma>()) launch_gang_tma<TcDouble16Tma>(false);
            else launch_gang<Ts16d>();  // double: half the slice, the same bytes
          } else if (tensor_cores_ok<Tc16Float>()) launch_gang_tc<Tc16Float>();
          else launch_gang<Ts16>();
        }
        else if (big <= 32) launch_gang<Ts32>();
        else if (big <= 64) {
          if (!use_tensor_cores()) launch_gang<Ts64>();
          else if constexpr (sizeof(T) == 4) {
            if (use_tma()) launch_gang_tma<TcFloatTma>();
            else launch_gang_tc<TcFloat>();
          }
          else if (use_tma()) launch_gang_tma<TcDoubleTma>(false);
          else launch_gang_tc<TcDouble>();
        }
        else launch_gang<Big>();
        return;
      }
      case Level::tiled:
        launch_tiled<Big>();
        return;
      case Level::tiled_tc:
        if (prop_.major < 8) throw InputError("--level tiled-tc: needs the tensor cores of sm_80 or later; device " + std::string(prop_.name) + " is sm_" + std::to_string(prop_.major * 10 + prop_.minor));
        if constexpr (sizeof(T) == 4) {
          if (use_wgmma()) launch_tiled_wgmma();
          else if (k::tc::tf32x3_within_tolerance(s_.k, TcTiled::chain_steps)) launch_tiled_tc<TcTiled>();
          else launch_tiled<Big>();  // K < 77: FP32 on the CUDA cores (tiled_tc.cuh)
        } else {
          launch_tiled_tc<TcTiledD>();
        }
        return;
    }
  }

  /// tiled-tc's wgmma kernel (tiled_wgmma.cuh): built for sm_90a, run on sm_90 with K and N multiples
  /// of 4 (the tensor maps' 16-byte row strides) and K where its chains keep 3xTF32 within tolerance.
  [[nodiscard]] bool use_wgmma() const {
    return k::wg::built() && prop_.major == 9 && prop_.minor == 0 && s_.k % 4 == 0 && s_.n % 4 == 0 &&
           k::tc::tf32x3_within_tolerance(s_.k, k::wg::chain_steps);
  }
  void launch_tiled_wgmma() {
#if TALLY_MATMUL_WGMMA_BUILT
    if constexpr (sizeof(T) == 4) {
      if (!wg_maps_)
        wg_maps_ = {tensor_map(a_.data(), s_.m, s_.k, 32, k::wg::BM, true), tensor_map(b_.data(), s_.k, s_.n, 32, k::wg::BK, true)};
      k::wg::launch_tiled(wg_maps_->first, wg_maps_->second, c_.data(), s_.m, s_.n, s_.k, stream_);
    }
#endif
  }

  template <class Cfg>
  void launch_tiled_tc() {
    const bool vec = s_.k % Cfg::CH == 0 && s_.n % Cfg::CH == 0;
    auto kernel = vec ? k::tc::tiled_level_tc<Cfg, true> : k::tc::tiled_level_tc<Cfg, false>;
    TALLY_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(Cfg::smem_bytes)));
    const idx tiles = ((s_.m + Cfg::BM - 1) / Cfg::BM) * ((s_.n + Cfg::BN - 1) / Cfg::BN);
    kernel<<<static_cast<unsigned>(tiles), dim3(Cfg::group_threads, Cfg::KG), Cfg::smem_bytes, stream_>>>(
        a_.data(), b_.data(), c_.data(), s_.m, s_.n, s_.k);
    TALLY_CHECK_LAUNCH();
  }

  Shape s_;
  idx split_k_ = 0;
  std::unique_ptr<ExactCuda> exact_;  // set: matmul --exact
  typename Engine<T>::Combine combine_;
  cudaDeviceProp prop_{};
  cudaStream_t stream_{};
  cublasHandle_t blas_{};
  DeviceBuffer<T> a_, b_, c_, partials_;
  DeviceBuffer<unsigned int> tickets_;
  PFN_cuTensorMapEncodeTiled_v12000 encode_ = nullptr;
  std::optional<std::pair<CUtensorMap, CUtensorMap>> maps_;  // A and B for the tensor-copy tile, made once
  std::optional<std::pair<CUtensorMap, CUtensorMap>> wg_maps_;  // A and B for tiled-tc's wgmma kernel, made once
};

}  // namespace

template <class T>
std::unique_ptr<Engine<T>> make_cuda_engine(Shape s, int device) {
  if (s.m > INT32_MAX || s.n > INT32_MAX || s.k > INT32_MAX) throw InputError("sizes above 2^31-1 are not supported by cuBLAS");
  return std::make_unique<CudaEngine<T>>(s, device);
}
template std::unique_ptr<Engine<float>> make_cuda_engine<float>(Shape, int);
template std::unique_ptr<Engine<double>> make_cuda_engine<double>(Shape, int);

}  // namespace tally::matmul
