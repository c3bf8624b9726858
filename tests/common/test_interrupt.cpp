// SIGINT/SIGTERM: the first signal is recorded for the next safe point, the temporary files stay
// registered until released. (The second signal's immediate exit is tested on the apps, as processes.)
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "tally/common/h5.hpp"
#include "tally/common/interrupt.hpp"

using namespace tally;

TEST_CASE("interrupt: a first SIGTERM is held for the next safe point, check() then throws with exit code 143") {
  interrupt::install();
  REQUIRE(interrupt::requested() == 0);
  REQUIRE_NOTHROW(interrupt::check("at sweep 1"));
  const std::string path = (std::filesystem::temp_directory_path() / "tally_interrupt_test.h5").string();
  {
    auto f = h5::File::create(path);
    REQUIRE(std::filesystem::exists(f.temp_path()));
    std::raise(SIGTERM);
    CHECK(interrupt::requested() == SIGTERM);
    CHECK(std::filesystem::exists(f.temp_path()));  // still ours to remove at the safe point
    try {
      interrupt::check("at sweep 7");
      FAIL("check() did not throw");
    } catch (const interrupt::Interrupted& e) {
      CHECK(e.signal() == SIGTERM);
      CHECK(e.exit_code() == 143);
      CHECK(std::string(e.what()) == "interrupted by SIGTERM at sweep 7");
    }
  }  // the File's destructor removes its temporary file, as on any exception
  CHECK_FALSE(std::filesystem::exists(path));
  CHECK(interrupt::signal_name(SIGINT) == "SIGINT");
}

TEST_CASE("interrupt: temporary-file slots are reused once released") {
  std::vector<int> taken;
  for (int i = 0; i < 16; ++i) taken.push_back(interrupt::register_temp("/nonexistent/tally." + std::to_string(i)));
  CHECK(interrupt::register_temp("/nonexistent/one-too-many") == -1);  // all taken: the owner still removes it
  for (int s : taken) CHECK(s >= 0);
  for (int s : taken) interrupt::release_temp(s);
  const int again = interrupt::register_temp("/nonexistent/again");
  CHECK(again >= 0);
  interrupt::release_temp(again);
}
