// Exceptions, exit codes, timings, the JSON line.
#include <stdexcept>

#include "catch.hpp"
#include "tally/common/app.hpp"
#include "tally/common/error.hpp"
#include "tally/common/json.hpp"
#include "tally/common/timing.hpp"

TEST_CASE("run_app maps exceptions to exit codes", "[errors]") {
  CHECK(tally::run_app("t", [] { return 0; }) == 0);
  CHECK(tally::run_app("t", [] { return 3; }) == 3);
  CHECK(tally::run_app("t", []() -> int { throw tally::InputError("--nx must be >= 3"); }) == tally::exit_bad_input);
  CHECK(tally::run_app("t", []() -> int { throw std::invalid_argument("levels: empty"); }) == tally::exit_bad_input);
  CHECK(tally::run_app("t", []() -> int { throw std::runtime_error("boom"); }) == tally::exit_failure);
  CHECK(tally::run_app("t", []() -> int { throw tally::CudaError(2, "cudaMalloc: out of memory"); }) ==
        tally::exit_failure);
}

TEST_CASE("timings registry keeps order and accumulates", "[timing]") {
  tally::Timings t;
  t.set("setup", 1.0);
  t.add("solve", 2.0);
  t.add("solve", 0.5);
  t.set("setup", 1.5);
  REQUIRE(t.entries().size() == 2);
  CHECK(t.entries()[0].first == "setup");
  CHECK(t.get("setup") == 1.5);
  CHECK(t.get("solve") == 2.5);
  CHECK(t.get("absent") == 0.0);
  CHECK_FALSE(t.has("absent"));
  tally::HostTimer h;
  CHECK(h.seconds() >= 0.0);
}

TEST_CASE("json line escapes and formats", "[json]") {
  tally::JsonLine j;
  j.add("app", "heat2d")
      .add("n", 42)
      .add("ok", true)
      .add("r", 0.5)
      .add("nan", std::numeric_limits<double>::quiet_NaN());
  j.add("quote", "a\"b\\c\n");
  CHECK(j.str() == R"({"app":"heat2d","n":42,"ok":true,"r":0.5,"nan":null,"quote":"a\"b\\c\n"})");
}
