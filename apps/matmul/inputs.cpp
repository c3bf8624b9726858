// matmul's HDF5 inputs (inputs.hpp).
#include "inputs.hpp"

#include <limits>
#include <utility>

#include "tally/common/error.hpp"

namespace tally::matmul::detail {
namespace {

// "file.h5:/A" -> {file.h5, /A}
std::pair<std::string, std::string> split_source(const std::string& opt, const std::string& s) {
  const auto colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.size())
    throw InputError(opt + ": expected FILE:/DATASET, got '" + s + "'");
  std::string dset = s.substr(colon + 1);
  if (dset.find_first_not_of('/') == std::string::npos) throw InputError(opt + ": no dataset named in '" + s + "'");
  return {s.substr(0, colon), dset};  // tally::h5 resolves "/A" from the file's root
}

/// The significand bits of `precision`: the widest integers it holds exactly.
int digits(const std::string& precision) {
  return precision == "float" ? std::numeric_limits<float>::digits : std::numeric_limits<double>::digits;
}

/// Whether `precision` holds every value of `t` as it is (floating point: rounded, as any input).
bool accepted(const h5::ElementType& t, const std::string& precision) {
  switch (t.kind) {
    case h5::ElementType::Kind::floating: return true;
    case h5::ElementType::Kind::integer:
      return static_cast<int>(8 * t.bytes) - (t.is_signed ? 1 : 0) <= digits(precision);
    case h5::ElementType::Kind::other: return false;
  }
  return false;
}

/// The dataset's rows and columns; InputError unless it is a non-empty 2-D matrix of an accepted type.
std::pair<std::int64_t, std::int64_t> matrix_dims(const std::string& opt, const std::string& source,
                                                  const std::string& precision) {
  const auto [file, dset] = split_source(opt, source);
  const auto f = h5::File::open(file);
  h5::dims_t d;
  h5::ElementType type;
  try {
    d = f.dataset_dims(dset);
    type = f.dataset_type(dset);
  } catch (const InputError& e) {
    throw InputError(opt + ": " + e.what() + " in '" + file + "'");
  }
  if (!accepted(type, precision))
    throw InputError(opt + ": dataset '" + dset + "' in '" + file + "' holds " + type.description + "; matmul reads " +
                     accepted_types(precision));
  if (d.size() != 2 || d[0] == 0 || d[1] == 0)
    throw InputError(opt + ": dataset '" + dset + "' in '" + file + "' is not a non-empty 2-D matrix");
  return {static_cast<std::int64_t>(d[0]), static_cast<std::int64_t>(d[1])};
}

}  // namespace

std::string accepted_types(const std::string& precision) {
  const int widest = digits(precision) >= 32 ? 32 : 16;  // the integer widths HDF5 stores: 8, 16, 32, 64 bits
  return "floating-point numbers (read as --precision " + precision + ") and integers of up to " +
         std::to_string(widest) + " bits (which " + precision + " holds exactly)";
}

Shape resolve_shape(const Options& o) {
  Shape s{o.m, o.n, o.k};
  if (o.size > 0) s = {o.size, o.size, o.size};
  auto agree = [&](const char* opt, bool given, std::int64_t want, std::int64_t file_value, const std::string& what) {
    if (given && want != file_value)
      throw InputError(std::string(opt) + " " + std::to_string(want) + " disagrees with " + what + " (" +
                       std::to_string(file_value) + ")");
  };
  const std::string& precision = o.common.precision;
  if (!o.a_path.empty()) {
    const auto [r, c] = matrix_dims("--a", o.a_path, precision);
    agree("--m", o.given.m, s.m, r, "the rows of --a " + o.a_path);
    agree("--k", o.given.k, s.k, c, "the columns of --a " + o.a_path);
    s.m = r, s.k = c;
  }
  if (!o.b_path.empty()) {
    const auto [r, c] = matrix_dims("--b", o.b_path, precision);
    if (!o.a_path.empty() && r != s.k)
      throw InputError("inner dimensions differ: --a " + o.a_path + " has " + std::to_string(s.k) +
                       " columns but --b " + o.b_path + " has " + std::to_string(r) + " rows");
    if (o.a_path.empty()) agree("--k", o.given.k, s.k, r, "the rows of --b " + o.b_path);
    agree("--n", o.given.n, s.n, c, "the columns of --b " + o.b_path);
    s.k = r, s.n = c;
  }
  return s;
}

template <class T>
std::vector<T> read_block(const std::string& opt, const std::string& source, const h5::dims_t& offset,
                          const h5::dims_t& count) {
  const auto [file, dset] = split_source(opt, source);
  return h5::File::open(file).read<T>(dset, offset, count);
}

template std::vector<float> read_block<float>(const std::string&, const std::string&, const h5::dims_t&,
                                              const h5::dims_t&);
template std::vector<double> read_block<double>(const std::string&, const std::string&, const h5::dims_t&,
                                                const h5::dims_t&);

}  // namespace tally::matmul::detail
