// equal_words (detail/word_block.hpp): the words it flags against a word-by-word reference.
// (Its reads under concurrent writes are exercised through ClhtLb's contains in
// hash_table_contract_test.cpp.) Builds without AVX, and ThreadSanitizer builds, have no vector
// path: the test says so and skips (callers use their scalar loads there).
#include <gtest/gtest.h>

#include <atomic>
#include <ccf/detail/word_block.hpp>
#include <cstdint>
#include <random>

namespace {

struct alignas(32) Block {
  std::atomic<std::uint64_t> word[4]{};
};

#if CCF_DETAIL_VECTOR_WORD_LOADS

TEST(WordBlock, FlagsExactlyTheEqualWords) {
  Block block;
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20000; ++round) {
    // Few distinct values, so that several words often equal the one looked for.
    const std::uint64_t values[] = {rng(), rng(), 0, ~std::uint64_t{0}};
    for (auto& word : block.word) word.store(values[rng() % 4], std::memory_order_relaxed);
    const std::uint64_t wanted = values[rng() % 4];
    unsigned expected = 0;
    for (unsigned i = 0; i < 4; ++i) expected |= unsigned{block.word[i].load() == wanted} << i;
    ASSERT_EQ(ccf::detail::equal_words(&block, wanted), expected) << round;
  }
}

#else

TEST(WordBlock, NoVectorPathInThisBuild) {
  GTEST_SKIP() << "this build has no vector word loads (no AVX, or ThreadSanitizer): callers "
                  "read words with atomic loads";
}

#endif

}  // namespace
