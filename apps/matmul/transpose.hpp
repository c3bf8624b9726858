#pragma once
// B transposed for the CPU levels (plain and --exact), which read B's columns contiguously.
#include <cstdint>
#include <span>
#include <vector>

namespace tally::matmul {

/// b (rows x cols, row-major) as cols x rows, row-major.
template <class T>
std::vector<T> transpose(std::span<const T> b, std::int64_t rows, std::int64_t cols) {
  std::vector<T> t(static_cast<std::size_t>(rows * cols));
#pragma omp parallel for schedule(static)
  for (std::int64_t j = 0; j < cols; ++j)
    for (std::int64_t i = 0; i < rows; ++i)
      t[static_cast<std::size_t>(j * rows + i)] = b[static_cast<std::size_t>(i * cols + j)];
  return t;
}

}  // namespace tally::matmul
