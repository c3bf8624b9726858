// Backend-neutral parts of the host API: names, argument checks, backend selection.
#include <sstream>
#include <stdexcept>
#include <string>

#include "tally/common/device_info.hpp"
#include "tally/reduce/reduce.hpp"

namespace tally::reduce {

// ---- levels ------------------------------------------------------------------------------------

std::string Levels::to_string() const {
  if (empty()) return "none";
  std::string s;
  for (auto [l, n] :
       {std::pair{Level::gang, "gang"}, std::pair{Level::worker, "worker"}, std::pair{Level::vector, "vector"}})
    if (contains(l)) {
      if (!s.empty()) s += '+';  // appended piecewise: GCC 12's -Wrestrict misfires on "" + std::string
      s += n;
    }
  return s;
}

Levels Levels::parse(std::string_view text) {
  if (text == "all") return all();
  Levels r;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t end = text.find_first_of("+,", pos);
    const std::string_view word = text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    if (word == "gang") r = r | Level::gang;
    else if (word == "worker") r = r | Level::worker;
    else if (word == "vector") r = r | Level::vector;
    else
      throw std::invalid_argument("levels: unknown level '" + std::string(word) + "' in '" + std::string(text) +
                                  "' (use gang, worker, vector joined by '+', or all)");
    if (end == std::string_view::npos) break;
    pos = end + 1;
  }
  return r;
}

std::string Tuning::to_string() const {
  std::ostringstream s;
  s << "Tuning{blocks_per_sm=" << blocks_per_sm << ", sm_count=" << sm_count
    << ", programmatic_launch=" << (programmatic_launch ? "true" : "false") << "}";
  return s.str();
}

// ---- backends ------------------------------------------------------------------------------------

std::string to_string(Backend b) { return b == Backend::cpu ? "cpu" : "cuda"; }

Backend resolve_backend(std::string_view request, bool* fell_back) {
  if (fell_back) *fell_back = false;
  if (request == "cpu") return Backend::cpu;
  if (request == "cuda") {
    if (!cuda_built())
      throw std::invalid_argument("--backend cuda: this build has no CUDA backend (configure with a CUDA toolkit)");
    if (cuda_device_count() == 0)
      throw std::invalid_argument("--backend cuda: no usable CUDA device (no GPU or no driver)");
    return Backend::cuda;
  }
  if (request == "auto") {
    if (cuda_built() && cuda_device_count() > 0) return Backend::cuda;
    if (fell_back) *fell_back = true;
    return Backend::cpu;
  }
  throw std::invalid_argument("--backend: unknown '" + std::string(request) + "' (auto, cuda or cpu)");
}

// ---- argument checks -----------------------------------------------------------------------------

namespace detail {

void validate(const Problem& p, const void* out) {
  const auto fail = [](const std::string& m) { throw std::invalid_argument("tally::reduce: " + m); };
  if (p.levels.empty()) fail("levels: the level set is empty (reduce over at least one of gang, worker, vector)");
  if (p.ext.ng < 0 || p.ext.nw < 0 || p.ext.nv < 0)
    fail("in: negative extent (" + std::to_string(p.ext.ng) + ", " + std::to_string(p.ext.nw) + ", " +
         std::to_string(p.ext.nv) + ")");
  const std::int64_t n = p.ext.size();
  if (n > 0) {
    if (p.data == nullptr) fail("in: null data pointer with " + std::to_string(n) + " elements");
    if (p.ext.nw > 1 && p.stride_w < p.ext.nv)
      fail("in: stride_w " + std::to_string(p.stride_w) + " is smaller than the row (nv = " + std::to_string(p.ext.nv) +
           ")");
    if (p.ext.ng > 1 && p.stride_g < (p.ext.nw - 1) * p.stride_w + p.ext.nv)
      fail("in: stride_g " + std::to_string(p.stride_g) + " is smaller than a gang slab (" +
           std::to_string((p.ext.nw - 1) * p.stride_w + p.ext.nv) + " elements)");
  }
  const std::int64_t want = output_shape(p.ext, p.levels).size();
  if (p.out_size != want)
    fail("out: has " + std::to_string(p.out_size) + " elements, reducing " + p.levels.to_string() + " of (" +
         std::to_string(p.ext.ng) + ", " + std::to_string(p.ext.nw) + ", " + std::to_string(p.ext.nv) + ") gives " +
         std::to_string(want));
  if (want > 0 && out == nullptr) fail("out: null pointer for " + std::to_string(want) + " elements");
}

void check_nonempty(const char* name, Extents e, Levels levels, std::int64_t out_size) {
  if (out_size > 0 && elements_per_output(e, levels) == 0)
    throw std::invalid_argument(std::string("tally::reduce: in: ") + name + " of an empty set (reducing " +
                                levels.to_string() + " of (" + std::to_string(e.ng) + ", " + std::to_string(e.nw) +
                                ", " + std::to_string(e.nv) +
                                ") leaves no element per output; an arg-reduction needs at least one)");
}

void check_workspace(const Workspace& ws, Backend b) {
  if (ws.backend() != b)
    throw std::invalid_argument("tally::reduce: workspace: made for the " + to_string(ws.backend()) +
                                " backend, used with " + to_string(b));
}

}  // namespace detail
}  // namespace tally::reduce
