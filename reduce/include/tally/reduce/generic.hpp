#pragma once
// The generic engine for reducers (reducer.hpp), CPU backend, header-only: the library's ArgMax,
// ArgMin, MinMax and MeanVar run through it, and so does a user's reducer:
//
//   #include <tally/reduce/generic.hpp>
//   reduce_custom_cpu<BBox2>(View<const Point>::flat(pts, n), Levels::all(), std::span<Box>(&box, 1));
//
// (generic.cuh is the CUDA engine; reduce_custom there takes a Backend.) Each output's elements are
// numbered row-major over the reduced axes (the index load() sees; unflatten() inverts it). The work
// is cut into fixed chunks that depend only on the problem, each chunk folded in element order as
// batches of 16 combined by a fixed pairwise tree and joined in order, chunks joined in order: the
// result is bitwise the same for any thread count, run to run. OpenMP threads where the caller's
// build has OpenMP (the pragmas are ignored otherwise).

#include <span>

#include "tally/reduce/detail/generic.hpp"
#include "tally/reduce/reduce.hpp"

namespace tally::reduce {

/// A user's reducer R (reducer.hpp) over `levels` of `in`, on the CPU: out holds one R::value_type
/// per remaining position, as reduce() does. Validates like reduce() (std::invalid_argument naming
/// the argument); a reducer with needs_input throws on an empty set; otherwise empty gives identity().
template <class R, class T>
requires ReducerFor<R, T>
void reduce_custom_cpu(View<const T> in, Levels levels, std::span<typename R::value_type> out) {
  const detail::Problem p{in.data, in.ext, in.stride_w, in.stride_g, levels, static_cast<std::int64_t>(out.size())};
  detail::validate(p, out.data());
  if constexpr (reducer_needs_input<R>()) {
    const char* name = "reduction";
    if constexpr (requires { R::name; }) name = R::name;
    detail::check_nonempty(name, in.ext, levels, p.out_size);
  }
  detail::generic_cpu<R, T>(in, levels, out.data());
}

}  // namespace tally::reduce
