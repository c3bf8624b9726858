// The library's results on fixed inputs, one line per case: through the documented public API only
// (tally/reduce/reduce.hpp, segmented.hpp, dot.hpp), so that any later tree can be held to them.
//
//   reduce/<op>/<in>-<acc>/<flavour>/<shape>   7 hashes: the level sets in kLevelNames' order
//   segmented/<op>/<in>-<acc>/<flavour>/<offsets>, segmented-fixed/..., dot/..., to-host/...   1 hash

#include "library.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "hash.hpp"
#include "inputs.hpp"
#include "memory.hpp"
#include "tally/reduce/dot.hpp"
#include "tally/reduce/reduce.hpp"
#include "tally/reduce/segmented.hpp"

namespace checksums {

namespace r = tally::reduce;
using r::Level;
using r::Levels;

namespace {

// ---- names -----------------------------------------------------------------------------------
template <class T>
constexpr const char* type_name() {
  if constexpr (std::is_same_v<T, std::int32_t>) return "i32";
  else if constexpr (std::is_same_v<T, std::int64_t>) return "i64";
  else if constexpr (std::is_same_v<T, float>) return "f32";
  else return "f64";
}
/// "f32-f64" for an operator's (input, accumulator); "f32" for a reducer's input.
template <class T, class Acc>
std::string types() {
  if constexpr (!std::is_arithmetic_v<Acc>) return type_name<T>();
  else return std::string(type_name<T>()) + "-" + type_name<Acc>();
}

const Levels kLevels[7] = {Level::gang,
                           Level::worker,
                           Level::vector,
                           Level::gang | Level::worker,
                           Level::worker | Level::vector,
                           Level::gang | Level::vector,
                           Level::gang | Level::worker | Level::vector};

// ---- shapes ----------------------------------------------------------------------------------
struct Shape {
  std::string name;
  r::Extents ext;
  std::int64_t stride_w, stride_g;
  [[nodiscard]] std::int64_t backing() const {  // elements of the array the view lies in
    if (ext.ng == 0 || ext.nw == 0 || ext.nv == 0) return 0;
    return (ext.ng - 1) * stride_g + (ext.nw - 1) * stride_w + ext.nv;
  }
  [[nodiscard]] bool empty() const { return ext.ng * ext.nw * ext.nv == 0; }
};
Shape contiguous(std::int64_t ng, std::int64_t nw, std::int64_t nv) {
  return {std::to_string(ng) + "x" + std::to_string(nw) + "x" + std::to_string(nv), {ng, nw, nv}, nv, nw * nv};
}
Shape strided(std::int64_t ng, std::int64_t nw, std::int64_t nv, std::int64_t sw, std::int64_t sg) {
  return {std::to_string(ng) + "x" + std::to_string(nw) + "x" + std::to_string(nv) + "-strides" + std::to_string(sw) +
              "," + std::to_string(sg),
          {ng, nw, nv},
          sw,
          sg};
}
// Non-multiples of 32 and 256 throughout: a flat array (one output), rows of every kind, long rows,
// many tiny rows, one element, an empty set, and two strided sub-arrays (one whose rows allow 16-byte
// loads, one whose rows do not).
const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s = {contiguous(1, 1, 70001),     contiguous(7, 37, 263), contiguous(1, 2, 20011),
                                       contiguous(200, 67, 3),      contiguous(2, 500, 33), contiguous(5, 1, 7),
                                       contiguous(1, 1, 1),         contiguous(2, 3, 0),    strided(5, 17, 45, 50, 863),
                                       strided(3, 33, 64, 96, 3200)};
  return s;
}

// ---- hashing results -------------------------------------------------------------------------
template <class T>
requires std::is_arithmetic_v<T>
void feed(Fnv1a& h, T x) { h.value(x); }
template <class T>
void feed(Fnv1a& h, const r::ValueIndex<T>& v) {
  h.value(v.value);
  h.value(v.index);
}
template <class T>
void feed(Fnv1a& h, const r::MinMaxPair<T>& v) {
  h.value(v.min);
  h.value(v.max);
}
void feed(Fnv1a& h, const r::Moments& m) {
  h.value(m.count);
  h.value(m.mean);
  h.value(m.m2);
}
template <class V>
std::string hash_of(const std::vector<V>& values) {
  Fnv1a h;
  h.word(values.size(), 8);
  for (const V& v : values) feed(h, v);
  return h.hex();
}

/// Output buffers start as a pattern no result has (0xA5 bytes), so an output left unwritten shows.
template <class V>
std::vector<V> poison(std::size_t n) {
  std::vector<V> v(n);
  if (n != 0) std::memset(static_cast<void*>(v.data()), 0xA5, n * sizeof(V));
  return v;
}

template <class Op, class T>
constexpr bool is_arg = std::is_same_v<Op, r::ArgMax<T>> || std::is_same_v<Op, r::ArgMin<T>>;

std::int64_t outputs(r::Extents e, Levels lv) {
  std::int64_t n = 1;
  if (!lv.contains(Level::gang)) n *= e.ng;
  if (!lv.contains(Level::worker)) n *= e.nw;
  if (!lv.contains(Level::vector)) n *= e.nv;
  return n;
}

template <class T>
std::uint64_t stream_of(Flavour f, std::size_t shape) {
  return 1000 * shape + 10 * static_cast<std::uint64_t>(f) + sizeof(T) + (std::is_floating_point_v<T> ? 100 : 0);
}

// ---- segment lengths ---------------------------------------------------------------------------
// Uneven CSR offsets: the edges of every class the CUDA backend has (thread <= 32, warp <= 2048,
// chunks of 16384), empty segments, and a random mix of short, medium and long ones.
std::vector<std::int64_t> segment_offsets() {
  std::vector<std::int64_t> len = {0, 1, 32, 33, 2048, 2049, 16384, 16385, 0, 0, 3};
  for (std::uint64_t s = 0; s < 240; ++s) {
    const std::uint64_t b = bits(77, s), c = b % 100, x = b >> 8;
    len.push_back(static_cast<std::int64_t>(c < 40   ? x % 33
                                            : c < 70 ? 33 + x % 2016
                                            : c < 95 ? x % 2
                                                     : 2049 + x % 40000));
  }
  std::vector<std::int64_t> off{0};
  for (std::int64_t l : len) off.push_back(off.back() + l);
  return off;
}

class Library {
 public:
  Library(Backend b, std::vector<std::string>& lines) : b_(b), ws_(b), lines_(lines) {}

