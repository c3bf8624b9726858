// The warp-specialised double Gram tile (gram_ws.cuh), compiled for sm_90a only.
#include "gram_ws.cuh"

#include <cstdint>

#include "tally/common/cuda_check.cuh"
#include "tensor_core.cuh"

#if !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TALLY_WS_ARCH 1  // host pass, or the sm_90a device pass
#else
#define TALLY_WS_ARCH 0
#endif

namespace tally::matmul::kernels::ws {
namespace {

using tc::mbar_arrive;
using tc::mbar_init;
using tc::mbar_wait;
using tc::set_max_regs;

// The consumers as in TcDoubleTma (tensor_core.cuh): 64 x 32 per warp, worker groups splitting each
// slice, a group's k-steps of a slice in a rolled loop. H200, 2026-11-24 (apps/matmul/README.md), all
// slower than TcDoubleTma's synchronous loop: 0 (its slices and stages: 96 x 2, the same bits),
// 1 (32 x 7, the fastest 64 x 64 one), 2 (64 x 32 tiles, two blocks a K range reading A's slices
// once from DRAM and twice from L2, half the K ranges; 64 x 4, the fastest of those).
using Ws0 = tc::TcConfig<tc::Dmma<8>, 64, 64, 64, 32, 4, 96, 2, 1, true, 1, true>;
using Ws1 = tc::TcConfig<tc::Dmma<8>, 64, 64, 64, 32, 4, 32, 7, 1, true, 1, true>;
using Ws2 = tc::TcConfig<tc::Dmma<8>, 64, 32, 64, 32, 8, 64, 4, 1, true, 1, true>;

// Registers: the consumers' tile needs 238 (TcDoubleTma); 4 producer warps at 24 and 8 consumer warps
// at 240 take exactly what the block holds at entry (384 threads at 168: 64512 of the 64K).
constexpr int producer_regs = 24, consumer_regs = 240, producer_threads = 128;

/// bar.sync 1 among the consumer threads alone (the producer warpgroup has left).
template <int Threads>
__device__ __forceinline__ void consumers_sync() {
  asm volatile("bar.sync 1, %0;\n" ::"n"(Threads) : "memory");
}

/// Block (group_threads, KG + 128 / group_threads): rows y < KG the consumers (worker group y,
/// TcProduct's layout), the rows after them the producer warpgroup.
template <class Cfg>
__global__ void __launch_bounds__(Cfg::threads + producer_threads, 1)
    gram_ws_kernel(const __grid_constant__ CUtensorMap ta, const __grid_constant__ CUtensorMap tb, double* __restrict__ d_c,
                   idx m, idx n, idx k, idx k_chunk, double* __restrict__ d_partials, unsigned int* d_tickets) {
#if TALLY_WS_ARCH
  using T = double;
  using P = tc::TcProduct<Cfg>;
  constexpr int S = Cfg::stages, C = Cfg::threads;
  constexpr idx width = idx{Cfg::BM} * Cfg::BN;
  static_assert(Cfg::tma && producer_threads % Cfg::group_threads == 0 && C % 128 == 0, "warpgroups of TcProduct's 2-D layout");
  static_assert(producer_threads * producer_regs + C * consumer_regs <= 65536, "register file");
  static_assert(std::size_t{Cfg::MT} * Cfg::NT * 4 * C * sizeof(T) <= std::size_t{S} * Cfg::stage_elems * sizeof(T),
                "the groups' tiles fit the stages' shared memory");
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  T* smem = reinterpret_cast<T*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t{1023});
  __shared__ std::uint64_t full[S], empty[S];
  __shared__ bool last;
  if (threadIdx.x == 0 && threadIdx.y == 0)
    for (int s = 0; s < S; ++s) {
      mbar_init(&full[s], 1);           // the producer's expect_tx; then the copies' bytes
      mbar_init(&empty[s], C / 32);     // one arrival per consumer warp
    }
  __syncthreads();
  const SplitTile st(n, k, k_chunk, Cfg::BM, Cfg::BN);
  const idx slices = (st.k_end - st.k_begin + Cfg::BK - 1) / Cfg::BK;

