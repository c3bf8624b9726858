#include "tally/common/h5.hpp"
#include "tally/common/interrupt.hpp"

#include <hdf5.h>
#include <unistd.h>
#ifdef TALLY_HAS_PARALLEL_HDF5
#include <mpi.h>
#endif

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <type_traits>

#include "tally/common/error.hpp"

static_assert(sizeof(hid_t) == sizeof(std::int64_t), "tally::h5 stores hid_t as int64");

namespace tally::h5 {

namespace {

// HDF5 prints its own error stack by default; we report through exceptions instead.
struct SilenceHdf5 {
  SilenceHdf5() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }
};
const SilenceHdf5 silence_hdf5;

template <class T>
hid_t native_type() {
  if constexpr (std::is_same_v<T, float>) return H5T_NATIVE_FLOAT;
  else if constexpr (std::is_same_v<T, double>) return H5T_NATIVE_DOUBLE;
  else if constexpr (std::is_same_v<T, std::int32_t>) return H5T_NATIVE_INT32;
  else if constexpr (std::is_same_v<T, std::int64_t>) return H5T_NATIVE_INT64;
  else if constexpr (std::is_same_v<T, std::uint8_t> || std::is_same_v<T, bool>) return H5T_NATIVE_UINT8;
  else if constexpr (std::is_same_v<T, std::uint32_t>) return H5T_NATIVE_UINT32;
  else if constexpr (std::is_same_v<T, std::uint64_t>) return H5T_NATIVE_UINT64;
  else if constexpr (std::is_same_v<T, long long>) return H5T_NATIVE_LLONG;
  else if constexpr (std::is_same_v<T, unsigned long long>) return H5T_NATIVE_ULLONG;
  else static_assert(sizeof(T) == 0, "unsupported HDF5 element type");
}

hid_t check(hid_t id, std::string_view what, std::string_view name) {
  if (id < 0) throw Error("HDF5: cannot " + std::string(what) + " '" + std::string(name) + "'");
  return id;
}
void check(herr_t e, std::string_view what, std::string_view name) {
  if (e < 0) throw Error("HDF5: cannot " + std::string(what) + " '" + std::string(name) + "'");
}

// Closes any kind of HDF5 id.
void close_id(hid_t id) {
  if (id < 0) return;
  switch (H5Iget_type(id)) {
    case H5I_FILE: H5Fclose(id); break;
    case H5I_GROUP: H5Gclose(id); break;
    case H5I_DATASET: H5Dclose(id); break;
    case H5I_DATASPACE: H5Sclose(id); break;
    case H5I_DATATYPE: H5Tclose(id); break;
    case H5I_ATTR: H5Aclose(id); break;
    case H5I_GENPROP_LST: H5Pclose(id); break;
    default: break;
  }
}

struct Id {  // scope guard for ids we do not hand out
  hid_t id;
  ~Id() { close_id(id); }
  operator hid_t() const { return id; }  // NOLINT
};

std::string str(std::string_view s) { return std::string(s); }

// Chunk shape: the dataset's shape halved along its largest axis until a chunk is <= 1 MiB.
std::vector<hsize_t> chunk_dims(const dims_t& dims, std::size_t elem) {
  std::vector<hsize_t> c(dims.begin(), dims.end());
  auto bytes = [&] {
    std::uint64_t b = elem;
    for (auto d : c) b *= d;
    return b;
  };
  while (bytes() > (1u << 20)) {
    auto it = std::max_element(c.begin(), c.end());
    if (*it <= 1) break;
    *it = (*it + 1) / 2;
  }
  return c;
}

// Datasets above compress_threshold_bytes: chunked, shuffled, deflated (when the filter is there).
hid_t create_plist(const dims_t& dims, std::size_t elem, std::string_view name) {
  std::uint64_t bytes = elem;
  for (auto d : dims) bytes *= d;
  const hid_t dcpl = check(H5Pcreate(H5P_DATASET_CREATE), "describe", name);
  if (bytes > compress_threshold_bytes && H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0) {
    const auto chunk = chunk_dims(dims, elem);
    if (H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data()) < 0 || H5Pset_shuffle(dcpl) < 0 ||
        H5Pset_deflate(dcpl, 4) < 0) {
      H5Pclose(dcpl);
      throw Error("HDF5: cannot chunk and compress '" + std::string(name) + "'");
    }
  }
  return dcpl;
}

