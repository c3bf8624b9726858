// The host collectives of Comm, the halo exchange on host memory, and the launcher's environment.
#include <chrono>
#include <cstdlib>
#include <thread>
#include <map>
#include <numeric>
#include <optional>
#include <string>

#include "catch.hpp"
#include "rank_support.hpp"
#include "tally/common/error.hpp"
#include "tally/ranks/session.hpp"
#include "tally/ranks/split.hpp"

using namespace tally::ranks;
using tally::test::world;

TEST_CASE("ranks, node-local ranks and split_range") {
  const Comm& c = world();
  REQUIRE(c.size() >= 1);
  CHECK(c.rank() < c.size());
  CHECK(c.local_rank() < c.local_size());
  CHECK(c.local_size() <= c.size());
  const std::vector<int> ranks = c.allgather(c.rank());
  for (int r = 0; r < c.size(); ++r) CHECK(ranks[static_cast<std::size_t>(r)] == r);
  // The ranks of one node (a test job runs on one) are numbered 0..local_size-1.
  const std::vector<int> local = c.allgather(c.local_rank());
  CHECK(std::accumulate(local.begin(), local.end(), 0) == c.local_size() * (c.local_size() - 1) / 2);
  CHECK(c.transport(Memory::host) == (c.size() == 1 ? "none" : "mpi"));

  for (std::int64_t n : {0, 1, 7, 9, 1000})
    for (int parts : {1, 2, 3, 7}) {
      std::int64_t next = 0;
      for (int p = 0; p < parts; ++p) {
        const Range r = split_range(n, parts, p);
        CHECK(r.begin == next);
        CHECK((r.size() == n / parts || r.size() == n / parts + 1));
        CHECK((r.size() == n / parts + 1) == (p < n % parts));
        next = r.end;
      }
      CHECK(next == n);
    }
}

TEST_CASE("barrier and idle_barrier wait for the last rank to arrive") {
  // The last rank reads the clock after a sleep, just before it enters; every rank reads it once it
  // has left. A barrier that waits puts every exit after that entry. A test's ranks run on one host and
  // read its one monotonic clock (steady_clock), so the comparison needs no margin for scheduling.
  const Comm& c = world();
  const auto now = [] { return std::chrono::steady_clock::now().time_since_epoch().count(); };
  for (int idle = 0; idle < 2; ++idle) {
    c.barrier();
    std::vector<std::int64_t> entered{0};
    if (c.rank() == c.size() - 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      entered[0] = now();
    }
    if (idle) c.idle_barrier();
    else c.barrier();
    const std::int64_t left = now();
    c.broadcast(std::span<std::int64_t>(entered), c.size() - 1);
    CHECK(left >= entered[0]);
  }
}

TEST_CASE("broadcast, gather with uneven counts, allgather, stats") {
  const Comm& c = world();
  const int last = c.size() - 1;
  std::vector<double> b{double(c.rank()), -1.5, 2.25};
  c.broadcast(std::span<double>(b), last);
  CHECK(b == std::vector<double>{double(last), -1.5, 2.25});

  // Rank r sends r + 1 values 100 r + i; roots 0 and the last rank.
  std::vector<std::int64_t> mine(static_cast<std::size_t>(c.rank() + 1));
  for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = 100 * c.rank() + static_cast<std::int64_t>(i);
  std::vector<std::int64_t> expect;
  for (int r = 0; r < c.size(); ++r)
    for (int i = 0; i <= r; ++i) expect.push_back(100 * r + i);
  for (int root : {0, last}) {
    const std::vector<std::int64_t> all = c.gather(std::span<const std::int64_t>(mine), root);
    if (c.rank() == root) CHECK(all == expect);
    else CHECK(all.empty());
  }
  const std::vector<char> none = c.gather(std::span<const char>(), 0);  // every rank empty
  CHECK(none.empty());

  // Ranks' seconds 3, 1, 2 (then 3, 1 ...): min, median, max.
  const double mine_s = 1.0 + (c.rank() + 2) % 3;
  const RankStats s = c.stats(mine_s);
  REQUIRE(s.per_rank.size() == static_cast<std::size_t>(c.size()));
  for (int r = 0; r < c.size(); ++r) CHECK(s.per_rank[static_cast<std::size_t>(r)] == 1.0 + (r + 2) % 3);
  const double med[] = {3.0, 2.0, 2.0};  // medians of {3}, {3,1}, {3,1,2}
  CHECK(s.min == (c.size() == 1 ? 3.0 : 1.0));
  CHECK(s.max == 3.0);
  if (c.size() <= 3) CHECK(s.median == med[c.size() - 1]);
}

