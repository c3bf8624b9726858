// Hashes of named datasets and attributes of an HDF5 file (the HDF5 C API). The hash covers the
// value class (integer, float, string), the element width, the dimensions and the values (canonical
// encoding of hash.hpp), not the storage (chunking, compression, byte order), which is no result.

#include "h5hash.hpp"

#include <hdf5.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "hash.hpp"

namespace checksums {

namespace {

/// Closes an HDF5 identifier with the function of its kind.
class Id {
 public:
  Id(hid_t id, herr_t (*close)(hid_t), const std::string& what) : id_(id), close_(close) {
    if (id < 0) throw std::runtime_error(what);
  }
  ~Id() { close_(id_); }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  operator hid_t() const { return id_; }  // NOLINT: an identifier where the C API wants one

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

/// A dataset or an attribute: its type, its dataspace and a read into a memory type.
struct Object {
  hid_t type, space;
  bool attribute;
  hid_t id;
  void read(hid_t mem, void* buf) const {
    const herr_t e = attribute ? H5Aread(id, mem, buf) : H5Dread(id, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    if (e < 0) throw std::runtime_error("cannot read the values");
  }
};

template <class T>
void numbers(Fnv1a& h, const Object& o, hid_t mem, std::size_t n) {
  std::vector<T> v(n);
  if (n != 0) o.read(mem, v.data());
  for (T x : v) h.value(x);
}

void strings(Fnv1a& h, const Object& o, std::size_t n) {
  if (H5Tis_variable_str(o.type) > 0) {
    const Id mem(H5Tcopy(H5T_C_S1), H5Tclose, "H5Tcopy");
    H5Tset_size(mem, H5T_VARIABLE);
    H5Tset_cset(mem, H5Tget_cset(o.type));
    std::vector<char*> v(n, nullptr);
    if (n != 0) o.read(mem, v.data());
    for (char* s : v) h.text(s != nullptr ? s : "");
#if H5_VERSION_GE(1, 12, 0)
    H5Treclaim(mem, o.space, H5P_DEFAULT, v.data());
#else
    H5Dvlen_reclaim(mem, o.space, H5P_DEFAULT, v.data());
#endif
    return;
  }
  const std::size_t size = H5Tget_size(o.type);
  const Id mem(H5Tcopy(o.type), H5Tclose, "H5Tcopy");
  std::vector<char> v(n * size);
  if (n != 0) o.read(mem, v.data());
  for (std::size_t i = 0; i < n; ++i) {
    std::string s(v.data() + i * size, size);
    s.resize(s.find('\0') == std::string::npos ? s.size() : s.find('\0'));  // NUL-terminated or -padded
    h.text(s);
  }
}

std::string hash_object(const Object& o) {
  Fnv1a h;
  const int rank = H5Sget_simple_extent_ndims(o.space);
  if (rank < 0) throw std::runtime_error("not a simple dataspace");
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  H5Sget_simple_extent_dims(o.space, dims.data(), nullptr);
  std::size_t n = 1;
  h.word(static_cast<std::uint64_t>(rank), 1);
  for (hsize_t d : dims) {
    h.word(d, 8);
    n *= static_cast<std::size_t>(d);
  }
  const H5T_class_t cls = H5Tget_class(o.type);
  const std::size_t size = H5Tget_size(o.type);
  if (cls == H5T_FLOAT) {
    h.byte('f');
    if (size == 4) numbers<float>(h, o, H5T_NATIVE_FLOAT, n);
    else if (size == 8) numbers<double>(h, o, H5T_NATIVE_DOUBLE, n);
    else throw std::runtime_error("a float of " + std::to_string(size) + " bytes");
  } else if (cls == H5T_INTEGER || cls == H5T_ENUM) {  // an enum (a bool, as h5py writes one) by its integers
    const Id base(cls == H5T_ENUM ? H5Tget_super(o.type) : H5Tcopy(o.type), H5Tclose, "H5Tget_super");
    const bool is_signed = H5Tget_sign(base) == H5T_SGN_2;
    h.byte(is_signed ? 'i' : 'u');
    h.byte(static_cast<unsigned char>(size));
    const Id mem(H5Tget_native_type(base, H5T_DIR_ASCEND), H5Tclose, "H5Tget_native_type");
    switch (size) {
      case 1: is_signed ? numbers<std::int8_t>(h, o, mem, n) : numbers<std::uint8_t>(h, o, mem, n); break;
      case 2: is_signed ? numbers<std::int16_t>(h, o, mem, n) : numbers<std::uint16_t>(h, o, mem, n); break;
      case 4: is_signed ? numbers<std::int32_t>(h, o, mem, n) : numbers<std::uint32_t>(h, o, mem, n); break;
      case 8: is_signed ? numbers<std::int64_t>(h, o, mem, n) : numbers<std::uint64_t>(h, o, mem, n); break;
      default: throw std::runtime_error("an integer of " + std::to_string(size) + " bytes");
    }
  } else if (cls == H5T_STRING) {
    h.byte('s');
    strings(h, o, n);
  } else {
    throw std::runtime_error("a type of class " + std::to_string(static_cast<int>(cls)) +
                             " (not a number or a string)");
  }
  return h.hex();
}

}  // namespace

std::string hash_h5(const std::string& file, const std::string& name) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // errors come back as messages naming the file and object
  const Id f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose, file + ": cannot open as HDF5");
  const auto at = name.find('@');
  if (at == std::string::npos) {
    const Id d(H5Dopen2(f, name.c_str(), H5P_DEFAULT), H5Dclose, file + ": no dataset " + name);
    const Id type(H5Dget_type(d), H5Tclose, "H5Dget_type"), space(H5Dget_space(d), H5Sclose, "H5Dget_space");
    return hash_object({type, space, false, d});
  }
  const std::string obj = at == 0 ? "/" : name.substr(0, at), attr = name.substr(at + 1);
  const Id a(H5Aopen_by_name(f, obj.c_str(), attr.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose,
             file + ": no attribute " + attr + " on " + obj);
  const Id type(H5Aget_type(a), H5Tclose, "H5Aget_type"), space(H5Aget_space(a), H5Sclose, "H5Aget_space");
  return hash_object({type, space, true, a});
}

}  // namespace checksums