  if (threadIdx.y >= Cfg::KG) {  // ---- producer warpgroup: one thread issues every slice ----------------
    set_max_regs<producer_regs, false>();
    if (threadIdx.y == Cfg::KG && threadIdx.x == 0) {
      // 32-bit counters (K <= 2^31 - 1, host): at 24 registers, 64-bit ones spill.
      const int row0 = static_cast<int>(st.row0), col0 = static_cast<int>(st.col0), k_end = static_cast<int>(st.k_end);
      int s = 0;
      unsigned round = 0;  // parity of t / S
      for (int k0 = static_cast<int>(st.k_begin), t = 0; k0 < k_end; k0 += Cfg::BK, ++t) {
        if (t >= S) mbar_wait(&empty[s], round ^ 1u);  // every consumer warp is done with slice t - S
        P::issue_slice(smem + s * Cfg::stage_elems, &ta, &tb, row0, col0, k0, &full[s]);
        if (++s == S) s = 0, round ^= 1u;
      }
    }
  } else {  // ---- consumers: TcProduct's warps ----------------------------------------------------------
    set_max_regs<consumer_regs, true>();
    P p;
    P::for_each_c([&](int mt, int nt, int i) { p.acc[mt][nt][i] = Sum::identity<T>(); });
    const int lane = static_cast<int>(threadIdx.x) % 32;
    const int k_first = static_cast<int>(threadIdx.y) * Cfg::steps * Cfg::Math::km;
    int s = 0;
    unsigned round = 0;
    for (idx t = 0; t < slices; ++t) {
      mbar_wait(&full[s], round);  // slice t has landed
      p.multiply(smem + s * Cfg::stage_elems, k_first, lane, t, slices);
      __syncwarp();  // the warp's fragment loads of the stage are done ...
      if (lane == 0) mbar_arrive(&empty[s]);  // ... and ordered before this release
      if (++s == S) s = 0, round ^= 1u;
    }
    // The worker level: groups 1.. KG - 1 added to group 0's tile in group order (worker_reduce's
    // order; the stages' shared memory is free once every consumer is past its last slice).
    const int x = static_cast<int>(threadIdx.x), y = static_cast<int>(threadIdx.y);
    auto slot = [&](int mt, int nt, int i, int g) { return smem + (((mt * Cfg::NT + nt) * 4 + i) * Cfg::KG + g) * Cfg::group_threads + x; };
    consumers_sync<C>();
    if (y > 0) P::for_each_c([&](int mt, int nt, int i) { *slot(mt, nt, i, y) = p.acc[mt][nt][i]; });
    consumers_sync<C>();
    if (y == 0)
      P::for_each_c([&](int mt, int nt, int i) {
        for (int g = 1; g < Cfg::KG; ++g) p.acc[mt][nt][i] = Sum::combine(p.acc[mt][nt][i], *slot(mt, nt, i, g));
      });
    // The gang level: split_k_gang's steps with the consumers' barrier (gang_arrive's, by thread 0).
    p.store_partial(d_partials + (st.tile * st.ksplit + st.split) * width);
    split_k_combine<T, Cfg::BM, Cfg::BN, C>(st, d_c, m, n, d_partials, d_tickets, [&](unsigned int* ticket, idx count) {
      consumers_sync<C>();  // the partial (or group sum) is written: it precedes thread 0's release
      if (x == 0 && y == 0) last = dev::take_ticket(ticket, static_cast<unsigned int>(count));
      consumers_sync<C>();  // thread 0's acquire reaches the consumers
      return last;
    });
  }
#endif
}

template <class Cfg>
GramWs shape_of() {
  return {reinterpret_cast<const void*>(&gram_ws_kernel<Cfg>), Cfg::BM, Cfg::BN, Cfg::BK, Cfg::tile_w,
          dim3(Cfg::group_threads, Cfg::KG + producer_threads / Cfg::group_threads), Cfg::smem_bytes};
}

template <class Cfg>
void launch(dim3 grid, const CUtensorMap& ta, const CUtensorMap& tb, double* d_c, idx m, idx n, idx k, idx k_chunk,
            double* d_partials, unsigned int* d_tickets, cudaStream_t stream) {
  const GramWs g = shape_of<Cfg>();
  gram_ws_kernel<Cfg><<<grid, g.block, g.smem, stream>>>(ta, tb, d_c, m, n, k, k_chunk, d_partials, d_tickets);
  TALLY_CHECK_LAUNCH();
}

}  // namespace

GramWs gram_ws(int variant) {
  switch (variant) {
    case 1: return shape_of<Ws1>();
    case 2: return shape_of<Ws2>();
    default: return shape_of<Ws0>();
  }
}

void launch_gram_ws(int variant, dim3 grid, const CUtensorMap& ta, const CUtensorMap& tb, double* d_c, std::int64_t m,
                    std::int64_t n, std::int64_t k, std::int64_t k_chunk, double* d_partials, unsigned int* d_tickets,
                    cudaStream_t stream) {
  switch (variant) {
    case 1: return launch<Ws1>(grid, ta, tb, d_c, m, n, k, k_chunk, d_partials, d_tickets, stream);
    case 2: return launch<Ws2>(grid, ta, tb, d_c, m, n, k, k_chunk, d_partials, d_tickets, stream);
    default: return launch<Ws0>(grid, ta, tb, d_c, m, n, k, k_chunk, d_partials, d_tickets, stream);
  }
}

}  // namespace tally::matmul::kernels::ws
