#pragma once
// matmul's inputs from HDF5 (--a FILE:/A, --b FILE:/B): the problem's shape from the datasets and
// the options, checked before any work; each rank's block read once the job runs.
#include <cstdint>
#include <string>
#include <vector>

#include "driver.hpp"
#include "tally/common/h5.hpp"

namespace tally::matmul::detail {

/// M, N and K: --size or --m/--n/--k, replaced by the datasets' dimensions of --a and --b. Throws
/// InputError when a dataset is missing, is not a non-empty 2-D matrix or holds what matmul cannot
/// multiply exactly as stored (accepted_types), when the inner dimensions differ or when an option
/// given disagrees with a dataset.
Shape resolve_shape(const Options& o);

/// The element types matmul reads in `precision` ("float" or "double"), in words.
std::string accepted_types(const std::string& precision);

/// `count` rows x columns of the dataset FILE:/DATASET in `source` from `offset` (a rank's K slab),
/// converted to T. `opt` names the option in messages.
template <class T>
std::vector<T> read_block(const std::string& opt, const std::string& source, const h5::dims_t& offset,
                          const h5::dims_t& count);

}  // namespace tally::matmul::detail
