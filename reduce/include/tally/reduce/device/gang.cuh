#pragma once
// Gang level: a reduction across the blocks of a grid in ONE launch. Each block publishes its
// partial, takes a ticket, and the last block to arrive combines the partials in block order, so
// the result is deterministic for a given launch shape. No floating-point atomics touch a result.
//
// Scalar form, fused into an app kernel (e.g. a stencil sweep that also wants max |u_new - u|):
//
//   __global__ void sweep(..., double* d_partials, unsigned* d_ticket, double* d_residual) {
//     __shared__ tally::reduce::device::GangStorage<double> tmp;
//     double local = Max::identity<double>();
//     for (auto i : grid_stride_range(n)) { ...update...; local = Max::combine(local, fabs(diff)); }
//     double r;
//     if (tally::reduce::device::gang_reduce<Max>(local, d_partials, d_ticket, r, tmp))
//       if (threadIdx.x == 0) *d_residual = r;   // only in the last block
//   }
//
// d_partials holds one value per block; d_ticket is one unsigned, zero before the first launch
// (cudaMemset once): the last block resets it, so it can be reused launch after launch on one
// stream (not by two launches in flight at once).
//
// Segmented, vector-valued form (many outputs, each split over `count` blocks, e.g. a matrix tile
// whose K loop is split across blocks): every block writes its `width` partial values to
// d_partials[index_in_segment * width + e], calls gang_arrive() on the segment's ticket, and the
// block that gets true reads each output e with gang_combine().
//
// Selecting form, for max and min only (gang_reduce_select): these operators return one of their
// arguments, so the order in which blocks join cannot change the result. Each block joins its value
// into ONE cell with an integer atomic on an order-preserving key, and the last block only reads that
// cell: no per-block partials and no fold over them, which matters when the reduction is fused into
// a bandwidth-bound sweep whose every microsecond counts (heat2d's residual). Deterministic too.

#include <cstdint>
#include <cstring>
#include <cuda/atomic>
#include <type_traits>

#include "tally/reduce/device/index.cuh"
#include "tally/reduce/device/worker.cuh"
#include "tally/reduce/ops.hpp"

namespace tally::reduce::device {

template <class T>
struct GangStorage {
  BlockReduceStorage<T> block;
  bool last;
};

/// Load that bypasses the (non-coherent) L1, for partials written by other blocks of this launch.
/// Any trivially copyable T (a generic reducer's value): 4-byte words where size and alignment allow.
template <class T>
__device__ __forceinline__ T load_coherent(const T* p) {
  if constexpr (std::is_arithmetic_v<T>) {
    return *static_cast<const volatile T*>(p);
  } else {
    static_assert(std::is_trivially_copyable_v<T>, "partials must be trivially copyable");
    T r;
    if constexpr (sizeof(T) % 4 == 0 && alignof(T) >= 4) {
      const volatile unsigned* src = reinterpret_cast<const volatile unsigned*>(p);
      unsigned w[sizeof(T) / 4];
#pragma unroll
      for (std::size_t k = 0; k < sizeof(T) / 4; ++k) w[k] = src[k];
      std::memcpy(&r, w, sizeof(T));
    } else {
      const volatile unsigned char* src = reinterpret_cast<const volatile unsigned char*>(p);
      unsigned char b[sizeof(T)];
      for (std::size_t k = 0; k < sizeof(T); ++k) b[k] = src[k];
      std::memcpy(&r, b, sizeof(T));
    }
    return r;
  }
}

/// The ticket: an atomic add with acquire-release semantics at device scope, by one thread. Its
/// release half publishes what that thread has seen (its block's writes, ordered before it by a
/// barrier); in the block that takes the last ticket, its acquire half makes every other block's
/// published writes visible, and a barrier passes that on to the block's threads. The pattern of
/// cooperative groups' grid sync: one fence per block, not a __threadfence() in every thread.
/// Returns whether this was the last of `count` arrivals, and re-arms the ticket if so.
__device__ __forceinline__ bool take_ticket(unsigned int* d_ticket, unsigned int count) {
  cuda::atomic_ref<unsigned int, cuda::thread_scope_device> ticket(*d_ticket);
  const bool last = ticket.fetch_add(1u, cuda::memory_order_acq_rel) == count - 1;
  if (last) ticket.store(0u, cuda::memory_order_relaxed);  // everyone has arrived: ready for the next launch
  return last;
}

/// Call from every thread of the block after the block's partials are written. Returns true (in
/// every thread) in the last of `count` blocks to arrive at `d_ticket`, and re-arms the ticket.
__device__ __forceinline__ bool gang_arrive(unsigned int* d_ticket, unsigned int count, bool& last_flag) {
  __syncthreads();  // the block's partials are written: they precede thread 0's release
  if (block_thread_rank() == 0) last_flag = take_ticket(d_ticket, count);
  __syncthreads();  // thread 0's acquire reaches the whole block
  return last_flag;
}

/// Element e of a segment's partials, combined over its `count` blocks in block order.
template <class Op, class T>
__device__ __forceinline__ T gang_combine(const T* d_partials, std::int64_t count, std::int64_t width, std::int64_t e) {
  T acc = detail::op_identity<Op, T>();
  for (std::int64_t b = 0; b < count; ++b)
    acc = detail::op_combine<Op, T>(acc, load_coherent(d_partials + b * width + e));
  return acc;
}

/// Scalar grid reduction. `x` is each thread's value (all threads call). Returns true in the last
/// block, whose thread 0 then holds the grid's result in `result`. `nblocks`/`block` default to the
/// whole grid; pass them to reduce over a subset of blocks (a segment) with its own partials and ticket.
template <class Op, class T>
__device__ __forceinline__ bool gang_reduce(T x, T* d_partials, unsigned int* d_ticket, T& result, GangStorage<T>& tmp,
                                            std::int64_t nblocks = grid_blocks(), std::int64_t block = block_rank()) {
  const T block_value = block_reduce<Op>(x, tmp.block);
  if (nblocks == 1) {  // a one-block grid is its own last block: no partial, no ticket
    if (block_thread_rank() == 0) result = block_value;
    return true;
  }
  if (block_thread_rank() == 0) d_partials[block] = block_value;
  if (!gang_arrive(d_ticket, static_cast<unsigned int>(nblocks), tmp.last)) return false;
  // Each thread folds a fixed strided subset of the partials, then a fixed tree: deterministic.
  T acc = detail::op_identity<Op, T>();
  for (std::int64_t b = block_thread_rank(); b < nblocks; b += block_size())
    acc = detail::op_combine<Op, T>(acc, load_coherent(d_partials + b));
  acc = block_reduce<Op>(acc, tmp.block);
  if (block_thread_rank() == 0) result = acc;
  return true;
}

// ---- selecting form: max / min through one atomic cell ---------------------------------------------

/// The unsigned integer that carries a T as an order-preserving key.
template <class T>
using select_key_t = std::conditional_t<sizeof(T) == 4, unsigned int, unsigned long long>;

/// Key of x such that key order equals Op's order on T, with NaN the key that always wins (the
/// largest for Max, the smallest for Min), so the cell propagates NaN like Max::combine does.
/// Host and device: the host computes the cell's initial value (select_identity_key).
template <class Op, class T>
TALLY_HD select_key_t<T> select_key(T x) {
  static_assert(std::is_same_v<Op, Max> || std::is_same_v<Op, Min>, "gang_reduce_select: Max or Min only");
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "gang_reduce_select: 4- or 8-byte types");
  using K = select_key_t<T>;
  constexpr K sign = K(1) << (8 * sizeof(T) - 1);
  if constexpr (std::is_floating_point_v<T>) {
    if (is_nan(x)) return std::is_same_v<Op, Max> ? ~K(0) : K(0);
    K u;
    std::memcpy(&u, &x, sizeof u);
    return (u & sign) ? ~u : (u | sign);  // negatives reversed below the positives
  } else if constexpr (std::is_signed_v<T>) {
    return static_cast<K>(x) ^ sign;
  } else {
    return static_cast<K>(x);
  }
}

