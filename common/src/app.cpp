#include "tally/common/app.hpp"

#include <cstdio>

#include "tally/common/error.hpp"
#include "tally/common/interrupt.hpp"

namespace tally {

int run_app(const std::string& name, const std::function<int()>& body) {
  interrupt::install();
  try {
    return body();
  } catch (...) {
    const ExceptionReport r = classify(std::current_exception());
    std::fprintf(stderr, "%s: %s: %s\n", name.c_str(), r.kind, r.message.c_str());
    return r.exit_code;
  }
}

}  // namespace tally
