// tally.reduce's compiled half: an array described by (pointer, dtype, device, shape, strides) is
// mapped onto the library's (gang, worker, vector) strided view and reduced in place through the
// public C++ API (tally/reduce/reduce.hpp). The Python half (tally/_reduce.py) speaks the frameworks.
// The mapping onto the view, the checks and the workspaces are shared with the reducers (arrays.hpp).
#include "ops.hpp"

#include <algorithm>
#include <span>
#include <string>
#include <type_traits>

#include "tally/common/device_info.hpp"
#include "tally/reduce/reduce.hpp"

namespace nb = nanobind;

namespace tally::python {
namespace {

template <class Op, class T, class Acc>
void launch(const Desc& x, const Mapped& m, Desc& out, std::uintptr_t stream) {
  const auto in = tr::View<const T>::strided(static_cast<const T*>(x.data), m.ext, m.stride_w, m.stride_g);
  const std::span<Acc> o(static_cast<Acc*>(out.data), static_cast<std::size_t>(out.size()));
  on_device(x, stream,
            [&](tr::Backend b, tr::Workspace& ws, stream_t s) { tr::reduce<Op, T, Acc>(b, in, m.levels, o, ws, s); });
}

/// Checks out against x and the axis set (before anything is launched), maps x and reduces.
void run(const Desc& x, Desc& out, int op, std::uint64_t mask, std::uintptr_t stream) {
  Desc xx;
  Mapped m;
  if (prepare_reduce(x, out, op, mask, stream, xx, m)) dispatch_op(xx, m, out, stream, op);
}

}  // namespace

bool prepare_reduce(const Desc& x, const Desc& out, int op, std::uint64_t mask, std::uintptr_t stream, Desc& xx,
                    Mapped& m) {
  check_input(x, mask, stream);
  check_dtype(out.dtype, "out");
  if (op < 0 || op >= n_ops) throw nb::value_error(("op: unknown operator code " + std::to_string(op)).c_str());
  std::int64_t want[max_ndim];
  const int rank = kept_shape(x, mask, want);
  if (out.ndim != rank || !std::equal(want, want + rank, out.shape))
    throw nb::value_error(("out: has shape " + shape_str(out.shape, out.ndim) + ", reducing x of shape " +
                           shape_str(x.shape, x.ndim) + " gives " + shape_str(want, rank))
                              .c_str());
  check_out_layout(x, out);
  if (out.size() == 0) return false;  // nothing to write (an empty kept axis)
  m = view_of(x, mask, out.size(), xx);
  return true;
}

void dispatch_op(const Desc& xx, const Mapped& m, Desc& out, std::uintptr_t stream, int op) {
  with_op_types(op, xx.dtype, out.dtype,
                [&]<class Op, class T, class Acc>() { launch<Op, T, Acc>(xx, m, out, stream); });
}

void bind_reduce(nb::module_& m) {
  m.def(
      "reduce_nd",
      [](nb::ndarray<nb::ro> x, nb::ndarray<> out, int op, std::uint64_t mask, std::uintptr_t stream) {
        const Desc dx = from_ndarray(x, "x");
        Desc dout = from_ndarray(out, "out");
        run(dx, dout, op, mask, stream);
      },
      nb::arg("x"), nb::arg("out"), nb::arg("op"), nb::arg("mask"), nb::arg("stream") = 0,
      "Reduces x (any DLPack/buffer-protocol array) into out (C-contiguous) over the axes in the bit mask.");
  m.def(
      "reduce_raw",
      [](std::uintptr_t x_ptr, int x_dtype, int x_device, nb::tuple x_shape, nb::tuple x_strides,
         std::uintptr_t out_ptr, int out_dtype, int out_device, nb::tuple out_shape, nb::tuple out_strides,
         bool strides_in_bytes, int op, std::uint64_t mask, std::uintptr_t stream) {
        const Desc dx = from_raw(x_ptr, x_dtype, x_device, x_shape, x_strides, strides_in_bytes, "x");
        Desc dout = from_raw(out_ptr, out_dtype, out_device, out_shape, out_strides, strides_in_bytes, "out");
        run(dx, dout, op, mask, stream);
      },
      "Like reduce_nd, for arrays described by pointer, dtype code, device (-1: host), shape and strides.");
  // For the tests and the benchmark: the pointer the last launch read, and the library called on an
  // explicit (gang, worker, vector) view with no Python-side mapping (the C++ API's own result).
  m.def("_last_input_pointer", [] { return last_input_pointer; });
  m.def(
      "_reduce_view",
      [](std::uintptr_t x_ptr, int x_dtype, int device, std::int64_t ng, std::int64_t nw, std::int64_t nv,
         std::int64_t stride_w, std::int64_t stride_g, unsigned level_bits, std::uintptr_t out_ptr, int out_dtype,
         std::int64_t out_size, int op, std::uintptr_t stream, int repeats) {
        check_dtype(x_dtype, "x");
        check_dtype(out_dtype, "out");
        Desc x, out;
        x.data = reinterpret_cast<void*>(x_ptr), x.dtype = x_dtype, x.device = device;
        out.data = reinterpret_cast<void*>(out_ptr), out.dtype = out_dtype, out.device = device;
        out.ndim = 1, out.shape[0] = out_size, out.strides[0] = 1;
        Mapped m;
        m.ext = {ng, nw, nv}, m.stride_w = stride_w, m.stride_g = stride_g,
        m.levels = tr::Levels::from_bits(level_bits);
        // `repeats` back-to-back calls in one C++ loop: the benchmark's per-call cost of the C++ API.
        for (int r = 0; r < repeats; ++r) dispatch_op(x, m, out, stream, op);
      },
      nb::arg("x_ptr"), nb::arg("x_dtype"), nb::arg("device"), nb::arg("ng"), nb::arg("nw"), nb::arg("nv"),
      nb::arg("stride_w"), nb::arg("stride_g"), nb::arg("level_bits"), nb::arg("out_ptr"), nb::arg("out_dtype"),
      nb::arg("out_size"), nb::arg("op"), nb::arg("stream") = 0, nb::arg("repeats") = 1);
  m.def("cuda_built", &tr::cuda_built);
  m.def("cuda_device_count", &tally::cuda_device_count);
  nb::list ops, dtypes;
  for (const char* o : op_names) ops.append(o);
  for (const char* d : dtype_names) dtypes.append(d);
  m.attr("OPS") = nb::tuple(ops);
  m.attr("DTYPES") = nb::tuple(dtypes);
}

}  // namespace tally::python