TEST_CASE("start_sum: the integer sum over ranks, completed by wait() while this rank works meanwhile") {
  const Comm& c = world();
  // Rank r holds (r + 1) 2^40 + k, -r and 2^61 - r: sums beyond 32 bits, negative words, the full width.
  std::vector<std::int64_t> v = {(std::int64_t{c.rank()} + 1) * (std::int64_t{1} << 40) + 7, -c.rank(),
                                 (std::int64_t{1} << 61) - c.rank()};
  const std::int64_t n = c.size(), tri = n * (n - 1) / 2;
  {
    Comm::Exchange p = c.start_sum(v);
    std::this_thread::sleep_for(std::chrono::milliseconds(5 * c.rank()));  // ranks arrive apart
    p.wait();
    p.wait();  // a second wait does nothing
  }
  CHECK(v[0] == (tri + n) * (std::int64_t{1} << 40) + 7 * n);
  CHECK(v[1] == -tri);
  CHECK(v[2] == n * (std::int64_t{1} << 61) - tri);  // n <= 3: within int64
  std::vector<std::int64_t> w = {1, 2};
  { const Comm::Exchange p = c.start_sum(w); }  // the destructor waits
  CHECK(w == std::vector<std::int64_t>{n, 2 * n});
  CHECK_NOTHROW(c.start_sum({}).wait());
}

TEST_CASE("require_same: equal texts pass; a difference on one rank throws on every rank") {
  const Comm& c = world();
  CHECK_NOTHROW(c.require_same("--n 100 --steps 5", "the options"));
  if (c.size() == 1) return;
  const int odd = c.size() - 1;
  const std::string text = c.rank() == odd ? "--n 100 --steps 6" : "--n 100 --steps 5";
  try {
    c.require_same(text, "the options");
    FAIL("no exception");
  } catch (const AgreedError& e) {  // agreed: every rank exits 2, rank 0 prints
    const std::string m = e.what();
    INFO(m);
    CHECK(e.input_error());
    CHECK(m.find("the options") != std::string::npos);
    CHECK(m.find("rank " + std::to_string(odd)) != std::string::npos);
    CHECK(m.find("--steps 5") != std::string::npos);
    CHECK(m.find("--steps 6") != std::string::npos);
  }
}

TEST_CASE("agree: every rank learns the lowest failing rank's error") {
  const Comm& c = world();
  CHECK_NOTHROW(c.agree(nullptr));
  const int last = c.size() - 1;
  auto failure = [](auto e) { return std::make_exception_ptr(e); };
  // The last rank fails with bad input (one rank alone gets its own exception back).
  try {
    c.agree(c.rank() == last ? failure(tally::InputError("--backend cuda: no usable CUDA device")) : nullptr);
    FAIL("no exception");
  } catch (const AgreedError& e) {
    CHECK(c.size() > 1);
    CHECK(std::string(e.what()) == "rank " + std::to_string(last) + ": --backend cuda: no usable CUDA device");
    CHECK(e.input_error());
  } catch (const tally::InputError& e) {
    CHECK(c.size() == 1);
    CHECK(std::string(e.what()) == "--backend cuda: no usable CUDA device");
  }
  // Ranks >= 1 fail (rank 1 with a failure, the others with bad input): rank 1's wins.
  if (c.size() > 1) {
    std::exception_ptr mine = nullptr;
    if (c.rank() == 1) mine = failure(std::runtime_error("out of memory"));
    if (c.rank() > 1) mine = failure(std::invalid_argument("--n: must be positive"));
    try {
      c.agree(mine);
      FAIL("no exception");
    } catch (const AgreedError& e) {
      CHECK(std::string(e.what()) == "rank 1: out of memory");
      CHECK_FALSE(e.input_error());
    }
  }
}