// What a datatype holds, in words for a message.
std::string describe_type(hid_t t) {
  const std::string bits = std::to_string(8 * H5Tget_size(t)) + "-bit";
  switch (H5Tget_class(t)) {
    case H5T_INTEGER: return bits + (H5Tget_sign(t) == H5T_SGN_NONE ? " unsigned" : " signed") + " integers";
    case H5T_FLOAT: return bits + " floats";
    case H5T_STRING: return "strings";
    case H5T_COMPOUND: {  // two floats: how h5py, NumPy and others store complex numbers
      const int n = H5Tget_nmembers(t);
      bool floats = n == 2;
      for (int i = 0; floats && i < n; ++i) {
        Id m{H5Tget_member_type(t, static_cast<unsigned>(i))};
        floats = H5Tget_class(m) == H5T_FLOAT;
      }
      if (!floats) return "a compound type of " + std::to_string(n) + " member(s)";
      Id m{H5Tget_member_type(t, 0)};
      return "complex numbers (a compound of two " + std::to_string(8 * H5Tget_size(m)) + "-bit floats)";
    }
#if H5_VERSION_GE(2, 0, 0)
    case H5T_COMPLEX: return bits + " complex numbers";
#endif
    case H5T_ENUM: return "an enumeration";
    case H5T_ARRAY: return "arrays";
    case H5T_VLEN: return "variable-length sequences";
    case H5T_BITFIELD: return bits + " bit fields";
    case H5T_OPAQUE: return "opaque data";
    case H5T_REFERENCE: return "references";
    case H5T_TIME: return "times";
    default: return "an unknown type";
  }
}

}  // namespace

bool parallel_built() {
#ifdef TALLY_HAS_PARALLEL_HDF5
  return true;
#else
  return false;
#endif
}

Object::~Object() { close(); }
Object& Object::operator=(Object&& o) noexcept {
  if (this != &o) {
    close();
    id_ = o.id_;
    o.id_ = -1;
  }
  return *this;
}
void Object::close() {
  close_id(id_);
  id_ = -1;
}

// ---- groups -------------------------------------------------------------------------------------

bool Location::has(std::string_view name) const {
  // H5Lexists needs every intermediate link to exist: walk the path.
  std::string path = name.starts_with('/') ? "/" : "";  // "/A" is absolute: from the file's root
  std::string_view rest = name;
  while (rest.starts_with('/')) rest.remove_prefix(1);
  while (!rest.empty()) {
    const auto slash = rest.find('/');
    if (!path.empty() && path.back() != '/') path += '/';
    path += rest.substr(0, slash);
    if (H5Lexists(id_, path.c_str(), H5P_DEFAULT) <= 0) return false;
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  return true;
}

Location Location::group(std::string_view name) {
  if (has(name)) return open_group(name);
  Id lcpl{H5Pcreate(H5P_LINK_CREATE)};
  H5Pset_create_intermediate_group(lcpl, 1);
  return Location(check(H5Gcreate2(id_, str(name).c_str(), lcpl, H5P_DEFAULT, H5P_DEFAULT), "create group", name));
}

Location Location::open_group(std::string_view name) const {
  return Location(check(H5Gopen2(id_, str(name).c_str(), H5P_DEFAULT), "open group", name));
}

// ---- datasets -----------------------------------------------------------------------------------

Location Location::open_dataset(std::string_view name) const {
  return Location(check(H5Dopen2(id_, str(name).c_str(), H5P_DEFAULT), "open dataset", name));
}

template <class T>
void Location::write(std::string_view name, std::span<const T> data, const dims_t& dims) {
  std::uint64_t n = 1;
  for (auto d : dims) n *= d;
  if (n != data.size())
    throw Error("HDF5: dataset '" + str(name) + "' has " + std::to_string(data.size()) + " elements for dims of " +
                std::to_string(n));
  const std::vector<hsize_t> hd(dims.begin(), dims.end());
  Id space{check(H5Screate_simple(static_cast<int>(hd.size()), hd.data(), nullptr), "describe", name)};
  Id dcpl{create_plist(dims, sizeof(T), name)};
  Id lcpl{H5Pcreate(H5P_LINK_CREATE)};
  H5Pset_create_intermediate_group(lcpl, 1);
  Id ds{check(H5Dcreate2(id_, str(name).c_str(), native_type<T>(), space, lcpl, dcpl, H5P_DEFAULT), "create dataset",
              name)};
  if (n > 0) check(H5Dwrite(ds, native_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()), "write dataset", name);
}

template <class T>
void File::write_rows(std::string_view name, std::span<const T> rows, const dims_t& dims, std::uint64_t first_row) {
  if (dims.empty()) throw Error("HDF5: dataset '" + str(name) + "': write_rows needs at least one dimension");
  std::uint64_t row = 1;  // elements per row
  for (std::size_t i = 1; i < dims.size(); ++i) row *= dims[i];
  const std::uint64_t nrows = row ? rows.size() / row : 0;
  if (nrows * row != rows.size() || first_row > dims[0] || nrows > dims[0] - first_row)
    throw Error("HDF5: dataset '" + str(name) + "': " + std::to_string(rows.size()) + " elements from row " +
                std::to_string(first_row) + " are not whole rows inside its " + std::to_string(dims[0]) + " rows of " +
                std::to_string(row));
  const std::vector<hsize_t> hd(dims.begin(), dims.end());
  Id file_space{check(H5Screate_simple(static_cast<int>(hd.size()), hd.data(), nullptr), "describe", name)};
  Id dcpl{create_plist(dims, sizeof(T), name)};
  Id lcpl{H5Pcreate(H5P_LINK_CREATE)};
  H5Pset_create_intermediate_group(lcpl, 1);
  Id ds{check(H5Dcreate2(id_, str(name).c_str(), native_type<T>(), file_space, lcpl, dcpl, H5P_DEFAULT),
              "create dataset", name)};
  std::vector<hsize_t> off(hd.size(), 0), cnt = hd;
  off[0] = first_row;
  cnt[0] = nrows;
  // A rank without rows still takes part in the collective write, selecting nothing.
  const hsize_t one = 1;
  Id mem_space{check(
      nrows ? H5Screate_simple(static_cast<int>(cnt.size()), cnt.data(), nullptr) : H5Screate_simple(1, &one, nullptr),
      "describe rows of", name)};
  if (nrows) {
    check(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, off.data(), nullptr, cnt.data(), nullptr), "select rows of",
          name);
  } else {
    check(H5Sselect_none(file_space), "select no rows of", name);
    check(H5Sselect_none(mem_space), "select no rows of", name);
  }
  Id dxpl{check(H5Pcreate(H5P_DATASET_XFER), "describe the transfer of", name)};
#ifdef TALLY_HAS_PARALLEL_HDF5
  if (collective_) check(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE), "set collective transfer of", name);