  // reduce<Op, T, Acc> over every shape and level set.
  template <class Op, class T, class Acc = T>
  void reduce(const char* op, Flavour f) {
    const auto& ss = shapes();
    for (std::size_t si = 0; si < ss.size(); ++si) {
      const Shape& s = ss[si];
      if (is_arg<Op, T> && s.empty()) continue;  // an arg-reduction of nothing throws
      const Buffer<T> in(b_, elements<T>(f, stream_of<T>(f, si), static_cast<std::size_t>(s.backing())));
      const auto view = r::View<const T>::strided(in.data(), s.ext, s.stride_w, s.stride_g);
      std::string line = std::string("reduce/") + op + "/" + types<T, Acc>() + "/" + name(f) + "/" + s.name;
      for (Levels lv : kLevels) {
        const auto n = static_cast<std::size_t>(outputs(s.ext, lv));
        Buffer<Acc> out(b_, poison<Acc>(n));
        if constexpr (r::Reducer<Op>) r::reduce<Op, T>(b_, view, lv, std::span<Acc>(out.data(), n), ws_);
        else r::reduce<Op, T, Acc>(b_, view, lv, std::span<Acc>(out.data(), n), ws_);
        finish(b_);
        line += " " + hash_of(out.host());
      }
      lines_.push_back(line);
    }
  }
  template <class R, class T>
  void reducer(const char* op, Flavour f) {
    reduce<R, T, typename R::value_type>(op, f);
  }

