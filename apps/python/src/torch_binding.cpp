// tally.reduce's fast path for its commonest call: a PyTorch CUDA tensor, an operator name, axis None,
// an int or a tuple of ints, with or without `out` (no acc_dtype, no explicit stream). A small
// reduction's time from Python is mostly host work around the launch, so the whole call is done
// here in one C function: x is described through the tensor's own attributes (data_ptr, shape,
// stride, dtype, device: no DLPack capsule per call), the stream is PyTorch's current one (its raw
// stream getter), the operator and accumulator come from tables that tally/_reduce.py derives from
// its own rules, and 0-d results are carved from shared blocks (Slabs below).
//
// It adds no behaviour: anything it does not take (another type, dtype or device, any argument the
// general path would reject, a layout the strided view cannot take) returns None before anything is
// allocated or launched, and tally.reduce's general path then handles the call with its messages.
#include "ops.hpp"

#include <nanobind/stl/pair.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(TALLY_HAS_CUDA)
#include "fields.hpp"
#endif

namespace nb = nanobind;

namespace tally::python {
namespace {

struct Torch {
  PyObject* type = nullptr;        // torch.Tensor, exactly (subclasses take the general path)
  PyObject* dtypes[4]{};           // torch.int32, int64, float32, float64: by dtype code
  PyObject* raw_stream = nullptr;  // torch._C._cuda_getCurrentRawStream(device) -> handle; null: no fast path
  PyObject* empty = nullptr;       // (shape, code, like) -> a new contiguous tensor on like's device
  PyObject* block = nullptr;       // (code, like) -> (the 0-d views of a new 1-D block, its data pointer)
  PyObject *s_dtype = nullptr, *s_is_cuda = nullptr, *s_get_device = nullptr, *s_data_ptr = nullptr, *s_shape = nullptr,
           *s_stride = nullptr;
  // 0-d results of full reductions, by (device, dtype, stream): each a view of one element of a block
  // allocated on that stream with PyTorch's caching allocator (so its reuse, once the last view is
  // gone, is ordered after our kernels on that stream), handed out once. A torch.empty per call costs
  // more host time than a small reduction's launch.
  std::map<std::tuple<int, int, std::uintptr_t>, std::vector<std::pair<PyObject*, std::uintptr_t>>> free;

