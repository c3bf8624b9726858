// CPU backend: our own Philox4x32-10 (OpenMP over Philox blocks), and cuRAND's host-side generator
// for the host API and the Sobol sequences (whose device-API points are the same by construction).
#include <algorithm>

#include "mcpi.hpp"
#include "philox_cpu.hpp"
#include "sample.hpp"
#include "tally/common/error.hpp"
#include "tally/common/timing.hpp"

namespace tally::mcpi {

namespace detail {

std::int64_t philox_hits_cpu(std::uint64_t seed, std::int64_t first, std::int64_t n) {
  // Sample k = lanes (2k%4, 2k%4+1) of block k/2: a sample never straddles two blocks.
  auto sample = [&](std::int64_t k) {
    const auto r = Philox4x32::host_order_block(seed, static_cast<std::uint64_t>(k) >> 1);
    const int lane = (k & 1) ? 2 : 0;
    return std::int64_t{in_quarter_disc(uniform_from_bits(r[lane]), uniform_from_bits(r[lane + 1]))};
  };
  const std::int64_t last = first + n;  // exclusive
  std::int64_t hits = 0;
  std::int64_t k = first;
  if (k < last && (k & 1)) hits += sample(k++);    // leading half block
  const std::int64_t b0 = k >> 1, b1 = last >> 1;  // whole blocks [b0, b1)
  std::int64_t whole = 0;
#pragma omp parallel for schedule(static) reduction(+ : whole)
  for (std::int64_t b = b0; b < b1; ++b) {
    const auto r = Philox4x32::host_order_block(seed, static_cast<std::uint64_t>(b));
    whole += std::int64_t{in_quarter_disc(uniform_from_bits(r[0]), uniform_from_bits(r[1]))} +
             std::int64_t{in_quarter_disc(uniform_from_bits(r[2]), uniform_from_bits(r[3]))};
  }
  hits += whole;
  if ((last & 1) && last - 1 >= k) hits += sample(last - 1);  // trailing half block
  return hits;
}

std::int64_t count_hits_cpu(const float* buf, std::int64_t m, bool planar) {
  const float* x = buf;
  const float* y = planar ? buf + m : buf + 1;
  const std::int64_t step = planar ? 1 : 2;
  std::int64_t h = 0;
#pragma omp parallel for schedule(static) reduction(+ : h)
  for (std::int64_t i = 0; i < m; ++i) h += std::int64_t{in_quarter_disc(x[i * step], y[i * step])};
  return h;
}

}  // namespace detail

Result run_cpu(const Params& p, const ProgressFn& progress) {
  validate(p);
  std::string why;
  if (!cpu_supports(p.generator, p.api, &why)) throw InputError(why);
  // Everything but device-API philox comes from cuRAND's host generator (for Sobol the device-API
  // points are the same as the host API's, see mcpi.hpp).
  if (p.generator != Generator::philox || p.api == Api::host)
    return detail::curand_host_hits(p.generator, p.seed, p.offset, p.n, p.batch, progress);
  Result r;
  HostTimer t;
  detail::count_in_batches(p.n, p.batch, r, progress, [&](std::int64_t first, std::int64_t m) {
    return detail::philox_hits_cpu(p.seed, p.offset + first, m);
  });
  r.generate_count_s = t.seconds();
  return r;
}

}  // namespace tally::mcpi