/// The value a key stands for (NaN keys give a quiet NaN).
template <class Op, class T>
TALLY_HD T select_value(select_key_t<T> k) {
  using K = select_key_t<T>;
  constexpr K sign = K(1) << (8 * sizeof(T) - 1);
  if constexpr (std::is_floating_point_v<T>) {
    if (k == (std::is_same_v<Op, Max> ? ~K(0) : K(0))) return detail::numeric_limits<T>::quiet_NaN();
    const K u = (k & sign) ? (k & ~sign) : ~k;
    T x;
    std::memcpy(&x, &u, sizeof x);
    return x;
  } else if constexpr (std::is_signed_v<T>) {
    return static_cast<T>(k ^ sign);
  } else {
    return static_cast<T>(k);
  }
}

/// What the cell must hold before the first launch (the last block re-arms it to this).
template <class Op, class T>
TALLY_HD select_key_t<T> select_identity_key() {
  return select_key<Op, T>(detail::op_identity<Op, T>());
}

/// Scalar max or min across the grid, one launch: each block's value is joined into `d_cell` by an
/// atomic on its key, then the block takes a ticket; the last block reads the cell and re-arms it
/// (and the ticket) for the next launch. Returns true in every thread of the last block, whose
/// thread 0 holds the result. d_cell starts at select_identity_key<Op, T>(), d_ticket at 0.
template <class Op, class T>
__device__ __forceinline__ bool gang_reduce_select(T x, select_key_t<T>* d_cell, unsigned int* d_ticket, T& result,
                                                   GangStorage<T>& tmp, std::int64_t nblocks = grid_blocks()) {
  const T block_value = block_reduce<Op>(x, tmp.block);
  if (block_thread_rank() == 0) {
    const auto key = select_key<Op, T>(block_value);
    if constexpr (std::is_same_v<Op, Max>) atomicMax(d_cell, key);
    else atomicMin(d_cell, key);
    // The ticket's release orders this block's join before it; its acquire in the last block orders
    // every block's join before the read, which also re-arms the cell.
    const bool last = take_ticket(d_ticket, static_cast<unsigned int>(nblocks));
    tmp.last = last;
    if (last) result = select_value<Op, T>(atomicExch(d_cell, select_identity_key<Op, T>()));
  }
  __syncthreads();
  return tmp.last;
}

}  // namespace tally::reduce::device
