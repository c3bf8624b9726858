// tally.argmax/argmin/aminmax/var_mean's compiled half: the library's generic reducers
// (tally/reduce/reducers.hpp: ArgMax, ArgMin, MinMax, MeanVar) on an array mapped as tally.reduce's
// (arrays.hpp). The result is an array of the reducer's value_type structs, written into a buffer
// the Python side allocated with the caller's array family (int64 words, shape (*kept, words));
// REDUCER_FIELDS tells it each field's dtype and byte offset, so it hands back strided views of the
// fields without knowing the structs' layout and without another pass over the input (the general
// path). The compiled paths (reducer_host here, reducer_torch in torch_binding.cpp) make new arrays
// of the returned fields instead.
#include "ops.hpp"

#include <algorithm>
#include <cstddef>
#include <span>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "tally/reduce/reduce.hpp"

namespace nb = nanobind;

namespace tally::python {
namespace {

template <class R, class T>
void launch(const Desc& x, const Mapped& m, void* out, std::int64_t out_size, std::uintptr_t stream) {
  using V = typename R::value_type;
  const auto in = tr::View<const T>::strided(static_cast<const T*>(x.data), m.ext, m.stride_w, m.stride_g);
  const std::span<V> o(static_cast<V*>(out), static_cast<std::size_t>(out_size));
  on_device(x, stream,
            [&](tr::Backend b, tr::Workspace& ws, stream_t s) { tr::reduce<R, T>(b, in, m.levels, o, ws, s); });
}

/// The library numbers an arg-reduction's elements row-major in its view's order of the reduced axes
/// (Mapped::order), and its first-index rule (ties, NaN) follows that numbering. Where the mapping
/// sorted the reduced axes into another order than x's (a transposed view), renumbering the winner
/// would not make it NumPy's winner on ties: ArgOrderError, and the Python side reduces in stages.
void check_arg_order(const Desc& x, const Mapped& m, int reducer) {
  if (reducer != argmax && reducer != argmin) return;
  for (int i = 1; i < m.n_order; ++i)
    if (m.order[i] < m.order[i - 1])
      throw ArgOrderError(std::string("x: ") + reducer_names[reducer] +
                          " over axes that lie in memory in another order than x's (strides " +
                          shape_str(x.strides, x.ndim) +
                          "): the first index on ties would be memory's, not x's; "
                          "pass copy=True to reduce a contiguous copy");
}

/// Checks, then launches into out (the buffer of value_type structs).
void run(const Desc& x, const Desc& out, int reducer, std::uint64_t mask, std::uintptr_t stream) {
  Desc xx;
  Mapped m;
  if (prepare_reducer(x, out, reducer, mask, stream, xx, m)) dispatch_reducer(xx, m, out, stream, reducer);
}

/// A new NumPy array of n elements of the kept shape, filled by fill(T* data).
template <class T, class F>
nb::object host_array(const Desc& out, int rank, std::int64_t n, F&& fill) {
  T* data = new T[static_cast<std::size_t>(std::max<std::int64_t>(n, 1))];
  nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<T*>(p); });
  fill(data);
  std::size_t shape[max_ndim];
  for (int a = 0; a < rank; ++a) shape[a] = static_cast<std::size_t>(out.shape[a]);
  return nb::ndarray<nb::numpy, T>(data, static_cast<std::size_t>(rank), shape, owner).cast();
}

