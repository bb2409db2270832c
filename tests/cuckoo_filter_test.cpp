// The sequential cuckoo filter: no false negatives up to and past "full", load factor reached,
// false-positive rate against theory, delete/duplicate semantics, batch APIs, bad input.
#include "ccf/cuckoo_filter.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "ccf/any_cuckoo_filter.hpp"
#include "filter_shapes.hpp"
#include "test_keys.hpp"

namespace {

using ccf::CuckooFilter;
using ccf::PackedTable;
using ccf::SemiSortedTable;
using ccf::Status;
using ccf::testing::member_keys;
using ccf::testing::non_member_keys;

constexpr std::size_t kMillion = 1'000'000;

template <class Filter>
class EveryShape : public ::testing::Test {};

TYPED_TEST_SUITE(EveryShape, ccf::testing::AllFilterShapes);

// Inserts keys until the first kFull; returns how many were stored.
template <class Filter>
std::size_t fill_until_full(Filter& filter, const std::vector<std::uint64_t>& keys) {
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (filter.insert(keys[i]) == Status::kFull) return i;
  }
  ADD_FAILURE() << "filter never reported full";
  return keys.size();
}

template <class Filter>
std::size_t count_missing(const Filter& filter, const std::vector<std::uint64_t>& keys,
                          std::size_t begin, std::size_t end) {
  std::size_t missing = 0;
  for (std::size_t i = begin; i < end; ++i) missing += !filter.contains(keys[i]);
  return missing;
}

// The load every correct filter reaches at the first kFull with 500 kicks (Fan et al. 2014: 84% for
// b = 2, 95% for b = 4, 98% for b = 8). 4-bit fingerprints give only 15 alternate offsets,
// which constrains the cuckoo graph, so they get no load requirement.
template <class Filter>
double required_load() {
  if (Filter::kFpBits < 8) return 0.3;
  return Filter::kSlots == 2 ? 0.84 : Filter::kSlots == 4 ? 0.95 : 0.97;
}

TYPED_TEST(EveryShape, NoFalseNegativesUpToAndPastFull) {
  TypeParam filter(kMillion);
  const auto keys = member_keys(2 * kMillion);
  const std::size_t stored = fill_until_full(filter, keys);
  ASSERT_GE(stored, kMillion / 4);
  EXPECT_EQ(filter.size(), stored);
  EXPECT_TRUE(filter.victim_used());
  EXPECT_EQ(count_missing(filter, keys, 0, stored), 0u);
  EXPECT_GE(filter.load_factor(), required_load<TypeParam>()) << filter.shape();
  // The victim is an item (size) but not a slot: the load counts the table's slots only.
  EXPECT_DOUBLE_EQ(filter.load_factor(),
                   static_cast<double>(stored - 1) / static_cast<double>(filter.capacity()));

  // Full: further inserts change nothing and every stored key is still found.
  for (std::size_t i = stored; i < stored + 1000; ++i)
    ASSERT_EQ(filter.insert(keys[i]), Status::kFull);
  EXPECT_EQ(filter.size(), stored);
  EXPECT_EQ(count_missing(filter, keys, 0, stored), 0u);

  // Erasing makes room again (the victim is put back); then every survivor is still found.
  for (std::size_t i = 0; i < stored; i += 2) ASSERT_EQ(filter.erase(keys[i]), Status::kOk);
  EXPECT_FALSE(filter.victim_used());
  std::size_t missing = 0;
  for (std::size_t i = 1; i < stored; i += 2) missing += !filter.contains(keys[i]);
  EXPECT_EQ(missing, 0u);
  EXPECT_EQ(filter.size(), stored / 2);
}

TYPED_TEST(EveryShape, DuplicatesUpToTwoBucketsThenFull) {
  TypeParam filter(1000);
  const std::uint64_t key = 12345;
  for (unsigned copy = 0; copy < 2 * TypeParam::kSlots; ++copy) {
    ASSERT_EQ(filter.insert(key), Status::kOk) << "copy " << copy;
  }
  // One more copy overflows into the victim slot; after that the filter is full.
  EXPECT_EQ(filter.insert(key), Status::kOk);
  EXPECT_TRUE(filter.victim_used());
  EXPECT_EQ(filter.insert(key), Status::kFull);
  EXPECT_EQ(filter.insert(std::uint64_t{999}), Status::kFull);
  // Each erase removes exactly one copy.
  for (unsigned copy = 0; copy <= 2 * TypeParam::kSlots; ++copy) {
    ASSERT_TRUE(filter.contains(key));
    ASSERT_EQ(filter.erase(key), Status::kOk) << "copy " << copy;
    ASSERT_EQ(filter.size(), 2 * TypeParam::kSlots - copy);
  }
  EXPECT_FALSE(filter.contains(key));
  EXPECT_EQ(filter.erase(key), Status::kNotFound);
  EXPECT_TRUE(filter.empty());
}

