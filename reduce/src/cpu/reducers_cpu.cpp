// CPU backend of the generic reducers (ArgMax, ArgMin, MinMax, MeanVar): the header-only engine of
// generic.hpp, compiled here for the library's types.
#include "tally/reduce/detail/generic.hpp"

namespace tally::reduce::detail {

template <class R, class T>
void reducer_cpu(View<const T> in, Levels levels, typename R::value_type* out, std::int64_t) {
  generic_cpu<R, T>(in, levels, out);
}

#define TALLY_INSTANTIATE_REDUCER_CPU(R, T) \
  template void reducer_cpu<R, T>(View<const T>, Levels, typename R::value_type*, std::int64_t);
TALLY_REDUCERS_FOR_EACH(TALLY_INSTANTIATE_REDUCER_CPU)

}  // namespace tally::reduce::detail
