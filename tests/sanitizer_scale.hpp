// Sanitized builds run the same tests on smaller inputs: ASan and especially TSan slow memory
// accesses 5-20x, and CI runs all three builds on 2 cores. The heaviest tests also have a long
// version, run when the environment has CCF_LONG_TESTS=1 (docs/ci.md); CI runs the bounded one.
#pragma once

#include <cstdlib>
#include <string_view>

namespace ccf::testing {

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

// `full` in an unsanitized build, `full / divisor` in a sanitized one.
template <class T>
constexpr T scaled(T full, T divisor) {
  return kSanitized ? full / divisor : full;
}

// CCF_LONG_TESTS set (and not "0"): run the long versions.
inline bool long_tests() {
  static const bool on = [] {
    const char* value = std::getenv("CCF_LONG_TESTS");
    return value != nullptr && *value != '\0' && std::string_view(value) != "0";
  }();
  return on;
}

// `count` under CCF_LONG_TESTS, `count / ci_divisor` otherwise (at least 1).
template <class T>
T bounded(T count, T ci_divisor) {
  if (long_tests()) return count;
  const T ci = count / ci_divisor;
  return ci > T{0} ? ci : T{1};
}

}  // namespace ccf::testing
