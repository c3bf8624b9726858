// Builds without the CUDA backend: asking for it is bad input (exit 2), never a crash.
#include "matmul.hpp"
#include "tally/common/error.hpp"

namespace tally::matmul {

template <class T>
std::unique_ptr<Engine<T>> make_cuda_engine(Shape, int) {
  throw InputError("--backend cuda: this build has no CUDA backend");
}
template std::unique_ptr<Engine<float>> make_cuda_engine<float>(Shape, int);
template std::unique_ptr<Engine<double>> make_cuda_engine<double>(Shape, int);

}  // namespace tally::matmul
