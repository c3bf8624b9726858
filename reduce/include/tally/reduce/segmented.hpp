#pragma once
// Segmented reductions: one result per segment of a 1-D input.
//
//   segmented_reduce<Op, T, Acc>(backend, in, offsets, out, ws, stream)
//       out[s] = Op over in[offsets[s] .. offsets[s + 1]) for s < out.size()   (CSR row offsets)
//   segmented_reduce_fixed<Op, T, Acc>(backend, in, segment_size, out, ws, stream)
//       out[s] = Op over in[s * segment_size .. (s + 1) * segment_size)
//
// * offsets: out.size() + 1 entries, int32 or int64, non-decreasing, from >= 0 to <= in.size(); on
//   CUDA they live in device memory like `in` and `out`. Segments may be empty (the identity of Op),
//   of length 1, or of any mix of lengths: a segment of 10^8 next to 10^5 of length 1 costs what the
//   elements cost (see reduce/docs/segmented.md for how the work is balanced).
// * Every operator of reduce() (Sum, Prod, Max, Min, the integer bit and logical operators) and the
//   same (T, Acc) pairs; Max and Min propagate NaN. The library's reducers (reducers.hpp: ArgMax,
//   ArgMin, MinMax, MeanVar) too, one value_type per segment; ArgMax's index is within the segment.
// * Determinism: each segment is combined in an order fixed by its own length (short: one thread in
//   element order; medium: 32 lanes strided, a fixed shuffle tree; long: fixed chunks, each a block
//   in a fixed order, the chunks' partials in chunk order), never by the launch shape, the other
//   segments or the thread count: bitwise the same run to run. Max, Min, the integer operators,
//   ArgMax, ArgMin and MinMax are bitwise the same on CPU and CUDA (their result does not depend on
//   the order; a NaN is a NaN).
// * Bad input throws std::invalid_argument naming the argument before anything is written or
//   launched: offsets of the wrong count for `out`, decreasing, negative or running past `in`. On
//   CUDA that check (SegmentCheck::full, the default) reads the offsets on the device and waits for
//   it: the one synchronisation of the call. SegmentCheck::trusted skips it (the caller vouches for
//   the offsets: e.g. offsets it has checked once and reuses, or inside a CUDA graph); the call is then
//   asynchronous, and offsets that break the rules give unspecified results (never a write outside `out`).
// * Fixed-size segments are the vector-level reduction of an (n / size, size) array: reduce()'s kernels.

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "tally/reduce/reduce.hpp"

