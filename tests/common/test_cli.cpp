// Shared CLI options: defaults, allowed values, errors with exit code 2.
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
  CHECK_FALSE(parse({"test", "--backend", "cpu", "--precision", "float", "--seed", "42", "--json", "-q", "--out", "x.h5"}, p));
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
