// The arrays of the module's reductions (arrays.hpp): descriptions, the layout mapping, the checks.
//
// Mapping (no copy): axes of extent 1 are dropped; the rest are ordered by decreasing stride when
// that keeps the kept axes in their order (the output is C-contiguous in the caller's axis order);
// neighbours of the same kind (reduced or kept) that are contiguous with each other are merged. At
// most three groups remain: they are (gang, worker, vector), the innermost with stride 1 (or a
// virtual vector axis of extent 1 when the innermost stride is not 1). Anything else raises
// LayoutError (a ValueError): the Python side then copies only when asked (copy=True).
#include "arrays.hpp"

#include <algorithm>
#include <map>
#include <utility>

#if defined(TALLY_HAS_CUDA)
#include <cuda_runtime_api.h>

#include "tally/common/cuda_check.cuh"
#endif

namespace nb = nanobind;

namespace tally::python {

std::uintptr_t last_input_pointer = 0;

std::string shape_str(const std::int64_t* s, int n) {
  std::string o = "(";
  for (int a = 0; a < n; ++a) o += (a ? ", " : "") + std::to_string(s[a]);
  return o + (n == 1 ? ",)" : ")");
}
std::string device_str(int d) { return d < 0 ? std::string("cpu") : "cuda:" + std::to_string(d); }

namespace {
[[noreturn]] void layout_error(const std::string& m) {
  throw LayoutError("x: " + m + "; pass copy=True to reduce a contiguous copy");
}
}  // namespace

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

  Mapped m;
  for (int i = 0; i < n; ++i)
    if (axes[i].reduced) m.order[m.n_order++] = axes[i].index;
  Axis groups[max_ndim + 2];
  int g = 0;
  bool any_reduced = false;
  for (int i = 0; i < n; ++i) {
    any_reduced |= axes[i].reduced;
    if (g > 0 && groups[g - 1].reduced == axes[i].reduced && groups[g - 1].stride == axes[i].extent * axes[i].stride)
      groups[g - 1] = {groups[g - 1].extent * axes[i].extent, axes[i].stride, axes[i].reduced, axes[i].index};
    else groups[g++] = axes[i];
  }
  // A virtual vector axis of extent 1: the innermost group is strided, or nothing is reduced.
  if (g == 0 || groups[g - 1].stride != 1 || !any_reduced) groups[g++] = {1, 1, true, -1};
  if (g > 3)
    layout_error("the axes of shape " + shape_str(x.shape, x.ndim) + " with strides " + shape_str(x.strides, x.ndim) +
                 " make " + std::to_string(g) +
                 " groups after merging contiguous axes (at most 3: gang, worker, vector)");
  Axis three[3] = {{1, 0, false, -1}, {1, 0, false, -1}, {1, 0, false, -1}};
  std::copy(groups, groups + g, three + (3 - g));
  m.ext = {three[0].extent, three[1].extent, three[2].extent};
  m.stride_w = three[1].extent == 1 ? m.ext.nv : three[1].stride;
  m.stride_g = three[0].extent == 1 ? m.ext.nw * m.stride_w : three[0].stride;
  if ((m.ext.nw > 1 && m.stride_w < m.ext.nv) || (m.ext.ng > 1 && m.stride_g < (m.ext.nw - 1) * m.stride_w + m.ext.nv))
    layout_error("strides " + shape_str(x.strides, x.ndim) +
                 " overlap or are not ordered (a broadcast or interleaved view)");
  unsigned bits = 0;
  if (three[0].reduced) bits |= static_cast<unsigned>(tr::Level::gang);
  if (three[1].reduced) bits |= static_cast<unsigned>(tr::Level::worker);
  if (three[2].reduced) bits |= static_cast<unsigned>(tr::Level::vector);
  m.levels = tr::Levels::from_bits(bits);
  return m;
}

void check_dtype(int dtype, const char* arg) {
  if (dtype < 0 || dtype > 3)
    throw nb::type_error(
        (std::string(arg) + ": unsupported dtype (tally reduces int32, int64, float32, float64)").c_str());
}

int kept_shape(const Desc& x, std::uint64_t mask, std::int64_t* want) {
  int rank = 0;
  for (int a = 0; a < x.ndim; ++a)
    if (((mask >> a) & 1u) == 0) want[rank++] = x.shape[a];
  return rank;
}

