// tally.argmax/argmin/aminmax/var_mean's compiled half: the library's generic reducers
// (tally/reduce/reducers.hpp: ArgMax, ArgMin, MinMax, MeanVar) on an array mapped as tally.reduce's
// (arrays.hpp). The result is an array of the reducer's value_type structs, written into a buffer
// the Python side allocated with the caller's array family (int64 words, shape (*kept, words));
// REDUCER_FIELDS tells it each field's dtype and byte offset, so it hands back strided views of the
// fields without knowing the structs' layout and without another pass over the input.
#include "ops.hpp"

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>

#include "tally/reduce/reduce.hpp"

namespace nb = nanobind;

namespace tally::python {
namespace {

template <class R, class T>
void launch(const Desc& x, const Mapped& m, void* out, std::int64_t out_size, std::uintptr_t stream) {
  using V = typename R::value_type;
  const auto in = tr::View<const T>::strided(static_cast<const T*>(x.data), m.ext, m.stride_w, m.stride_g);
  const std::span<V> o(static_cast<V*>(out), static_cast<std::size_t>(out_size));
  on_device(x, stream, [&](tr::Backend b, tr::Workspace& ws, stream_t s) { tr::reduce<R, T>(b, in, m.levels, o, ws, s); });
}

/// The library numbers an arg-reduction's elements row-major in its view's order of the reduced axes
/// (Mapped::order), and its first-index rule (ties, NaN) follows that numbering. Where the mapping
/// sorted the reduced axes into another order than x's (a transposed view), renumbering the winner
/// would not make it NumPy's winner on ties: ArgOrderError, and the Python side reduces in stages.
void check_arg_order(const Desc& x, const Mapped& m, int reducer) {
  if (reducer != argmax && reducer != argmin) return;
  for (int i = 1; i < m.n_order; ++i)
    if (m.order[i] < m.order[i - 1])
      throw ArgOrderError(std::string("x: ") + reducer_names[reducer] + " over axes that lie in memory in another order than x's (strides " +
                        shape_str(x.strides, x.ndim) + "): the first index on ties would be memory's, not x's; "
                        "pass copy=True to reduce a contiguous copy");
}

/// Checks, then launches into out (the buffer of value_type structs).
void run(const Desc& x, const Desc& out, int reducer, std::uint64_t mask, std::uintptr_t stream) {
  Desc xx;
  Mapped m;
  if (prepare_reducer(x, out, reducer, mask, stream, xx, m)) dispatch_reducer(xx, m, out, stream, reducer);
}

/// (field name, dtype code, byte offset) of each field of the value_type, for the Python views.
nb::tuple fields_of(int reducer, int dtype) {
  const auto field = [](const char* name, int code, std::size_t offset) {
    return nb::make_tuple(name, code, static_cast<std::int64_t>(offset));
  };
  return with_reducer(reducer, dtype, [&]<class R, class T>() -> nb::tuple {
    using V = typename R::value_type;
    constexpr int code = std::is_same_v<T, std::int32_t> ? i32 : std::is_same_v<T, std::int64_t> ? i64
                         : std::is_same_v<T, float> ? f32 : f64;
    if constexpr (std::is_same_v<V, tr::ValueIndex<T>>)
      return nb::make_tuple(field("value", code, offsetof(V, value)), field("index", i64, offsetof(V, index)));
    else if constexpr (std::is_same_v<V, tr::MinMaxPair<T>>)
      return nb::make_tuple(field("min", code, offsetof(V, min)), field("max", code, offsetof(V, max)));
    else
      return nb::make_tuple(field("count", f64, offsetof(V, count)), field("mean", f64, offsetof(V, mean)),
                            field("m2", f64, offsetof(V, m2)));
  });
}

}  // namespace

bool prepare_reducer(const Desc& x, const Desc& out, int reducer, std::uint64_t mask, std::uintptr_t stream, Desc& xx,
                     Mapped& m) {
  check_input(x, mask, stream);
  std::int64_t want[max_ndim + 1];
  const int rank = kept_shape(x, mask, want);
  check_struct_out(x, out, want, rank, reducer);
  const std::int64_t out_size = out.size() / want[rank];
  if (out_size == 0) return false;
  if (x.size() == 0 && (reducer == argmax || reducer == argmin))
    throw nb::value_error(("x: " + std::string(reducer_names[reducer]) + " of an empty set (x of shape " +
                           shape_str(x.shape, x.ndim) + " has no element to reduce); it has no identity")
                              .c_str());
  m = view_of(x, mask, out_size, xx);
  check_arg_order(x, m, reducer);
  return true;
}

void dispatch_reducer(const Desc& xx, const Mapped& m, const Desc& out, std::uintptr_t stream, int reducer) {
  const std::int64_t out_size = out.size() / out.shape[out.ndim - 1];
  with_reducer(reducer, xx.dtype, [&]<class R, class T>() { launch<R, T>(xx, m, out.data, out_size, stream); });
}

void bind_reducers(nb::module_& m) {
  m.def(
      "reducer_nd",
      [](nb::ndarray<nb::ro> x, nb::ndarray<> out, int reducer, std::uint64_t mask, std::uintptr_t stream) {
        run(from_ndarray(x, "x"), from_ndarray(out, "out"), reducer, mask, stream);
      },
      nb::arg("x"), nb::arg("out"), nb::arg("reducer"), nb::arg("mask"), nb::arg("stream") = 0,
      "Reduces x over the axes in the bit mask with a generic reducer into out (int64 words, shape "
      "(*kept, words)).");
  m.def(
      "reducer_raw",
      [](std::uintptr_t x_ptr, int x_dtype, int x_device, nb::tuple x_shape, nb::tuple x_strides, std::uintptr_t out_ptr,
         int out_dtype, int out_device, nb::tuple out_shape, nb::tuple out_strides, bool strides_in_bytes, int reducer,
         std::uint64_t mask, std::uintptr_t stream) {
        run(from_raw(x_ptr, x_dtype, x_device, x_shape, x_strides, strides_in_bytes, "x"),
                   from_raw(out_ptr, out_dtype, out_device, out_shape, out_strides, strides_in_bytes, "out"), reducer,
                   mask, stream);
      },
      "Like reducer_nd, for arrays described by pointer, dtype code, device (-1: host), shape and strides.");
  nb::dict fields;
  for (int r = 0; r < n_reducers; ++r)
    for (int d = 0; d < 4; ++d)
      fields[nb::make_tuple(reducer_names[r], dtype_names[d])] = nb::make_tuple(words_of(r, d), fields_of(r, d));
  m.attr("REDUCER_FIELDS") = fields;
  nb::list names;
  for (const char* r : reducer_names) names.append(r);
  m.attr("REDUCERS") = nb::tuple(names);
}

}  // namespace tally::python
