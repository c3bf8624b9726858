// _tally: the compiled half of the `tally` Python package (apps/python/tally).
#include "bindings.hpp"

#include "tally/common/error.hpp"

namespace nb = nanobind;

NB_MODULE(_tally, m) {
  m.doc() = "tally's reductions and apps (the compiled part of the tally package; use `import tally`)";
  nb::exception<tally::python::LayoutError> layout(m, "LayoutError", PyExc_ValueError);
  // Registered after LayoutError: translators are tried newest first, so the subclass keeps its type.
  nb::exception<tally::python::ArgOrderError>(m, "ArgOrderError", layout.ptr());
  // Bad input to an app raises ValueError with the executable's message; other failures RuntimeError.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const tally::InputError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  tally::python::bind_reduce(m);
  tally::python::bind_reducers(m);
  tally::python::bind_segments(m);
  tally::python::bind_solvers(m);
  tally::python::bind_torch(m);
}