  // segmented_reduce over uneven CSR offsets of type Off.
  template <class Op, class T, class Acc, class Off>
  void segmented(const char* op, Flavour f) {
    const auto off64 = segment_offsets();
    const std::vector<Off> off(off64.begin(), off64.end());
    const auto n = static_cast<std::size_t>(off64.back()), n_seg = off.size() - 1;
    const Buffer<T> in(b_, elements<T>(f, stream_of<T>(f, 99), n));
    const Buffer<Off> d_off(b_, off);
    Buffer<Acc> out(b_, poison<Acc>(n_seg));
    const std::span<const T> sin(in.data(), n);
    const std::span<const Off> soff(d_off.data(), off.size());
    if constexpr (r::Reducer<Op>)
      r::segmented_reduce<Op, T, Off>(b_, sin, soff, std::span<Acc>(out.data(), n_seg), ws_);
    else r::segmented_reduce<Op, T, Acc, Off>(b_, sin, soff, std::span<Acc>(out.data(), n_seg), ws_);
    finish(b_);
    lines_.push_back(std::string("segmented/") + op + "/" + types<T, Acc>() + "/" + name(f) + "/offsets-" +
                     type_name<Off>() + " " + hash_of(out.host()));
  }
  template <class R, class T, class Off>
  void segmented_reducer(const char* op, Flavour f) {
    segmented<R, T, typename R::value_type, Off>(op, f);
  }

  // segmented_reduce_fixed: n_seg segments of `size` elements.
  template <class Op, class T, class Acc>
  void fixed(const char* op, Flavour f, std::int64_t size, std::int64_t n_seg) {
    const auto n = static_cast<std::size_t>(size * n_seg);
    const Buffer<T> in(b_, elements<T>(f, stream_of<T>(f, 98), n));
    Buffer<Acc> out(b_, poison<Acc>(static_cast<std::size_t>(n_seg)));
    r::segmented_reduce_fixed<Op, T, Acc>(b_, std::span<const T>(in.data(), n), size,
                                          std::span<Acc>(out.data(), static_cast<std::size_t>(n_seg)), ws_);
    finish(b_);
    lines_.push_back(std::string("segmented-fixed/") + op + "/" + types<T, Acc>() + "/" + name(f) + "/" +
                     std::to_string(n_seg) + "x" + std::to_string(size) + " " + hash_of(out.host()));
  }

  // exact_dot of two vectors of n elements (a and b from different streams).
  template <class T, class Out>
  void dot(Flavour f, std::size_t n) {
    const Buffer<T> a(b_, elements<T>(f, stream_of<T>(f, 97), n)), b(b_, elements<T>(f, stream_of<T>(f, 96), n));
    Buffer<Out> out(b_, poison<Out>(1));
    r::exact_dot<T, Out>(b_, std::span<const T>(a.data(), n), std::span<const T>(b.data(), n),
                         std::span<Out>(out.data(), 1), ws_);
    finish(b_);
    lines_.push_back(std::string("dot/exact/") + types<T, Out>() + "/" + name(f) + "/" + std::to_string(n) + " " +
                     hash_of(out.host()));
    const Out host =
        r::exact_dot_to_host<T, Out>(b_, std::span<const T>(a.data(), n), std::span<const T>(b.data(), n), ws_);
    lines_.push_back(std::string("to-host/dot/exact/") + types<T, Out>() + "/" + name(f) + "/" + std::to_string(n) +
                     " " + hash_of(std::vector<Out>{host}));
  }

  // reduce_to_host: the scalar of all three levels, on shape `si`.
  template <class Op, class T, class Acc = T>
  void to_host(const char* op, Flavour f, std::size_t si) {
    const Shape& s = shapes()[si];
    const Buffer<T> in(b_, elements<T>(f, stream_of<T>(f, si), static_cast<std::size_t>(s.backing())));
    const auto view = r::View<const T>::strided(in.data(), s.ext, s.stride_w, s.stride_g);
    Acc v;
    if constexpr (r::Reducer<Op>) v = r::reduce_to_host<Op, T>(b_, view, ws_);
    else v = r::reduce_to_host<Op, T, Acc>(b_, view, ws_);
    lines_.push_back(std::string("to-host/") + op + "/" + types<T, Acc>() + "/" + name(f) + "/" + s.name + " " +
                     hash_of(std::vector<Acc>{v}));
  }