TEST_CASE("exchange on host memory: the neighbours' values arrive, the ends are left alone") {
  const Comm& c = world();
  const int r = c.rank();
  for (std::size_t n : {std::size_t{1}, std::size_t{5}, std::size_t{1000}}) {
    std::vector<double> to_prev(n), to_next(n), from_prev(n, -1.0), from_next(n, -1.0);
    for (std::size_t i = 0; i < n; ++i) to_prev[i] = 1000.0 * r + double(i), to_next[i] = -1000.0 * r - double(i) - 0.5;
    auto ex = c.start_exchange<double>(to_prev, from_prev, to_next, from_next, Memory::host);
    ex.wait();
    ex.wait();  // a second wait does nothing
    for (std::size_t i = 0; i < n; ++i) {
      INFO("rank " << r << " of " << c.size() << ", element " << i << " of " << n);
      CHECK(from_prev[i] == (r > 0 ? -1000.0 * (r - 1) - double(i) - 0.5 : -1.0));
      CHECK(from_next[i] == (r + 1 < c.size() ? 1000.0 * (r + 1) + double(i) : -1.0));
    }
  }
  // The destructor waits; int32 halos.
  std::vector<std::int32_t> a{r}, b{r}, p{-1}, q{-1};
  { auto ex = c.start_exchange<std::int32_t>(a, p, b, q, Memory::host); }
  CHECK(p[0] == (r > 0 ? r - 1 : -1));
  CHECK(q[0] == (r + 1 < c.size() ? r + 1 : -1));
}

namespace {
/// Sets environment variables for one scope and restores them after.
class EnvScope {
 public:
  explicit EnvScope(const std::map<std::string, std::optional<std::string>>& vars) {
    for (const auto& [k, v] : vars) {
      const char* old = std::getenv(k.c_str());
      saved_.emplace(k, old ? std::optional<std::string>(old) : std::nullopt);
      if (v) setenv(k.c_str(), v->c_str(), 1);
      else unsetenv(k.c_str());
    }
  }
  ~EnvScope() {
    for (const auto& [k, v] : saved_) {
      if (v) setenv(k.c_str(), v->c_str(), 1);
      else unsetenv(k.c_str());
    }
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};
}  // namespace

TEST_CASE("launcher_world_size reads OpenMPI, Hydra and Slurm's PMI, and nothing else") {
  const std::nullopt_t unset = std::nullopt;
  using V = std::optional<std::string>;
  auto size_with = [&](V ompi, V pmi, V slurm_tasks, V pmix_rank, V pmi_fd) {
    EnvScope env({{"OMPI_COMM_WORLD_SIZE", ompi},
                  {"PMI_SIZE", pmi},
                  {"SLURM_STEP_NUM_TASKS", slurm_tasks},
                  {"PMIX_RANK", pmix_rank},
                  {"PMI_FD", pmi_fd}});
    return launcher_world_size();
  };
  CHECK(size_with(unset, unset, unset, unset, unset) == 1);
  CHECK(size_with("4", unset, unset, unset, unset) == 4);
  CHECK(size_with(unset, "3", unset, unset, unset) == 3);
  CHECK(size_with(unset, unset, "5", unset, unset) == 1);  // a batch script's own environment: one process
  CHECK(size_with(unset, unset, "5", "0", unset) == 5);    // srun --mpi=pmix
  CHECK(size_with(unset, unset, "6", unset, "7") == 6);    // srun --mpi=pmi2
  CHECK(size_with("x2", unset, unset, unset, unset) == 1);
  CHECK(size_with("-2", unset, unset, unset, unset) == 1);
  CHECK(size_with("", unset, unset, unset, unset) == 1);
}
