// Backend selection: the only place that knows which backends exist.
#include <unistd.h>

#include <algorithm>
#include <string>

#include "solver.hpp"
#include "tally/common/error.hpp"
#include "tally/ranks/comm.hpp"

namespace tally::heat2d {

Decomposition decompose(const Problem& p, int ranks, int rank) {
  if (ranks > p.ny - 2)
    throw InputError(std::to_string(ranks) + " ranks: the " + std::to_string(p.nx) + " x " + std::to_string(p.ny) +
                     " grid has only " + std::to_string(p.ny - 2) +
                     " interior rows (--ny), and each rank needs at least one");
  return Decomposition::split(p.nx, p.ny, 1, p.ny - 1, ranks, rank);
}

Block local_block(const Decomposition& d) {
  const Decomposition::Rows r = d.rows();
  return {r.begin - 1, r.size() + 2};  // interior rows [begin, end) and one row on each side
}

int deepest_pass(const Decomposition& d) {
  if (!d.several()) return max_sweeps_per_pass;
  return static_cast<int>(std::clamp<std::int64_t>(d.fewest_rows(), 1, max_sweeps_per_pass));
}

HaloLayout halo_layout(const Decomposition& d, int depth) {
  const Decomposition::Rows r = d.rows();  // own rows, global
  return {std::min<std::int64_t>(depth, r.begin), r.size(), std::min<std::int64_t>(depth, d.ny() - r.end)};
}

Decomposition solver_decomposition(const Problem& p, const SolverOptions& o) {
  const int size = o.comm ? o.comm->size() : 1, rank = o.comm ? o.comm->rank() : 0;
  if (!o.decomposition) {
    if (size > 1) throw Error("heat2d: a solver on " + std::to_string(size) + " ranks needs their decomposition");
    return decompose(p);
  }
  const Decomposition& d = *o.decomposition;
  if (d.nx() != p.nx || d.ny() != p.ny || d.size() != size || d.rank() != rank)
    throw Error("heat2d: the decomposition given is of another grid or other ranks");
  return d;
}

int resolve_sweeps_per_pass(int requested, std::int64_t check_every, reduce::Backend b, int deepest) {
  if (requested < 0 || requested > max_sweeps_per_pass)
    throw InputError("--sweeps-per-pass " + std::to_string(requested) + ": expected auto or 1.." +
                     std::to_string(max_sweeps_per_pass));
  if (requested > deepest)
    throw InputError("--sweeps-per-pass " + std::to_string(requested) +
                     ": across ranks a pass needs that many halo rows "
                     "from each neighbour's block, and the smallest block has " +
                     std::to_string(deepest) + " rows (fewer ranks or a larger --ny)");
  if (requested > 1 && check_every % requested != 0)
    throw InputError("--sweeps-per-pass " + std::to_string(requested) +
                     ": residuals exist only at a pass's last sweep, so it "
                     "must divide --check-every (" +
                     std::to_string(check_every) + ")");
  if (requested > 0) return requested;
  // The deepest pass that pays on each backend (BENCHMARKS.md, heat2d).
  const int preferred = b == reduce::Backend::cuda ? cuda_preferred_sweeps_per_pass : cpu_preferred_sweeps_per_pass;
  for (int t = std::min(preferred, deepest); t > 1; --t)
    if (check_every % t == 0) return t;
  return 1;
}

template <class T>
std::unique_ptr<Solver<T>> make_solver(reduce::Backend b, const Problem& p, const SolverOptions& o) {
  if (b == reduce::Backend::cuda) {
#ifdef TALLY_HAS_CUDA
    return make_cuda_solver<T>(p, o);
#else
    (void)o;
    throw InputError("--backend cuda: this build has no CUDA backend");
#endif
  }
  // Two fields plus the output copy: refuse what cannot fit in the host's memory (rank 0 also
  // gathers the whole field; ranks sharing a node share its memory: not counted here).
  const Block blk = o.decomposition ? local_block(*o.decomposition) : Block{0, p.ny};
  const double need =
      static_cast<double>(p.nx) * (2.0 * static_cast<double>(blk.rows) + static_cast<double>(p.ny)) * sizeof(T);
  const double have = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  if (have > 0 && need > have)
    throw InputError("--nx/--ny " + std::to_string(p.nx) + " x " + std::to_string(p.ny) + ": needs " +
                     std::to_string(need / (1 << 30)) + " GiB of host memory, the machine has " +
                     std::to_string(have / (1 << 30)) + " GiB");
  return make_cpu_solver<T>(p, o);
}
template std::unique_ptr<Solver<float>> make_solver<float>(reduce::Backend, const Problem&, const SolverOptions&);
template std::unique_ptr<Solver<double>> make_solver<double>(reduce::Backend, const Problem&, const SolverOptions&);

double copy_bandwidth_gbs(reduce::Backend b, std::int64_t bytes, int repeats, int device) {
  if (b == reduce::Backend::cuda) {
#ifdef TALLY_HAS_CUDA
    return cuda_copy_bandwidth_gbs(bytes, repeats, device);
#else
    (void)device;
    throw InputError("--backend cuda: this build has no CUDA backend");
#endif
  }
  return cpu_copy_bandwidth_gbs(bytes, repeats);
}

}  // namespace tally::heat2d
