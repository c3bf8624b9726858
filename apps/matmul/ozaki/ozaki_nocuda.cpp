// Builds without the CUDA backend: the Ozaki level's GPU parts are bad input (exit 2), never a crash.
#include "ozaki.hpp"
#include "tally/common/error.hpp"

namespace tally::matmul::ozaki {

double int8_gemm_seconds(Shape, int, int) {
  throw InputError("--level ozaki: the INT8 GEMM needs the CUDA backend; this build has none");
}

}  // namespace tally::matmul::ozaki
