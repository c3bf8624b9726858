#pragma once
// The pieces of the _tally extension module (nanobind): one bind_* per part.

#include <stdexcept>
#include <string>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

namespace tally::python {

/// An array whose strides the library's (gang, worker, vector) view cannot take: tally.LayoutError,
/// a ValueError; tally.reduce(copy=True) catches it and reduces a contiguous copy instead.
class LayoutError : public std::invalid_argument {
 public:
  explicit LayoutError(const std::string& m) : std::invalid_argument(m) {}
};

/// An arg-reduction whose reduced axes the view would number in memory order, not the caller's
/// (tally._tally.ArgOrderError, a LayoutError): tally.argmax then reduces in two stages instead.
class ArgOrderError : public LayoutError {
 public:
  using LayoutError::LayoutError;
};

void bind_reduce(nanobind::module_& m);
void bind_reducers(nanobind::module_& m);
void bind_segments(nanobind::module_& m);
void bind_solvers(nanobind::module_& m);
void bind_torch(nanobind::module_& m);

}  // namespace tally::python
