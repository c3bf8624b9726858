#pragma once
// The generic reducer: what a type must provide to be reduced by tally's generic engine (the host API's
// reduce<R>(), the header-only engines generic.hpp (CPU) and generic.cuh (CUDA), and the device
// building blocks in device/*.cuh). The library's own ArgMax, ArgMin, MinMax and MeanVar
// (reducers.hpp) are instances of it; a user's operator goes through the same engine.
//
//   struct BBox2 {                                   // a user reducer: the bounding box of points
//     using value_type = Box;                        // trivially copyable: shuffled word by word
//     TALLY_HD static Box identity() { ... }         // combine(identity(), a) == a
//     TALLY_HD static Box combine(const Box& a, const Box& b) { ... }  // associative (and, for
//                                                    // bitwise results, commutative)
//     TALLY_HD static Box load(Point p, std::int64_t index) { ... }     // optional: the element's value
//   };
//
// * value_type: the partial result and the output element type; trivially copyable.
// * identity(), combine(a, b): static, host and device (TALLY_HD). combine must be associative; the
//   engine fixes the combination tree for a launch shape, so a deterministic combine gives the same
//   bits run to run. A combine that is also commutative and exact (a selection such as ArgMax's)
//   gives the same bits on every backend, level set and launch shape.
// * load(x, index) (optional): the value of input element x whose flat index within the reduced axes
//   is `index` (row-major over the reduced axes in gang, worker, vector order: see unflatten()). Or
//   load(x) without the index. Without either, value_type(x).
// * fold_run(acc, const T* x, n, index0) (optional, CPU only): acc joined with the contiguous run
//   x[0..n) whose flat indices are index0, index0 + 1, ...; for a faster (vectorised) fold than one
//   combine per element. It must give what combining the run's loads in some fixed order would.
// * needs_input (optional static constexpr bool): true for reducers whose identity is not a result
//   (arg-reductions): reducing an empty set then throws std::invalid_argument instead of returning identity().

#include <array>
#include <concepts>
#include <cstdint>
#include <type_traits>

#include "tally/reduce/config.hpp"
#include "tally/reduce/levels.hpp"
#include "tally/reduce/view.hpp"

namespace tally::reduce {

/// identity() and combine(a, b) on a trivially copyable value_type.
template <class R>
concept Reducer = requires(const typename R::value_type& a, const typename R::value_type& b) {
  typename R::value_type;
  { R::identity() } -> std::convertible_to<typename R::value_type>;
  { R::combine(a, b) } -> std::convertible_to<typename R::value_type>;
}
&&std::is_trivially_copyable_v<typename R::value_type>;

template <class R, class T>
concept LoadsWithIndex = requires(const T& x, std::int64_t i) {
  { R::load(x, i) } -> std::convertible_to<typename R::value_type>;
};
template <class R, class T>
concept LoadsValue = requires(const T& x) {
  { R::load(x) } -> std::convertible_to<typename R::value_type>;
};

/// The optional CPU hook for contiguous runs.
template <class R, class T>
concept HasFoldRun = requires(const typename R::value_type& acc, const T* x, std::int64_t n) {
  { R::fold_run(acc, x, n, n) } -> std::convertible_to<typename R::value_type>;
};

/// R reduces inputs of type T: a Reducer with a way to turn a T into its value_type.
template <class R, class T>
concept ReducerFor = Reducer<R> &&
    (LoadsWithIndex<R, T> || LoadsValue<R, T> || std::is_convertible_v<T, typename R::value_type>);

/// Whether an empty reduction is an error for R (R::needs_input, default false).
template <class R>
constexpr bool reducer_needs_input() {
  if constexpr (requires { R::needs_input; }) return static_cast<bool>(R::needs_input);
  else return false;
}

/// Whether R::load uses the flat index (the engine then tracks it; otherwise it need not).
template <class R, class T>
inline constexpr bool reducer_uses_index = LoadsWithIndex<R, T>;

/// The value of element x at flat index `index` (within the reduced axes) for R.
template <class R, class T>
TALLY_HD typename R::value_type reducer_load(const T& x, std::int64_t index) {
  if constexpr (LoadsWithIndex<R, T>) return R::load(x, index);
  else if constexpr (LoadsValue<R, T>) {
    (void)index;
    return R::load(x);
  } else {
    (void)index;
    return static_cast<typename R::value_type>(x);
  }
}

/// The (gang, worker, vector) coordinates of flat index `flat` within the reduced axes `levels` of
/// extents `e` (row-major over the reduced axes, gang outermost); the kept axes' coordinates are 0
/// (the output element says which). Inverse of the engine's numbering: what ArgMax's index means.
constexpr std::array<std::int64_t, 3> unflatten(std::int64_t flat, Extents e, Levels levels) {
  std::array<std::int64_t, 3> c{0, 0, 0};
  constexpr Level order[3] = {Level::gang, Level::worker, Level::vector};
  for (int a = 2; a >= 0; --a) {
    if (!levels.contains(order[a]) || e[a] <= 0) continue;
    c[static_cast<unsigned>(a)] = flat % e[a];
    flat /= e[a];
  }
  return c;
}

namespace detail {
/// combine / identity for both kinds of operator: a Reducer (R::combine) or a Kokkos-style operator
/// whose members are templates over the accumulator (Sum, Max, ...: Op::combine<T>). The device
/// building blocks go through these, so they reduce either.
template <class Op, class T>
TALLY_HD T op_combine(const T& a, const T& b) {
  if constexpr (Reducer<Op>) return Op::combine(a, b);
  else return Op::template combine<T>(a, b);
}
template <class Op, class T>
TALLY_HD T op_identity() {
  if constexpr (Reducer<Op>) return Op::identity();
  else return Op::template identity<T>();
}
}  // namespace detail

}  // namespace tally::reduce
