// Reduces a small array through the installed tally::reduce (and its rank level over tally::ranks)
// and checks the exact answer.
#include <cstdio>
#include <numeric>
#include <vector>

#include <tally/reduce/ranks.hpp>
#include <tally/reduce/reduce.hpp>

int main() {
  using namespace tally::reduce;
  std::vector<int> x(1000);
  std::iota(x.begin(), x.end(), 1);
  Workspace ws(Backend::cpu);
  const auto in = View<const int>::contiguous(x.data(), 10, 10, 10);
  std::vector<long> per_gang(10);
  reduce<Sum, int, long>(Backend::cpu, in, Level::worker | Level::vector, std::span<long>(per_gang), ws);
  const long total = reduce_to_host<Sum, int, long>(Backend::cpu, in, ws);
  // The rank level, one process: the four-level reduce is the three-level one.
  const tally::ranks::Comm one;
  const long ranked = reduce_to_host<Sum, int, long>(one, Backend::cpu, in, ws);
  const bool ok = total == 500500 && per_gang[0] == 5050 && per_gang[9] == 95050 && ranked == total && one.size() == 1;
  std::printf("consumer: total %ld, first gang %ld, %d rank %ld: %s\n", total, per_gang[0], one.size(), ranked,
              ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
