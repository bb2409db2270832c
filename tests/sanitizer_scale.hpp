// Sanitized builds run the same tests on smaller inputs: ASan and especially TSan slow memory
// accesses 5-20x, and CI runs all three builds on 2 cores.
#pragma once

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

}  // namespace ccf::testing
