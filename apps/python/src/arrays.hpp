#pragma once
// The arrays of the _tally module's reductions: an array described by (pointer, dtype, device,
// shape, strides), its mapping onto the library's (gang, worker, vector) strided view, the checks
// every reduction entry makes, and the per-(device, stream) workspaces. Shared by reduce_binding.cpp
// (the operators) and reducers_binding.cpp (arg-max/min, min-max, mean/variance).
#include "bindings.hpp"

#include <cstdint>
#include <string>

#include "tally/reduce/reduce.hpp"

namespace tally::python {

namespace tr = ::tally::reduce;

enum DType : int { i32 = 0, i64 = 1, f32 = 2, f64 = 3 };
inline constexpr const char* dtype_names[] = {"int32", "int64", "float32", "float64"};
inline constexpr std::int64_t dtype_sizes[] = {4, 8, 4, 8};

inline constexpr int max_ndim = 64;

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
std::string shape_str(const std::int64_t* s, int n);
std::string device_str(int d);

/// The (gang, worker, vector) view of x and its level set. `order` lists the caller's reduced axes
/// of extent > 1 in the view's order (outermost first): the library numbers the reduced elements
/// row-major in that order (ArgMax's flat index and first-index rule), which differs from the
/// caller's C order where the mapping sorted axes by stride (a transposed array).
struct Mapped {
  tr::Extents ext;
  std::int64_t stride_w = 0, stride_g = 0;
  tr::Levels levels;
  int n_order = 0;
  int order[max_ndim]{};
};

/// Mapped for x over the axes in the bit mask, or LayoutError (see arrays.cpp for the rules).
Mapped map_layout(const Desc& x, std::uint64_t mask);

/// The checks of every reduction entry that depend on x alone: dtype, axis mask, the stream's device.
void check_input(const Desc& x, std::uint64_t mask, std::uintptr_t stream);

/// The view to launch on: map_layout's, or for an empty reduced axis the library's empty path
/// ((1, out_size, 0) over the vector level, xx.data null). `out_size`: the number of kept positions.
Mapped view_of(const Desc& x, std::uint64_t mask, std::int64_t out_size, Desc& xx);

/// The shape of x without the axes in the mask (the result's shape), and its rank.
int kept_shape(const Desc& x, std::uint64_t mask, std::int64_t* want);

void check_dtype(int dtype, const char* arg);
/// out: C-contiguous (extent-1 axes aside), on x's device.
void check_out_layout(const Desc& x, const Desc& out);

tr::Workspace& cpu_workspace();
tr::Workspace& cuda_workspace(int device, std::uintptr_t stream);

/// Makes `device` current for the call and restores the caller's device after it (CUDA builds).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

// The input pointer of the last launch: the tests compare it with the caller's data pointer (zero copy).
extern std::uintptr_t last_input_pointer;

/// Runs f(backend, workspace, stream) on x's device: the CPU backend without the GIL, or the CUDA
/// backend with x's device current and its (device, stream) workspace.
template <class F>
void on_device(const Desc& x, std::uintptr_t stream, F&& f) {
  last_input_pointer = reinterpret_cast<std::uintptr_t>(x.data);
  if (x.device < 0) {
    nanobind::gil_scoped_release unlocked;
    f(tr::Backend::cpu, cpu_workspace(), static_cast<stream_t>(nullptr));
    return;
  }
  DeviceGuard on(x.device);  // throws in a build without the CUDA backend
  f(tr::Backend::cuda, cuda_workspace(x.device, stream), reinterpret_cast<stream_t>(stream));
}

int dtype_code(const nanobind::dlpack::dtype& d);

template <class Array>
Desc from_ndarray(const Array& a, const char* arg) {
  Desc d;
  if (a.ndim() > max_ndim) throw nanobind::value_error((std::string(arg) + ": more than 64 dimensions").c_str());
  d.data = const_cast<void*>(static_cast<const void*>(a.data()));  // x is only read
  d.dtype = dtype_code(a.dtype());
  check_dtype(d.dtype, arg);
  if (a.device_type() == nanobind::device::cuda::value) d.device = a.device_id();
  else if (a.device_type() == nanobind::device::cpu::value) d.device = -1;
  else
    throw nanobind::value_error((std::string(arg) + ": neither host memory nor a CUDA device (DLPack device type " +
                                 std::to_string(a.device_type()) + ")")
                                    .c_str());
  d.ndim = static_cast<int>(a.ndim());
  for (int i = 0; i < d.ndim; ++i)
    d.shape[i] = static_cast<std::int64_t>(a.shape(static_cast<std::size_t>(i))),
    d.strides[i] = a.stride(static_cast<std::size_t>(i));
  return d;
}

/// (ptr, dtype code, device, shape, strides in elements or bytes): PyTorch (elements), CuPy and the
/// CUDA array interface (bytes).
Desc from_raw(std::uintptr_t ptr, int dtype, int device, const nanobind::tuple& shape, const nanobind::tuple& strides,
              bool strides_in_bytes, const char* arg);

}  // namespace tally::python
