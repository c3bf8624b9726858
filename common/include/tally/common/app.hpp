#pragma once
// The frame of an app's main(): maps exceptions to messages and exit codes.
//   int main(int argc, char** argv) { return tally::run_app("heat2d", [&] { return run(argc, argv); }); }
// InputError and std::invalid_argument -> "heat2d: error: ..." and exit 2; interrupt::Interrupted (SIGINT,
// SIGTERM at a safe point) -> its message and 128 + signal; any other exception -> exit 1.

#include <functional>
#include <string>

namespace tally {

int run_app(const std::string& name, const std::function<int()>& body);

}  // namespace tally
