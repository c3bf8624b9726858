#pragma once
// Exceptions shared by the library and the apps, and the exit codes the apps use for them.

#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tally {

inline constexpr int exit_ok = 0;
inline constexpr int exit_failure = 1;    ///< a run that failed (diverged, failed validation, runtime error)
inline constexpr int exit_bad_input = 2;  ///< the user asked for something invalid; nothing was written

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Bad input from the user (options, files, sizes): the apps print it and exit with exit_bad_input.
class InputError : public Error {
 public:
  using Error::Error;
};

/// A failed CUDA call: carries the expression, file and line in its message.
class CudaError : public Error {
 public:
  CudaError(int code, const std::string& what) : Error(what), code_(code) {}
  [[nodiscard]] int code() const { return code_; }

 private:
  int code_;
};

/// How an app reports an exception: InputError and std::invalid_argument are bad input (exit 2,
/// "error"), interrupt::Interrupted a stop on SIGINT/SIGTERM (128 + signal, "stopped"), anything else
/// a failure (exit 1, "failed"). Used by run_app and the rank level's run_ranks.
struct ExceptionReport {
  int exit_code;
  const char* kind;  ///< "error" or "failed": the app prints "<name>: <kind>: <message>"
  std::string message;
};
[[nodiscard]] ExceptionReport classify(std::exception_ptr e);

/// Prints "tally: fatal: <msg>" to stderr and aborts (for errors after which nothing can be trusted).
[[noreturn]] void fatal(std::string_view msg);

}  // namespace tally
