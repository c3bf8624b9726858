// Shared CLI options: defaults, allowed values, errors with exit code 2.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "catch.hpp"
#include "tally/common/cli.hpp"
#include "tally/common/error.hpp"

namespace {
struct Args {
  std::vector<std::string> words;
  std::vector<char*> ptrs;
  explicit Args(std::vector<std::string> w) : words(std::move(w)) {
    for (auto& s : words) ptrs.push_back(s.data());
  }
  int argc() { return static_cast<int>(ptrs.size()); }
  char** argv() { return ptrs.data(); }
};

std::optional<int> parse(std::vector<std::string> words, tally::cli::CommonOptions& o, bool report = true) {
  CLI::App app{"test", "test"};
  tally::cli::add_common_options(app, o);
  Args a(std::move(words));
  return tally::cli::parse(app, a.argc(), a.argv(), report);
}
}  // namespace

TEST_CASE("cli defaults and valid values", "[cli]") {
  tally::cli::CommonOptions o;
  CHECK_FALSE(parse({"test"}, o).has_value());
  CHECK(o.backend == "auto");
  CHECK(o.precision == "double");
  tally::cli::CommonOptions p;
  CHECK_FALSE(
      parse({"test", "--backend", "cpu", "--precision", "float", "--seed", "42", "--json", "-q", "--out", "x.h5"}, p));
  CHECK(p.backend == "cpu");
  CHECK(p.precision == "float");
  CHECK(p.seed == 42);
  CHECK(p.json);
  CHECK(p.quiet);
  CHECK(p.out == "x.h5");
}

TEST_CASE("cli rejects bad input with exit code 2", "[cli]") {
  tally::cli::CommonOptions o;
  CHECK(parse({"test", "--backend", "gpu"}, o) == tally::exit_bad_input);
  CHECK(parse({"test", "--precision", "half"}, o) == tally::exit_bad_input);
  CHECK(parse({"test", "--device", "-1"}, o) == tally::exit_bad_input);
  CHECK(parse({"test", "--seed", "-1"}, o) == tally::exit_bad_input);  // not 2^64 - 1
  CHECK(parse({"test", "--seed", "abc"}, o) == tally::exit_bad_input);
  CHECK(parse({"test", "--no-such-option"}, o) == tally::exit_bad_input);
  CHECK(parse({"test", "--config", "/nonexistent/tally.toml"}, o) == tally::exit_bad_input);
}

TEST_CASE("cli parse without reporting (ranks other than 0) gives the same codes", "[cli]") {
  tally::cli::CommonOptions o;
  CHECK_FALSE(parse({"test", "--backend", "cpu", "--seed", "7"}, o, false).has_value());
  CHECK(o.seed == 7);
  CHECK(parse({"test", "--backend", "gpu"}, o, false) == tally::exit_bad_input);
  CHECK(parse({"test", "--no-such-option"}, o, false) == tally::exit_bad_input);
  CHECK(parse({"test", "--help"}, o, false) == 0);
}

TEST_CASE("cli help and version exit 0", "[cli]") {
  tally::cli::CommonOptions o;
  CHECK(parse({"test", "--help"}, o) == 0);
  CHECK(parse({"test", "--version"}, o) == 0);
}

TEST_CASE("cli command line is recorded verbatim", "[cli]") {
  Args a({"heat2d", "--nx", "64", "--tol=1e-6"});
  CHECK(tally::cli::command_line(a.argc(), a.argv()) == "heat2d --nx 64 --tol=1e-6");
}

