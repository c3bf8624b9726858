#pragma once
// The ladder's reference rung, cub::DeviceReduce, compiled in its own file (CUB is heavy to build).
#include <cstdint>

#include "tally/reduce/reduce.hpp"

namespace tally::reduce::detail {

/// cub::DeviceReduce::Reduce over in[0, n) into *d_out with Op (NaN-propagating max/min), its temporary
/// storage taken from the workspace. Asynchronous on `stream`.
template <class Op, class T, class Acc>
void ladder_cub(const T* in, std::int64_t n, Acc* d_out, Workspace& ws, stream_t stream);

}  // namespace tally::reduce::detail
