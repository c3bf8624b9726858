#pragma once
// A small HDF5 writer/reader over the C API with RAII handles (hdf5.h stays in the .cpp).
//
//   auto f = tally::h5::File::create("results/heat2d.h5");  // writes "<path>.tmp.<pid>"
//   f.attr("nx", 512);
//   f.group("timings").attr("solve_s", 1.25);
//   f.write<double>("field", u, {ny, nx});                     // chunked + deflate above 64 KiB
//   f.commit();                                                // flush, close, rename to the final name
//
// A File destroyed without commit() (an exception, a failed check) removes its temporary file, so a
// failed run never leaves a file that looks finished; on SIGINT/SIGTERM the signal handler removes
// it (tally/common/interrupt.hpp).
//
// Several MPI ranks, with a parallel (MPI-IO) HDF5 (parallel_built(); TALLY_PARALLEL_HDF5):
//
//   auto f = tally::h5::File::create_collective(path, {comm.mpi_handle(), comm.rank(), comm.size()});
//   f.write_rows<double>("field", my_rows, {ny, nx}, my_first_row);  // collective: each rank its rows
//   f.close_collective();                     // collective; then agree that every rank got here
//   if (rank == 0) { auto g = f.reopen(); g.attr(...); g.commit(); } else f.abandon();
//
// A collective file dropped while open (an exception on one rank) removes its temporary file without
// closing it (closing is collective: it would wait for the other ranks); the rank-level runner then
// ends the job (MPI_Abort), so no finished-looking file is left.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tally::h5 {

using dims_t = std::vector<std::uint64_t>;

/// A dataset's element type as stored, to check before reading it as numbers (Location::dataset_type).
struct ElementType {
  enum class Kind { integer, floating, other };
  Kind kind = Kind::other;
  std::size_t bytes = 0;    ///< of one element
  bool is_signed = false;   ///< an integer's
  std::string description;  ///< "64-bit signed integers", "32-bit floats", "strings", "complex numbers (...)", ...
};

/// Datasets larger than this are chunked and deflate-compressed.
inline constexpr std::uint64_t compress_threshold_bytes = 64 * 1024;

class Object {
 public:
  Object() = default;
  explicit Object(std::int64_t id) : id_(id) {}
  ~Object();
  Object(Object&& o) noexcept : id_(o.id_) { o.id_ = -1; }
  Object& operator=(Object&& o) noexcept;
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;
  [[nodiscard]] std::int64_t id() const { return id_; }
  [[nodiscard]] bool valid() const { return id_ >= 0; }

 protected:
  void close();
  std::int64_t id_ = -1;
};

/// A file or group: holds groups, datasets and attributes.
class Location : public Object {
 public:
  using Object::Object;

  /// Opens the group if it exists, creates it otherwise ("a/b" creates intermediates).
  [[nodiscard]] Location group(std::string_view name);
  [[nodiscard]] Location open_group(std::string_view name) const;
  [[nodiscard]] bool has(std::string_view name) const;  ///< a link (group or dataset) of that name
  /// An existing dataset, for its attributes (attr, read_attr, has_attr).
  [[nodiscard]] Location open_dataset(std::string_view name) const;

  // ---- writing ----
  template <class T>  // int32, int64, uint8, uint32, uint64, float, double
  void write(std::string_view name, std::span<const T> data, const dims_t& dims);
  template <class T>
  void write(std::string_view name, const std::vector<T>& data) {
    write<T>(name, std::span<const T>(data), {data.size()});
  }
  template <class T>
  void write(std::string_view name, const std::vector<T>& data, const dims_t& dims) {
    write<T>(name, std::span<const T>(data), dims);
  }

  template <class T>
  void attr(std::string_view name, T value);  // arithmetic and bool
  void attr(std::string_view name, std::string_view value);
  void attr(std::string_view name, const char* value) { attr(name, std::string_view(value)); }
  void attr(std::string_view name, const std::string& value) { attr(name, std::string_view(value)); }

