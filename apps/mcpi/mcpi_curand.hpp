#pragma once
// A cuRAND generator (host API) positioned at a sample, shared by the CPU path (host-side generator)
// and the CUDA host-API pipeline (device generator). Include only from .cu files (curand.h pulls in
// the CUDA runtime headers).

#include <curand.h>

#include <cstdint>
#include <string>

#include "mcpi.hpp"
#include "tally/common/error.hpp"

namespace tally::mcpi::detail {

class CurandGenerator {
 public:
  static void check(curandStatus_t s, const char* what) {
    if (s != CURAND_STATUS_SUCCESS)
      throw Error(std::string("cuRAND: ") + what + " failed (curandStatus " + std::to_string(static_cast<int>(s)) +
                  ")");
  }
  static curandRngType_t rng_type(Generator g) {
    switch (g) {
      case Generator::philox: return CURAND_RNG_PSEUDO_PHILOX4_32_10;
      case Generator::xorwow: return CURAND_RNG_PSEUDO_XORWOW;
      case Generator::mrg32k3a: return CURAND_RNG_PSEUDO_MRG32K3A;
      case Generator::sobol: return CURAND_RNG_QUASI_SOBOL32;
      case Generator::scrambled_sobol: return CURAND_RNG_QUASI_SCRAMBLED_SOBOL32;
    }
    return CURAND_RNG_PSEUDO_PHILOX4_32_10;
  }

  /// Positioned at sample `first`: uniform 2*first (pseudo) or point `first` of both dimensions (quasi).
  CurandGenerator(Generator g, std::uint64_t seed, std::int64_t first, bool host) : quasi_(is_quasi(g)) {
    check(host ? curandCreateGeneratorHost(&gen_, rng_type(g)) : curandCreateGenerator(&gen_, rng_type(g)),
          host ? "curandCreateGeneratorHost" : "curandCreateGenerator");
    try {
      if (quasi_) {
        check(curandSetQuasiRandomGeneratorDimensions(gen_, 2), "curandSetQuasiRandomGeneratorDimensions");
        check(curandSetGeneratorOffset(gen_, static_cast<unsigned long long>(first)), "curandSetGeneratorOffset");
      } else {
        check(curandSetPseudoRandomGeneratorSeed(gen_, seed), "curandSetPseudoRandomGeneratorSeed");
        check(curandSetGeneratorOffset(gen_, 2ull * static_cast<unsigned long long>(first)),
              "curandSetGeneratorOffset");
      }
      check(curandGenerateSeeds(gen_), "curandGenerateSeeds");  // state set-up now, not in the first batch
    } catch (...) {
      curandDestroyGenerator(gen_);
      throw;
    }
  }
  ~CurandGenerator() { curandDestroyGenerator(gen_); }
  CurandGenerator(const CurandGenerator&) = delete;
  CurandGenerator& operator=(const CurandGenerator&) = delete;

  void set_stream(cudaStream_t s) { check(curandSetStream(gen_, s), "curandSetStream"); }
  /// The next `count` uniforms: pseudo: interleaved (x0, y0, x1, y1, ...); quasi: count/2 of
  /// dimension 0, then count/2 of dimension 1 (the next count/2 points).
  void uniforms(float* out, std::size_t count) {
    check(curandGenerateUniform(gen_, out, count), "curandGenerateUniform");
  }
  [[nodiscard]] curandGenerator_t get() const { return gen_; }

 private:
  curandGenerator_t gen_ = nullptr;
  bool quasi_;
};

}  // namespace tally::mcpi::detail
