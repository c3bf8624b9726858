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

void bind_reduce(nanobind::module_& m);
void bind_reducers(nanobind::module_& m);
void bind_segments(nanobind::module_& m);
void bind_solvers(nanobind::module_& m);

}  // namespace tally::python
