#pragma once
#include <string>

namespace checksums {

/// The hash of a dataset ("/residual/value") or an attribute ("/errors@analytic_max", "@iterations"
/// for the root's) of an HDF5 file. Throws std::runtime_error naming the file and the object.
std::string hash_h5(const std::string& file, const std::string& name);

}  // namespace checksums
