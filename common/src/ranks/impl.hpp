#pragma once
// The rank runtime's private state (Comm::Impl) and the hooks into the device code (device.cpp, or
// no_device.cpp in a build without CUDA). A default Comm has no Impl: one rank, every call local.

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "tally/ranks/comm.hpp"

#ifdef TALLY_HAS_MPI
#include <mpi.h>
#endif

namespace tally::ranks {

struct Comm::Impl {
#ifdef TALLY_HAS_MPI
  MPI_Comm world = MPI_COMM_NULL;  // MPI_COMM_WORLD (not freed)
  MPI_Comm local = MPI_COMM_NULL;  // this node's ranks (MPI_Comm_split_type shared)
#endif
  int rank = 0, size = 1, local_rank = 0, local_size = 1;
  int device = -1;
  bool device_set = false, shares_device = false;
  void* nccl = nullptr;  // ncclComm_t, when device buffers travel by NCCL
  // Scratch of the rank-ordered fold (every rank's values) and the caller's (Comm::device_scratch),
  // each grown once to the largest call: no allocation (and no cudaFree's device wait) per call.
  std::vector<std::byte> host_scratch, host_scratch2;
  struct DeviceBuffer {
    void* p = nullptr;
    std::size_t bytes = 0;
    void* grow(std::size_t need);  // at least `need` bytes; contents not kept
  } device_gathered, device_caller;
  ~Impl();
};

namespace rank_detail {

/// Throws tally::Error "<call> failed at file:line: <MPI_Error_string>" when rc is not MPI_SUCCESS.
void check_mpi(int rc, const char* call, const char* file, int line);
#define TALLY_MPI_CHECK(call) ::tally::ranks::rank_detail::check_mpi((call), #call, __FILE__, __LINE__)

/// The whole element count of a call as an MPI count (std::invalid_argument beyond INT_MAX).
int mpi_count(std::size_t n, const char* what);

// ---- device hooks (device.cpp; without CUDA, no_device.cpp throws) -----------------------------------
void set_device(int device);
void* device_alloc(std::size_t bytes);
void device_free(void* p) noexcept;
void copy_to_host(void* dst, const void* src, std::size_t bytes, stream_t stream);  // enqueue + wait
void copy_to_device_async(void* dst, const void* src, std::size_t bytes, stream_t stream);
void copy_device_async(void* dst, const void* src, std::size_t bytes, stream_t stream);

// NCCL (device.cpp, only with TALLY_HAS_NCCL).
std::vector<char> nccl_unique_id();
void* nccl_init(int nranks, const std::vector<char>& id, int rank);
void nccl_destroy(void* comm) noexcept;
void nccl_allgather(void* comm, const void* send, void* recv, std::size_t count, DType t, stream_t stream);
void nccl_allreduce(void* comm, const void* send, void* recv, std::size_t count, DType t, NativeOp op, stream_t stream);
/// One ncclGroupStart ... ncclGroupEnd of sends/receives to neighbours (peer < 0: none).
void nccl_exchange(void* comm, const void* to_prev, void* from_prev, int prev, std::size_t n_prev, const void* to_next,
                   void* from_next, int next, std::size_t n_next, DType t, stream_t stream);

}  // namespace rank_detail
}  // namespace tally::ranks
