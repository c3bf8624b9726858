#pragma once
// Host wrappers around test kernels that use the device building blocks (blocks_kernels.cu).
// All pointers are device memory; every wrapper launches on the default stream and checks the launch.
#include <cstdint>

namespace tally::test::blocks {

/// out[b] = block_reduce over the bx*by threads of block b of in[b*bx*by + rank].
template <class Op, class T>
void block_reduce(const T* d_in, T* d_out, int bx, int by, int blocks);

/// out[t] = group_reduce<Op, G> (compile-time G) over each aligned group of G lanes; `runtime`
/// uses group_reduce_n instead. threads: a multiple of 32, one block.
template <class Op, class T>
void group_reduce(const T* d_in, T* d_out, int G, bool runtime, int threads);

/// out[b*bx + x] = worker_reduce over y of in[(b*by + y)*bx + x] (2-D block bx x by).
template <class Op, class T>
void worker_reduce(const T* d_in, T* d_out, int bx, int by, int blocks);

/// *d_out = gang_reduce over in[0, n) with a grid-stride loop of `blocks` x `threads`.
template <class Op, class T>
void gang_reduce(const T* d_in, std::int64_t n, T* d_partials, unsigned int* d_ticket, T* d_out, int blocks,
                 int threads);

/// Segments of `count` blocks: block b of segment g publishes in[(g*count + b)*width + e] for e < width,
/// gang_arrive() on ticket g, and the last block writes out[g*width + e] = gang_combine(...).
template <class Op, class T>
void gang_segments(const T* d_in, T* d_partials, unsigned int* d_tickets, T* d_out, int nseg, int count, int width,
                   int threads);

/// *d_out = gang_reduce_select (max / min through one atomic cell) over in[0, n). d_cell: 4 or 8 bytes
/// (the key of T), armed once by gang_select_arm; gang_select_armed tells whether it is re-armed.
template <class Op, class T>
void gang_select(const T* d_in, std::int64_t n, void* d_cell, unsigned int* d_ticket, T* d_out, int blocks,
                 int threads);
template <class Op, class T>
void gang_select_arm(void* d_cell);
template <class Op, class T>
bool gang_select_armed(const void* d_cell);

/// *d_out = the exact sum of in[0, n) rounded to Out through device/exact.cuh (ExactThread in a
/// grid-stride loop of `blocks` x `threads`, then exact_gang_sum). d_partials: blocks accumulators
/// (exact_partials_bytes<T>(blocks) bytes); threads a multiple of 32, at least 96.
template <class T, class Out>
void exact_gang_sum(const T* d_in, std::int64_t n, void* d_partials, unsigned int* d_ticket, Out* d_out, int blocks,
                    int threads);

/// *d_out = the exact dot product of a and b (float, n elements) rounded to Out, through
/// ExactThread<exact::FloatProducts>::add_product and exact_gang_sum; as exact_gang_sum above.
template <class Out>
void exact_dot(const float* d_a, const float* d_b, std::int64_t n, void* d_partials, unsigned int* d_ticket, Out* d_out,
               int blocks, int threads);

/// out[s] for each segment [off[s], off[s + 1]) of in[0, n), s < n_seg, by a fused kernel built from
/// the segment forms of device/segment.cuh (one block of segment_block threads a segment, each segment
/// in the class its length gives it, at most 16 chunks). Op: Sum, or a reducer with Acc its value_type.
template <class Op, class T, class Acc>
void segments_by_forms(const T* d_in, std::int64_t n, const std::int64_t* d_off, std::int64_t n_seg, Acc* d_out);

}  // namespace tally::test::blocks
