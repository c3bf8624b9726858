// The backend-neutral parts of the host API: level sets, output shapes, backend choice.
#include <stdexcept>
#include <string>

#include "catch.hpp"
#include "tally/common/device_info.hpp"
#include "tally/reduce/reduce.hpp"

using namespace tally::reduce;

namespace {
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no exception)";
}
}  // namespace

TEST_CASE("Levels: names of the seven sets, parsing in any order", "[reduce][api]") {
  const char* names[7] = {
      "gang", "worker", "vector", "gang+worker", "worker+vector", "gang+vector", "gang+worker+vector"};
  const auto sets = Levels::all_sets();
  for (std::size_t i = 0; i < sets.size(); ++i) {
    CHECK(sets[i].to_string() == names[i]);
    CHECK(Levels::parse(names[i]) == sets[i]);
    for (std::size_t j = 0; j < i; ++j) CHECK(sets[i] != sets[j]);
  }
  CHECK(Levels{}.to_string() == "none");
  CHECK(Levels{}.empty());
  CHECK(Levels::parse("all") == Levels::all());
  CHECK(Levels::parse("vector+gang") == (Level::gang | Level::vector));
  CHECK(Levels::parse("vector,worker,gang") == Levels::all());
  CHECK(Levels::parse("worker+worker") == Levels(Level::worker));
  CHECK(Levels::all().contains(Level::worker));
  CHECK_FALSE(Levels(Level::gang).contains(Level::vector));
  CHECK(error_of([] { (void)Levels::parse("warp"); }).find("'warp'") != std::string::npos);
  CHECK(error_of([] { (void)Levels::parse("gang+"); }).find("levels") != std::string::npos);
  CHECK(error_of([] { (void)Levels::parse(""); }).find("levels") != std::string::npos);
  CHECK(error_of([] { (void)Levels::parse("Gang"); }).find("'Gang'") != std::string::npos);
}

TEST_CASE("output_shape keeps the unreduced axes in order", "[reduce][api]") {
  const Extents e{4, 5, 6};
  const auto dims = [&](Levels l) {
    const OutputShape s = output_shape(e, l);
    std::string r = std::to_string(s.rank) + ":";
    for (int a = 0; a < s.rank; ++a) (r += ' ') += std::to_string(s.dims[static_cast<unsigned>(a)]);
    return r + " = " + std::to_string(s.size());
  };
  CHECK(dims(Level::gang) == "2: 5 6 = 30");
  CHECK(dims(Level::worker) == "2: 4 6 = 24");
  CHECK(dims(Level::vector) == "2: 4 5 = 20");
  CHECK(dims(Level::gang | Level::worker) == "1: 6 = 6");
  CHECK(dims(Level::worker | Level::vector) == "1: 4 = 4");
  CHECK(dims(Level::gang | Level::vector) == "1: 5 = 5");
  CHECK(dims(Levels::all()) == "0: = 1");
  CHECK(output_shape({0, 5, 6}, Level::vector).size() == 0);
  CHECK(output_shape({0, 5, 6}, Level::gang).size() == 30);
  static_assert(output_shape({7, 8, 9}, Level::worker).size() == 63);
}

TEST_CASE("resolve_backend: cpu, auto falls back with notice, cuda needs a device, unknown names", "[reduce][api]") {
  bool fell_back = true;
  CHECK(resolve_backend("cpu", &fell_back) == Backend::cpu);
  CHECK_FALSE(fell_back);
  CHECK(to_string(Backend::cpu) == "cpu");
  CHECK(to_string(Backend::cuda) == "cuda");
  const bool gpu = cuda_built() && tally::cuda_device_count() > 0;
  CHECK(resolve_backend("auto", &fell_back) == (gpu ? Backend::cuda : Backend::cpu));
  CHECK(fell_back == !gpu);
  if (!gpu) {
    CHECK(error_of([] { (void)resolve_backend("cuda"); }).find("--backend cuda") != std::string::npos);
  } else {
    CHECK(resolve_backend("cuda") == Backend::cuda);
  }
  CHECK(error_of([] { (void)resolve_backend("opencl"); }).find("'opencl'") != std::string::npos);
  if (!cuda_built()) CHECK(error_of([] { Workspace ws(Backend::cuda); }).find("Workspace") != std::string::npos);
}
