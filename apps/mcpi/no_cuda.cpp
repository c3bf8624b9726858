// A build without the CUDA toolkit: no GPU backend and no cuRAND host generator. The CPU backend
// still has its own Philox4x32-10.
#include "mcpi.hpp"
#include "tally/common/error.hpp"

namespace tally::mcpi {

Result run_cuda(const Params&, int, const ProgressFn&) {
  throw InputError("--backend cuda: this build has no CUDA backend");
}
std::unique_ptr<CudaCounter> make_cuda_counter(int, Generator, Api, std::uint64_t, std::int64_t, detail::PhiloxLoop) {
  throw InputError("--bench --backend cuda: this build has no CUDA backend");
}
std::int64_t reference_uniform4(int, std::uint64_t, std::int64_t, double*) {
  throw InputError("--bench --backend cuda: this build has no CUDA backend");
}
double cuda_copy_gbs(int, std::size_t, int) {
  throw InputError("--bench --backend cuda: this build has no CUDA backend");
}

namespace detail {
bool curand_host_available() { return false; }
Result curand_host_hits(Generator, std::uint64_t, std::int64_t, std::int64_t, std::int64_t, const ProgressFn&) {
  throw InputError("cuRAND's host generator is not available in this build (no CUDA toolkit)");
}
std::vector<float> curand_host_uniforms(Generator, std::uint64_t, std::uint64_t, std::size_t) {
  throw InputError("cuRAND's host generator is not available in this build (no CUDA toolkit)");
}
std::int64_t philox_fused_hits_cuda(std::uint64_t, std::int64_t, std::int64_t, PhiloxLoop) {
  throw InputError("this build has no CUDA backend");
}
}  // namespace detail

}  // namespace tally::mcpi