  // The reducers' full reductions (tally.argmax, argmin, aminmax, var_mean, mean of ints, var), the
  // same way: each result a 0-d view of a field of one struct of a shared block, the views made once
  // per block (a torch view costs about as much host time as a launch).
  PyObject* struct_block = nullptr;  // (reducer, code, like) -> (per struct: its fields' 0-d views, block pointer)
  PyObject* pair_block = nullptr;    // (code, like) -> (per pair: (0-d [0], 0-d [1]), block pointer)
  std::map<std::tuple<int, int, int, std::uintptr_t>, std::vector<std::pair<PyObject*, std::uintptr_t>>> structs;
  std::map<std::tuple<int, int, std::uintptr_t>, std::vector<std::pair<PyObject*, std::uintptr_t>>> pairs;
  // Reductions that keep axes, and var_mean's full ones: the library writes the structs into a
  // scratch buffer of this (device, stream), written and read on that stream only (in order), and
  // store_fields (fields.cu) writes each returned field, finished, into a new contiguous tensor.
  PyObject* torch_empty = nullptr;                        // torch.empty
  std::map<std::pair<int, int>, PyObject*> empty_kwargs;  // (device, code) -> {dtype, device}
  struct Scratch {
    PyObject* tensor = nullptr;  // int64 words
    std::int64_t words = 0;
    void* data = nullptr;
  };
  std::map<std::tuple<int, std::uintptr_t>, Scratch> scratch;
};

struct Tables {
  PyObject* ops[n_ops]{};                // the operators' names, interned
  std::int8_t acc_default[n_ops][4]{};   // the default accumulator of (op, x's dtype); -1: rejected
  std::uint8_t acc_allowed[n_ops][4]{};  // bit a: an out of dtype a is an accumulator of (op, x's dtype)
  bool set = false;
};

// Never destroyed: they hold Python objects, and live as long as the module.
Torch* torch_state = nullptr;
Tables tables;

PyObject* intern(const char* s) { return PyUnicode_InternFromString(s); }

bool declined() {  // a failed attribute read: the general path repeats it and reports it
  PyErr_Clear();
  return false;
}

bool to_i64(PyObject* o, std::int64_t& v) {
  if (!PyLong_Check(o)) return false;
  v = PyLong_AsLongLong(o);
  return !(v == -1 && PyErr_Occurred()) || declined();
}

bool ints_of(PyObject* o, std::int64_t* dst, int n) {  // shape (torch.Size) or strides: tuples
  if (!PyTuple_Check(o) || PyTuple_GET_SIZE(o) != n) return false;
  for (int i = 0; i < n; ++i)
    if (!to_i64(PyTuple_GET_ITEM(o, i), dst[i])) return false;
  return true;
}

/// t's description, if t is a torch.Tensor of a dtype tally reduces on a CUDA device.
bool describe(const Torch& T, PyObject* t, Desc& d) {
  if (Py_TYPE(t) != reinterpret_cast<PyTypeObject*>(T.type)) return false;
  nb::object dtype = nb::steal(PyObject_GetAttr(t, T.s_dtype));
  if (!dtype.is_valid()) return declined();
  d.dtype = -1;
  for (int c = 0; c < 4; ++c)
    if (dtype.ptr() == T.dtypes[c]) d.dtype = c;
  if (d.dtype < 0) return false;
  nb::object cuda = nb::steal(PyObject_GetAttr(t, T.s_is_cuda));
  if (!cuda.is_valid()) return declined();
  if (cuda.ptr() != Py_True) return false;
  nb::object dev = nb::steal(PyObject_CallMethodNoArgs(t, T.s_get_device));
  std::int64_t device = -1;
  if (!dev.is_valid()) return declined();
  if (!to_i64(dev.ptr(), device) || device < 0) return false;
  d.device = static_cast<int>(device);
  nb::object ptr = nb::steal(PyObject_CallMethodNoArgs(t, T.s_data_ptr));
  if (!ptr.is_valid()) return declined();
  if (!PyLong_Check(ptr.ptr())) return false;
  d.data = PyLong_AsVoidPtr(ptr.ptr());
  if (d.data == nullptr && PyErr_Occurred()) return declined();
  nb::object shape = nb::steal(PyObject_GetAttr(t, T.s_shape));
  if (!shape.is_valid()) return declined();
  if (!PyTuple_Check(shape.ptr()) || PyTuple_GET_SIZE(shape.ptr()) >= max_ndim) return false;
  d.ndim = static_cast<int>(PyTuple_GET_SIZE(shape.ptr()));
  if (!ints_of(shape.ptr(), d.shape, d.ndim)) return false;
  nb::object strides = nb::steal(PyObject_CallMethodNoArgs(t, T.s_stride));
  if (!strides.is_valid()) return declined();
  return ints_of(strides.ptr(), d.strides, d.ndim);
}

int op_code(PyObject* op) {
  for (int i = 0; i < n_ops; ++i)
    if (op == tables.ops[i]) return i;
  if (!PyUnicode_Check(op)) return -1;
  for (int i = 0; i < n_ops; ++i)
    if (PyUnicode_Compare(op, tables.ops[i]) == 0) return i;
  return -1;
}

/// axis (None, an int or a tuple of ints, NumPy's rules) as a bit mask; false where the general
/// path has something to say (out of range, repeated, another type).
bool axis_mask(PyObject* axis, int ndim, std::uint64_t& mask) {
  mask = 0;
  if (axis == Py_None) {
    mask = (std::uint64_t{1} << ndim) - 1;  // ndim < 64 (describe)
    return true;
  }
  const auto one = [&](PyObject* a) {
    if (!PyLong_Check(a)) return false;
    int overflow = 0;
    long v = PyLong_AsLongAndOverflow(a, &overflow);
    if (overflow != 0 || (v == -1 && PyErr_Occurred())) return declined();
    if (v < -ndim || v >= ndim) return false;
    v = (v + ndim) % ndim;
    if ((mask >> v) & 1u) return false;
    mask |= std::uint64_t{1} << v;
    return true;
  };
  if (!PyTuple_Check(axis)) return one(axis);
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(axis); ++i)
    if (!one(PyTuple_GET_ITEM(axis, i))) return false;
  return true;
}

/// The next element of a free list (its object, handed over, and its data pointer), refilled from
/// make() -> (the elements' objects, the block's pointer), element i at pointer + i * stride.
template <class Make>
nb::object take(std::vector<std::pair<PyObject*, std::uintptr_t>>& list, std::uintptr_t stride, Make&& make,
                void*& data) {
  if (list.empty()) {
    nb::object r = make();
    if (!r.is_valid()) throw nb::python_error();
    const auto got = nb::cast<std::pair<nb::tuple, std::uintptr_t>>(r);
    const std::size_t n = got.first.size();
    list.reserve(n);
    for (std::size_t i = n; i-- > 0;) list.emplace_back(got.first[i].inc_ref().ptr(), got.second + i * stride);
  }
  const auto [obj, ptr] = list.back();
  list.pop_back();
  data = reinterpret_cast<void*>(ptr);
  return nb::steal(obj);
}

/// A fresh 0-d tensor of dtype `code` on (device, stream) and its data pointer.
nb::object take_scalar(Torch& T, int device, int code, std::uintptr_t stream, PyObject* like, void*& data) {
  return take(
      T.free[{device, code, stream}], static_cast<std::uintptr_t>(dtype_sizes[code]),
      [&] { return nb::steal(PyObject_CallFunction(T.block, "iO", code, like)); }, data);
}

/// PyTorch's current stream of `device`; false where it cannot be had (the general path then runs).
bool current_stream(const Torch& T, int device, std::uintptr_t& stream) {
  nb::object dev = nb::steal(PyLong_FromLong(device));
  nb::object handle = nb::steal(PyObject_CallOneArg(T.raw_stream, dev.ptr()));
  if (!handle.is_valid() || !PyLong_Check(handle.ptr())) return declined();
  stream = reinterpret_cast<std::uintptr_t>(PyLong_AsVoidPtr(handle.ptr()));
  return !PyErr_Occurred() || declined();
}

nb::object reduce_torch(nb::handle x, nb::handle op, nb::handle axis, nb::handle out) {
  if (torch_state == nullptr || torch_state->raw_stream == nullptr || !tables.set) return nb::none();
  Torch& T = *torch_state;
  Desc dx, dout;
  if (!describe(T, x.ptr(), dx)) return nb::none();
  const int opc = op_code(op.ptr());
  std::uint64_t mask = 0;
  if (opc < 0 || !axis_mask(axis.ptr(), dx.ndim, mask)) return nb::none();
  if (!out.is_none()) {
    if (!describe(T, out.ptr(), dout) || dout.device != dx.device ||
        ((tables.acc_allowed[opc][dx.dtype] >> dout.dtype) & 1u) == 0)
      return nb::none();
  } else {
    dout.dtype = tables.acc_default[opc][dx.dtype];
    if (dout.dtype < 0) return nb::none();
    dout.device = dx.device;
    dout.ndim = kept_shape(dx, mask, dout.shape);
    for (std::int64_t a = dout.ndim - 1, s = 1; a >= 0; --a) dout.strides[a] = s, s *= dout.shape[a];
  }
  std::uintptr_t stream = 0;
  if (!current_stream(T, dx.device, stream)) return nb::none();

  Desc xx;
  Mapped m;
  bool launch = false;
  try {
    // Stream 0 skips the check that the stream is x's device's: PyTorch's current stream of x's device is.
    launch = prepare_reduce(dx, dout, opc, mask, 0, xx, m);
  } catch (const std::exception&) {
    return nb::none();
  }
  nb::object result;
  if (!out.is_none()) {
    result = nb::borrow(out);
  } else if (dout.ndim == 0) {
    result = take_scalar(T, dx.device, dout.dtype, stream, x.ptr(), dout.data);
  } else {
    nb::tuple shape = nb::steal<nb::tuple>(PyTuple_New(dout.ndim));
    for (int a = 0; a < dout.ndim; ++a) PyTuple_SET_ITEM(shape.ptr(), a, PyLong_FromLongLong(dout.shape[a]));
    result = nb::steal(PyObject_CallFunction(T.empty, "OiO", shape.ptr(), dout.dtype, x.ptr()));
    if (!result.is_valid()) throw nb::python_error();
    nb::object ptr = nb::steal(PyObject_CallMethodNoArgs(result.ptr(), T.s_data_ptr));
    if (!ptr.is_valid()) throw nb::python_error();
    dout.data = PyLong_AsVoidPtr(ptr.ptr());
  }
  if (launch) dispatch_op(xx, m, dout, stream, opc);
  return result;
}

#if defined(TALLY_HAS_CUDA)
/// A new contiguous tensor of `shape` (a tuple) and dtype `code` on CUDA device `device` (like's),
/// allocated on its current stream, and its data pointer: torch.empty called directly, with its
/// keyword arguments made once per (device, dtype).
nb::object new_tensor(Torch& T, PyObject* shape, int code, int device, PyObject* like, void*& data) {
  auto it = T.empty_kwargs.find({device, code});
  if (it == T.empty_kwargs.end()) {
    nb::object dev = nb::steal(PyObject_GetAttrString(like, "device"));
    if (!dev.is_valid()) throw nb::python_error();
    nb::dict kw;
    kw["dtype"] = nb::handle(T.dtypes[code]);
    kw["device"] = dev;
    it = T.empty_kwargs.emplace(std::make_pair(device, code), kw.release().ptr()).first;
  }
  nb::object args = nb::steal(PyTuple_Pack(1, shape));
  if (!args.is_valid()) throw nb::python_error();
  nb::object t = nb::steal(PyObject_Call(T.torch_empty, args.ptr(), it->second));
  if (!t.is_valid()) throw nb::python_error();
  nb::object ptr = nb::steal(PyObject_CallMethodNoArgs(t.ptr(), T.s_data_ptr));
  if (!ptr.is_valid()) throw nb::python_error();
  data = PyLong_AsVoidPtr(ptr.ptr());
  return t;
}

/// The most int64 words of structs a (device, stream) keeps as scratch (1 MiB); larger results'
/// structs get a buffer of their own per call, whose allocation is small against their reduction.
constexpr std::int64_t scratch_max_words = std::int64_t{1} << 17;

/// Device memory for `words` int64 words of structs, used on (device, stream) only: its scratch,
/// grown as needed, or above scratch_max_words a new tensor that `hold` keeps until the launches
/// are queued (PyTorch's allocator, whose block it is on this stream, reuses it after them).
void* structs_buffer(Torch& T, int device, std::uintptr_t stream, std::int64_t words, PyObject* like,
                     nb::object& hold) {
  void* data = nullptr;
  if (words > scratch_max_words) {  // never kept: grown scratch would hold it for good
    nb::object shape = nb::steal(Py_BuildValue("(L)", static_cast<long long>(words)));
    if (!shape.is_valid()) throw nb::python_error();
    hold = new_tensor(T, shape.ptr(), i64, device, like, data);
    return data;
  }
  Torch::Scratch& sc = T.scratch[{device, stream}];
  if (sc.words < words) {
    const std::int64_t grown = std::min(std::max<std::int64_t>({words, 2 * sc.words, 512}), scratch_max_words);
    nb::object shape = nb::steal(Py_BuildValue("(L)", static_cast<long long>(grown)));
    if (!shape.is_valid()) throw nb::python_error();
    nb::object t = new_tensor(T, shape.ptr(), i64, device, like, data);
    Py_XDECREF(sc.tensor);  // its last use is queued on this stream, before ours
    sc = {t.release().ptr(), grown, data};
  }
  return sc.data;
}

/// A reducer over axes of a torch.Tensor on CUDA, on PyTorch's current stream: argmax and argmin ->
/// (values, indices), minmax -> (min, max), meanvar -> (variance, mean) with `correction` (float32
/// for float32 x, float64 otherwise); `want` picks the results made (bit 0: the first, bit 1: the
/// second). Full reductions' results are 0-d views carved from shared blocks; the others new
/// contiguous tensors, written from the structs by store_fields. None where the general path must
/// take the call (another type, dtype or device, an empty x or kept axis, a layout or an arg-order
/// the view refuses, a bad argument, a build without CUDA): nothing has been allocated or launched then.
nb::object reducer_torch(nb::handle x, int reducer, nb::handle axis, std::int64_t correction, int want) {
  if (torch_state == nullptr || torch_state->raw_stream == nullptr || torch_state->struct_block == nullptr)
    return nb::none();
  if (reducer < 0 || reducer >= n_reducers || correction < 0 || want < 1 || want > 3) return nb::none();
  Torch& T = *torch_state;
  Desc dx;
  if (!describe(T, x.ptr(), dx) || dx.size() == 0) return nb::none();
  std::uint64_t mask = 0;
  if (!axis_mask(axis.ptr(), dx.ndim, mask)) return nb::none();
  const bool full = mask == (std::uint64_t{1} << dx.ndim) - 1;
  std::uintptr_t stream = 0;
  if (!current_stream(T, dx.device, stream)) return nb::none();
  Desc out, xx;  // out: the value_type structs (*kept, words), as int64 words
  Mapped m;
  if (!prepare_reducer_fast(dx, reducer, mask, out, xx, m)) return nb::none();
  const int rank = out.ndim - 1;
  const std::int64_t n_out = out.size() / out.shape[rank];
  const std::int64_t n = dx.size() / n_out;  // elements per result (> 0)
  if (full && reducer != meanvar) {
    nb::object fields = take(
        T.structs[{dx.device, reducer, dx.dtype, stream}], static_cast<std::uintptr_t>(out.shape[0] * 8),
        [&] { return nb::steal(PyObject_CallFunction(T.struct_block, "iiO", reducer, dx.dtype, x.ptr())); }, out.data);
    dispatch_reducer(xx, m, out, stream, reducer);
    return picked(fields[0], fields[1], want);
  }
  // The results, made before anything is launched: var_mean's full ones a pair of 0-d views from a
  // shared block ([0] the variance, [1] the mean), the others new tensors of the kept shape.
  const int code = dx.dtype == f32 ? f32 : f64;  // meanvar's results
  const int codes[2] = {reducer == meanvar ? code : dx.dtype, reducer == meanvar  ? code
                                                              : reducer == minmax ? dx.dtype
                                                                                  : i64};
  void* dst[2] = {nullptr, nullptr};
  nb::object res[2];
  if (full) {
    void* pair = nullptr;
    nb::object p = take(
        T.pairs[{dx.device, code, stream}], static_cast<std::uintptr_t>(2 * dtype_sizes[code]),
        [&] { return nb::steal(PyObject_CallFunction(T.pair_block, "iO", code, x.ptr())); }, pair);
    for (int k = 0; k < 2; ++k) {
      res[k] = p[k];
      if ((want >> k) & 1) dst[k] = static_cast<char*>(pair) + k * dtype_sizes[code];
    }
  } else {
    nb::tuple kept = nb::steal<nb::tuple>(PyTuple_New(rank));
    for (int a = 0; a < rank; ++a) PyTuple_SET_ITEM(kept.ptr(), a, PyLong_FromLongLong(out.shape[a]));
    for (int k = 0; k < 2; ++k)
      if ((want >> k) & 1) res[k] = new_tensor(T, kept.ptr(), codes[k], dx.device, x.ptr(), dst[k]);
  }
  nb::object hold;
  out.data = structs_buffer(T, dx.device, stream, out.size(), x.ptr(), hold);
  DeviceGuard on(dx.device);
  dispatch_reducer(xx, m, out, stream, reducer);
  with_reducer(reducer, dx.dtype, [&]<class R, class X>() {
    using V = typename R::value_type;
    const V* s = static_cast<const V*>(out.data);
    if constexpr (std::is_same_v<V, tr::ValueIndex<X>>)
      store_fields<X>(s, n_out, static_cast<X*>(dst[0]), static_cast<std::int64_t*>(dst[1]), stream);
    else if constexpr (std::is_same_v<V, tr::MinMaxPair<X>>)
      store_fields<X>(s, n_out, static_cast<X*>(dst[0]), static_cast<X*>(dst[1]), stream);
    else if (code == f32)
      store_fields<float>(s, n_out, static_cast<float*>(dst[0]), static_cast<float*>(dst[1]), n - correction, stream);
    else
      store_fields<double>(s, n_out, static_cast<double*>(dst[0]), static_cast<double*>(dst[1]), n - correction,
                           stream);
  });
  return picked(res[0], res[1], want);
}
#else
nb::object reducer_torch(nb::handle, int, nb::handle, std::int64_t, int) {
  return nb::none();
}  // the general path says why
#endif

}  // namespace

