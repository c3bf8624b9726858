// The rank runtime's device side: the device, its memory and copies, and NCCL (with
// TALLY_HAS_NCCL). Every CUDA and NCCL call is checked.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "ranks/impl.hpp"
#include "tally/common/cuda_check.cuh"

#ifdef TALLY_HAS_NCCL
#include <nccl.h>
#endif

namespace tally::ranks::rank_detail {

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

#ifdef TALLY_HAS_NCCL
namespace {

void check_nccl(ncclResult_t rc, const char* call, const char* file, int line, ncclComm_t comm = nullptr) {
  if (rc == ncclSuccess) return;
  std::string msg =
      std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " + ncclGetErrorString(rc);
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
  if (!comm) return;
  // A destructor's path: a failure is reported, not thrown.
  if (const ncclResult_t rc = ncclCommDestroy(static_cast<ncclComm_t>(comm)); rc != ncclSuccess)
    std::fprintf(stderr, "tally: ncclCommDestroy failed: %s\n", ncclGetErrorString(rc));
}

void nccl_allgather(void* comm, const void* send, void* recv, std::size_t count, DType t, stream_t stream) {
  TALLY_NCCL_CHECK(ncclAllGather(send, recv, count, nccl_type(t), static_cast<ncclComm_t>(comm), stream));
}

void nccl_allreduce(void* comm, const void* send, void* recv, std::size_t count, DType t, NativeOp op,
                    stream_t stream) {
  const ncclRedOp_t o = op == NativeOp::sum    ? ncclSum
                        : op == NativeOp::prod ? ncclProd
                        : op == NativeOp::max  ? ncclMax
                                               : ncclMin;
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
    ncclGroupEnd();  // closes the group before the first failure is reported (a second one adds nothing)
    throw;
  }
  TALLY_NCCL_CHECK(ncclGroupEnd());
}
#endif

}  // namespace tally::ranks::rank_detail
