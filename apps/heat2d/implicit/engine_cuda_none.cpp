// A build without the CUDA backend: the CUDA engine is not there to make.
#include "engine.hpp"
#include "tally/common/error.hpp"

namespace tally::heat2d::implicit {

std::unique_ptr<Engine> make_cuda_engine(const Deck&, const Grid&, int) {
  throw Error("heat2d --deck: this build has no CUDA backend");
}

}  // namespace tally::heat2d::implicit
