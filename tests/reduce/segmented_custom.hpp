#pragma once
// The test reducers of custom_reducers.hpp over segments through the header-only engines, as a user's
// code would: segmented_generic.hpp on the CPU, segmented.cuh on CUDA (segmented_custom_cuda.cu, nvcc only).
#include <cstdint>
#include <span>

#include "custom_reducers.hpp"
#include "tally/reduce/segmented.hpp"

namespace tally::test {

template <class R, class T, class Off>
void custom_segmented_cuda(std::span<const T> in, std::span<const Off> offsets, std::span<typename R::value_type> d_out,
                           reduce::Workspace& ws);

}  // namespace tally::test
