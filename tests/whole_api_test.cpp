// Every cuckoo filter offers the whole API (README, "The filters"): single-key operations on
// integer and byte-string keys, batched contains_many / insert_many that agree with them, and
// save / load in the shared file format, whose round trip keeps every member and is
// byte-for-byte stable. One typed suite over all of them, so that a filter missing a piece
// fails to compile here.
#include <gtest/gtest.h>

#include <atomic>
#include <concepts>
#include <cstdint>
#include <istream>
#include <memory>
#include <ostream>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <typeinfo>
#include <vector>

#include "ccf/concurrent/coarse_cuckoo_filter.hpp"
#include "ccf/concurrent/cop_cuckoo_filter.hpp"
#include "ccf/concurrent/striped_cuckoo_filter.hpp"
#include "ccf/cuckoo_filter.hpp"
#include "ccf/lockfree/lock_free_cuckoo_filter.hpp"
#include "ccf/sync/htm.hpp"
#include "ccf/sync/phase_fair_lock.hpp"
#include "sanitizer_scale.hpp"
#include "saved_bytes.hpp"
#include "test_keys.hpp"

namespace {

using ccf::Status;
using ccf::testing::member_keys;
using ccf::testing::non_member_keys;

constexpr std::size_t kCapacity = 20'000;

// One API: every filter is built from (capacity, FilterOptions), loads through a static factory
// that returns a std::unique_ptr, and answers the same questions. A filter that differs fails to
// compile here.
template <class Filter>
concept OneApi = requires(Filter& f, const Filter& cf, std::istream& in, std::ostream& out) {
  Filter(std::size_t{1}, ccf::FilterOptions{});
  { Filter::load(in) } -> std::same_as<std::unique_ptr<Filter>>;
  cf.save(out);
  { f.insert(std::uint64_t{1}) } -> std::same_as<Status>;
  { f.insert(std::string_view("k")) } -> std::same_as<Status>;
  { f.erase(std::uint64_t{1}) } -> std::same_as<Status>;
  { cf.contains(std::uint64_t{1}) } -> std::same_as<bool>;
  { cf.size() } -> std::same_as<std::size_t>;
  { cf.capacity() } -> std::same_as<std::size_t>;
  { cf.requested_capacity() } -> std::same_as<std::size_t>;
  { cf.load_factor() } -> std::same_as<double>;
  { cf.bits_per_item() } -> std::same_as<double>;
  { cf.memory_bytes() } -> std::same_as<std::size_t>;
  { cf.shape() } -> std::same_as<std::string>;
  { cf.speculative() } -> std::same_as<bool>;
  { cf.options() } -> std::convertible_to<ccf::FilterOptions>;
};

// A filter that refuses inserts when full (the lock-free filter grows by default).
template <class Filter>
std::unique_ptr<Filter> without_growth(std::size_t capacity) {
  if constexpr (requires { typename Filter::Options; }) {
    typename Filter::Options options;
    options.grow = false;
    return std::make_unique<Filter>(capacity, options);
  } else {
    return std::make_unique<Filter>(capacity);
  }
}

using ccf::testing::saved;

template <class Filter>
class WholeApiTest : public ::testing::Test {};

using Filters = ::testing::Types<
    ccf::CuckooFilter<ccf::PackedTable<12, 4>>,
    ccf::CoarseCuckooFilter<ccf::PackedTable<12, 4>, ccf::sync::LockOnly<ccf::sync::PhaseFairLock>>,
    ccf::StripedCuckooFilter<12>, ccf::CopCuckooFilter<12>, ccf::LockFreeCuckooFilter<12>>;
TYPED_TEST_SUITE(WholeApiTest, Filters);

TYPED_TEST(WholeApiTest, BuiltFromTheCommonOptionsKeepsThem) {
  static_assert(OneApi<TypeParam>);
  const TypeParam filter(1000, {.seed = 99, .max_kicks = 77, .max_load = 0.5});
  EXPECT_EQ(filter.options().seed, 99u);
  EXPECT_EQ(filter.options().max_kicks, 77u);
  EXPECT_EQ(filter.options().max_load, 0.5);
  EXPECT_GE(filter.capacity(), 2000u) << "max_load 0.5 sizes for twice the capacity";
  if (!ccf::sync::rtm_available()) {
    EXPECT_FALSE(filter.speculative()) << "no RTM, no transactions";
  }
  EXPECT_THROW(TypeParam(0, ccf::FilterOptions{}), std::invalid_argument);
  EXPECT_THROW(TypeParam(10, {.max_load = 1.5}), std::invalid_argument);
}

TYPED_TEST(WholeApiTest, BatchesAgreeWithSingleOperations) {
  TypeParam filter(kCapacity);
  const auto members = member_keys(kCapacity / 2, 41);
  const auto strangers = non_member_keys(kCapacity, 41);
  ASSERT_EQ(filter.insert_many(std::span<const std::uint64_t>(members)), members.size());
  EXPECT_EQ(filter.size(), members.size());

  std::vector<std::uint64_t> queries = members;
  queries.insert(queries.end(), strangers.begin(), strangers.end());
  std::unique_ptr<bool[]> out(new bool[queries.size()]);
  const std::size_t hits = filter.contains_many(std::span<const std::uint64_t>(queries),
                                                std::span<bool>(out.get(), queries.size()));
  std::size_t expected_hits = 0;
  for (std::size_t i = 0; i < queries.size(); ++i) {
    ASSERT_EQ(out[i], filter.contains(queries[i])) << "key " << i;
    if (i < members.size()) {
      ASSERT_TRUE(out[i]) << "false negative for member " << i;
    }
    expected_hits += out[i];
  }
  EXPECT_EQ(hits, expected_hits);
  EXPECT_LT(hits - members.size(), strangers.size() / 100);  // 12-bit FPR is ~0.2%

  bool short_out[1];
  EXPECT_THROW(static_cast<void>(filter.contains_many(std::span<const std::uint64_t>(queries),
                                                      std::span<bool>(short_out, 1))),
               std::invalid_argument);
}

TYPED_TEST(WholeApiTest, InsertManyStopsAtTheFirstRefusal) {
  const auto made = without_growth<TypeParam>(64);
  TypeParam& filter = *made;
  const auto keys = member_keys(10'000, 43);
  const std::size_t stored = filter.insert_many(std::span<const std::uint64_t>(keys));
  ASSERT_LT(stored, keys.size());
  EXPECT_EQ(filter.size(), stored);
  for (std::size_t i = 0; i < stored; ++i) ASSERT_TRUE(filter.contains(keys[i])) << i;
  // The key that was refused, and every one after it, was left out entirely.
  EXPECT_NE(filter.insert(keys[stored]), Status::kOk);
}

TYPED_TEST(WholeApiTest, SaveLoadKeepsEveryMemberAndIsStable) {
  TypeParam filter(kCapacity);
  const auto members = member_keys(kCapacity * 9 / 10, 47);
  for (const std::uint64_t key : members) ASSERT_EQ(filter.insert(key), Status::kOk);
  ASSERT_EQ(filter.insert(std::string_view("a byte-string key")), Status::kOk);

  const std::string bytes = saved(filter);
  std::istringstream in(bytes);
  const auto loaded = TypeParam::load(in);
  EXPECT_EQ(loaded->size(), filter.size());
  EXPECT_EQ(loaded->capacity(), filter.capacity());
  for (const std::uint64_t key : members) ASSERT_TRUE(loaded->contains(key));
  EXPECT_TRUE(loaded->contains(std::string_view("a byte-string key")));
  std::size_t agree = 0;
  for (const std::uint64_t key : non_member_keys(kCapacity, 47)) {
    agree += loaded->contains(key) == filter.contains(key);
  }
  EXPECT_EQ(agree, kCapacity) << "the loaded filter answers differently";
  EXPECT_EQ(saved(*loaded), bytes) << "saving the loaded filter changed the file";
}

// The batched operations of the thread-safe filters under concurrency, with more threads than
// cores: writers insert_many disjoint key sets while readers contains_many the keys the writers
// have already stored (published through an atomic count); no stored key is ever reported
// absent, and afterwards every key is found and counted once.
template <class Filter>
class ConcurrentBatchTest : public ::testing::Test {};
using ConcurrentFilters =
    ::testing::Types<ccf::CoarseCuckooFilter<ccf::PackedTable<12, 4>>, ccf::StripedCuckooFilter<12>,
                     ccf::CopCuckooFilter<12>, ccf::LockFreeCuckooFilter<12>>;
TYPED_TEST_SUITE(ConcurrentBatchTest, ConcurrentFilters);

TYPED_TEST(ConcurrentBatchTest, BatchesFromManyThreadsLoseNothing) {
  constexpr unsigned kWriters = 3, kReaders = 3;
  constexpr std::size_t kBatch = 100;
  const std::size_t per_writer = ccf::testing::scaled(12'000, 4) / kBatch * kBatch;
  TypeParam filter(kWriters * per_writer * 10 / 9);
  // One stream cut in slices: disjoint (salts that differ only in low bits would not be:
  // mix64 XORs the salt into the input).
  const auto all = member_keys(kWriters * per_writer, 100);
  std::vector<std::vector<std::uint64_t>> keys;
  std::vector<std::atomic<std::size_t>> stored(kWriters);
  for (unsigned w = 0; w < kWriters; ++w) {
    keys.emplace_back(all.begin() + w * per_writer, all.begin() + (w + 1) * per_writer);
  }
  std::atomic<std::size_t> misses{0}, checked{0};
  std::atomic<unsigned> writers_left{kWriters};
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      const std::span<const std::uint64_t> mine(keys[w]);
      for (std::size_t at = 0; at < mine.size(); at += kBatch) {
        EXPECT_EQ(filter.insert_many(mine.subspan(at, kBatch)), kBatch);
        stored[w].store(at + kBatch, std::memory_order_release);
      }
      writers_left.fetch_sub(1);
    });
  }
  for (unsigned r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      bool out[kBatch];
      const unsigned w = r % kWriters;
      // Until the writers are done, and at least 100 batches (after the last write too).
      for (std::size_t round = 0, mine = 0; writers_left.load() > 0 || mine < 100; ++round) {
        const std::size_t ready = stored[w].load(std::memory_order_acquire);
        if (ready < kBatch) {
          std::this_thread::yield();
          continue;
        }
        const std::size_t at = round * kBatch % ready / kBatch * kBatch;
        const std::span<const std::uint64_t> batch(keys[w].data() + at, kBatch);
        if (filter.contains_many(batch, std::span<bool>(out)) != kBatch) misses.fetch_add(1);
        checked.fetch_add(1);
        ++mine;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_GE(checked.load(), kReaders * 100u);
  EXPECT_EQ(misses.load(), 0u) << "a batched lookup missed stored keys";
  EXPECT_EQ(filter.size(), kWriters * per_writer);
  for (const auto& mine : keys) {
    for (const std::uint64_t key : mine) ASSERT_TRUE(filter.contains(key));
  }
}

// Files move freely between every pair of filters of the same shape (F = 12, b = 4): what one
// saves, every other loads with every member found and the same count.
template <class From, class To>
void expect_file_moves(const char* from, const char* to) {
  From source(kCapacity);
  const auto members = member_keys(kCapacity * 9 / 10, 53);
  for (const std::uint64_t key : members) ASSERT_EQ(source.insert(key), Status::kOk);
  std::istringstream in(saved(source));
  const auto loaded = To::load(in);
  EXPECT_EQ(loaded->size(), members.size()) << from << " -> " << to;
  std::size_t found = 0;
  for (const std::uint64_t key : members) found += loaded->contains(key);
  EXPECT_EQ(found, members.size()) << from << " -> " << to;
}

template <class From, class... To>
void expect_file_moves_to_all(const char* from) {
  (expect_file_moves<From, To>(from, typeid(To).name()), ...);
}

TEST(WholeApi, FilesMoveBetweenEveryPairOfFilters) {
  using Sequential = ccf::CuckooFilter<ccf::PackedTable<12, 4>>;
  using Coarse = ccf::CoarseCuckooFilter<ccf::PackedTable<12, 4>>;
  using Striped = ccf::StripedCuckooFilter<12>;
  using Cop = ccf::CopCuckooFilter<12>;
  using LockFree = ccf::LockFreeCuckooFilter<12>;
  expect_file_moves_to_all<Sequential, Sequential, Coarse, Striped, Cop, LockFree>("sequential");
  expect_file_moves_to_all<Coarse, Sequential, Coarse, Striped, Cop, LockFree>("coarse");
  expect_file_moves_to_all<Striped, Sequential, Coarse, Striped, Cop, LockFree>("striped");
  expect_file_moves_to_all<Cop, Sequential, Coarse, Striped, Cop, LockFree>("COP");
  expect_file_moves_to_all<LockFree, Sequential, Coarse, Striped, Cop, LockFree>("lock-free");
}

}  // namespace
