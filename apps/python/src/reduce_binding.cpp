// tally.reduce's compiled half: an array described by (pointer, dtype, device, shape, strides) is
// mapped onto the library's (gang, worker, vector) strided view and reduced in place through the
// public C++ API (tally/reduce/reduce.hpp). The Python half (tally/_reduce.py) speaks the frameworks.
//
// Mapping (no copy): axes of extent 1 are dropped; the rest are ordered by decreasing stride when
// that keeps the kept axes in their order (the output is C-contiguous in the caller's axis order);
// neighbours of the same kind (reduced or kept) that are contiguous with each other are merged. At
// most three groups remain: they are (gang, worker, vector), the innermost with stride 1 (or a
// virtual vector axis of extent 1 when the innermost stride is not 1). Anything else raises
// LayoutError (a ValueError): the Python side then copies only when asked (copy=True).
#include "bindings.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "tally/reduce/reduce.hpp"
#if defined(TALLY_HAS_CUDA)
#include <cuda_runtime_api.h>

#include "tally/common/cuda_check.cuh"
#endif

namespace nb = nanobind;
namespace tr = tally::reduce;

namespace tally::python {
namespace {

enum DType : int { i32 = 0, i64 = 1, f32 = 2, f64 = 3 };
constexpr const char* dtype_names[] = {"int32", "int64", "float32", "float64"};
constexpr std::int64_t dtype_sizes[] = {4, 8, 4, 8};
enum Op : int { sum, prod, max, min, band, bor, bxor, land, lor, exact_sum, n_ops };
constexpr const char* op_names[] = {"sum", "prod", "max", "min", "band", "bor", "bxor", "land", "lor", "exact_sum"};

constexpr int max_ndim = 64;

/// An array as the kernels see it: strides in elements, device -1 for host memory.
struct Desc {
  void* data = nullptr;
  int dtype = -1;
  int device = -1;
  int ndim = 0;
  std::int64_t shape[max_ndim]{};
  std::int64_t strides[max_ndim]{};
  [[nodiscard]] std::int64_t size() const {
    std::int64_t n = 1;
    for (int a = 0; a < ndim; ++a) n *= shape[a];
    return n;
  }
};

// No iostreams in the module: under PyTorch the process's libstdc++ may be older than the one the
// module was built against, and a stream's locale facets then crash (seen on the GPU machine).
std::string shape_str(const std::int64_t* s, int n) {
  std::string o = "(";
  for (int a = 0; a < n; ++a) o += (a ? ", " : "") + std::to_string(s[a]);
  return o + (n == 1 ? ",)" : ")");
}
std::string device_str(int d) { return d < 0 ? std::string("cpu") : "cuda:" + std::to_string(d); }

[[noreturn]] void layout_error(const std::string& m) { throw LayoutError("x: " + m + "; pass copy=True to reduce a contiguous copy"); }

/// The (gang, worker, vector) view of x and its level set, or LayoutError.
struct Mapped {
  tr::Extents ext;
  std::int64_t stride_w = 0, stride_g = 0;
  tr::Levels levels;
};

Mapped map_layout(const Desc& x, std::uint64_t mask) {
  struct Axis {
    std::int64_t extent, stride;
    bool reduced;
    int index;
  };
  Axis axes[max_ndim + 1];
  int n = 0;
  for (int a = 0; a < x.ndim; ++a) {
    if (x.shape[a] == 1) continue;
    if (x.strides[a] < 0) layout_error("negative stride on axis " + std::to_string(a));
    axes[n++] = {x.shape[a], x.strides[a], ((mask >> a) & 1u) != 0, a};
  }
  // Decreasing strides (a transposed array, or reduced axes in any order) when the kept axes keep
  // their order, since the output is C-contiguous in the caller's axis order.
  Axis sorted[max_ndim + 1];
  std::copy(axes, axes + n, sorted);
  std::stable_sort(sorted, sorted + n, [](const Axis& l, const Axis& r) { return l.stride > r.stride; });
  bool kept_in_order = true;
  for (int i = 0, last = -1; i < n; ++i)
    if (!sorted[i].reduced) {
      if (sorted[i].index < last) kept_in_order = false;
      last = sorted[i].index;
    }
  if (kept_in_order) std::copy(sorted, sorted + n, axes);

  Axis groups[max_ndim + 2];
  int g = 0;
  bool any_reduced = false;
  for (int i = 0; i < n; ++i) {
    any_reduced |= axes[i].reduced;
    if (g > 0 && groups[g - 1].reduced == axes[i].reduced && groups[g - 1].stride == axes[i].extent * axes[i].stride)
      groups[g - 1] = {groups[g - 1].extent * axes[i].extent, axes[i].stride, axes[i].reduced, axes[i].index};
    else
      groups[g++] = axes[i];
  }
  // A virtual vector axis of extent 1: the innermost group is strided, or nothing is reduced.
  if (g == 0 || groups[g - 1].stride != 1 || !any_reduced) groups[g++] = {1, 1, true, -1};
  if (g > 3)
    layout_error("the axes of shape " + shape_str(x.shape, x.ndim) + " with strides " + shape_str(x.strides, x.ndim) +
                 " make " + std::to_string(g) + " groups after merging contiguous axes (at most 3: gang, worker, vector)");
  Axis three[3] = {{1, 0, false, -1}, {1, 0, false, -1}, {1, 0, false, -1}};
  std::copy(groups, groups + g, three + (3 - g));
  Mapped m;
  m.ext = {three[0].extent, three[1].extent, three[2].extent};
  m.stride_w = three[1].extent == 1 ? m.ext.nv : three[1].stride;
  m.stride_g = three[0].extent == 1 ? m.ext.nw * m.stride_w : three[0].stride;
  if ((m.ext.nw > 1 && m.stride_w < m.ext.nv) || (m.ext.ng > 1 && m.stride_g < (m.ext.nw - 1) * m.stride_w + m.ext.nv))
    layout_error("strides " + shape_str(x.strides, x.ndim) + " overlap or are not ordered (a broadcast or interleaved view)");
  unsigned bits = 0;
  if (three[0].reduced) bits |= static_cast<unsigned>(tr::Level::gang);
  if (three[1].reduced) bits |= static_cast<unsigned>(tr::Level::worker);
  if (three[2].reduced) bits |= static_cast<unsigned>(tr::Level::vector);
  m.levels = tr::Levels::from_bits(bits);
  return m;
}

// ---- workspaces: one per (device, stream), since concurrent streams may not share one -------------
// Used with the GIL held (only the CPU path, which needs no workspace state, releases it).
struct Workspaces {
  tr::Workspace cpu{tr::Backend::cpu};
  std::map<std::pair<int, std::uintptr_t>, tr::Workspace> cuda;
};
Workspaces& workspaces() {
  static auto* w = new Workspaces;  // never destroyed: CUDA may be gone at interpreter exit
  return *w;
}
[[maybe_unused]] tr::Workspace& cuda_workspace(int device, std::uintptr_t stream) {
  auto& w = workspaces();
  auto it = w.cuda.find({device, stream});
  if (it == w.cuda.end()) it = w.cuda.emplace(std::pair{device, stream}, tr::Workspace(tr::Backend::cuda)).first;
  return it->second;
}

#if defined(TALLY_HAS_CUDA)
/// Makes `device` current for the call and restores the caller's device after it.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    TALLY_CUDA_TRY(cudaGetDevice(&previous_));
    if (previous_ != device) TALLY_CUDA_TRY(cudaSetDevice(device));
    else previous_ = -1;
  }
  ~DeviceGuard() {
    if (previous_ >= 0) (void)cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};
#endif

// The input pointer of the last launch: the tests compare it with the caller's data pointer (zero copy).
std::uintptr_t last_input_pointer = 0;

template <class Op, class T, class Acc>
void launch(const Desc& x, const Mapped& m, Desc& out, std::uintptr_t stream) {
  last_input_pointer = reinterpret_cast<std::uintptr_t>(x.data);
  const auto in = tr::View<const T>::strided(static_cast<const T*>(x.data), m.ext, m.stride_w, m.stride_g);
  const std::span<Acc> o(static_cast<Acc*>(out.data), static_cast<std::size_t>(out.size()));
  if (x.device < 0) {
    nb::gil_scoped_release unlocked;
    tr::reduce<Op, T, Acc>(tr::Backend::cpu, in, m.levels, o, workspaces().cpu);
    return;
  }
#if defined(TALLY_HAS_CUDA)
  DeviceGuard on(x.device);
  auto* s = reinterpret_cast<tally::stream_t>(stream);
  tr::reduce<Op, T, Acc>(tr::Backend::cuda, in, m.levels, o, cuda_workspace(x.device, stream), s);
#else
  (void)stream;
  throw nb::value_error("x: lives on a CUDA device but this tally was built without the CUDA backend");
#endif
}

template <class Op>
void dispatch_types(const Desc& x, const Mapped& m, Desc& out, std::uintptr_t stream, int op) {
  const auto bad = [&]() {
    throw nb::type_error(("out/acc_dtype: " + std::string(dtype_names[out.dtype]) + " is not an accumulator of op='" +
                          op_names[op] + "' for x of dtype " + dtype_names[x.dtype] +
                          " (same type; int32 -> int64, float32 -> float64; bit and logical ops need integers)")
                             .c_str());
  };
  const auto go = [&]<class T, class Acc>() {
    // Bit and logical ops are compiled with Acc == T only (reduce/src/instantiate.hpp), although
    // is_supported also admits int32 -> int64 for them.
    if constexpr (tr::is_supported<Op, T, Acc> && (!tr::is_bitwise_op<Op> || std::is_same_v<T, Acc>))
      launch<Op, T, Acc>(x, m, out, stream);
    else bad();
  };
  switch (x.dtype * 4 + out.dtype) {
    case i32 * 4 + i32: return go.template operator()<std::int32_t, std::int32_t>();
    case i32 * 4 + i64: return go.template operator()<std::int32_t, std::int64_t>();
    case i64 * 4 + i64: return go.template operator()<std::int64_t, std::int64_t>();
    case f32 * 4 + f32: return go.template operator()<float, float>();
    case f32 * 4 + f64: return go.template operator()<float, double>();
    case f64 * 4 + f64: return go.template operator()<double, double>();
    default: bad();
  }
}

void check_dtype(int dtype, const char* arg) {
  if (dtype < 0 || dtype > 3)
    throw nb::type_error((std::string(arg) + ": unsupported dtype (tally reduces int32, int64, float32, float64)").c_str());
}

void dispatch_op(const Desc& xx, const Mapped& m, Desc& out, std::uintptr_t stream, int op);

/// Checks out against x and the axis set (before anything is launched), maps x and reduces.
void run(const Desc& x, Desc& out, int op, std::uint64_t mask, std::uintptr_t stream) {
  check_dtype(x.dtype, "x");
  check_dtype(out.dtype, "out");
  if (op < 0 || op >= n_ops) throw nb::value_error(("op: unknown operator code " + std::to_string(op)).c_str());
  if (x.ndim < 64 && (mask >> x.ndim) != 0)
    throw nb::value_error(("axis: out of range for an array of " + std::to_string(x.ndim) + " dimensions").c_str());
  std::int64_t want[max_ndim];
  int rank = 0;
  for (int a = 0; a < x.ndim; ++a)
    if (((mask >> a) & 1u) == 0) want[rank++] = x.shape[a];
  if (out.ndim != rank || !std::equal(want, want + rank, out.shape))
    throw nb::value_error(("out: has shape " + shape_str(out.shape, out.ndim) + ", reducing x of shape " +
                           shape_str(x.shape, x.ndim) + " gives " + shape_str(want, rank))
                              .c_str());
  for (std::int64_t a = out.ndim - 1, expect = 1; a >= 0 && out.size() > 0; --a) {
    if (out.shape[a] != 1 && out.strides[a] != expect)
      throw nb::value_error(("out: must be C-contiguous (strides " + shape_str(out.strides, out.ndim) + ")").c_str());
    expect *= out.shape[a];
  }
  if (out.device != x.device)
    throw nb::value_error(("out: on " + device_str(out.device) + ", x on " + device_str(x.device)).c_str());
#if defined(TALLY_HAS_CUDA) && CUDART_VERSION >= 12080
  // A stream of another device would order nothing and run nowhere useful: refuse it.
  if (x.device >= 0 && stream > 2) {  // 0, 1, 2: the legacy and per-thread default streams
    int sdev = -1;
    if (cudaStreamGetDevice(reinterpret_cast<cudaStream_t>(stream), &sdev) == cudaSuccess && sdev != x.device)
      throw nb::value_error(("stream: belongs to cuda:" + std::to_string(sdev) + ", x is on " + device_str(x.device)).c_str());
  }
#endif
  if (out.size() == 0) return;  // nothing to write (an empty kept axis)
  Mapped m;
  Desc xx = x;
  if (x.size() == 0) {  // an empty reduced axis: identities, through the library's empty path
    m.ext = {1, out.size(), 0};
    m.stride_w = 0, m.stride_g = 0;
    m.levels = tr::Level::vector;
    xx.data = nullptr;
  } else {
    m = map_layout(x, mask);
  }
  dispatch_op(xx, m, out, stream, op);
}

void dispatch_op(const Desc& xx, const Mapped& m, Desc& out, std::uintptr_t stream, int op) {
  switch (op) {
    case sum: return dispatch_types<tr::Sum>(xx, m, out, stream, op);
    case prod: return dispatch_types<tr::Prod>(xx, m, out, stream, op);
    case max: return dispatch_types<tr::Max>(xx, m, out, stream, op);
    case min: return dispatch_types<tr::Min>(xx, m, out, stream, op);
    case band: return dispatch_types<tr::BitAnd>(xx, m, out, stream, op);
    case bor: return dispatch_types<tr::BitOr>(xx, m, out, stream, op);
    case bxor: return dispatch_types<tr::BitXor>(xx, m, out, stream, op);
    case land: return dispatch_types<tr::LogicalAnd>(xx, m, out, stream, op);
    case lor: return dispatch_types<tr::LogicalOr>(xx, m, out, stream, op);
    case exact_sum: return dispatch_types<tr::ExactSum>(xx, m, out, stream, op);
    default: break;
  }
}

// ---- the two ways in ----------------------------------------------------------------------------
int dtype_code(const nb::dlpack::dtype& d) {
  using nb::dlpack::dtype_code;
  if (d.lanes != 1) return -1;
  if (d.code == static_cast<std::uint8_t>(dtype_code::Int) && d.bits == 32) return i32;
  if (d.code == static_cast<std::uint8_t>(dtype_code::Int) && d.bits == 64) return i64;
  if (d.code == static_cast<std::uint8_t>(dtype_code::Float) && d.bits == 32) return f32;
  if (d.code == static_cast<std::uint8_t>(dtype_code::Float) && d.bits == 64) return f64;
  return -1;
}

template <class Array>
Desc from_ndarray(const Array& a, const char* arg) {
  Desc d;
  if (a.ndim() > max_ndim) throw nb::value_error((std::string(arg) + ": more than 64 dimensions").c_str());
  d.data = const_cast<void*>(static_cast<const void*>(a.data()));  // x is only read
  d.dtype = dtype_code(a.dtype());
  check_dtype(d.dtype, arg);
  if (a.device_type() == nb::device::cuda::value) d.device = a.device_id();
  else if (a.device_type() == nb::device::cpu::value) d.device = -1;
  else throw nb::value_error((std::string(arg) + ": neither host memory nor a CUDA device (DLPack device type " +
                              std::to_string(a.device_type()) + ")").c_str());
  d.ndim = static_cast<int>(a.ndim());
  for (int i = 0; i < d.ndim; ++i) d.shape[i] = static_cast<std::int64_t>(a.shape(static_cast<std::size_t>(i))), d.strides[i] = a.stride(static_cast<std::size_t>(i));
  return d;
}

/// (ptr, dtype code, device, shape, strides in units of `unit` bytes): PyTorch (unit 1 = elements),
/// CuPy and the CUDA array interface (unit = 0: bytes).
Desc from_raw(std::uintptr_t ptr, int dtype, int device, const nb::tuple& shape, const nb::tuple& strides, bool strides_in_bytes,
              const char* arg) {
  Desc d;
  d.data = reinterpret_cast<void*>(ptr);
  d.dtype = dtype;
  check_dtype(dtype, arg);
  d.device = device;
  d.ndim = static_cast<int>(shape.size());
  if (d.ndim > max_ndim) throw nb::value_error((std::string(arg) + ": more than 64 dimensions").c_str());
  if (strides.size() != shape.size()) throw nb::value_error((std::string(arg) + ": strides and shape differ in length").c_str());
  const std::int64_t isz = dtype_sizes[dtype];
  for (int i = 0; i < d.ndim; ++i) {
    d.shape[i] = nb::cast<std::int64_t>(shape[static_cast<std::size_t>(i)]);
    std::int64_t s = nb::cast<std::int64_t>(strides[static_cast<std::size_t>(i)]);
    if (strides_in_bytes) {
      if (s % isz != 0) throw LayoutError(std::string(arg) + ": a stride of " + std::to_string(s) + " bytes is not a whole number of elements");
      s /= isz;
    }
    d.strides[i] = s;
  }
  return d;
}

}  // namespace

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
      [](std::uintptr_t x_ptr, int x_dtype, int x_device, nb::tuple x_shape, nb::tuple x_strides, std::uintptr_t out_ptr,
         int out_dtype, int out_device, nb::tuple out_shape, nb::tuple out_strides, bool strides_in_bytes, int op,
         std::uint64_t mask, std::uintptr_t stream) {
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
        Mapped m{{ng, nw, nv}, stride_w, stride_g, tr::Levels::from_bits(level_bits)};
        // `repeats` back-to-back calls in one C++ loop: the benchmark's per-call cost of the C++ API.
        for (int r = 0; r < repeats; ++r) dispatch_op(x, m, out, stream, op);
      },
      nb::arg("x_ptr"), nb::arg("x_dtype"), nb::arg("device"), nb::arg("ng"), nb::arg("nw"), nb::arg("nv"),
      nb::arg("stride_w"), nb::arg("stride_g"), nb::arg("level_bits"), nb::arg("out_ptr"), nb::arg("out_dtype"),
      nb::arg("out_size"), nb::arg("op"), nb::arg("stream") = 0, nb::arg("repeats") = 1);
  m.def("cuda_built", &tr::cuda_built);
  m.def("cuda_device_count", &tr::cuda_device_count);
  nb::list ops, dtypes;
  for (const char* o : op_names) ops.append(o);
  for (const char* d : dtype_names) dtypes.append(d);
  m.attr("OPS") = nb::tuple(ops);
  m.attr("DTYPES") = nb::tuple(dtypes);
}

}  // namespace tally::python
