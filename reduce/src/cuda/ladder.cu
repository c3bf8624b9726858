// The seeds' ladder of strategies (to be written: see issue 3).
#include <stdexcept>

#include "instantiate.hpp"
#include "tally/reduce/reduce.hpp"

namespace tally::reduce::detail {

template <class Op, class T, class Acc>
void reduce_cuda_ladder(Strategy s, const Problem&, Acc*, Workspace&, stream_t) {
  throw std::invalid_argument("tally::reduce: strategy " + to_string(s) + " is not available yet");
}

#define TALLY_INSTANTIATE_LADDER(Op, T, Acc) \
  template void reduce_cuda_ladder<Op, T, Acc>(Strategy, const Problem&, Acc*, Workspace&, stream_t);
TALLY_REDUCE_FOR_EACH(TALLY_INSTANTIATE_LADDER)

}  // namespace tally::reduce::detail