#endif
  const T dummy{};
  check(H5Dwrite(ds, native_type<T>(), mem_space, file_space, dxpl, nrows ? rows.data() : &dummy), "write rows of",
        name);
}

dims_t Location::dataset_dims(std::string_view name) const {
  if (!has(name)) throw InputError("no dataset '" + str(name) + "'");
  Id ds{check(H5Dopen2(id_, str(name).c_str(), H5P_DEFAULT), "open dataset", name)};
  Id space{H5Dget_space(ds)};
  const int rank = H5Sget_simple_extent_ndims(space);
  std::vector<hsize_t> d(static_cast<std::size_t>(std::max(rank, 0)));
  H5Sget_simple_extent_dims(space, d.data(), nullptr);
  return dims_t(d.begin(), d.end());
}

ElementType Location::dataset_type(std::string_view name) const {
  if (!has(name)) throw InputError("no dataset '" + str(name) + "'");
  Id ds{check(H5Dopen2(id_, str(name).c_str(), H5P_DEFAULT), "open dataset", name)};
  Id t{check(H5Dget_type(ds), "describe the type of", name)};
  ElementType e;
  e.bytes = H5Tget_size(t);
  e.description = describe_type(t);
  switch (H5Tget_class(t)) {
    case H5T_INTEGER:
      e.kind = ElementType::Kind::integer;
      e.is_signed = H5Tget_sign(t) != H5T_SGN_NONE;
      break;
    case H5T_FLOAT: e.kind = ElementType::Kind::floating; break;
    default: break;
  }
  return e;
}

template <class T>
std::vector<T> Location::read(std::string_view name, dims_t* dims) const {
  const dims_t d = dataset_dims(name);
  std::uint64_t n = 1;
  for (auto x : d) n *= x;
  std::vector<T> out(n);
  Id ds{check(H5Dopen2(id_, str(name).c_str(), H5P_DEFAULT), "open dataset", name)};
  if (n > 0) check(H5Dread(ds, native_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()), "read dataset", name);
  if (dims) *dims = d;
  return out;
}

