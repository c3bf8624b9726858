#pragma once
// The per-sample arithmetic shared by the CPU and the GPU code, written once so that both count the
// same points bit for bit.

#include <cmath>
#include <cstdint>

#include "tally/reduce/config.hpp"  // TALLY_HD

namespace tally::mcpi {

/// curand_uniform's conversion (curand_uniform.h: x * CURAND_2POW32_INV + CURAND_2POW32_INV / 2):
/// the float nearest x, times 2^-32 (exact), plus 2^-33 rounded to float: a value in (0, 1].
/// A fused multiply-add gives the same bits, since the product is exact.
TALLY_HD float uniform_from_bits(std::uint32_t x) {
  constexpr float two_pow_m32 = 2.3283064e-10f;  // exactly 2^-32 (CURAND_2POW32_INV)
  return static_cast<float>(x) * two_pow_m32 + two_pow_m32 / 2.0f;
}

/// fma(x, x, y*y) <= 1: y*y rounded to float, then one fused multiply-add with a single rounding
/// (IEEE 754 fusedMultiplyAdd), so the CPU and the GPU count exactly the same points. The
/// intrinsics keep nvcc from contracting or reassociating anything else; the host code calls
/// std::fma (correctly rounded) and is compiled with -ffp-contract=off.
TALLY_HD bool in_quarter_disc(float x, float y) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(x, x, __fmul_rn(y, y)) <= 1.0f;
#else
  return std::fma(x, x, y * y) <= 1.0f;
#endif
}

}  // namespace tally::mcpi
