#pragma once
// The options every app shares, on CLI11 (2.1 to 2.4):
//   --backend auto|cuda|cpu, --device N, --precision float|double, --seed, --out FILE, --quiet,
//   --json, --version, --config FILE.
// Errors name the option and the allowed values and give exit code 2 (tally::exit_bad_input).
// Numeric options are declared with add_number so that every bad value reads alike:
//   --m: must be a positive integer (got 0)
//   --tol: must be a number > 0 (got -1)
//   --repeats: must be an integer in [1, 100] (got 0)

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <CLI/CLI.hpp>

namespace tally::cli {

struct CommonOptions {
  std::string backend = "auto";
  int device = 0;
  std::string precision = "double";
  std::uint64_t seed = 20260101;
  std::string out;  ///< defaults to results/<app>.h5 when the app sets it
  bool quiet = false;
  bool json = false;
};

/// The allowed values of a numeric option. Bounds are inclusive, except that `positive` means > 0
/// for a floating-point option (>= 1 for an integer one). Floating-point values must also be finite.
struct Limits {
  enum class Kind { positive, non_negative, at_least, in_range };
  Kind kind;
  double lo = 0, hi = 0;
};
inline constexpr Limits positive{Limits::Kind::positive};
inline constexpr Limits non_negative{Limits::Kind::non_negative};
constexpr Limits at_least(double lo) { return {Limits::Kind::at_least, lo, 0}; }
constexpr Limits in_range(double lo, double hi) { return {Limits::Kind::in_range, lo, hi}; }

namespace detail {
/// "a positive integer", "a number > 0", "an integer in [1, 100]", ...
std::string describe(const Limits& l, bool integer);
/// Its short form for --help: "positive", ">= 3", "in [1, 100]".
std::string describe_short(const Limits& l, bool integer);
bool within(const Limits& l, long double v, bool integer);
/// The validator's message (CLI11 puts "--name: " in front): "must be <what> (got <text>)".
std::string must_be(const std::string& what, const std::string& text);

template <class T>
struct element {
  using type = T;
};
template <class T>
struct element<std::vector<T>> {
  using type = T;
};
}  // namespace detail

/// A CLI11 check for a numeric option of type T: the text converts to T as CLI11 converts it and lies
/// within `l`; otherwise the message reads like every other numeric option's. For a list option it
/// checks each element.
template <class T>
CLI::Validator number_check(Limits l) {
  using E = typename detail::element<T>::type;
  static_assert(std::is_arithmetic_v<E> && !std::is_same_v<E, bool>, "number_check: a numeric option");
  constexpr bool integer = std::is_integral_v<E>;
  return CLI::Validator(
      [l](std::string& text) -> std::string {
        E v{};
        bool ok = CLI::detail::lexical_cast(text, v);
        if constexpr (integer) {
          // CLI11 takes "-1" for an unsigned option as 2^64 - 1, and saturates beyond 64 bits: check the
          // value the text means against the type.
          long double wide = 0;
          if (CLI::detail::lexical_cast(text, wide)) {
            if (wide > static_cast<long double>(std::numeric_limits<E>::max()))
              return detail::must_be(
                  detail::describe(l, integer) + " <= " + std::to_string(std::numeric_limits<E>::max()), text);
            if (wide < static_cast<long double>(std::numeric_limits<E>::lowest())) ok = false;
          }
        }
        if (ok && detail::within(l, static_cast<long double>(v), integer)) return {};
        return detail::must_be(detail::describe(l, integer), text);
      },
      detail::describe_short(l, integer));
}

/// app.add_option(name, value, help) checked by number_check<T>(l).
template <class T>
CLI::Option* add_number(CLI::App& app, const std::string& name, T& value, const std::string& help, Limits l) {
  return app.add_option(name, value, help)->check(number_check<T>(l));
}

/// Adds the shared options; --precision only when the app has one.
void add_common_options(CLI::App& app, CommonOptions& opts, bool with_precision = true);

/// Parses argv. Returns an exit code when the program should stop now (0 for --help/--version,
/// exit_bad_input with the message printed for bad input), std::nullopt to go on.
std::optional<int> parse(CLI::App& app, int argc, char** argv);
/// The same; with report = false nothing is printed (the ranks of a job other than rank 0: one
/// message, not N).
std::optional<int> parse(CLI::App& app, int argc, char** argv, bool report);

/// The command line as one string (for provenance).
std::string command_line(int argc, char** argv);

}  // namespace tally::cli
