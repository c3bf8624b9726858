// The --validate reference: the same iteration written with Eigen array expressions, independent
// of both backends' loops and kernels.
#include <Eigen/Core>
#include <utility>

#include "solver.hpp"

namespace tally::heat2d {

template <class T>
std::vector<T> eigen_sweeps(const Problem& p, std::span<const T> u0, std::int64_t sweeps) {
  using Array = Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Index ny = p.ny, nx = p.nx, m = ny - 2, n = nx - 2;
  Array u = Eigen::Map<const Array>(u0.data(), ny, nx);
  Array v = u;
  const T r = static_cast<T>(p.r());
  for (std::int64_t k = 0; k < sweeps; ++k) {
    // s = (west + east) + (south + north): the grouping every backend uses.
    const auto s = (u.block(1, 0, m, n) + u.block(1, 2, m, n)) + (u.block(0, 1, m, n) + u.block(2, 1, m, n));
    const auto c = u.block(1, 1, m, n);
    if (p.mode == Mode::steady) v.block(1, 1, m, n) = s * T(0.25);
    else v.block(1, 1, m, n) = c + r * (s - T(4) * c);
    std::swap(u, v);
  }
  return {u.data(), u.data() + u.size()};
}
template std::vector<float> eigen_sweeps<float>(const Problem&, std::span<const float>, std::int64_t);
template std::vector<double> eigen_sweeps<double>(const Problem&, std::span<const double>, std::int64_t);

}  // namespace tally::heat2d