/// The reducers on a host array in one compiled call: the structs in a vector, then each field
/// into its own new NumPy array (var_mean's division and cast here: m2 / d in float64, rounded once
/// to the result dtype, the general path's bits); `want` picks the results made (bit 0 the first,
/// bit 1 the second: both as a tuple, one alone as itself). None where the general path must take
/// the call (a dtype, layout or arg-order it refuses, an empty x or kept axis): nothing is written then.
nb::object reducer_host(nb::handle x, int reducer, std::uint64_t mask, std::int64_t correction, int want) {
  nb::ndarray<nb::ro> xa;
  if (!nb::try_cast(x, xa)) return nb::none();  // e.g. a byte order nanobind does not import
  if (reducer < 0 || reducer >= n_reducers || correction < 0 || want < 1 || want > 3 ||
      xa.device_type() != nb::device::cpu::value || xa.ndim() >= max_ndim)
    return nb::none();
  Desc dx;
  dx.data = const_cast<void*>(xa.data());  // only read
  dx.dtype = dtype_code(xa.dtype());
  dx.ndim = static_cast<int>(xa.ndim());
  if (dx.dtype < 0 || (mask >> dx.ndim) != 0) return nb::none();
  for (int a = 0; a < dx.ndim; ++a)
    dx.shape[a] = static_cast<std::int64_t>(xa.shape(static_cast<std::size_t>(a))),
    dx.strides[a] = xa.stride(static_cast<std::size_t>(a));
  if (dx.size() == 0) return nb::none();
  Desc out, xx;  // out: the value_type structs (*kept, words), as int64 words
  Mapped m;
  if (!prepare_reducer_fast(dx, reducer, mask, out, xx, m)) return nb::none();
  const int rank = out.ndim - 1;
  std::vector<std::int64_t> words(static_cast<std::size_t>(out.size()));
  out.data = words.data();
  dispatch_reducer(xx, m, out, 0, reducer);
  const std::int64_t n_out = out.size() / out.shape[rank], n = dx.size() / n_out;
  // Only the wanted arrays are made (picked: both as a tuple, one alone as itself).
  const auto pick = [&](auto&& first, auto&& second) -> nb::object {
    nb::object a = (want & 1) ? first() : nb::object(), b = (want & 2) ? second() : nb::object();
    return picked(a, b, want);
  };
  return with_reducer(reducer, dx.dtype, [&]<class R, class T>() -> nb::object {
    using V = typename R::value_type;
    const V* v = reinterpret_cast<const V*>(words.data());
    if constexpr (std::is_same_v<V, tr::ValueIndex<T>>) {
      return pick(
          [&] {
            return host_array<T>(out, rank, n_out, [&](T* d) {
              for (std::int64_t i = 0; i < n_out; ++i) d[i] = v[i].value;
            });
          },
          [&] {
            return host_array<std::int64_t>(out, rank, n_out, [&](std::int64_t* d) {
              for (std::int64_t i = 0; i < n_out; ++i) d[i] = v[i].index;
            });
          });
    } else if constexpr (std::is_same_v<V, tr::MinMaxPair<T>>) {
      return pick(
          [&] {
            return host_array<T>(out, rank, n_out, [&](T* d) {
              for (std::int64_t i = 0; i < n_out; ++i) d[i] = v[i].min;
            });
          },
          [&] {
            return host_array<T>(out, rank, n_out, [&](T* d) {
              for (std::int64_t i = 0; i < n_out; ++i) d[i] = v[i].max;
            });
          });
    } else {
      // Every result has n > 0 elements: the mean is defined; the variance is NaN where its divisor is <= 0.
      using Out = std::conditional_t<std::is_same_v<T, float>, float, double>;
      const std::int64_t dv = n - correction;
      const auto var = [&](Out* d) {
        for (std::int64_t i = 0; i < n_out; ++i)
          d[i] =
              static_cast<Out>(dv > 0 ? v[i].m2 / static_cast<double>(dv) : std::numeric_limits<double>::quiet_NaN());
      };
      const auto mean = [&](Out* d) {
        for (std::int64_t i = 0; i < n_out; ++i) d[i] = static_cast<Out>(v[i].mean);
      };
      return pick([&] { return host_array<Out>(out, rank, n_out, var); },
                  [&] { return host_array<Out>(out, rank, n_out, mean); });
    }
  });
}

/// (field name, dtype code, byte offset) of each field of the value_type, for the Python views.
nb::tuple fields_of(int reducer, int dtype) {
  const auto field = [](const char* name, int code, std::size_t offset) {
    return nb::make_tuple(name, code, static_cast<std::int64_t>(offset));
  };
  return with_reducer(reducer, dtype, [&]<class R, class T>() -> nb::tuple {
    using V = typename R::value_type;
    constexpr int code = std::is_same_v<T, std::int32_t>   ? i32
                         : std::is_same_v<T, std::int64_t> ? i64
                         : std::is_same_v<T, float>        ? f32
                                                           : f64;
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

bool prepare_reducer_fast(const Desc& x, int reducer, std::uint64_t mask, Desc& out, Desc& xx, Mapped& m) {
  out.dtype = i64, out.device = x.device;
  const int rank = kept_shape(x, mask, out.shape);
  out.ndim = rank + 1, out.shape[rank] = words_of(reducer, x.dtype);
  for (std::int64_t a = rank, st = 1; a >= 0; --a) out.strides[a] = st, st *= out.shape[a];
  try {
    return prepare_reducer(x, out, reducer, mask, 0, xx, m);
  } catch (const std::exception&) {
    return false;
  }
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
      [](std::uintptr_t x_ptr, int x_dtype, int x_device, nb::tuple x_shape, nb::tuple x_strides,
         std::uintptr_t out_ptr, int out_dtype, int out_device, nb::tuple out_shape, nb::tuple out_strides,
         bool strides_in_bytes, int reducer, std::uint64_t mask, std::uintptr_t stream) {
        run(from_raw(x_ptr, x_dtype, x_device, x_shape, x_strides, strides_in_bytes, "x"),
            from_raw(out_ptr, out_dtype, out_device, out_shape, out_strides, strides_in_bytes, "out"), reducer, mask,
            stream);
      },
      "Like reducer_nd, for arrays described by pointer, dtype code, device (-1: host), shape and strides.");
  m.def("reducer_host", &reducer_host, nb::arg("x"), nb::arg("reducer"), nb::arg("mask"), nb::arg("correction") = 0,
        nb::arg("want") = 3,
        "A reducer (_tally.REDUCERS' code) over the axes in the bit mask of a host array, in one call: argmax/argmin "
        "(values, indices), minmax (min, max), meanvar (variance, mean) as new NumPy arrays; want: which of the two "
        "(bit 0 the first, bit 1 the second; one alone is returned as itself); None where the general path must take "
        "the call.");
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
