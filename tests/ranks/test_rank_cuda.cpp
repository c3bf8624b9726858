// The rank level on device memory: allreduce for every operator and type, the four-level reduce
// with Backend::cuda, and the device halo exchange, through the transport TALLY_RANK_TRANSPORT asks
// for: on one GPU (several ranks sharing it) host-staged MPI by default, NCCL through sockets with
// TALLY_RANK_TRANSPORT=nccl (scripts/gpu-check.sh runs both); NCCL where each rank has its own GPU.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <span>
#include <string>

#include "catch.hpp"
#include "instantiate.hpp"
#include "rank_checks.hpp"
#include "tally/common/cuda_check.cuh"
#include "tally/common/device_buffer.cuh"
#include "tally/reduce/reduce.hpp"

using namespace tally::reduce;
using namespace tally::ranks;
using namespace tally::test;
using tally::DeviceBuffer;

namespace {

/// The job's device stream; use_device() once (collective: every rank runs the first test case).
cudaStream_t stream() {
  static cudaStream_t s = [] {
    Comm& c = world();
    c.use_device(c.pick_device(), nullptr);
    cudaStream_t st = nullptr;
    TALLY_CUDA_TRY(cudaStreamCreate(&st));
    const std::string t = c.transport(Memory::device);
    if (c.is_root())
      std::printf("%d ranks, device transport: %s%s\n", c.size(), t.c_str(),
                  c.shares_device() && t.find("share") == std::string::npos ? " (ranks share a GPU)" : "");
    return st;
  }();
  return s;
}

template <class Op, class T>
void check_device_allreduce(std::size_t n, std::uint64_t salt, bool in_place) {
  const Comm& c = world();
  INFO(Op::name << " " << type_name<T>() << ", " << n << " elements, rank " << c.rank() << " of " << c.size()
                << (in_place ? ", in place" : ""));
  std::vector<std::vector<T>> rows;
  for (int r = 0; r < c.size(); ++r) rows.push_back(rank_input<Op, T>(n, r, salt));
  DeviceBuffer<T> in(std::span<const T>(rows[static_cast<std::size_t>(c.rank())]), stream()), out(n);
  out.fill_bytes(0xFF, stream());
  if (in_place) allreduce<Op, T>(c, std::span<const T>(in.data(), n), in.span(), Memory::device, stream());
  else allreduce<Op, T>(c, std::span<const T>(in.data(), n), out.span(), Memory::device, stream());
  const std::vector<T> got = (in_place ? in : out).to_host(stream());
  CHECK(first_difference(got, naive_rank_fold<Op, T>(rows)) == -1);
}

}  // namespace

TEST_CASE("device transport: the one TALLY_RANK_TRANSPORT asks for") {
  stream();  // use_device
  const Comm& c = world();
  const std::string t = c.transport(Memory::device);
  INFO("TALLY_RANK_TRANSPORT=" << to_string(rank_transport()) << ", " << c.size() << " ranks"
                               << (c.shares_device() ? ", sharing a GPU" : "") << ": " << t);
  if (c.size() == 1) {
    CHECK(t == "none");
    return;
  }
  const std::string nccl = c.shares_device() ? "nccl (sockets: ranks share a GPU)" : "nccl";
  switch (rank_transport()) {
    case RankTransport::nccl: CHECK(t == nccl); break;
    case RankTransport::host: CHECK(t == "mpi (host-staged)"); break;
    case RankTransport::automatic:
      CHECK(t == (nccl_built() && !c.shares_device() ? nccl : std::string("mpi (host-staged)")));
      break;
  }
}

TEST_CASE("device allreduce: every operator and type, rank-ordered, bitwise") {
  std::uint64_t salt = 500;
  for (std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{100000}})
    for (bool in_place : {false, true}) {
#define CHECK_CASE(Op, T, Acc) check_device_allreduce<Op, T>(n, salt++, in_place);
      TALLY_REDUCE_FOR_EACH_SAME(CHECK_CASE)
#undef CHECK_CASE
    }
}

TEST_CASE("device allreduce: NaN on any rank propagates through Max and Min") {
  const Comm& c = world();
  constexpr float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x{1.0f, 2.0f, float(c.rank())};
  if (c.rank() == c.size() - 1) x[0] = nan;
  if (c.rank() == 0) x[1] = nan;
  DeviceBuffer<float> d(std::span<const float>(x), stream());
  for (int op = 0; op < 2; ++op) {
    DeviceBuffer<float> out(x.size());
    if (op == 0)
      allreduce<Max, float>(c, std::span<const float>(d.data(), x.size()), out.span(), Memory::device, stream());
    else allreduce<Min, float>(c, std::span<const float>(d.data(), x.size()), out.span(), Memory::device, stream());
    const std::vector<float> h = out.to_host(stream());
    CHECK(std::isnan(h[0]));
    CHECK(std::isnan(h[1]));
    CHECK(h[2] == (op == 0 ? float(c.size() - 1) : 0.0f));
  }
}

