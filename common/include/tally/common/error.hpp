#pragma once
// Exceptions shared by the library and the apps, and the exit codes the apps use for them.

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

/// Prints "tally: fatal: <msg>" to stderr and aborts (for errors after which nothing can be trusted).
[[noreturn]] void fatal(std::string_view msg);

}  // namespace tally