void bind_torch(nb::module_& m) {
  m.def(
      "_reduce_tables",
      [](nb::list acc_default, nb::list acc_allowed) {
        for (int op = 0; op < n_ops; ++op) {
          tables.ops[op] = intern(op_names[op]);
          for (int c = 0; c < 4; ++c) {
            tables.acc_default[op][c] = static_cast<std::int8_t>(nb::cast<int>(acc_default[op][c]));
            tables.acc_allowed[op][c] = static_cast<std::uint8_t>(nb::cast<int>(acc_allowed[op][c]));
          }
        }
        tables.set = true;
      },
      "tally.reduce's (op, dtype) -> accumulator rules, as tables: acc_default[op][code] (-1: rejected) and "
      "acc_allowed[op][code] (bit a: an out of dtype a is allowed).");
  m.def(
      "_torch_setup",
      [](nb::handle type, nb::tuple dtypes, nb::handle raw_stream, nb::handle empty, nb::handle block) {
        if (torch_state != nullptr) return;  // the first adapter's (tensor subclasses make their own adapters)
        auto* T = new Torch;
        T->type = type.inc_ref().ptr();
        for (int c = 0; c < 4; ++c) T->dtypes[c] = dtypes[static_cast<std::size_t>(c)].inc_ref().ptr();
        T->raw_stream = raw_stream.is_none() ? nullptr : raw_stream.inc_ref().ptr();
        T->empty = empty.inc_ref().ptr();
        T->block = block.inc_ref().ptr();
        T->s_dtype = intern("dtype"), T->s_is_cuda = intern("is_cuda"), T->s_get_device = intern("get_device");
        T->s_data_ptr = intern("data_ptr"), T->s_shape = intern("shape"), T->s_stride = intern("stride");
        torch_state = T;
      },
      "The PyTorch pieces of the fast path: torch.Tensor, its dtypes by code, the raw current-stream getter "
      "(None: no fast path), empty(shape, code, like) and block(code, like) -> (0-d views, data pointer).");
  m.def("reduce_torch", &reduce_torch, nb::arg("x").none(), nb::arg("op").none(), nb::arg("axis").none(),
        nb::arg("out").none(),
        "tally.reduce(x, op, axis, out) for a torch.Tensor on a CUDA device, or None where the general path must "
        "take the call (it then reports any error).");
  m.def(
      "_torch_reducers_setup",
      [](nb::handle struct_block, nb::handle pair_block, nb::handle torch_empty) {
        if (torch_state == nullptr || torch_state->struct_block != nullptr) return;
        torch_state->struct_block = struct_block.inc_ref().ptr();
        torch_state->pair_block = pair_block.inc_ref().ptr();
        torch_state->torch_empty = torch_empty.inc_ref().ptr();
      },
      "The PyTorch pieces of the reducers' fast path: struct_block(reducer, code, like), pair_block(code, like), "
      "torch.empty.");
  m.def("reducer_torch", &reducer_torch, nb::arg("x").none(), nb::arg("reducer"), nb::arg("axis").none(),
        nb::arg("correction") = 0, nb::arg("want") = 3,
        "A reducer (_tally.REDUCERS' code) over axes of a torch.Tensor on CUDA, on the current stream: "
        "argmax/argmin (values, indices), minmax (min, max), meanvar (variance, mean); want: which of the two "
        "(bit 0 the first, bit 1 the second; one alone is returned as itself); None where the general path must "
        "take the call.");
  m.def(
      "_torch_scalar",
      [](int device, int code, std::uintptr_t stream, nb::handle like) {
        if (torch_state == nullptr) throw nb::value_error("_torch_scalar: no _torch_setup");
        check_dtype(code, "code");
        void* data = nullptr;
        nb::object v = take_scalar(*torch_state, device, code, stream, like.ptr(), data);
        return std::make_pair(v, reinterpret_cast<std::uintptr_t>(data));
      },
      "A fresh 0-d tensor of dtype code on (device, stream), carved from the shared blocks, and its data pointer.");
}

}  // namespace tally::python
