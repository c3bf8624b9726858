#pragma once
// Catch2 2.13 (Debian bookworm) and 3.x (Ubuntu 24.04) behind one include.
#if __has_include(<catch2/catch_test_macros.hpp>)
#include <catch2/catch_approx.hpp>
#include <catch2/catch_template_test_macros.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/generators/catch_generators_range.hpp>
#include <catch2/matchers/catch_matchers_floating_point.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#define TALLY_CATCH_MAJOR 3
#else
#include <catch2/catch.hpp>
namespace Catch {
using Detail::Approx;  // Catch::Approx, as in v3
}
#define TALLY_CATCH_MAJOR 2
#endif

#include <string>

namespace tally::test {
/// A matcher for exception messages and strings holding `part` (Catch2 3's ContainsSubstring, 2's Contains).
inline auto contains(const std::string& part) {
#if TALLY_CATCH_MAJOR == 3
  return Catch::Matchers::ContainsSubstring(part);
#else
  return Catch::Matchers::Contains(part);
#endif
}
}  // namespace tally::test