TEST_CASE("reduce(comm) with Backend::cuda: every rank holds the rank-ordered fold of the slabs") {
  const Comm& c = world();
  const std::int64_t ng = 7, nw = 33, nv = 65, row = nw * nv;
  const std::vector<float> global = rank_input<Sum, float>(static_cast<std::size_t>(ng * row), 0, 900);
  DeviceBuffer<float> d(std::span<const float>(global), stream());
  Workspace ws(Backend::cuda);
  auto slab = [&](int r) {
    const Range g = split_range(ng, c.size(), r);
    return View<const float>::contiguous(d.data() + g.begin * row, g.size(), nw, nv);
  };
  for (Levels levels : {Levels::all(), Levels(Level::gang), Level::gang | Level::vector}) {
    INFO("levels " << levels.to_string() << ", rank " << c.rank() << " of " << c.size());
    const std::size_t n = static_cast<std::size_t>(output_shape(slab(0).ext, levels).size());
    DeviceBuffer<double> out(n), one(n);
    reduce<Sum, float, double>(c, Backend::cuda, slab(c.rank()), levels, out.span(), ws, stream());
    std::vector<std::vector<double>> per_slab;
    for (int r = 0; r < c.size(); ++r) {
      reduce<Sum, float, double>(Backend::cuda, slab(r), levels, one.span(), ws, stream());
      per_slab.push_back(one.to_host(stream()));
    }
    CHECK(first_difference(out.to_host(stream()), naive_rank_fold<Sum, double>(per_slab)) == -1);
  }
}

TEST_CASE(
    "reduce(comm) with ExactSum on Backend::cuda: the single-process exact sum on the CPU, bitwise, any rank count") {
  // The ranks add their accumulators (never rounded partials): every rank holds the exact sum of the
  // whole array, equal to the CPU backend's single-process result. Wide exponents and a cancelling
  // pair of 2^60 in different slabs, so that rounded partials would differ.
  const Comm& c = world();
  const std::int64_t ng = 7, nw = 33, nv = 65, row = nw * nv;
  std::vector<double> global = rank_input<Sum, double>(static_cast<std::size_t>(ng * row), 0, 910);
  for (std::size_t i = 0; i < global.size(); ++i)
    global[i] = std::ldexp(global[i], static_cast<int>((i * 37) % 81) - 40);
  global.front() = std::ldexp(1.0, 60), global.back() = -std::ldexp(1.0, 60);
  const std::vector<float> globalf(global.begin(), global.end());
  DeviceBuffer<double> d(std::span<const double>(global), stream());
  DeviceBuffer<float> df(std::span<const float>(globalf), stream());
  Workspace ws(Backend::cuda), wcpu(Backend::cpu);
  const auto run = [&](const auto* dev, const auto& host, auto out_tag, Levels levels) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(dev)>>;
    using Out = decltype(out_tag);
    INFO("exact " << type_name<T>() << "->" << type_name<Out>() << ", levels " << levels.to_string() << ", rank "
                  << c.rank() << " of " << c.size());
    const Range g = split_range(ng, c.size(), c.rank());
    const View<const T> mine = View<const T>::contiguous(dev + g.begin * row, g.size(), nw, nv);
    const std::size_t n =
        static_cast<std::size_t>(output_shape(View<const T>::contiguous(dev, ng, nw, nv).ext, levels).size());
    DeviceBuffer<Out> out(n);
    reduce<ExactSum, T, Out>(c, Backend::cuda, mine, levels, out.span(), ws, stream());
    std::vector<Out> expect(n);
    reduce<ExactSum, T, Out>(Backend::cpu, View<const T>::contiguous(host.data(), ng, nw, nv), levels,
                             std::span<Out>(expect), wcpu);
    CHECK(first_difference(out.to_host(stream()), expect) == -1);
    if (levels == Levels::all())
      CHECK(same_bits(reduce_to_host<ExactSum, T, Out>(c, Backend::cuda, mine, ws, stream()), expect[0]));
  };
  for (Levels levels : {Levels::all(), Levels(Level::gang), Level::gang | Level::vector, Level::gang | Level::worker}) {
    run(df.data(), globalf, float{}, levels);
    run(df.data(), globalf, double{}, levels);
    run(d.data(), global, double{}, levels);
  }
}

TEST_CASE("exchange on device memory: the neighbours' values arrive, the ends are left alone") {
  const Comm& c = world();
  const int r = c.rank();
  const std::size_t n = 4097;
  std::vector<float> tp(n), tn(n);
  for (std::size_t i = 0; i < n; ++i) tp[i] = 1000.0f * float(r) + float(i), tn[i] = -1000.0f * float(r) - float(i);
  DeviceBuffer<float> to_prev(std::span<const float>(tp), stream()), to_next(std::span<const float>(tn), stream());
  DeviceBuffer<float> from_prev(n), from_next(n);
  from_prev.fill_bytes(0, stream()), from_next.fill_bytes(0, stream());
  auto ex =
      c.start_exchange<float>(std::span<const float>(to_prev.data(), n), from_prev.span(),
                              std::span<const float>(to_next.data(), n), from_next.span(), Memory::device, stream());
  ex.wait();
  const std::vector<float> fp = from_prev.to_host(stream()), fn = from_next.to_host(stream());
  for (std::size_t i = 0; i < n; i += 512) {
    INFO("rank " << r << ", element " << i);
    CHECK(fp[i] == (r > 0 ? -1000.0f * float(r - 1) - float(i) : 0.0f));
    CHECK(fn[i] == (r + 1 < c.size() ? 1000.0f * float(r + 1) + float(i) : 0.0f));
  }
}
