#include "tally/common/app.hpp"

#include <cstdio>
#include <exception>
#include <stdexcept>

#include "tally/common/error.hpp"

namespace tally {

int run_app(const std::string& name, const std::function<int()>& body) {
  try {
    return body();
  } catch (const InputError& e) {
    std::fprintf(stderr, "%s: error: %s\n", name.c_str(), e.what());
    return exit_bad_input;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s: error: %s\n", name.c_str(), e.what());
    return exit_bad_input;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: failed: %s\n", name.c_str(), e.what());
    return exit_failure;
  }
}

}  // namespace tally
