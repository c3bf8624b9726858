// cuRAND's host-side generator (curandCreateGeneratorHost): runs on the CPU, needs no GPU, and
// produces the same streams as cuRAND's device generators. Host code only; compiled by nvcc because
// curand.h includes the CUDA runtime headers.
#include <curand.h>

#include <algorithm>
#include <string>
#include <vector>

#include "mcpi.hpp"
#include "mcpi_curand.hpp"
#include "tally/common/error.hpp"
#include "tally/common/timing.hpp"

namespace tally::mcpi::detail {

bool curand_host_available() { return true; }

Result curand_host_hits(Generator g, std::uint64_t seed, std::int64_t first, std::int64_t n, std::int64_t batch,
                        const ProgressFn& progress) {
  Result r;
  HostTimer t;
  CurandGenerator gen(g, seed, first, /*host=*/true);
  r.setup_s = t.seconds();
  t.restart();
  const std::int64_t chunk = std::min<std::int64_t>(batch, std::int64_t{1} << 24);  // samples per call
  std::vector<float> buf(static_cast<std::size_t>(2 * chunk));
  count_in_batches(n, batch, r, progress, [&](std::int64_t, std::int64_t bn) {  // the generator streams on
    std::int64_t bh = 0;
    for (std::int64_t c = 0; c < bn; c += chunk) {
      const std::int64_t m = std::min(chunk, bn - c);
      gen.uniforms(buf.data(), static_cast<std::size_t>(2 * m));
      bh += count_hits_cpu(buf.data(), m, is_quasi(g));
    }
    return bh;
  });
  r.generate_count_s = t.seconds();
  return r;
}

std::vector<float> curand_host_uniforms(Generator g, std::uint64_t seed, std::uint64_t first_uniform,
                                        std::size_t count) {
  curandGenerator_t h = nullptr;
  CurandGenerator::check(curandCreateGeneratorHost(&h, CurandGenerator::rng_type(g)), "curandCreateGeneratorHost");
  std::vector<float> out(count);
  auto run = [&] {
    if (!is_quasi(g))
      CurandGenerator::check(curandSetPseudoRandomGeneratorSeed(h, seed), "curandSetPseudoRandomGeneratorSeed");
    CurandGenerator::check(curandSetGeneratorOffset(h, first_uniform), "curandSetGeneratorOffset");
    CurandGenerator::check(curandGenerateUniform(h, out.data(), count), "curandGenerateUniform");
  };
  try {
    run();
  } catch (...) {
    curandDestroyGenerator(h);
    throw;
  }
  curandDestroyGenerator(h);
  return out;
}

}  // namespace tally::mcpi::detail
