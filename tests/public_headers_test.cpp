// The public headers behave in the user's translation unit: ccf.hpp includes every one of them
// (but the log store's, which need OpenSSL, included here too)
// (CMake also compiles each alone, tests/CMakeLists.txt), and none leaves a macro of its own
// behind -- neither a CCF_ one nor the XXH_INLINE_ALL that hash.hpp needs around <xxhash.h>.
#include <gtest/gtest.h>

#include <cstdint>
#include <string_view>

#include "ccf/ccf.hpp"
#include "ccf/store/log_store.hpp"

#if defined(XXH_INLINE_ALL)
#error "a public header leaked XXH_INLINE_ALL"
#endif
#if defined(CCF_LOCKFREE_ASAN) || defined(CCF_SYNC_X86) || defined(CCF_SYNC_TSAN)
#error "a public header leaked a project macro"
#endif

// xxhash.h included again without XXH_INLINE_ALL, as a user of libxxhash would write it: it
// compiles, and the user's calls hash as the library does (they reach the inlined copy).
#include <xxhash.h>

namespace {

TEST(PublicHeaders, UmbrellaHeaderNamesEveryFilter) {
  ccf::CuckooFilter<ccf::PackedTable<12, 4>> sequential(1000);
  ccf::CuckooFilter<ccf::SemiSortedTable<12>> semi_sorted(1000);
  ccf::CoarseCuckooFilter<ccf::PackedTable<12, 4>> coarse(1000);
  ccf::StripedCuckooFilter<12> striped(1000);
  ccf::CopCuckooFilter<12> cop(1000);
  ccf::LockFreeCuckooFilter<12> lock_free(1000);
  ccf::BloomFilter bloom(1000, 10);
  const std::uint64_t key = 42;
  EXPECT_EQ(sequential.insert(key), ccf::Status::kOk);
  EXPECT_EQ(semi_sorted.insert(key), ccf::Status::kOk);
  EXPECT_EQ(coarse.insert(key), ccf::Status::kOk);
  EXPECT_EQ(striped.insert(key), ccf::Status::kOk);
  EXPECT_EQ(cop.insert(key), ccf::Status::kOk);
  EXPECT_EQ(lock_free.insert(key), ccf::Status::kOk);
  EXPECT_EQ(bloom.insert(key), ccf::Status::kOk);
  EXPECT_TRUE(sequential.contains(key) && semi_sorted.contains(key) && coarse.contains(key) &&
              striped.contains(key) && cop.contains(key) && lock_free.contains(key) &&
              bloom.contains(key));
}

TEST(PublicHeaders, UserXxhashAgreesWithTheLibrary) {
  constexpr std::string_view bytes = "user:1";
  EXPECT_EQ(ccf::hash_key(bytes, 7), XXH3_64bits_withSeed(bytes.data(), bytes.size(), 7));
}

}  // namespace
