#include "tally/common/error.hpp"
#include "tally/common/interrupt.hpp"

#include <cstdio>
#include <cstdlib>

namespace tally {

ExceptionReport classify(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const interrupt::Interrupted& x) {
    return {x.exit_code(), "stopped", x.what()};
  } catch (const InputError& x) {
    return {exit_bad_input, "error", x.what()};
  } catch (const std::invalid_argument& x) {
    return {exit_bad_input, "error", x.what()};
  } catch (const std::exception& x) {
    return {exit_failure, "failed", x.what()};
  } catch (...) {
    return {exit_failure, "failed", "an exception that is not a std::exception"};
  }
}

void fatal(std::string_view msg) {
  std::fprintf(stderr, "tally: fatal: %.*s\n", static_cast<int>(msg.size()), msg.data());
  std::fflush(stderr);
  std::abort();
}

}  // namespace tally