 private:
  Backend b_;
  r::Workspace ws_;
  std::vector<std::string>& lines_;
};

// ---- the cases -----------------------------------------------------------------------------------
void operators(Library& L) {
  using r::Max, r::Min, r::Prod, r::Sum;
  using i32 = std::int32_t;
  using i64 = std::int64_t;
  L.reduce<Sum, i32, i32>("sum", Flavour::uniform);
  L.reduce<Sum, i32, i64>("sum", Flavour::wide);
  L.reduce<Sum, i64, i64>("sum", Flavour::uniform);
  L.reduce<Sum, float, float>("sum", Flavour::uniform);
  L.reduce<Sum, float, double>("sum", Flavour::uniform);
  L.reduce<Sum, double, double>("sum", Flavour::uniform);
  L.reduce<Sum, float, float>("sum", Flavour::nan);
  L.reduce<Sum, double, double>("sum", Flavour::nan);

  L.reduce<Prod, i32, i32>("prod", Flavour::near_one);
  L.reduce<Prod, i32, i64>("prod", Flavour::near_one);
  L.reduce<Prod, i64, i64>("prod", Flavour::near_one);
  L.reduce<Prod, float, float>("prod", Flavour::near_one);
  L.reduce<Prod, float, double>("prod", Flavour::near_one);
  L.reduce<Prod, double, double>("prod", Flavour::near_one);

  L.reduce<Max, i32, i32>("max", Flavour::wide);
  L.reduce<Max, i32, i64>("max", Flavour::wide);
  L.reduce<Max, i64, i64>("max", Flavour::wide);
  L.reduce<Min, i32, i32>("min", Flavour::wide);
  L.reduce<Min, i32, i64>("min", Flavour::wide);
  L.reduce<Min, i64, i64>("min", Flavour::wide);
  for (Flavour f : {Flavour::uniform, Flavour::nan, Flavour::ties}) {
    L.reduce<Max, float, float>("max", f);
    L.reduce<Max, float, double>("max", f);
    L.reduce<Max, double, double>("max", f);
    L.reduce<Min, float, float>("min", f);
    L.reduce<Min, float, double>("min", f);
    L.reduce<Min, double, double>("min", f);
  }

  L.reduce<r::Mean, float, float>("mean", Flavour::uniform);
  L.reduce<r::Mean, float, double>("mean", Flavour::uniform);
  L.reduce<r::Mean, double, double>("mean", Flavour::uniform);

  for (Flavour f : {Flavour::exact, Flavour::nan}) {
    L.reduce<r::ExactSum, float, float>("exact-sum", f);
    L.reduce<r::ExactSum, float, double>("exact-sum", f);
    L.reduce<r::ExactSum, double, double>("exact-sum", f);
  }
}

template <class T, class Acc>
void bitwise(Library& L) {
  L.reduce<r::BitAnd, T, Acc>("bit-and", Flavour::and_mask);
  L.reduce<r::BitOr, T, Acc>("bit-or", Flavour::or_mask);
  L.reduce<r::BitXor, T, Acc>("bit-xor", Flavour::wide);
  L.reduce<r::LogicalAnd, T, Acc>("logical-and", Flavour::rare_zero);
  L.reduce<r::LogicalOr, T, Acc>("logical-or", Flavour::rare_one);
}

template <class T>
void reducers(Library& L) {
  std::vector<Flavour> fs = {Flavour::ties};
  if constexpr (std::is_floating_point_v<T>) fs.push_back(Flavour::nan);
  for (Flavour f : fs) {
    L.reducer<r::ArgMax<T>, T>("argmax", f);
    L.reducer<r::ArgMin<T>, T>("argmin", f);
    L.reducer<r::MinMax<T>, T>("minmax", f);
  }
  L.reducer<r::MeanVar, T>("meanvar", Flavour::uniform);
}

template <class T, class Acc, class Off>
void segmented_ops(Library& L, Flavour sum_f, Flavour minmax_f) {
  L.segmented<r::Sum, T, Acc, Off>("sum", sum_f);
  L.segmented<r::Prod, T, Acc, Off>("prod", Flavour::near_one);
  L.segmented<r::Max, T, Acc, Off>("max", minmax_f);
  L.segmented<r::Min, T, Acc, Off>("min", minmax_f);
}

template <class T, class Off>
void segmented_reducers(Library& L, Flavour f) {
  L.segmented_reducer<r::ArgMax<T>, T, Off>("argmax", f);
  L.segmented_reducer<r::ArgMin<T>, T, Off>("argmin", f);
  L.segmented_reducer<r::MinMax<T>, T, Off>("minmax", f);
  L.segmented_reducer<r::MeanVar, T, Off>("meanvar", Flavour::uniform);
}

void segmented(Library& L) {
  using i32 = std::int32_t;
  using i64 = std::int64_t;
  segmented_ops<i32, i32, i32>(L, Flavour::uniform, Flavour::wide);
  segmented_ops<i32, i64, i32>(L, Flavour::wide, Flavour::wide);
  segmented_ops<i64, i64, i32>(L, Flavour::uniform, Flavour::wide);
  segmented_ops<float, float, i32>(L, Flavour::uniform, Flavour::nan);
  segmented_ops<float, double, i32>(L, Flavour::uniform, Flavour::nan);
  segmented_ops<double, double, i32>(L, Flavour::uniform, Flavour::nan);
  segmented_ops<float, float, i64>(L, Flavour::nan, Flavour::ties);
  segmented_ops<double, double, i64>(L, Flavour::uniform, Flavour::ties);
  L.segmented<r::BitAnd, i32, i32, i32>("bit-and", Flavour::and_mask);
  L.segmented<r::BitOr, i64, i64, i32>("bit-or", Flavour::or_mask);
  L.segmented<r::BitXor, i32, i32, i64>("bit-xor", Flavour::wide);
  L.segmented<r::LogicalAnd, i64, i64, i32>("logical-and", Flavour::rare_zero);
  L.segmented<r::LogicalOr, i32, i32, i64>("logical-or", Flavour::rare_one);
  segmented_reducers<i32, i32>(L, Flavour::ties);
  segmented_reducers<i64, i64>(L, Flavour::ties);
  segmented_reducers<float, i32>(L, Flavour::nan);
  segmented_reducers<double, i64>(L, Flavour::ties);

  L.fixed<r::Sum, float, double>("sum", Flavour::uniform, 37, 2000);
  L.fixed<r::Sum, float, float>("sum", Flavour::uniform, 0, 5);
  L.fixed<r::Max, double, double>("max", Flavour::nan, 1000, 100);
  L.fixed<r::BitXor, std::int64_t, std::int64_t>("bit-xor", Flavour::wide, 33, 301);
  L.fixed<r::ArgMax<float>, float, r::ValueIndex<float>>("argmax", Flavour::ties, 100, 500);
  L.fixed<r::MeanVar, double, r::Moments>("meanvar", Flavour::uniform, 3, 10000);
}

void dots(Library& L) {
  for (Flavour f : {Flavour::uniform, Flavour::exact, Flavour::nan})
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1001}, std::size_t{100003}}) {
      L.dot<float, float>(f, n);
      L.dot<float, double>(f, n);
      L.dot<double, double>(f, n);
    }
}

