// tally.segment_reduce and tally.exact_dot's compiled half: the library's segmented reductions
// (tally/reduce/segmented.hpp: CSR offsets or fixed-size segments of a 1-D array, by an operator or
// a library reducer) and its exact dot
// product (tally/reduce/dot.hpp), on arrays described as tally.reduce's (arrays.hpp). Both take
// contiguous 1-D arrays (the library's spans); anything else is a LayoutError (copy=True copies).
#include "ops.hpp"

#include <span>
#include <stdexcept>
#include <string>

#include "tally/reduce/dot.hpp"
#include "tally/reduce/segmented.hpp"

namespace nb = nanobind;

namespace tally::python {
namespace {

/// A contiguous 1-D array (a span), or LayoutError / ValueError naming `arg`.
void check_span(const Desc& d, const char* arg) {
  if (d.ndim != 1)
    throw nb::value_error((std::string(arg) + ": must be 1-D, got shape " + shape_str(d.shape, d.ndim)).c_str());
  if (d.shape[0] > 1 && d.strides[0] != 1)
    throw LayoutError(std::string(arg) + ": must be contiguous (stride " + std::to_string(d.strides[0]) +
                      " elements); pass copy=True to reduce a contiguous copy");
}

void check_same_device(const Desc& x, const Desc& d, const char* arg) {
  if (d.device != x.device)
    throw nb::value_error(
        (std::string(arg) + ": on " + device_str(d.device) + ", x on " + device_str(x.device)).c_str());
}

/// The library's argument errors (std::invalid_argument, "tally::reduce: offsets: ...") as ValueError
/// naming the argument, without the library's prefix.
template <class F>
void library_call(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    std::string m = e.what();
    for (const char* prefix : {"tally::reduce::exact_dot: ", "tally::reduce: "})
      if (m.rfind(prefix, 0) == 0) m.erase(0, std::string(prefix).size());
    throw nb::value_error(m.c_str());
  }
}

/// One segmented reduction: Op an operator (out: Acc per segment) or a library reducer (Acc its
/// value_type); offsets == nullptr: fixed segments of segment_size elements.
template <class Op, class T, class Acc>
void segment_launch(const Desc& x, const Desc* offsets, void* out, std::int64_t n_out, std::int64_t segment_size,
                    std::uintptr_t stream, tr::SegmentCheck check) {
  const std::span<const T> in(static_cast<const T*>(x.data), static_cast<std::size_t>(x.shape[0]));
  const std::span<Acc> o(static_cast<Acc*>(out), static_cast<std::size_t>(n_out));
  const auto with_offsets = [&]<class Off>() {
    const std::span<const Off> off(static_cast<const Off*>(offsets->data), static_cast<std::size_t>(offsets->shape[0]));
    on_device(x, stream, [&](tr::Backend b, tr::Workspace& ws, stream_t s) {
      library_call([&] { tr::segmented_reduce<Op, T>(b, in, off, o, ws, s, check); });
    });
  };
  if (offsets == nullptr)
    on_device(x, stream, [&](tr::Backend b, tr::Workspace& ws, stream_t s) {
      library_call([&] { tr::segmented_reduce_fixed<Op, T, Acc>(b, in, segment_size, o, ws, s); });
    });
  else if (offsets->dtype == i32) with_offsets.template operator()<std::int32_t>();
  else with_offsets.template operator()<std::int64_t>();
}

/// op >= 0: an operator into out (Acc per segment); else `reducer` into out (the int64 buffer of
/// its value_type structs, shape (segments, words)).
void segment_run(const Desc& x, const Desc* offsets, const Desc& out, int op, int reducer, std::int64_t segment_size,
                 std::uintptr_t stream, bool trusted) {
  check_input(x, 0, stream);
  check_dtype(out.dtype, "out");
  check_span(x, "x");
  if (op >= n_ops) throw nb::value_error(("op: unknown operator code " + std::to_string(op)).c_str());
  if (op == exact_sum) throw nb::value_error("op: 'exact_sum' has no segmented form (tally.reduce it per segment)");
  if (op == mean)
    throw nb::value_error("op: 'mean' has no segmented form (a segmented 'sum' over the segment lengths)");
  std::int64_t n_out = 0;
  if (op >= 0) {
    check_span(out, "out");
    check_same_device(x, out, "out");
    n_out = out.shape[0];
  } else {
    std::int64_t want[2] = {out.ndim > 0 ? out.shape[0] : 0, 0};
    check_struct_out(x, out, want, 1, reducer);
    n_out = want[0];
  }
  if (offsets != nullptr) {
    if (offsets->dtype != i32 && offsets->dtype != i64)
      throw nb::type_error(
          ("offsets: must be int32 or int64, got " + std::string(dtype_names[offsets->dtype])).c_str());
    check_span(*offsets, "offsets");
    check_same_device(x, *offsets, "offsets");
  }
  const auto check = trusted ? tr::SegmentCheck::trusted : tr::SegmentCheck::full;
  if (op >= 0)
    with_op_types(op, x.dtype, out.dtype, [&]<class Op, class T, class Acc>() {
      if constexpr (!std::is_same_v<Op, tr::ExactSum> && !std::is_same_v<Op, tr::Mean>)
        segment_launch<Op, T, Acc>(x, offsets, out.data, n_out, segment_size, stream, check);
    });
  else
    with_reducer(reducer, x.dtype, [&]<class R, class T>() {
      segment_launch<R, T, typename R::value_type>(x, offsets, out.data, n_out, segment_size, stream, check);
    });
}

void dot_run(const Desc& a, const Desc& b, const Desc& out, std::uintptr_t stream) {
  check_input(a, 0, stream);
  check_dtype(b.dtype, "b");
  check_dtype(out.dtype, "out");
  check_span(a, "a");
  check_span(b, "b");
  check_same_device(a, b, "b");
  check_same_device(a, out, "out");  // out: any shape of one element (a 0-d array)
  if (b.dtype != a.dtype)
    throw nb::type_error(("b: dtype " + std::string(dtype_names[b.dtype]) + ", a has " + dtype_names[a.dtype]).c_str());
  if (out.size() != 1) throw nb::value_error("out: must hold exactly one element");
  const auto go = [&]<class T, class Out>() {
    if constexpr (tr::is_exact_dot_supported<T, Out>) {
      const std::span<const T> sa(static_cast<const T*>(a.data), static_cast<std::size_t>(a.shape[0]));
      const std::span<const T> sb(static_cast<const T*>(b.data), static_cast<std::size_t>(b.shape[0]));
      const std::span<Out> o(static_cast<Out*>(out.data), 1);
      on_device(a, stream, [&](tr::Backend bk, tr::Workspace& ws, stream_t s) {
        library_call([&] { tr::exact_dot<T, Out>(bk, sa, sb, o, ws, s); });
      });
    } else {
      throw nb::type_error(("a/out: exact_dot takes float32 -> float32 or float64, float64 -> float64; got " +
                            std::string(dtype_names[a.dtype]) + " -> " + dtype_names[out.dtype])
                               .c_str());
    }
  };
  switch (a.dtype * 4 + out.dtype) {
    case f32 * 4 + f32: return go.template operator()<float, float>();
    case f32 * 4 + f64: return go.template operator()<float, double>();
    case f64 * 4 + f64: return go.template operator()<double, double>();
    default: return go.template operator()<int, int>();  // the TypeError
  }
}

}  // namespace