namespace {
// The message CLI11 gives for these arguments ("" when they parse).
template <class T>
std::string error_of(std::vector<std::string> words, T& value, tally::cli::Limits l) {
  CLI::App app{"test", "test"};
  tally::cli::add_number(app, "--x", value, "a number", l)->delimiter(',');
  words.insert(words.begin(), "test");
  Args a(std::move(words));
  try {
    app.parse(a.argc(), a.argv());
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return {};
}
}  // namespace

TEST_CASE("cli numeric options: integers read alike", "[cli]") {
  using namespace tally::cli;
  std::int64_t n = 7;
  CHECK(error_of({"--x", "0"}, n, positive) == "--x: must be a positive integer (got 0)");
  CHECK(error_of({"--x", "-3"}, n, positive) == "--x: must be a positive integer (got -3)");
  CHECK(error_of({"--x", "abc"}, n, positive) == "--x: must be a positive integer (got abc)");
  CHECK(error_of({"--x", "1.5"}, n, positive) == "--x: must be a positive integer (got 1.5)");
  CHECK(n == 7);  // nothing assigned on failure
  CHECK(error_of({"--x", "1"}, n, positive).empty());
  CHECK(n == 1);
  CHECK(error_of({"--x", "-1"}, n, non_negative) == "--x: must be a non-negative integer (got -1)");
  CHECK(error_of({"--x", "0"}, n, non_negative).empty());
  CHECK(error_of({"--x", "2"}, n, at_least(3)) == "--x: must be an integer >= 3 (got 2)");
  CHECK(error_of({"--x", "3"}, n, at_least(3)).empty());
  CHECK(n == 3);
  int r = 5;
  CHECK(error_of({"--x", "0"}, r, in_range(1, 100)) == "--x: must be an integer in [1, 100] (got 0)");
  CHECK(error_of({"--x", "101"}, r, in_range(1, 100)) == "--x: must be an integer in [1, 100] (got 101)");
  CHECK(error_of({"--x", "100"}, r, in_range(1, 100)).empty());
  CHECK(r == 100);
  // Beyond the type: named with the type's limit rather than CLI11's conversion text.
  CHECK(error_of({"--x", "3000000000"}, r, positive) ==
        "--x: must be a positive integer <= 2147483647 (got 3000000000)");
  CHECK(error_of({"--x", "99999999999999999999"}, n, positive) ==
        "--x: must be a positive integer <= 9223372036854775807 (got 99999999999999999999)");
  std::uint64_t u = 1;
  CHECK(error_of({"--x", "-1"}, u, non_negative) == "--x: must be a non-negative integer (got -1)");
  CHECK(u == 1);
  CHECK(error_of({"--x", "18446744073709551615"}, u, non_negative).empty());
  CHECK(u == std::numeric_limits<std::uint64_t>::max());
}

TEST_CASE("cli numeric options: floating point and lists read alike", "[cli]") {
  using namespace tally::cli;
  double t = 0.5;
  CHECK(error_of({"--x", "-1"}, t, positive) == "--x: must be a number > 0 (got -1)");
  CHECK(error_of({"--x", "0"}, t, positive) == "--x: must be a number > 0 (got 0)");
  CHECK(error_of({"--x", "nan"}, t, positive) == "--x: must be a number > 0 (got nan)");
  CHECK(error_of({"--x", "inf"}, t, positive) == "--x: must be a number > 0 (got inf)");
  CHECK(error_of({"--x", "1e-300"}, t, positive).empty());
  CHECK(t == 1e-300);
  CHECK(error_of({"--x", "-0.1"}, t, non_negative) == "--x: must be a number >= 0 (got -0.1)");
  CHECK(error_of({"--x", "0"}, t, non_negative).empty());
  CHECK(error_of({"--x", "0.75"}, t, in_range(0, 0.5)) == "--x: must be a number in [0, 0.5] (got 0.75)");
  CHECK(error_of({"--x", "0.25"}, t, in_range(0, 0.5)).empty());
  CHECK(t == 0.25);
  std::vector<std::int64_t> v;
  CHECK(error_of({"--x", "8,2,16"}, v, at_least(3)) == "--x: must be an integer >= 3 (got 2)");
  CHECK(error_of({"--x", "8,4,16"}, v, at_least(3)).empty());
  CHECK(v == std::vector<std::int64_t>{8, 4, 16});
}

TEST_CASE("cli numeric option errors exit with code 2", "[cli]") {
  tally::cli::CommonOptions o;
  std::int64_t m = 1;
  CLI::App app{"test", "test"};
  tally::cli::add_common_options(app, o);
  tally::cli::add_number(app, "--m", m, "rows", tally::cli::positive);
  Args bad({"test", "--m", "0"});
  CHECK(tally::cli::parse(app, bad.argc(), bad.argv()) == tally::exit_bad_input);
  CHECK(parse({"test", "--device", "x"}, o) == tally::exit_bad_input);
}
