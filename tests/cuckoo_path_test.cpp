// The breadth-first cuckoo-path search: every path it returns is a valid chain of moves
// (each fingerprint goes to its own alternate bucket), ends at a bucket with room, never
// repeats a bucket, is as short as any, and its compressed integer form decodes to the same
// slots and start.
#include "ccf/detail/cuckoo_path.hpp"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "ccf/detail/addressing.hpp"
#include "ccf/detail/packed_table.hpp"

namespace {

TEST(CuckooPath, PathsAreValidShortestAndDecodable) {
  constexpr std::size_t kBuckets = 4096;
  ccf::PackedTable<12, 4> table(kBuckets);
  const ccf::detail::Addressing<12> addressing(kBuckets);
  std::mt19937_64 rng(3);
  using Path = ccf::detail::CuckooPath<4>;
  int searched = 0, found = 0;
  for (int attempt = 0; attempt < 200'000 && found < 2000; ++attempt) {
    const std::uint64_t hash = rng();
    const std::uint64_t i1 = addressing.index(hash);
    const std::uint32_t fp = addressing.fingerprint(hash);
    const std::uint64_t i2 = addressing.alternate(i1, fp);
    if (table.try_insert(i1, fp) || table.try_insert(i2, fp)) continue;
    ++searched;
    Path path;
    if (!ccf::detail::find_cuckoo_path(table, addressing, i1, i2, path)) continue;
    ++found;
    ASSERT_GE(path.length, 2u);
    ASSERT_EQ(path.steps[0].bucket, (path.code & 1) ? i2 : i1);
    std::set<std::uint64_t> seen;
    for (unsigned k = 0; k + 1 < path.length; ++k) {
      const auto& step = path.steps[k];
      ASSERT_TRUE(seen.insert(step.bucket).second) << "bucket repeated";
      ASSERT_EQ(step.slot, Path::slot_in(path.code, k));
      ASSERT_EQ(table.read(step.bucket, step.slot), step.fp);
      ASSERT_EQ(addressing.alternate(step.bucket, step.fp), path.steps[k + 1].bucket);
      // Shortest: no bucket before the last has room (else the search would have stopped).
      ASSERT_FALSE(table.has_empty(step.bucket));
    }
    ASSERT_TRUE(table.has_empty(path.steps[path.length - 1].bucket));
    // Execute it as the sequential filter does; the item then fits.
    for (unsigned k = path.length - 1; k > 0; --k) {
      const auto& from = path.steps[k - 1];
      ASSERT_TRUE(
          table.try_insert(path.steps[k].bucket, table.exchange(from.bucket, from.slot, 0)));
    }
    ASSERT_TRUE(table.try_insert(path.steps[0].bucket, fp));
  }
  EXPECT_GE(found, 2000);
  EXPECT_GE(searched, found);
}

}  // namespace
