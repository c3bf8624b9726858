#pragma once
// The stream type of every asynchronous call, without the CUDA headers (plain C++ translation units
// include the libraries' headers too).

struct CUstream_st;

namespace tally {
/// A CUDA stream (the same type as cudaStream_t); nullptr is the legacy default stream.
using stream_t = CUstream_st*;
}  // namespace tally