void to_host(Library& L) {
  for (std::size_t si : {std::size_t{0}, std::size_t{8}}) {  // the flat array and a strided view
    L.to_host<r::Sum, float, double>("sum", Flavour::uniform, si);
    L.to_host<r::Sum, std::int32_t, std::int64_t>("sum", Flavour::wide, si);
    L.to_host<r::Max, float, float>("max", Flavour::nan, si);
    L.to_host<r::Min, double, double>("min", Flavour::ties, si);
    L.to_host<r::ExactSum, float, float>("exact-sum", Flavour::exact, si);
    L.to_host<r::ExactSum, double, double>("exact-sum", Flavour::exact, si);
    L.to_host<r::ArgMax<double>, double, r::ValueIndex<double>>("argmax", Flavour::ties, si);
    L.to_host<r::MinMax<float>, float, r::MinMaxPair<float>>("minmax", Flavour::nan, si);
    L.to_host<r::MeanVar, float, r::Moments>("meanvar", Flavour::uniform, si);
  }
}

}  // namespace

std::vector<std::string> library_checksums(Backend backend) {
  std::vector<std::string> lines;
  Library L(backend, lines);
  operators(L);
  bitwise<std::int32_t, std::int32_t>(L);
  bitwise<std::int64_t, std::int64_t>(L);
  reducers<std::int32_t>(L);
  reducers<std::int64_t>(L);
  reducers<float>(L);
  reducers<double>(L);
  segmented(L);
  dots(L);
  to_host(L);
  return lines;
}

const char* const kLevelNames = "gang worker vector gang+worker worker+vector gang+vector gang+worker+vector";

}  // namespace checksums