void check_out_layout(const Desc& x, const Desc& out) {
  for (std::int64_t a = out.ndim - 1, expect = 1; a >= 0 && out.size() > 0; --a) {
    if (out.shape[a] != 1 && out.strides[a] != expect)
      throw nb::value_error(("out: must be C-contiguous (strides " + shape_str(out.strides, out.ndim) + ")").c_str());
    expect *= out.shape[a];
  }
  if (out.device != x.device)
    throw nb::value_error(("out: on " + device_str(out.device) + ", x on " + device_str(x.device)).c_str());
}

void check_input(const Desc& x, std::uint64_t mask, std::uintptr_t stream) {
  check_dtype(x.dtype, "x");
  if (x.ndim < 64 && (mask >> x.ndim) != 0)
    throw nb::value_error(("axis: out of range for an array of " + std::to_string(x.ndim) + " dimensions").c_str());
#if defined(TALLY_HAS_CUDA) && CUDART_VERSION >= 12080
  // A stream of another device would order nothing and run nowhere useful: refuse it.
  if (x.device >= 0 && stream > 2) {  // 0, 1, 2: the legacy and per-thread default streams
    int sdev = -1;
    if (cudaStreamGetDevice(reinterpret_cast<cudaStream_t>(stream), &sdev) == cudaSuccess && sdev != x.device)
      throw nb::value_error(
          ("stream: belongs to cuda:" + std::to_string(sdev) + ", x is on " + device_str(x.device)).c_str());
  }
#else
  (void)stream;
#endif
}

Mapped view_of(const Desc& x, std::uint64_t mask, std::int64_t out_size, Desc& xx) {
  xx = x;
  if (x.size() == 0) {  // an empty reduced axis: identities, through the library's empty path
    Mapped m;
    m.ext = {1, out_size, 0};
    m.levels = tr::Level::vector;
    xx.data = nullptr;
    return m;
  }
  return map_layout(x, mask);
}

// ---- workspaces: one per (device, stream), since concurrent streams may not share one -------------
// Used with the GIL held (only the CPU path, which needs no workspace state, releases it).
namespace {
struct Workspaces {
  tr::Workspace cpu{tr::Backend::cpu};
  std::map<std::pair<int, std::uintptr_t>, tr::Workspace> cuda;
};
Workspaces& workspaces() {
  static auto* w = new Workspaces;  // never destroyed: CUDA may be gone at interpreter exit
  return *w;
}
}  // namespace

tr::Workspace& cpu_workspace() { return workspaces().cpu; }

tr::Workspace& cuda_workspace(int device, std::uintptr_t stream) {
  auto& w = workspaces();
  auto it = w.cuda.find({device, stream});
  if (it == w.cuda.end()) it = w.cuda.emplace(std::pair{device, stream}, tr::Workspace(tr::Backend::cuda)).first;
  return it->second;
}

#if defined(TALLY_HAS_CUDA)
DeviceGuard::DeviceGuard(int device) {
  TALLY_CUDA_TRY(cudaGetDevice(&previous_));
  if (previous_ != device) TALLY_CUDA_TRY(cudaSetDevice(device));
  else previous_ = -1;
}
DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) (void)cudaSetDevice(previous_);
}
#else
DeviceGuard::DeviceGuard(int) {
  throw nb::value_error("x: lives on a CUDA device but this tally was built without the CUDA backend");
}
DeviceGuard::~DeviceGuard() = default;
#endif

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

Desc from_raw(std::uintptr_t ptr, int dtype, int device, const nb::tuple& shape, const nb::tuple& strides,
              bool strides_in_bytes, const char* arg) {
  Desc d;
  d.data = reinterpret_cast<void*>(ptr);
  d.dtype = dtype;
  check_dtype(dtype, arg);
  d.device = device;
  d.ndim = static_cast<int>(shape.size());
  if (d.ndim > max_ndim) throw nb::value_error((std::string(arg) + ": more than 64 dimensions").c_str());
  if (strides.size() != shape.size())
    throw nb::value_error((std::string(arg) + ": strides and shape differ in length").c_str());
  const std::int64_t isz = dtype_sizes[dtype];
  for (int i = 0; i < d.ndim; ++i) {
    d.shape[i] = nb::cast<std::int64_t>(shape[static_cast<std::size_t>(i)]);
    std::int64_t s = nb::cast<std::int64_t>(strides[static_cast<std::size_t>(i)]);
    if (strides_in_bytes) {
      if (s % isz != 0)
        throw LayoutError(std::string(arg) + ": a stride of " + std::to_string(s) +
                          " bytes is not a whole number of elements");
      s /= isz;
    }
    d.strides[i] = s;
  }
  return d;
}

}  // namespace tally::python
