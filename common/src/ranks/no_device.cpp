// The device hooks of the rank runtime in a build without CUDA: no device buffers to move.

#include <stdexcept>

#include "ranks/impl.hpp"

namespace tally::ranks::rank_detail {

namespace {
[[noreturn]] void no_cuda(const char* what) {
  throw std::invalid_argument(std::string(what) + ": device memory, but this build has no CUDA backend");
}
}  // namespace

void set_device(int) { no_cuda("use_device"); }
void* device_alloc(std::size_t) { no_cuda("the rank runtime"); }
void device_free(void*) noexcept {}
void copy_to_host(void*, const void*, std::size_t, stream_t) { no_cuda("the rank runtime"); }
void copy_to_device_async(void*, const void*, std::size_t, stream_t) { no_cuda("the rank runtime"); }
void copy_device_async(void*, const void*, std::size_t, stream_t) { no_cuda("allreduce"); }

}  // namespace tally::ranks::rank_detail
