// heat2d --deck across ranks: the executable under the MPI launcher with 1, 2 and 3 ranks writes the
// same field, summaries, iteration counts and residual histories, bit for bit, as one plain process
// (the row blocks of 4 split unevenly: 10 rows as 4 + 4 + 2); bad input on several ranks exits 2 on
// every rank, rank 0 alone saying why, and writes nothing. Built only with MPI (the launcher).
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "catch.hpp"
#include "heat2d_test_support.hpp"
#include "tally/common/h5.hpp"
#include "tally_test_mpiexec.hpp"

namespace {

namespace fs = std::filesystem;
using heat2d_test::run_command;
using heat2d_test::same_bits;
using tally::test::contains;

const std::string kData = TEA_DATA_DIR;
const std::string limit = "timeout 120 ";  // a hang fails the test instead of blocking the suite

fs::path scratch() {
  const fs::path d = fs::temp_directory_path() / ("tea_ranks_" + std::to_string(getpid()));
  fs::create_directories(d);
  return d;
}

struct Output {
  int rc = -1;
  std::string text;
  std::vector<double> field, temperature, history;
  std::vector<std::int64_t> iterations;
  std::int64_t ranks = 0;
};

Output run(const std::string& launcher, const std::string& args, const fs::path& out) {
  Output o;
  o.rc = run_command(launcher + HEAT2D_EXE + " --quiet " + args + " --out " + out.string() + " 2>&1", &o.text);
  if (o.rc != 0) return o;
  const auto f = tally::h5::File::open(out.string());
  o.field = f.read<double>("field");
  o.temperature = f.open_group("summary").read<double>("temperature");
  o.history = f.open_group("residual").read<double>("value");
  o.iterations = f.open_group("steps").read<std::int64_t>("iterations");
  o.ranks = f.read_attr<std::int64_t>("ranks");
  return o;
}

/// The deck with `set` in one plain process and on 1, 2, 3 ranks: the same bits.
void check_ranks(const std::string& deck, const std::string& set) {
  const fs::path d = scratch();
  const std::string args = "--deck " + kData + "/" + deck + " " + set;
  const Output one = run(limit + "env OMP_NUM_THREADS=1 ", args, d / "plain.h5");
  REQUIRE(one.rc == 0);
  CHECK(one.ranks == 1);
  for (int n = 1; n <= 3; ++n) {
    INFO(deck << " " << set << " on " << n << " ranks");
    const Output r =
        run(limit + TALLY_TEST_MPIEXEC + " " + std::to_string(n) + " ", args, d / ("r" + std::to_string(n) + ".h5"));
    REQUIRE(r.rc == 0);
    CHECK(r.ranks == n);
    CHECK(r.iterations == one.iterations);
    CHECK(same_bits(r.history, one.history));
    CHECK(same_bits(r.temperature, one.temperature));
    CHECK(same_bits(r.field, one.field));
  }
  fs::remove_all(d);
}

}  // namespace

TEST_CASE("tea ranks: CG and Jacobi on 1, 2, 3 ranks, the same bits", "[tea][ranks]") {
  check_ranks("tea_bm_1.in", "--set 'preconditioner_type jac_block'");
  check_ranks("tea_bm_1.in", "--solver jacobi");
  check_ranks("tea_64_1.in", "--solver cg");
}

TEST_CASE("tea ranks: pipelined CG on 1, 2, 3 ranks, the same bits", "[tea][ranks][pipecg]") {
  check_ranks("tea_bm_1.in", "--solver pipecg --set 'preconditioner_type jac_block'");
  check_ranks("tea_64_1.in", "--solver pipecg --preconditioner jac_diag");
}

TEST_CASE("tea ranks: Chebyshev and PPCG on 1, 2, 3 ranks, the same bits", "[tea][ranks]") {
  check_ranks("tea_bm_1.in", "--solver cheby --eps 1e-24 --set 'presteps 5'");
  check_ranks("tea_bm_1.in", "--solver ppcg --eps 1e-24 --set 'presteps 5' --preconditioner jac_diag");
  check_ranks("tea_64_1.in", "--solver ppcg --eps 1e-24 --eps-norm max");
}

TEST_CASE("tea ranks: bad input on several ranks exits 2, one message, nothing written", "[tea][ranks]") {
  const fs::path d = scratch();
  std::string text;
  const std::string launch = limit + TALLY_TEST_MPIEXEC + " 3 " + HEAT2D_EXE;
  CHECK(run_command(
            launch + " --deck " + kData + "/tea_bm_1.in --set 'x_cells -1' --out " + (d / "a.h5").string() + " 2>&1",
            &text) == 2);
  CHECK_THAT(text, contains("x_cells and y_cells must be at least 1"));
  CHECK(text.find("x_cells and y_cells") == text.rfind("x_cells and y_cells"));  // rank 0 alone
  // 8 rows are two blocks of 4: three ranks cannot each have one.
  CHECK(run_command(
            launch + " --deck " + kData + "/tea_bm_1.in --set 'y_cells 8' --out " + (d / "b.h5").string() + " 2>&1",
            &text) == 2);
  CHECK_THAT(text, contains("fewer than the 3 ranks"));
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(d)) ++files;
  CHECK(files == 0);
  fs::remove_all(d);
}
