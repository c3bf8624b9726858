#include "plan.hpp"

#include <sstream>

namespace tally::reduce::detail {

namespace {
struct Axis {
  std::int64_t extent, stride;
  bool reduced;
};
// At most three axes: a fixed array, so that planning (once per call) never allocates.
struct Axes {
  Axis a[3];
  std::size_t n = 0;
  void push_back(const Axis& x) { a[n++] = x; }
  [[nodiscard]] bool empty() const { return n == 0; }
  [[nodiscard]] std::size_t size() const { return n; }
  Axis& back() { return a[n - 1]; }
  Axis& operator[](std::size_t i) { return a[i]; }
  const Axis* begin() const { return a; }
  const Axis* end() const { return a + n; }
};
}  // namespace

Plan make_plan(const Problem& p) {
  Plan plan;
  const Axis full[3] = {{p.ext.ng, p.stride_g, p.levels.contains(Level::gang)},
                        {p.ext.nw, p.stride_w, p.levels.contains(Level::worker)},
                        {p.ext.nv, 1, p.levels.contains(Level::vector)}};
  plan.n_out = p.out_size;
  if (p.ext.size() == 0) {  // an empty reduced axis gives identities, an empty kept axis no output
    plan.empty = true;
    return plan;
  }

  Axes axes;
  for (const Axis& a : full) {
    if (a.extent == 1) continue;
    if (!axes.empty() && axes.back().reduced == a.reduced && axes.back().stride == a.extent * a.stride) {
      axes.back() = {axes.back().extent * a.extent, a.stride, a.reduced};
    } else {
      axes.push_back(a);
    }
  }

  const bool any_reduced = [&] {
    for (const Axis& a : axes)
      if (a.reduced) return true;
    return false;
  }();
  // The contiguous axis (if it survived) decides the family; otherwise a virtual one of extent 1.
  const bool has_contig = !axes.empty() && axes.back().stride == 1;
  const bool outer = any_reduced && has_contig && !axes.back().reduced;

  Axes kept, rows;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const bool last_contig = has_contig && i + 1 == axes.size();
    if (last_contig) continue;
    (axes[i].reduced ? rows : kept).push_back(axes[i]);
  }
  if (rows.size() == 2) {
    plan.rows = rows[0].extent * rows[1].extent;
    plan.r_ext2 = rows[1].extent, plan.r_s1 = rows[0].stride, plan.r_s2 = rows[1].stride;
  } else if (rows.size() == 1) {
    plan.rows = rows[0].extent, plan.r_ext2 = rows[0].extent, plan.r_s2 = rows[0].stride;
  }

  if (outer) {
    plan.kind = Plan::Kind::outer;
    plan.nc = axes.back().extent;
    if (!kept.empty()) plan.nb = kept[0].extent, plan.sb = kept[0].stride;  // at most one: 3 axes, one reduced
  } else {
    plan.kind = Plan::Kind::inner;
    plan.n = (has_contig && axes.back().reduced) ? axes.back().extent : 1;
    if (has_contig && !axes.back().reduced) kept.push_back(axes.back());  // nothing reduced: a copy
    if (kept.size() == 2) {
      plan.k_ext2 = kept[1].extent, plan.k_s1 = kept[0].stride, plan.k_s2 = kept[1].stride;
    } else if (kept.size() == 1) {
      plan.k_ext2 = kept[0].extent, plan.k_s2 = kept[0].stride;
    }
  }
  return plan;
}

std::string Plan::to_string() const {
  std::ostringstream s;
  if (empty) {
    s << "empty(n_out=" << n_out << ")";
  } else if (kind == Kind::inner) {
    s << "inner(n_out=" << n_out << ", rows=" << rows << ", n=" << n << ")";
  } else {
    s << "outer(nb=" << nb << ", rows=" << rows << ", nc=" << nc << ")";
  }
  return s.str();
}

}  // namespace tally::reduce::detail