  // ---- reading ----
  template <class T>
  [[nodiscard]] std::vector<T> read(std::string_view name, dims_t* dims = nullptr) const;
  /// A block of the dataset (a hyperslab): `count[d]` elements from `offset[d]` in each dimension,
  /// row-major, e.g. one rank's slab of columns. Throws InputError naming the dataset when the block
  /// does not lie inside it (or has the wrong number of dimensions).
  template <class T>
  [[nodiscard]] std::vector<T> read(std::string_view name, const dims_t& offset, const dims_t& count) const;
  [[nodiscard]] dims_t dataset_dims(std::string_view name) const;
  /// The dataset's element type. Throws InputError when there is no such dataset.
  [[nodiscard]] ElementType dataset_type(std::string_view name) const;
  /// Whether the dataset is stored chunked with the deflate filter.
  [[nodiscard]] bool is_compressed(std::string_view name) const;
  [[nodiscard]] bool has_attr(std::string_view name) const;
  template <class T>
  [[nodiscard]] T read_attr(std::string_view name) const;
  [[nodiscard]] std::string read_attr_string(std::string_view name) const;
  [[nodiscard]] std::vector<std::string> attr_names() const;
};

/// Whether this build's HDF5 writes collectively over MPI (File::create_collective).
[[nodiscard]] bool parallel_built();

/// The ranks of a collective file: the MPI communicator as its Fortran handle (MPI_Comm_c2f, e.g.
/// tally::ranks::Comm::mpi_handle()): no mpi.h here, and common needs nothing of the rank level.
struct Ranks {
  std::int64_t mpi_comm = -1;
  int rank = 0, size = 1;
};

class File : public Location {
 public:
  /// Creates "<path>.tmp.<pid>" for writing. Throws tally::InputError when the place is not writable
  /// (call it before computing, so that a bad --out fails fast).
  static File create(const std::string& path);
  /// Opens an existing file read-only. Throws tally::InputError naming the path.
  static File open(const std::string& path);

  /// Collective over `ranks` (parallel_built() only, else tally::Error; std::invalid_argument without
  /// an MPI communicator, e.g. a single-process Comm's -1): every rank opens
  /// "<path>.tmp.<rank 0's pid>" with the MPI-IO driver. Only write_rows and close_collective are
  /// collective-safe; the rest of the file is written by one rank after reopen().
  static File create_collective(const std::string& path, const Ranks& ranks);

  /// Rows [first_row, first_row + rows / row size) of the dataset `name` of shape `dims` (rows along
  /// dims[0]; created here, chunked and compressed like write()): on a collective file every rank
  /// calls it with its own rows (possibly none), one collective H5Dwrite; on any other file the one
  /// writer passes all the rows. Throws Error naming the dataset when the rows do not fit.
  template <class T>
  void write_rows(std::string_view name, std::span<const T> rows, const dims_t& dims, std::uint64_t first_row);

  /// Collective: closes a collective file on every rank (the data is on disk); the temporary file
  /// stays, this rank still owns it (removes it when destroyed) until reopen() or abandon().
  void close_collective();
  /// After close_collective (one rank): the temporary file opened again for writing by this rank
  /// alone, which now owns it (commit renames it; dropped, it is removed).
  [[nodiscard]] File reopen();
  /// After close_collective, on the ranks other than the one that reopens: leave the file to it.
  void abandon();

  File(File&& o) noexcept;
  File& operator=(File&&) noexcept;
  ~File();

  /// Flushes, closes and renames the temporary file to its final path.
  void commit();
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] const std::string& temp_path() const { return temp_; }

 private:
  File(std::int64_t id, std::string path, std::string temp);
  void discard();
  void release_temp();
  std::string path_, temp_;  ///< temp_ empty for files opened for reading or already committed
  int temp_slot_ = -1;       ///< temp_'s slot in the signal handler's list (tally/common/interrupt.hpp)
  bool collective_ = false;  ///< opened with the MPI-IO driver on every rank (create_collective)
};

}  // namespace tally::h5
