#pragma once
// Shared by host and device code: the host/device qualifier and the stream type (tally::stream_t).
// No CUDA headers, so plain C++ translation units (Eigen, HDF5, CLI) can include every
// tally/reduce/*.hpp.

#if defined(__CUDACC__)
#define TALLY_HD __host__ __device__ __forceinline__
#else
#define TALLY_HD inline
#endif

#include "tally/common/stream.hpp"
