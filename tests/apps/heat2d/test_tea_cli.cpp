// heat2d --deck: the executable's exit codes, its JSON line and its result file; nothing written on
// bad input; a solve that does not converge exits 1 with the field written and marked.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "catch.hpp"
#include "heat2d_test_support.hpp"
#include "implicit/deck.hpp"
#include "implicit/job.hpp"
#include "implicit/run.hpp"
#include "tally/common/error.hpp"
#include "tuning.hpp"
#include "tally/common/h5.hpp"

namespace {

namespace fs = std::filesystem;
using namespace tally::heat2d::implicit;
using heat2d_test::run_command;
using tally::test::contains;

struct TempDir {
  fs::path path;
  TempDir() : path(fs::temp_directory_path() / ("tea_cli_" + std::to_string(::getpid()))) {
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

const std::string kExe = HEAT2D_EXE;
const std::string kBm1 = TEA_DATA_DIR "/tea_bm_1.in";

/// The number after "key": in a JSON line.
double json_number(const std::string& j, const std::string& key) {
  const auto at = j.find("\"" + key + "\":");
  REQUIRE(at != std::string::npos);
  return std::stod(j.substr(at + key.size() + 3));
}

bool same_bits(double a, double b) { return heat2d_test::same_bits({a}, {b}); }

}  // namespace

TEST_CASE("tea cli: a deck runs, prints its JSON summary and writes the result file", "[tea][cli]") {
  TempDir t;
  const std::string out = (t.path / "bm1.h5").string();
  std::string text;
  REQUIRE(run_command("OMP_NUM_THREADS=1 " + kExe + " --deck " + kBm1 + " --json --out " + out + " 2>&1", &text) == 0);
  // The same run through the library: the executable adds nothing to the numbers.
  const Deck d = read_deck(kBm1);
  RunOptions o;
  o.solve = solve_options(d);
  const RunReport r = run_deck(d, o);
  CHECK_THAT(text, contains("\"status\":\"converged\""));
  std::string per_step = "\"per_step\":[";
  for (std::size_t k = 0; k < r.solves.size(); ++k) per_step += (k ? "," : "") + std::to_string(r.solves[k].iterations);
  CHECK_THAT(text, contains(per_step + "]"));
  CHECK(same_bits(json_number(text, "temperature"), r.final_summary().temperature));
  CHECK(json_number(text, "total") == static_cast<double>(r.iterations()));

  const auto f = tally::h5::File::open(out);
  CHECK(f.read_attr_string("mode") == "implicit");
  CHECK(f.read_attr_string("status") == "converged");
  CHECK(f.read_attr<std::int64_t>("steps_done") == 10);
  tally::h5::dims_t dims;
  const std::vector<double> field = f.read<double>("field", &dims);
  REQUIRE(dims.size() == 2);
  CHECK(dims[0] == 10);
  CHECK(dims[1] == 10);
  CHECK(std::memcmp(field.data(), r.u.data(), field.size() * sizeof(double)) == 0);
  const std::vector<double> temps = f.open_group("summary").read<double>("temperature");
  REQUIRE(temps.size() == 2);  // step 0 and step 10 (summary_frequency 10)
  CHECK(same_bits(temps.back(), r.final_summary().temperature));
  const std::vector<std::int64_t> its = f.open_group("steps").read<std::int64_t>("iterations");
  REQUIRE(its.size() == 10);
  const std::vector<std::int64_t> off = f.open_group("residual").read<std::int64_t>("offsets");
  REQUIRE(off.size() == 11);
  CHECK(off.back() == static_cast<std::int64_t>(f.open_group("residual").read<double>("value").size()));
  CHECK(off[1] == its[0]);  // CG tests every iteration
  // The deck recorded reads back to the deck that ran.
  CHECK(deck_text(parse_deck(f.read_attr_string("deck"), "file")) == deck_text(d));
}

TEST_CASE("tea cli: --set and the overrides reach the deck", "[tea][cli]") {
  TempDir t;
  const std::string out = (t.path / "s.h5").string();
  std::string text;
  REQUIRE(run_command(kExe +
                          " --set 'state 1 density=2 energy=3' --set 'x_cells 6' --set 'y_cells 4' --set 'end_step 2'"
                          " --solver jacobi --eps 1e-12 --max-iters 500 --json --out " +
                          out + " 2>&1",
                      &text) == 0);
  CHECK_THAT(text, contains("\"solver\":\"jacobi\""));
  CHECK_THAT(text, contains("\"x_cells\":6"));
  // One state everywhere: nothing flows, u = energy density stays 6 in each of the 24 cells of volume
  // (100/6)(100/4), up to Jacobi's roundings: an update of a uniform field rounds at most 8 times
  // (relative u = 2^-53 each) and each sweep contracts the previous error by 4k/(1 + 4k) < 1, so u
  // stays within 8u (1 + 4k) < 9u of 6 (k < 1e-3 here). The temperature 24 (vol 2) 6, with vol and
  // vol 2 rounded as the run rounds them, is then an exact sum rounded once: within 10u.
  const double vol = (100.0 / 6.0) * (100.0 / 4.0);
  CHECK(std::fabs(json_number(text, "temperature") - 144.0 * (vol * 2.0)) <= 10 * 0x1p-53 * 144.0 * (vol * 2.0));
  const auto f = tally::h5::File::open(out);
  CHECK(f.read_attr<double>("eps") == 1e-12);
  CHECK(f.read_attr<std::int64_t>("max_iters") == 500);
}

TEST_CASE("tea cli: bad input exits 2 and writes nothing", "[tea][cli]") {
  TempDir t;
  const std::string out = (t.path / "bad.h5").string();
  std::string text;
  CHECK(run_command(kExe + " --deck " + kBm1 + " --set 'x_cells 0' --out " + out + " 2>&1", &text) == 2);
  CHECK_THAT(text, contains("x_cells and y_cells must be at least 1"));
  CHECK(run_command(kExe + " --deck " + kBm1 + " --set 'tl_use_magic' --out " + out + " 2>&1", &text) == 2);
  CHECK_THAT(text, contains("--set 'tl_use_magic': unknown keyword"));
  CHECK(run_command(kExe + " --deck " + kBm1 + " --solver gmres --out " + out + " 2>&1", &text) == 2);
  CHECK(run_command(kExe + " --deck " + kBm1 + " --eps -1 --out " + out + " 2>&1", &text) == 2);
  CHECK(run_command(kExe + " --deck " + kBm1 + " --nx 64 --out " + out + " 2>&1", &text) == 2);
  CHECK(run_command(kExe + " --deck " + (t.path / "missing.in").string() + " --out " + out + " 2>&1", &text) == 2);
  const std::string deck = (t.path / "bad.in").string();
  {
    std::FILE* fp = std::fopen(deck.c_str(), "w");
    REQUIRE(fp != nullptr);
    std::fputs("*tea\nstate 1 density=1 energy=1\nstate 2 density=-1 energy=1 geometry=point xmin=1 ymin=1\n*endtea\n",
               fp);
    std::fclose(fp);
  }
  CHECK(run_command(kExe + " --deck " + deck + " --out " + out + " 2>&1", &text) == 2);
  CHECK_THAT(text, contains("bad.in:3: state 2: density must be > 0"));
  CHECK(run_command(kExe + " --deck " + kBm1 + " --out /proc/forbidden/x.h5 2>&1", &text) == 2);
  // Nothing half-written: no result, no temporary.
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(t.path)) ++files;
  CHECK(files == 1);  // the deck written above
}

TEST_CASE("tea cli: a solve that does not converge exits 1, the field written and marked", "[tea][cli]") {
  TempDir t;
  const std::string out = (t.path / "nc.h5").string();
  std::string text;
  CHECK(run_command(kExe + " --deck " + kBm1 + " --max-iters 3 --out " + out + " 2>&1", &text) == 1);
  CHECK_THAT(text, contains("NOT converged: max_iters reached at step 1 after 3 iterations"));
  const auto f = tally::h5::File::open(out);
  CHECK(f.read_attr_string("status") == "max-iters");
  CHECK_FALSE(f.read_attr<bool>("converged"));
  CHECK(f.read_attr<std::int64_t>("steps_done") == 1);
  CHECK(f.open_dataset("field").read_attr_string("status") == "max-iters");
  // A deck whose state energy overflows the first product: the solve diverges (NaN/Inf), exit 1.
  CHECK(run_command(kExe + " --deck " + kBm1 +
                        " --set 'state 6 density=1e300 energy=1e300 geometry=rectangle xmin=2 xmax=3 ymin=2 ymax=3'"
                        " --out " +
                        out + " 2>&1",
                    &text) == 1);
  CHECK_THAT(text, contains("DIVERGED"));
  CHECK(tally::h5::File::open(out).read_attr_string("status") == "diverged");
}

TEST_CASE("tea cli: --cheby-steps-per-pass", "[tea][cli]") {
  // The values: auto, 1, 2, 5 (dividing Chebyshev's test interval, 10); anything else refused by name.
  const Deck d = parse_deck("", "--set", {"state 1 density=1 energy=1", "use_chebyshev"});
  Options o;
  CHECK(make_solve_options(d, o).cheby_steps_per_pass == 0);
  for (const int t : {1, 2, 5}) {
    o.cheby_steps = std::to_string(t);
    CHECK(make_solve_options(d, o).cheby_steps_per_pass == t);
  }
  for (const std::string bad : {"3", "0", "10", "", "2x", "-1"}) {
    o.cheby_steps = bad;
    CHECK_THROWS_WITH(make_solve_options(d, o), contains("--cheby-steps-per-pass: '" + bad + "'"));
  }
  // The steps a pass runs: the request on CUDA for Chebyshev without jac_block, else 1.
  SolveOptions s = solve_options(d);
  CHECK(cheby_steps_per_pass(s, true) == tally::heat2d::tuning::implicit_cheby_auto_steps);
  CHECK(cheby_steps_per_pass(s, false) == 1);
  s.cheby_steps_per_pass = 2;
  CHECK(cheby_steps_per_pass(s, true) == 2);
  s.preconditioner = Preconditioner::jac_diag;
  CHECK(cheby_steps_per_pass(s, true) == 2);
  s.preconditioner = Preconditioner::jac_block;
  CHECK(cheby_steps_per_pass(s, true) == 1);
  s.preconditioner = Preconditioner::none;
  for (const SolverKind k : {SolverKind::cg, SolverKind::ppcg, SolverKind::jacobi}) {
    s.solver = k;
    CHECK(cheby_steps_per_pass(s, true) == 1);
  }

  // The executable: bad values exit 2 naming the option, nothing written; the explicit mode refuses it.
  TempDir t;
  const std::string out = (t.path / "c.h5").string();
  std::string text;
  CHECK(run_command(kExe + " --deck " + kBm1 + " --cheby-steps-per-pass 3 --out " + out + " 2>&1", &text) == 2);
  CHECK_THAT(text, contains("--cheby-steps-per-pass"));
  CHECK(run_command(kExe + " --nx 16 --cheby-steps-per-pass 2 --out " + out + " 2>&1", &text) == 2);
  CHECK_THAT(text, contains("--cheby-steps-per-pass: an option of the implicit mode"));
  CHECK_FALSE(fs::exists(out));
  // The CPU engine takes one step a pass whatever is asked (recorded as run): the same bits as 1.
  const std::string cmd = "OMP_NUM_THREADS=1 " + kExe + " --deck " + kBm1 + " --backend cpu --solver cheby --json";
  REQUIRE(run_command(cmd + " --cheby-steps-per-pass 5 --out " + out + " 2>&1", &text) == 0);
  CHECK_THAT(text, contains("\"cheby_steps_per_pass\":1"));
  std::string one;
  REQUIRE(run_command(cmd + " --cheby-steps-per-pass 1 --out " + (t.path / "one.h5").string() + " 2>&1", &one) == 0);
  CHECK(same_bits(json_number(text, "temperature"), json_number(one, "temperature")));
  CHECK(tally::h5::File::open(out).read_attr<std::int64_t>("cheby_steps_per_pass") == 1);
}