template <class T>
std::vector<T> Location::read(std::string_view name, const dims_t& offset, const dims_t& count) const {
  const dims_t d = dataset_dims(name);
  auto block = [&] {
    std::string b;
    for (std::size_t i = 0; i < offset.size() && i < count.size(); ++i)
      b += (i ? " x " : "") + std::to_string(offset[i]) + ".." + std::to_string(offset[i] + count[i]);
    return b;
  };
  if (offset.size() != d.size() || count.size() != d.size())
    throw InputError("dataset '" + str(name) + "' has " + std::to_string(d.size()) +
                     " dimension(s); the block to read names " + std::to_string(offset.size()) + " offset(s) and " +
                     std::to_string(count.size()) + " count(s)");
  std::uint64_t n = 1;
  for (std::size_t i = 0; i < d.size(); ++i) {
    if (offset[i] > d[i] || count[i] > d[i] - offset[i])
      throw InputError("the block " + block() + " is not inside dataset '" + str(name) + "' (dimension " +
                       std::to_string(i) + " has " + std::to_string(d[i]) + ")");
    n *= count[i];
  }
  std::vector<T> out(n);
  if (n == 0) return out;
  Id ds{check(H5Dopen2(id_, str(name).c_str(), H5P_DEFAULT), "open dataset", name)};
  Id file_space{check(H5Dget_space(ds), "describe", name)};
  const std::vector<hsize_t> off(offset.begin(), offset.end()), cnt(count.begin(), count.end());
  check(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, off.data(), nullptr, cnt.data(), nullptr), "select a block of",
        name);
  Id mem_space{check(H5Screate_simple(static_cast<int>(cnt.size()), cnt.data(), nullptr), "describe a block of", name)};
  check(H5Dread(ds, native_type<T>(), mem_space, file_space, H5P_DEFAULT, out.data()), "read a block of", name);
  return out;
}

bool Location::is_compressed(std::string_view name) const {
  Id ds{check(H5Dopen2(id_, str(name).c_str(), H5P_DEFAULT), "open dataset", name)};
  Id dcpl{H5Dget_create_plist(ds)};
  if (H5Pget_layout(dcpl) != H5D_CHUNKED) return false;
  const int nf = H5Pget_nfilters(dcpl);
  for (int i = 0; i < nf; ++i) {
    unsigned flags = 0;
    std::size_t nelem = 0;
    if (H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &nelem, nullptr, 0, nullptr, nullptr) ==
        H5Z_FILTER_DEFLATE)
      return true;
  }
  return false;
}

// ---- attributes ---------------------------------------------------------------------------------

template <class T>
void Location::attr(std::string_view name, T value) {
  using S = std::conditional_t<std::is_same_v<T, bool>, std::uint8_t, T>;
  const S v = static_cast<S>(value);
  if (H5Aexists(id_, str(name).c_str()) > 0) H5Adelete(id_, str(name).c_str());
  Id space{H5Screate(H5S_SCALAR)};
  Id a{check(H5Acreate2(id_, str(name).c_str(), native_type<S>(), space, H5P_DEFAULT, H5P_DEFAULT), "create attribute",
             name)};
  check(H5Awrite(a, native_type<S>(), &v), "write attribute", name);
}

void Location::attr(std::string_view name, std::string_view value) {
  if (H5Aexists(id_, str(name).c_str()) > 0) H5Adelete(id_, str(name).c_str());
  Id type{H5Tcopy(H5T_C_S1)};
  H5Tset_size(type, std::max<std::size_t>(value.size(), 1));
  H5Tset_strpad(type, H5T_STR_NULLPAD);
  H5Tset_cset(type, H5T_CSET_UTF8);
  Id space{H5Screate(H5S_SCALAR)};
  Id a{check(H5Acreate2(id_, str(name).c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), "create attribute", name)};
  const std::string padded = value.empty() ? std::string(1, '\0') : str(value);
  check(H5Awrite(a, type, padded.data()), "write attribute", name);
}

bool Location::has_attr(std::string_view name) const { return H5Aexists(id_, str(name).c_str()) > 0; }

template <class T>
T Location::read_attr(std::string_view name) const {
  using S = std::conditional_t<std::is_same_v<T, bool>, std::uint8_t, T>;
  if (!has_attr(name)) throw InputError("no attribute '" + str(name) + "'");
  Id a{check(H5Aopen(id_, str(name).c_str(), H5P_DEFAULT), "open attribute", name)};
  S v{};
  check(H5Aread(a, native_type<S>(), &v), "read attribute", name);
  return static_cast<T>(v);
}

