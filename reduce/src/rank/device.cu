// The rank level's device side: the rank-ordered fold kernel, device copies, and NCCL (with
// TALLY_HAS_NCCL). Every CUDA and NCCL call is checked.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <string>

#include "instantiate.hpp"
#include "rank/impl.hpp"
#include "tally/common/cuda_check.cuh"

#ifdef TALLY_HAS_NCCL
#include <nccl.h>
#endif

namespace tally::reduce::rank_detail {

namespace {

/// out[i] = combine(...combine(g[0][i], g[1][i])..., g[ranks-1][i]): the same sequence of combines as
/// the host fold, with the library's operators (ops.hpp: NaN propagates through Max/Min).
template <class Op, class T>
__global__ void fold_ranks_kernel(const T* __restrict__ gathered, T* __restrict__ out, std::size_t count, int ranks) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    T acc = gathered[i];
    for (int r = 1; r < ranks; ++r) acc = Op::template combine<T>(acc, gathered[static_cast<std::size_t>(r) * count + i]);
    out[i] = acc;
  }
}

}  // namespace

void set_device(int device) { TALLY_CUDA_TRY(cudaSetDevice(device)); }

void* device_alloc(std::size_t bytes) {
  void* p = nullptr;
  TALLY_CUDA_TRY(cudaMalloc(&p, bytes));
  return p;
}

void device_free(void* p) noexcept {
  if (p) cudaFree(p);  // a destructor's path: nothing to report to
}

void copy_to_host(void* dst, const void* src, std::size_t bytes, stream_t stream) {
  TALLY_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream));
  TALLY_CUDA_TRY(cudaStreamSynchronize(stream));
}

void copy_to_device_async(void* dst, const void* src, std::size_t bytes, stream_t stream) {
  TALLY_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
}

void copy_device_async(void* dst, const void* src, std::size_t bytes, stream_t stream) {
  TALLY_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
}

template <class Op, class T>
void fold_ranks_device(const T* gathered, T* out, std::size_t count, int ranks, stream_t stream) {
  constexpr int block = 256;
  const std::size_t blocks = std::min<std::size_t>((count + block - 1) / block, 65535);
  fold_ranks_kernel<Op, T><<<static_cast<unsigned>(blocks), block, 0, stream>>>(gathered, out, count, ranks);
  TALLY_CHECK_LAUNCH();
}

#define TALLY_RANK_FOLD_DEVICE(Op, T, Acc) \
  template void fold_ranks_device<Op, T>(const T*, T*, std::size_t, int, stream_t);
TALLY_REDUCE_FOR_EACH_SAME(TALLY_RANK_FOLD_DEVICE)
#undef TALLY_RANK_FOLD_DEVICE

#ifdef TALLY_HAS_NCCL
namespace {

void check_nccl(ncclResult_t rc, const char* call, const char* file, int line, ncclComm_t comm = nullptr) {
  if (rc == ncclSuccess) return;
  std::string msg = std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " + ncclGetErrorString(rc);
  if (const char* last = ncclGetLastError(comm); last && *last) msg += std::string(" (") + last + ")";
  throw Error(msg);
}
#define TALLY_NCCL_CHECK(call) check_nccl((call), #call, __FILE__, __LINE__)

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::i32: return ncclInt32;
    case DType::i64: return ncclInt64;
    case DType::f32: return ncclFloat32;
    default: return ncclFloat64;
  }
}

}  // namespace

std::vector<char> nccl_unique_id() {
  ncclUniqueId id;
  TALLY_NCCL_CHECK(ncclGetUniqueId(&id));
  return std::vector<char>(id.internal, id.internal + sizeof id.internal);
}

void* nccl_init(int nranks, const std::vector<char>& id, int rank) {
  ncclUniqueId uid;
  if (id.size() != sizeof uid.internal) throw Error("ncclCommInitRank: the broadcast NCCL id has the wrong size");
  std::copy(id.begin(), id.end(), uid.internal);
  ncclComm_t comm = nullptr;
  TALLY_NCCL_CHECK(ncclCommInitRank(&comm, nranks, uid, rank));
  return comm;
}

void nccl_destroy(void* comm) noexcept {
  if (comm) ncclCommDestroy(static_cast<ncclComm_t>(comm));  // a destructor's path: nothing to report to
}

void nccl_allgather(void* comm, const void* send, void* recv, std::size_t count, DType t, stream_t stream) {
  TALLY_NCCL_CHECK(ncclAllGather(send, recv, count, nccl_type(t), static_cast<ncclComm_t>(comm), stream));
}

void nccl_allreduce(void* comm, const void* send, void* recv, std::size_t count, DType t, NativeOp op, stream_t stream) {
  const ncclRedOp_t o = op == NativeOp::sum ? ncclSum : op == NativeOp::prod ? ncclProd : op == NativeOp::max ? ncclMax : ncclMin;
  TALLY_NCCL_CHECK(ncclAllReduce(send, recv, count, nccl_type(t), o, static_cast<ncclComm_t>(comm), stream));
}

void nccl_exchange(void* comm, const void* to_prev, void* from_prev, int prev, std::size_t n_prev, const void* to_next,
                   void* from_next, int next, std::size_t n_next, DType t, stream_t stream) {
  auto* c = static_cast<ncclComm_t>(comm);
  const ncclDataType_t type = nccl_type(t);
  TALLY_NCCL_CHECK(ncclGroupStart());
  try {
    if (prev >= 0) {
      TALLY_NCCL_CHECK(ncclRecv(from_prev, n_prev, type, prev, c, stream));
      TALLY_NCCL_CHECK(ncclSend(to_prev, n_prev, type, prev, c, stream));
    }
    if (next >= 0) {
      TALLY_NCCL_CHECK(ncclRecv(from_next, n_next, type, next, c, stream));
      TALLY_NCCL_CHECK(ncclSend(to_next, n_next, type, next, c, stream));
    }
  } catch (...) {
    ncclGroupEnd();  // close the group before reporting
    throw;
  }
  TALLY_NCCL_CHECK(ncclGroupEnd());
}
#endif

}  // namespace tally::reduce::rank_detail
