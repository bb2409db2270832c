// Model-based tests of the bucket tables: random inserts, erases and exchanges on a small
// table, checked after every step against a per-bucket multiset (contents and free slots) --
// including that writes never disturb neighbouring buckets (the packed layouts share bytes across
// bucket boundaries). The lock-free filter's KcasTable, whose buckets straddle K-CAS words, gets
// the same model with its own writes: try_insert, and removals by a CAS of the slot's word.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "ccf/detail/atomic_packed_table.hpp"
#include "ccf/lockfree/kcas_table.hpp"
#include "ccf/packed_table.hpp"
#include "ccf/semi_sorted_table.hpp"

namespace {

template <class Table>
class BucketTableTest : public ::testing::Test {};

using Tables =
    ::testing::Types<ccf::PackedTable<4, 2>, ccf::PackedTable<4, 4>, ccf::PackedTable<4, 8>,
                     ccf::PackedTable<8, 2>, ccf::PackedTable<8, 4>, ccf::PackedTable<8, 8>,
                     ccf::PackedTable<12, 2>, ccf::PackedTable<12, 4>, ccf::PackedTable<12, 8>,
                     ccf::PackedTable<16, 2>, ccf::PackedTable<16, 4>, ccf::PackedTable<16, 8>,
                     ccf::PackedTable<32, 2>, ccf::PackedTable<32, 4>, ccf::PackedTable<32, 8>,
                     ccf::SemiSortedTable<8>, ccf::SemiSortedTable<12>, ccf::SemiSortedTable<16>>;
TYPED_TEST_SUITE(BucketTableTest, Tables);

// The concurrent filters' table: the same model (one thread), its own storage rules.
template <class Table>
class AtomicBucketTableTest : public ::testing::Test {};
using AtomicTables = ::testing::Types<ccf::AtomicPackedTable<8, 4>, ccf::AtomicPackedTable<12, 4>,
                                      ccf::AtomicPackedTable<16, 2>, ccf::AtomicPackedTable<16, 4>>;
TYPED_TEST_SUITE(AtomicBucketTableTest, AtomicTables);

template <class Table>
std::vector<std::uint32_t> bucket_contents(const Table& table, std::size_t bucket) {
  std::vector<std::uint32_t> fps;
  for (unsigned slot = 0; slot < Table::kSlots; ++slot) {
    if (const std::uint32_t fp = table.read(bucket, slot)) fps.push_back(fp);
  }
  std::sort(fps.begin(), fps.end());
  return fps;
}

// Random operations on a small table against a per-bucket multiset, checked after every step.
// The table's own writes: try_insert, `erase(bucket, fp)` (one copy; false if none), and
// exchange where the table has it. Returns the number of fingerprints stored at the end.
template <class Table, class Erase>
std::size_t run_multiset_model(Table& table, Erase erase, std::uint64_t seed) {
  const std::size_t buckets = table.bucket_count();
  std::vector<std::multiset<std::uint32_t>> model(buckets);
  std::mt19937_64 rng(seed);
  // Few distinct values so that duplicates and matches are frequent.
  const auto random_fp = [&] {
    const std::uint32_t small = static_cast<std::uint32_t>(rng() % 6) + 1;
    return rng() % 2 ? small : static_cast<std::uint32_t>(rng() % Table::kFpMask) + 1;
  };
  constexpr bool kHasExchange = requires {
    table.exchange(0, 0u, 0u);
  };
  std::size_t stored = 0;
  for (int step = 0; step < 40'000; ++step) {
    const std::size_t bucket = rng() % buckets;
    const std::uint32_t fp = random_fp();
    auto& expected = model[bucket];
    switch (rng() % 4) {
      case 0: {
        const bool room = expected.size() < Table::kSlots;
        EXPECT_EQ(table.try_insert(bucket, fp), room);
        if (room) expected.insert(fp), ++stored;
        break;
      }
      case 1: {
        const auto it = expected.find(fp);
        EXPECT_EQ(erase(bucket, fp), it != expected.end());
        if (it != expected.end()) expected.erase(it), --stored;
        break;
      }
      case 2:
        if constexpr (kHasExchange) {
          const auto slot = static_cast<unsigned>(rng() % Table::kSlots);
          const std::uint32_t old = table.exchange(bucket, slot, fp);
          if (old != 0)
            expected.erase(expected.find(old));
          else
            ++stored;
          expected.insert(fp);
          break;
        }
        [[fallthrough]];
      default:
        EXPECT_EQ(table.contains(bucket, fp), expected.count(fp) > 0);
    }
    // The touched bucket and both neighbours hold exactly what the model says, and count
    // their free slots exactly (small fingerprints sit above emptied slots: no borrow counts).
    for (std::size_t b : {bucket, (bucket + 1) % buckets, (bucket + buckets - 1) % buckets}) {
      const std::vector<std::uint32_t> held(model[b].begin(), model[b].end());
      EXPECT_EQ(bucket_contents(table, b), held) << "step " << step << " bucket " << b;
      if constexpr (requires { table.fingerprints(b); }) {
        auto fps = table.fingerprints(b);  // every slot, 0 where empty
        std::sort(fps.begin(), fps.end());
        std::vector<std::uint32_t> with_empty(Table::kSlots - held.size(), 0);
        with_empty.insert(with_empty.end(), held.begin(), held.end());
        EXPECT_TRUE(std::equal(fps.begin(), fps.end(), with_empty.begin())) << "step " << step;
      }
      EXPECT_EQ(table.free_slots(b), Table::kSlots - held.size())
          << "step " << step << " bucket " << b;
      EXPECT_EQ(table.has_empty(b), held.size() < Table::kSlots);
    }
    if (::testing::Test::HasFailure()) return stored;  // the first step that went wrong
  }
  return stored;
}

template <class Table>
void check_against_a_multiset_model() {
  Table table(37);  // odd: exercises every byte/bit alignment
  const std::size_t stored = run_multiset_model(
      table, [&](std::size_t bucket, std::uint32_t fp) { return table.try_erase(bucket, fp); }, 7);
  EXPECT_EQ(table.count_occupied(), stored);
  table.clear();
  EXPECT_EQ(table.count_occupied(), 0u);
  EXPECT_FALSE(table.contains(0, 1));
}

TYPED_TEST(BucketTableTest, MatchesAMultisetModel) {
  check_against_a_multiset_model<TypeParam>();
}

TYPED_TEST(AtomicBucketTableTest, MatchesAMultisetModel) {
  check_against_a_multiset_model<TypeParam>();
}

TYPED_TEST(BucketTableTest, PayloadIsExactlyTheFingerprintBits) {
  using Table = TypeParam;
  constexpr std::size_t kBuckets = 1001;
  const Table table(kBuckets);
  const double bits = Table::kBitsPerSlot * Table::kSlots * kBuckets;
  EXPECT_EQ(table.payload().size(), static_cast<std::size_t>(std::ceil(bits / 8)));
}

TYPED_TEST(BucketTableTest, FullBucketRejectsInsertAndFindsEverySlot) {
  using Table = TypeParam;
  Table table(3);
  for (unsigned slot = 0; slot < Table::kSlots; ++slot) {
    ASSERT_TRUE(table.try_insert(1, Table::kFpMask - slot));
  }
  EXPECT_FALSE(table.try_insert(1, 1));
  for (unsigned slot = 0; slot < Table::kSlots; ++slot) {
    EXPECT_TRUE(table.contains(1, Table::kFpMask - slot));
  }
  EXPECT_EQ(bucket_contents(table, 0).size(), 0u);
  EXPECT_EQ(bucket_contents(table, 2).size(), 0u);
}

// KcasTable: F bits per slot, 63 / F slots per word, so buckets start at every lane and many
// straddle two words.
template <class Table>
class KcasBucketTableTest : public ::testing::Test {};
template <unsigned FpBits>
using KcasTableOf = ccf::lockfree::KcasTable<FpBits, ccf::lockfree::Kcas<3>>;
using KcasTables = ::testing::Types<KcasTableOf<4>, KcasTableOf<8>, KcasTableOf<12>>;
TYPED_TEST_SUITE(KcasBucketTableTest, KcasTables);

// Removes one copy of fp from bucket as the lock-free policy's K-CAS does (one word's CAS);
// false if the bucket holds none.
template <class Table>
bool remove_one(Table& table, std::uint64_t bucket, std::uint32_t fp) {
  for (;;) {
    const auto read = table.read_bucket(bucket);
    const std::uint64_t match = Table::Lanes::lanes_equal(read.bits(), fp);
    if (match == 0) return false;
    const auto [at, value] = read.locate_slot(Table::Lanes::first_flagged_lane(match));
    if (table.kcas().cas(table.word(at), value, Table::WordLanes::set(value, at.lane, 0))) {
      return true;
    }
  }
}

TYPED_TEST(KcasBucketTableTest, MatchesAMultisetModel) {
  using Table = TypeParam;
  constexpr std::size_t kBuckets = 37;
  ccf::lockfree::Kcas<3> kcas;
  const std::size_t words = Table::payload_bytes(kBuckets) / sizeof(ccf::lockfree::KcasWord);
  // The table's words, and a guard word after them; all zero (empty).
  const auto storage = std::make_unique<ccf::lockfree::KcasWord[]>(words + 1);
  Table table(kcas, storage.get(), kBuckets);
  run_multiset_model(
      table, [&](std::uint64_t bucket, std::uint32_t fp) { return remove_one(table, bucket, fp); },
      11);
  // No write reached past the table's words: the guard word after them is still zero.
  EXPECT_EQ(kcas.read(storage[words]), 0u);
}

}  // namespace
