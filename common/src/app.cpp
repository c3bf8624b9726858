#include "tally/common/app.hpp"

#include <cstdio>
#include <exception>
#include <stdexcept>

#include "tally/common/error.hpp"
#include "tally/common/interrupt.hpp"

namespace tally {

int run_app(const std::string& name, const std::function<int()>& body) {
  interrupt::install();
  try {
    return body();
  } catch (const interrupt::Interrupted& e) {
    std::fprintf(stderr, "%s: %s; no output written\n", name.c_str(), e.what());
    return e.exit_code();
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