std::string Location::read_attr_string(std::string_view name) const {
  if (!has_attr(name)) throw InputError("no attribute '" + str(name) + "'");
  Id a{check(H5Aopen(id_, str(name).c_str(), H5P_DEFAULT), "open attribute", name)};
  Id type{H5Aget_type(a)};
  if (H5Tget_class(type) != H5T_STRING) throw Error("HDF5: attribute '" + str(name) + "' is not a string");
  if (H5Tis_variable_str(type) > 0) {
    char* p = nullptr;
    Id mem{H5Tcopy(H5T_C_S1)};
    H5Tset_size(mem, H5T_VARIABLE);
    check(H5Aread(a, mem, &p), "read attribute", name);
    std::string s = p ? p : "";
    H5free_memory(p);
    return s;
  }
  const std::size_t size = H5Tget_size(type);
  std::string s(size, '\0');
  check(H5Aread(a, type, s.data()), "read attribute", name);
  s.resize(std::strlen(s.c_str()));
  return s;
}

std::vector<std::string> Location::attr_names() const {
  std::vector<std::string> names;
  H5O_info_t info{};
#if H5_VERSION_GE(1, 12, 0)
  H5Oget_info3(id_, &info, H5O_INFO_NUM_ATTRS);
#else
  H5Oget_info2(id_, &info, H5O_INFO_NUM_ATTRS);
#endif
  for (hsize_t i = 0; i < info.num_attrs; ++i) {
    const ssize_t len = H5Aget_name_by_idx(id_, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    std::string n(static_cast<std::size_t>(len), '\0');
    H5Aget_name_by_idx(id_, ".", H5_INDEX_NAME, H5_ITER_INC, i, n.data(), n.size() + 1, H5P_DEFAULT);
    names.push_back(n);
  }
  return names;
}

// ---- files --------------------------------------------------------------------------------------

File File::create(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) throw InputError("--out: the output path is empty");
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::exists(dir, ec)) fs::create_directories(dir, ec);
  if (!fs::is_directory(dir, ec))
    throw InputError("cannot write '" + path + "': " + dir.string() + " is not a directory");
  if (fs::is_directory(p, ec)) throw InputError("cannot write '" + path + "': it is a directory");
  if (access(dir.c_str(), W_OK) != 0)
    throw InputError("cannot write '" + path + "': directory " + dir.string() + " is not writable");
  const std::string temp = path + ".tmp." + std::to_string(getpid());
  const hid_t id = H5Fcreate(temp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (id < 0) throw InputError("cannot create HDF5 file '" + temp + "' for '" + path + "'");
  return File(id, path, temp);
}

File File::create_collective(const std::string& path, const Ranks& ranks) {
#ifdef TALLY_HAS_PARALLEL_HDF5
  if (path.empty()) throw InputError("--out: the output path is empty");
  int mpi_up = 0;
  if (ranks.mpi_comm < 0 || MPI_Initialized(&mpi_up) != MPI_SUCCESS || !mpi_up)
    throw std::invalid_argument("ranks.mpi_comm: no MPI communicator (" + std::to_string(ranks.mpi_comm) +
                                ", MPI initialised: " + (mpi_up ? "yes" : "no") + ")");
  const MPI_Comm comm = MPI_Comm_f2c(static_cast<MPI_Fint>(ranks.mpi_comm));
  long long pid = getpid();  // rank 0's names the temporary file of every rank
  if (MPI_Bcast(&pid, 1, MPI_LONG_LONG, 0, comm) != MPI_SUCCESS)
    throw Error("HDF5: MPI_Bcast of the temporary name of '" + path + "' failed");
  const std::string temp = path + ".tmp." + std::to_string(pid);
  Id fapl{check(H5Pcreate(H5P_FILE_ACCESS), "describe the MPI-IO access to", path)};
  check(H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL), "set MPI-IO access to", path);
  const hid_t id = H5Fcreate(temp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  if (id < 0)
    throw InputError("cannot create HDF5 file '" + temp + "' for '" + path + "' (parallel HDF5, rank " +
                     std::to_string(ranks.rank) + " of " + std::to_string(ranks.size) + ")");
  File f(id, path, temp);
  f.collective_ = true;
  return f;
#else
  (void)ranks;
  throw Error("HDF5: cannot write '" + path +
              "' collectively: this build's HDF5 is not parallel (TALLY_PARALLEL_HDF5)");
#endif
}

