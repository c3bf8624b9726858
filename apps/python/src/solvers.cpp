#include "bindings.hpp"

namespace tally::python {
void bind_solvers(nanobind::module_&) {}
}  // namespace tally::python
