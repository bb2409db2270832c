// detail/prefetch.hpp's write-intent prefetch: issued as PREFETCHW exactly where the processor
// has it. The CPUID bit the header reads must agree with the kernel's view of the same processor
// (/proc/cpuinfo's "3dnowprefetch", Linux's name for PRFCHW).
#include "ccf/detail/prefetch.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace {

#if defined(__x86_64__) && defined(__linux__)
TEST(Prefetch, WriteIntentDetectionAgreesWithTheKernel) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  if (!cpuinfo) GTEST_SKIP() << "no /proc/cpuinfo";
  std::string line;
  bool found_flags = false;
  bool kernel_says = false;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    found_flags = true;
    std::istringstream words(line.substr(line.find(':') + 1));
    for (std::string flag; words >> flag;) kernel_says |= flag == "3dnowprefetch";
    break;
  }
  ASSERT_TRUE(found_flags) << "/proc/cpuinfo has no flags line";
  EXPECT_EQ(ccf::detail::kCpuHasPrefetchW, kernel_says);
  RecordProperty("prefetchw", kernel_says ? "yes" : "no");
}
#endif

// Prefetches are hints: whichever instruction is issued, the memory is unchanged.
TEST(Prefetch, PrefetchingChangesNothing) {
  std::array<std::uint64_t, 64> words{};
  for (std::size_t i = 0; i < words.size(); ++i) words[i] = i * 0x9e3779b97f4a7c15ULL;
  const auto before = words;
  for (const auto& word : words) {
    ccf::detail::prefetch_line(&word);
    ccf::detail::prefetch_line_for_write(&word);
  }
  EXPECT_EQ(words, before);
}

}  // namespace