void File::close_collective() {
  if (!collective_ || !valid()) throw Error("HDF5: '" + path_ + "' is not an open collective file");
  const herr_t e = H5Fclose(id_);
  id_ = -1;
  collective_ = false;
  check(e, "close", temp_);
}

File File::reopen() {
  if (collective_ || valid() || temp_.empty())
    throw Error("HDF5: '" + path_ + "' is not a collective file closed by close_collective");
  const hid_t id = H5Fopen(temp_.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  if (id < 0) throw Error("HDF5: cannot open '" + temp_ + "' again to finish '" + path_ + "'");
  const std::string temp = temp_;
  release_temp();  // the new File owns it
  return File(id, path_, temp);
}

void File::abandon() {
  if (collective_ || valid()) throw Error("HDF5: '" + path_ + "' is still open (close_collective first)");
  release_temp();
}

File File::open(const std::string& path) {
  if (!std::filesystem::exists(path)) throw InputError("no such file '" + path + "'");
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (id < 0) throw InputError("'" + path + "' is not a readable HDF5 file");
  return File(id, path, "");
}

File::File(std::int64_t id, std::string path, std::string temp)
    : Location(id), path_(std::move(path)), temp_(std::move(temp)) {
  if (!temp_.empty()) temp_slot_ = interrupt::register_temp(temp_);
}

File::File(File&& o) noexcept
    : Location(std::move(o)), path_(std::move(o.path_)), temp_(std::move(o.temp_)), temp_slot_(o.temp_slot_),
      collective_(o.collective_) {
  o.temp_.clear();
  o.temp_slot_ = -1;
  o.collective_ = false;
}

File& File::operator=(File&& o) noexcept {
  if (this != &o) {
    discard();
    Location::operator=(std::move(o));
    path_ = std::move(o.path_);
    temp_ = std::move(o.temp_);
    temp_slot_ = o.temp_slot_;
    collective_ = o.collective_;
    o.temp_.clear();
    o.temp_slot_ = -1;
    o.collective_ = false;
  }
  return *this;
}

void File::release_temp() {
  interrupt::release_temp(temp_slot_);
  temp_slot_ = -1;
  temp_.clear();
}

File::~File() { discard(); }

void File::discard() {
  if (collective_) {
    // Closing is collective: with the other ranks elsewhere (this rank failed) it would wait for
    // them. The id stays open; the job is ending (run_ranks aborts it).
    id_ = -1;
    collective_ = false;
  }
  close();
  if (!temp_.empty()) {
    std::error_code ec;
    std::filesystem::remove(temp_, ec);
    release_temp();
  }
}

void File::commit() {
  if (collective_)
    throw Error("HDF5: '" + path_ + "' is collective: close_collective, then reopen on one rank to commit");
  if (temp_.empty()) throw Error("HDF5: '" + path_ + "' was not opened for writing or is already committed");
  check(H5Fflush(id_, H5F_SCOPE_GLOBAL), "flush", path_);
  close();
  std::error_code ec;
  std::filesystem::rename(temp_, path_, ec);
  if (ec) throw Error("cannot rename '" + temp_ + "' to '" + path_ + "': " + ec.message());
  release_temp();
}

// ---- instantiations -----------------------------------------------------------------------------

#define TALLY_H5_TYPES(X) \
  X(float) X(double) X(std::int32_t) X(std::int64_t) X(std::uint8_t) X(std::uint32_t) X(std::uint64_t)
#define TALLY_H5_INST(T)                                                                                 \
  template void Location::write<T>(std::string_view, std::span<const T>, const dims_t&);                 \
  template void File::write_rows<T>(std::string_view, std::span<const T>, const dims_t&, std::uint64_t); \
  template std::vector<T> Location::read<T>(std::string_view, dims_t*) const;                            \
  template std::vector<T> Location::read<T>(std::string_view, const dims_t&, const dims_t&) const;       \
  template void Location::attr<T>(std::string_view, T);                                                  \
  template T Location::read_attr<T>(std::string_view) const;
TALLY_H5_TYPES(TALLY_H5_INST)
template void Location::attr<bool>(std::string_view, bool);
template bool Location::read_attr<bool>(std::string_view) const;
template void Location::attr<long long>(std::string_view, long long);
template long long Location::read_attr<long long>(std::string_view) const;
template void Location::attr<unsigned long long>(std::string_view, unsigned long long);
template unsigned long long Location::read_attr<unsigned long long>(std::string_view) const;
#undef TALLY_H5_INST
#undef TALLY_H5_TYPES

}  // namespace tally::h5