namespace tally::reduce {

/// The class segmented_reduce() on CUDA gives a segment of length L, and with it the order of its
/// result, which a fused kernel reproduces with the forms of device/segment.cuh: L <=
/// segment_thread_max one thread (thread_segment_reduce), L <= segment_warp_max one warp
/// (warp_segment_reduce), longer ones chunks of segment_chunk elements, each a block of segment_block
/// threads (block_segment_reduce, index0 the chunk's start), the chunks' partials combined in chunk
/// order by a block of segment_block threads (thread t folds partials t, t + segment_block, ..., then
/// block_reduce; one chunk is its own result).
inline constexpr std::int64_t segment_thread_max = 32;
inline constexpr std::int64_t segment_warp_max = 2048;
inline constexpr std::int64_t segment_chunk = 16384;
inline constexpr int segment_block = 256;

enum class SegmentCheck {
  full,     ///< validate the offsets first (CUDA: on the device, then wait for the verdict)
  trusted,  ///< no validation of the offsets' values (sizes and pointers are still checked)
};

namespace detail {
/// Element x at position `index` of its segment as Op's accumulator: a Reducer's load (reducer.hpp;
/// ArgMax's index is the position within the segment, as CUB's), else a conversion to Acc.
template <class Op, class Acc, class T>
TALLY_HD Acc segment_load(const T& x, std::int64_t index) {
  if constexpr (Reducer<Op>) {
    return reducer_load<Op>(x, index);
  } else {
    (void)index;
    return static_cast<Acc>(x);
  }
}
/// An empty segment's result: Op's identity, except for the reducers that need input (ArgMax, ArgMin),
/// whose index is then -1 next to the identity's value (CUB's convention for empty segments).
template <class Op, class Acc>
TALLY_HD Acc empty_segment() {
  Acc r = op_identity<Op, Acc>();
  if constexpr (requires { Op::needs_input; }) {  // reducer_needs_input(), spelt out: that one is host-only
    if constexpr (Op::needs_input) r.index = -1;
  }
  return r;
}

/// Sizes and pointers (host side, cheap): throws std::invalid_argument naming the argument.
void validate_segment_sizes(std::int64_t n, const void* in, std::int64_t n_offsets, const void* offsets,
                            std::int64_t n_out, const void* out);
/// The offsets' values: non-decreasing, offsets[0] >= 0, offsets[n_seg] <= n. CPU: host memory.
template <class Off>
void check_offsets_cpu(const Off* offsets, std::int64_t n_seg, std::int64_t n);
/// The same on the device (a check kernel, then one wait on `stream`).
template <class Off>
void check_offsets_cuda(const Off* d_offsets, std::int64_t n_seg, std::int64_t n, Workspace& ws, stream_t stream);
/// The offsets that broke the rule at index i (offsets[i], and offsets[i + 1] when i < n_seg) -> the message.
template <class Off>
[[noreturn]] void throw_bad_offsets(std::int64_t i, Off at, Off next, std::int64_t n_seg, std::int64_t n);

template <class Op, class T, class Acc, class Off>
void segmented_cpu(const T* in, std::int64_t n, const Off* offsets, std::int64_t n_seg, Acc* out);
template <class Op, class T, class Acc, class Off>
void segmented_cuda(const T* in, std::int64_t n, const Off* offsets, std::int64_t n_seg, Acc* out, Workspace& ws,
                    stream_t stream);
}  // namespace detail

template <class Off>
inline constexpr bool is_segment_offset = std::is_same_v<Off, std::int32_t> || std::is_same_v<Off, std::int64_t>;

namespace detail {
template <class Op, class T, class Acc, class Off>
void segmented_dispatch(Backend backend, std::span<const T> in, std::span<const Off> offsets, std::span<Acc> out,
                        Workspace& ws, stream_t stream, SegmentCheck check) {
  const auto n = static_cast<std::int64_t>(in.size()), n_out = static_cast<std::int64_t>(out.size());
  validate_segment_sizes(n, in.data(), static_cast<std::int64_t>(offsets.size()), offsets.data(), n_out, out.data());
  check_workspace(ws, backend);
  if (n_out == 0) return;
  if (backend == Backend::cpu) {
    if (check == SegmentCheck::full) check_offsets_cpu(offsets.data(), n_out, n);
    segmented_cpu<Op, T, Acc, Off>(in.data(), n, offsets.data(), n_out, out.data());
  } else {
    if (check == SegmentCheck::full) check_offsets_cuda(offsets.data(), n_out, n, ws, stream);
    segmented_cuda<Op, T, Acc, Off>(in.data(), n, offsets.data(), n_out, out.data(), ws, stream);
  }
}
}  // namespace detail

/// An operator of ops.hpp (Sum, Prod, Max, Min, the integer bit and logical operators), accumulated in Acc.
template <class Op, class T, class Acc = T, class Off>
requires(!Reducer<Op>) void segmented_reduce(Backend backend, std::span<const T> in, std::span<const Off> offsets,
                                             std::span<Acc> out, Workspace& ws, stream_t stream = nullptr,
                                             SegmentCheck check = SegmentCheck::full) {
  static_assert(!std::is_same_v<Op, ExactSum>, "segmented_reduce: no exact sum (use reduce() per segment)");
  static_assert(!std::is_same_v<Op, Mean>,
                "segmented_reduce: no mean (a segmented Sum divided by the segment lengths, or MeanVar)");
  static_assert(is_supported<Op, T, Acc>,
                "this (operator, input type, accumulator) is not compiled into tally::reduce");
  static_assert(is_segment_offset<Off>, "segmented_reduce: offsets are int32 or int64");
  detail::segmented_dispatch<Op, T, Acc, Off>(backend, in, offsets, out, ws, stream, check);
}

/// A library reducer (reducers.hpp: ArgMax<T>, ArgMin<T>, MinMax<T>, MeanVar), one R::value_type per
/// segment. ArgMax/ArgMin: the index is the position within the segment (first wins on ties, the first
/// NaN wins); an empty segment gives index -1 next to the identity's value (-inf / +inf, integers
/// lowest / max), as CUB's segmented arg-reductions do. MeanVar of an empty segment: count 0.
template <class R, class T, class Off>
requires(Reducer<R>&& is_compiled_reducer<R, T>) void segmented_reduce(Backend backend, std::span<const T> in,
                                                                       std::span<const Off> offsets,
                                                                       std::span<typename R::value_type> out,
                                                                       Workspace& ws, stream_t stream = nullptr,
                                                                       SegmentCheck check = SegmentCheck::full) {
  static_assert(is_segment_offset<Off>, "segmented_reduce: offsets are int32 or int64");
  detail::segmented_dispatch<R, T, typename R::value_type, Off>(backend, in, offsets, out, ws, stream, check);
}

/// Segments of `segment_size` elements each: out.size() of them, in.size() == out.size() * segment_size.
/// An operator of ops.hpp (Acc) or a library reducer (Acc = R::value_type; an arg-reduction of
/// segments of 0 elements throws, as reduce() does).
template <class Op, class T, class Acc = T>
void segmented_reduce_fixed(Backend backend, std::span<const T> in, std::int64_t segment_size, std::span<Acc> out,
                            Workspace& ws, stream_t stream = nullptr) {
  const auto n = static_cast<std::int64_t>(in.size()), n_out = static_cast<std::int64_t>(out.size());
  if (segment_size < 0)
    throw std::invalid_argument("tally::reduce: segment_size: negative (" + std::to_string(segment_size) + ")");
  if (n_out * segment_size != n)
    throw std::invalid_argument("tally::reduce: out: " + std::to_string(n_out) + " segments of " +
                                std::to_string(segment_size) + " elements do not cover in (" + std::to_string(n) +
                                " elements)");
  const auto view = View<const T>::contiguous(in.data(), 1, n_out, segment_size);
  if constexpr (Reducer<Op>) reduce<Op, T>(backend, view, Level::vector, out, ws, stream);
  else reduce<Op, T, Acc>(backend, view, Level::vector, out, ws, stream);
}

}  // namespace tally::reduce