void bind_segments(nb::module_& m) {
  m.def(
      "segment_nd",
      [](nb::ndarray<nb::ro> x, nb::object offsets, nb::ndarray<> out, int op, int reducer, std::int64_t segment_size,
         std::uintptr_t stream, bool trusted) {
        const Desc dx = from_ndarray(x, "x"), dout = from_ndarray(out, "out");
        if (offsets.is_none()) return segment_run(dx, nullptr, dout, op, reducer, segment_size, stream, trusted);
        const Desc doff = from_ndarray(nb::cast<nb::ndarray<nb::ro>>(offsets), "offsets");
        segment_run(dx, &doff, dout, op, reducer, segment_size, stream, trusted);
      },
      nb::arg("x"), nb::arg("offsets").none(), nb::arg("out"), nb::arg("op"), nb::arg("reducer"),
      nb::arg("segment_size"), nb::arg("stream") = 0, nb::arg("trusted") = false,
      "Segmented reduction of the 1-D x into out: CSR offsets (out.size + 1 entries), or with offsets=None "
      "segments of segment_size elements. op < 0: the reducer code, out its struct buffer.");
  m.def(
      "segment_raw",
      [](std::uintptr_t x_ptr, int x_dtype, int x_device, nb::tuple x_shape, nb::tuple x_strides,
         std::uintptr_t off_ptr, int off_dtype, int off_device, nb::tuple off_shape, nb::tuple off_strides,
         std::uintptr_t out_ptr, int out_dtype, int out_device, nb::tuple out_shape, nb::tuple out_strides,
         bool strides_in_bytes, int op, int reducer, std::int64_t segment_size, std::uintptr_t stream, bool trusted) {
        const Desc dx = from_raw(x_ptr, x_dtype, x_device, x_shape, x_strides, strides_in_bytes, "x");
        const Desc dout = from_raw(out_ptr, out_dtype, out_device, out_shape, out_strides, strides_in_bytes, "out");
        if (off_dtype < 0) return segment_run(dx, nullptr, dout, op, reducer, segment_size, stream, trusted);
        const Desc doff = from_raw(off_ptr, off_dtype, off_device, off_shape, off_strides, strides_in_bytes, "offsets");
        segment_run(dx, &doff, dout, op, reducer, segment_size, stream, trusted);
      },
      "Like segment_nd, for arrays described by pointer, dtype code, device, shape and strides (offsets: "
      "dtype code -1 for fixed segments).");
  m.def(
      "exact_dot_nd",
      [](nb::ndarray<nb::ro> a, nb::ndarray<nb::ro> b, nb::ndarray<> out, std::uintptr_t stream) {
        dot_run(from_ndarray(a, "a"), from_ndarray(b, "b"), from_ndarray(out, "out"), stream);
      },
      nb::arg("a"), nb::arg("b"), nb::arg("out"), nb::arg("stream") = 0,
      "The exact dot product of the 1-D a and b, rounded once into out (one element).");
  m.def(
      "exact_dot_raw",
      [](std::uintptr_t a_ptr, int a_dtype, int a_device, nb::tuple a_shape, nb::tuple a_strides, std::uintptr_t b_ptr,
         int b_dtype, int b_device, nb::tuple b_shape, nb::tuple b_strides, std::uintptr_t out_ptr, int out_dtype,
         int out_device, nb::tuple out_shape, nb::tuple out_strides, bool strides_in_bytes, std::uintptr_t stream) {
        dot_run(from_raw(a_ptr, a_dtype, a_device, a_shape, a_strides, strides_in_bytes, "a"),
                from_raw(b_ptr, b_dtype, b_device, b_shape, b_strides, strides_in_bytes, "b"),
                from_raw(out_ptr, out_dtype, out_device, out_shape, out_strides, strides_in_bytes, "out"), stream);
      },
      "Like exact_dot_nd, for arrays described by pointer, dtype code, device, shape and strides.");
}

}  // namespace tally::python
