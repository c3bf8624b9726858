// matmul's result file: shared by the executable and the Python module (matmul_output.hpp).
#include "matmul_output.hpp"

namespace tally::matmul::detail {

template <class T>
void write_result(h5::Location& f, const Case& cs, const Options& o, Backend backend, const std::vector<T>* c,
                  const RanksReport& rr, const Provenance& prov, const std::optional<DeviceInfo>& dev,
                  const std::string& a_source, const std::string& b_source) {
  const Shape s = cs.shape;
  std::string level_list;
  for (const Measured& m : cs.levels) level_list += (level_list.empty() ? "" : ",") + m.name;
  f.attr("app", "matmul");
  f.attr("m", s.m);
  f.attr("n", s.n);
  f.attr("k", s.k);
  f.attr("precision", cs.precision);
  f.attr("backend", reduce::to_string(backend));
  f.attr("levels", level_list);
  f.attr("status", cs.passed() ? "ok" : "failed");
  f.attr("seed", o.common.seed);
  f.attr("repeats", o.repeats);
  f.attr("warmup", o.warmup);
  f.attr("timing", o.timing);
  f.attr("a", a_source);
  f.attr("b", b_source);
  f.attr("tolerance", tolerance<T>(s.k));
  f.attr("split_k", o.split_k);
  f.attr("exact", o.exact ? 1 : 0);
  if (cs.bandwidth_gbs) f.attr("copy_bandwidth_gbs", *cs.bandwidth_gbs);
  write_case(f, cs);
  if (c) f.write<T>("C", *c, {static_cast<std::uint64_t>(s.m), static_cast<std::uint64_t>(s.n)});
  auto tg = f.group("timings");  // rank 0's; every rank's under /ranks/timings
  for (const auto& [name, v] : cs.timings.entries()) tg.attr(name, v);
  write_ranks(f, rr, s);
  write_provenance(f, prov, dev);
}

template void write_result<float>(h5::Location&, const Case&, const Options&, Backend, const std::vector<float>*,
                                  const RanksReport&, const Provenance&, const std::optional<DeviceInfo>&,
                                  const std::string&, const std::string&);
template void write_result<double>(h5::Location&, const Case&, const Options&, Backend, const std::vector<double>*,
                                   const RanksReport&, const Provenance&, const std::optional<DeviceInfo>&,
                                   const std::string&, const std::string&);

}  // namespace tally::matmul::detail
