#pragma once
// Shared by host and device code: the host/device qualifier and the stream type. No CUDA headers,
// so plain C++ translation units (Eigen, HDF5, CLI) can include every tally/reduce/*.hpp.

#if defined(__CUDACC__)
#define TALLY_HD __host__ __device__ __forceinline__
#else
#define TALLY_HD inline
#endif

struct CUstream_st;

namespace tally {
/// A CUDA stream (the same type as cudaStream_t); nullptr is the legacy default stream.
using stream_t = CUstream_st*;
}  // namespace tally