TYPED_TEST(EveryShape, EraseOfAbsentKeyIsReportedAndChangesNothing) {
  TypeParam filter(1000);
  EXPECT_EQ(filter.erase(std::uint64_t{7}), Status::kNotFound);
  ASSERT_EQ(filter.insert(std::uint64_t{7}), Status::kOk);
  EXPECT_EQ(filter.erase(std::string_view("seven")), Status::kNotFound);
  EXPECT_EQ(filter.size(), 1u);
  EXPECT_TRUE(filter.contains(std::uint64_t{7}));
}

TYPED_TEST(EveryShape, BatchOperationsAgreeWithSingleOnes) {
  TypeParam filter(100'000);
  const auto keys = member_keys(200'000, 3);
  const std::size_t stored = filter.insert_many(std::span<const std::uint64_t>(keys));
  ASSERT_LT(stored, keys.size());  // filled up part way and stopped
  EXPECT_EQ(filter.size(), stored);
  EXPECT_EQ(filter.insert(keys[stored]), Status::kFull);
  // insert_many stored the leading `stored` keys.
  EXPECT_EQ(count_missing(filter, keys, 0, stored), 0u);

  // Absent keys, then stored ones.
  auto probe = non_member_keys(50'000, 3);
  const auto members = static_cast<std::ptrdiff_t>(std::min<std::size_t>(stored, 50'000));
  probe.insert(probe.end(), keys.begin(), keys.begin() + members);
  auto out = std::make_unique<bool[]>(probe.size());
  const std::size_t hits = filter.contains_many(std::span<const std::uint64_t>(probe),
                                                std::span(out.get(), probe.size()));
  std::size_t expected_hits = 0;
  for (std::size_t i = 0; i < probe.size(); ++i) {
    ASSERT_EQ(out[i], filter.contains(probe[i])) << i;
    if (i >= 50'000) {
      ASSERT_TRUE(out[i]) << "stored key " << i - 50'000 << " missed by contains_many";
    }
    expected_hits += out[i];
  }
  EXPECT_EQ(hits, expected_hits);
}

TYPED_TEST(EveryShape, ClearEmptiesTheFilter) {
  TypeParam filter(10'000);
  for (std::uint64_t key = 0; key < 5000; ++key) ASSERT_EQ(filter.insert(key), Status::kOk);
  filter.clear();
  EXPECT_EQ(filter.size(), 0u);
  std::size_t found = 0;
  for (std::uint64_t key = 0; key < 5000; ++key) found += filter.contains(key);
  EXPECT_EQ(found, 0u);
}

// Expected false-positive rate of a filter at load `load`: each of the ~2*b*load occupied
// slots of a query's two buckets matches its fingerprint with probability ~2^-f.
double expected_fpr(unsigned fp_bits, unsigned slots, double load) {
  return 1 - std::pow(1 - std::ldexp(1.0, -static_cast<int>(fp_bits)), 2 * slots * load);
}

template <class Filter>
void check_false_positive_rate() {
  Filter filter(kMillion);
  const auto keys = member_keys(2 * kMillion, 11);
  fill_until_full(filter, keys);
  ASSERT_GE(filter.load_factor(), 0.95) << filter.shape();  // b = 4: the shape's promise
  const auto queries = non_member_keys(4 * kMillion, 11);
  std::size_t positives = 0;
  for (const std::uint64_t key : queries) positives += filter.contains(key);
  const double n = static_cast<double>(queries.size());
  const double measured = static_cast<double>(positives) / n;
  const double at_load = expected_fpr(Filter::kFpBits, Filter::kSlots, filter.load_factor());
  const double bound = expected_fpr(Filter::kFpBits, Filter::kSlots, 1.0);  // Fan et al.'s bound
  const double sigma = std::sqrt(at_load * (1 - at_load) / n);
  ::testing::Test::RecordProperty("fpr", std::to_string(measured));
  std::printf("%s: load %.4f, FPR measured %.3g, expected at load %.3g, bound %.3g\n",
              filter.shape().c_str(), filter.load_factor(), measured, at_load, bound);
  // A correct filter is within a few sigma of the expectation; a fingerprint that wastes bits
  // (FPR x2 or more) or an index function that collapses buckets fails one of these.
  EXPECT_LE(measured, bound + 4 * sigma);
  EXPECT_LE(measured, 1.15 * at_load + 4 * sigma);
  EXPECT_GE(measured, 0.85 * at_load - 4 * sigma);
}

TEST(FalsePositiveRate, Fingerprint8Bits) {
  check_false_positive_rate<CuckooFilter<PackedTable<8, 4>>>();
}
TEST(FalsePositiveRate, Fingerprint12Bits) {
  check_false_positive_rate<CuckooFilter<PackedTable<12, 4>>>();
}
TEST(FalsePositiveRate, Fingerprint16Bits) {
  check_false_positive_rate<CuckooFilter<PackedTable<16, 4>>>();
}
TEST(FalsePositiveRate, SemiSorted12Bits) {
  check_false_positive_rate<CuckooFilter<SemiSortedTable<12>>>();
}

TEST(CuckooFilter, AnyCapacityGetsATableOfThatSize) {
  // Not rounded to a power of two: 1'000'003 items at the default 0.94 sizing load.
  CuckooFilter<PackedTable<12, 4>> filter(1'000'003);
  EXPECT_EQ(filter.bucket_count(), static_cast<std::size_t>(std::ceil(1'000'003 / (0.94 * 4))));
  const auto keys = member_keys(1'000'003, 5);
  for (const std::uint64_t key : keys) ASSERT_EQ(filter.insert(key), Status::kOk);
  EXPECT_NEAR(filter.bits_per_item(), 12 / 0.94, 0.01);
}

TEST(CuckooFilter, StringKeys) {
  CuckooFilter<PackedTable<16, 4>> filter(100'000);
  std::vector<std::string> words;
  for (int i = 0; i < 90'000; ++i) words.push_back("user:" + std::to_string(i) + "@example");
  for (const auto& word : words) ASSERT_EQ(filter.insert(std::string_view(word)), Status::kOk);
  for (const auto& word : words) ASSERT_TRUE(filter.contains(std::string_view(word)));
  std::vector<std::string_view> views(words.begin(), words.end());
  auto out = std::make_unique<bool[]>(views.size());
  EXPECT_EQ(filter.contains_many(std::span<const std::string_view>(views),
                                 std::span(out.get(), views.size())),
            views.size());
  for (const auto& word : words) ASSERT_EQ(filter.erase(std::string_view(word)), Status::kOk);
  EXPECT_TRUE(filter.empty());
}

TEST(CuckooFilter, BadParametersAreRejected) {
  using Filter = CuckooFilter<PackedTable<12, 4>>;
  EXPECT_THROW(Filter(0), std::invalid_argument);
  EXPECT_THROW(Filter(std::numeric_limits<std::size_t>::max()), std::invalid_argument);
  EXPECT_THROW(Filter(std::size_t{1} << 50), std::invalid_argument);
  EXPECT_THROW(Filter(100, {.max_load = 1.5}), std::invalid_argument);
  EXPECT_THROW(Filter(100, {.max_load = -0.5}), std::invalid_argument);
  EXPECT_THROW(Filter(100, {.max_load = std::nan("")}), std::invalid_argument);
  EXPECT_THROW(Filter(100, {.max_kicks = 1u << 21}), std::invalid_argument);
  EXPECT_NO_THROW(Filter(1));
}

TEST(AnyCuckooFilter, RejectsUnsupportedShapesClearly) {
  const auto message = [](ccf::FilterParams params) -> std::string {
    try {
      ccf::AnyCuckooFilter filter(params);
    } catch (const std::invalid_argument& error) {
      return error.what();
    }
    return "";
  };
  EXPECT_NE(message({.capacity = 100, .fp_bits = 7}).find("supported"), std::string::npos);
  EXPECT_NE(message({.capacity = 100, .fp_bits = 12, .slots_per_bucket = 3}), "");
  EXPECT_NE(message({.capacity = 100, .fp_bits = 4, .semi_sorted = true}), "");
  EXPECT_NE(message({.capacity = 100, .fp_bits = 12, .slots_per_bucket = 8, .semi_sorted = true}),
            "");
  EXPECT_NE(message({.capacity = 0}).find("capacity"), std::string::npos);
  EXPECT_EQ(message({.capacity = 100, .fp_bits = 16, .semi_sorted = true}), "");
}

TEST(AnyCuckooFilter, ForwardsToTheChosenShape) {
  ccf::AnyCuckooFilter filter({.capacity = 10'000, .fp_bits = 16, .semi_sorted = true});
  EXPECT_EQ(filter.fp_bits(), 16u);
  EXPECT_EQ(filter.slots_per_bucket(), 4u);
  EXPECT_EQ(filter.shape(), "semi-sorted 16-bit fingerprints, 4 slots/bucket");
  for (std::uint64_t key = 0; key < 9000; ++key) ASSERT_EQ(filter.insert(key), Status::kOk);
  EXPECT_EQ(filter.size(), 9000u);
  EXPECT_NEAR(filter.bits_per_item(), 15.0 * static_cast<double>(filter.capacity()) / 9000, 0.01);
  for (std::uint64_t key = 0; key < 9000; ++key) ASSERT_TRUE(filter.contains(key));
}

}  // namespace
