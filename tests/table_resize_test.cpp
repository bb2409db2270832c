// The cooperative, incremental resizes of BasicClht (include/ccf/tables/basic_clht.hpp, M1-M6),
// ClhtLf (include/ccf/tables/clht_lf.hpp, L1-L6), HopscotchMap
// (include/ccf/tables/hopscotch_map.hpp, R1-R6) and CuckooMap (include/ccf/tables/cuckoo_map.hpp,
// C1-C6):
// - a model test on a table that starts with one bucket, so that most operations run while a
//   migration is under way, and that ends holding little more than its current table (old
//   tables' pages handed back);
// - a hammer with more threads than cores: writers check every update of their own keys
//   against a model as they go (a lost or duplicated item shows at once) while migrations
//   race them, readers check keys nobody touches;
// - a thread suspended in the middle of its share of a migration: the others' operations and
//   the resize complete without it, and it resumes harmlessly into a retired table;
// - short histories racing a migration, checked for linearizability;
// - for the maps that take a growth factor below 2: each step's size, the grown size against a
//   sized map, and threads growing one by its smallest factor never refused.
// The contract every table keeps (model, churn, histories on a quiet table) is in
// hash_table_contract_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ccf/detail/page_buffer.hpp"
#include "ccf/tables/clht_lb.hpp"
#include "ccf/tables/clht_lf.hpp"
#include "ccf/tables/cuckoo_map.hpp"
#include "ccf/tables/hopscotch_map.hpp"
#include "ccf/tables/htm_clht.hpp"
#include "eventually.hpp"
#include "linearizability.hpp"
#include "sanitizer_scale.hpp"
#include "test_keys.hpp"

namespace {

using ccf::Status;

// What differs between the tables: the heads a helper migrates per claim, and the bytes of the
// current table's buckets.
template <class Table>
struct Resizing;
// Bytes of `bytes` of buckets as a PageBuffer maps them: whole huge pages from 2 MiB on.
constexpr std::size_t mapped(std::size_t bytes) {
  constexpr std::size_t kHuge = ccf::detail::PageBuffer::kHugePage;
  return bytes < kHuge ? bytes : (bytes + kHuge - 1) / kHuge * kHuge;
}
template <class Writers>
struct Resizing<ccf::BasicClht<Writers>> {
  static constexpr std::uint64_t kUnit = ccf::BasicClht<Writers>::kChunk;
  static std::size_t current_bytes(const ccf::BasicClht<Writers>& table) {
    return mapped(table.bucket_count() * 64);
  }
};
template <unsigned H, class Hook>
struct Resizing<ccf::HopscotchMap<H, Hook>> {
  static constexpr std::uint64_t kUnit = ccf::HopscotchMap<H, Hook>::kSegment;
  static std::size_t current_bytes(const ccf::HopscotchMap<H, Hook>& table) {
    return mapped((table.bucket_count() + 2 * kUnit) * 24);
  }
};

template <class Hook>
struct Resizing<ccf::BasicClhtLf<Hook>> {
  static constexpr std::uint64_t kUnit = ccf::BasicClhtLf<Hook>::kChunk;
  static std::size_t current_bytes(const ccf::BasicClhtLf<Hook>& table) {
    return mapped(table.bucket_count() * 64);
  }
};
template <class K, class V, class Hash, class Equal, class Hook>
struct Resizing<ccf::CuckooMap<K, V, Hash, Equal, Hook>> {
  static constexpr std::uint64_t kUnit = ccf::CuckooMap<K, V, Hash, Equal, Hook>::kChunk;
  static std::size_t current_bytes(const ccf::CuckooMap<K, V, Hash, Equal, Hook>& table) {
    return mapped(table.bucket_count() * 80);
  }
};

// The cuckoo map growing by the smallest factor it takes: from CuckooMap::kFactorFrom buckets
// on, many more, smaller migrations, each into a table that is not a multiple of the old one.
struct SlowGrowingCuckooMap : ccf::CuckooMap<std::uint64_t, std::uint64_t> {
  explicit SlowGrowingCuckooMap(std::size_t capacity)
      : ccf::CuckooMap<std::uint64_t, std::uint64_t>(capacity, Growth{kMinGrowth}) {}
};
template <>
struct Resizing<SlowGrowingCuckooMap> : Resizing<ccf::CuckooMap<std::uint64_t, std::uint64_t>> {};
// Hopscotch likewise, from HopscotchMap::kFactorFrom homes on: each copy writes a run of new
// segments that is not 2s .. 2s + 2, shared with its neighbours' copies at both ends (R2).
struct SlowGrowingHopscotch : ccf::HopscotchMap<32> {
  explicit SlowGrowingHopscotch(std::size_t capacity)
      : ccf::HopscotchMap<32>(capacity, Growth{kMinGrowth}) {}
};
template <>
struct Resizing<SlowGrowingHopscotch> : Resizing<ccf::HopscotchMap<32>> {};

template <class Table>
class TableResize : public ::testing::Test {};

// CLHT with bucket locks, elided bucket locks, and a global (TTAS, not FIFO: fair to 8 threads on
// 2 cores) elided lock: the three ways the policies take a head; lock-free CLHT; Hopscotch with
// both neighbourhoods and growing by its smallest factor; the cuckoo map, doubling and growing
// by its smallest factor.
using Tables =
    ::testing::Types<ccf::ClhtLb, ccf::HtmClhtFine, ccf::htm_clht::ScmTtasOpt, ccf::ClhtLf,
                     ccf::HopscotchMap<32>, ccf::HopscotchMap<64>, SlowGrowingHopscotch,
                     ccf::CuckooMap<std::uint64_t, std::uint64_t>, SlowGrowingCuckooMap>;
TYPED_TEST_SUITE(TableResize, Tables);

// The maps that take a growth factor (detail/growth_factor.hpp), and the lowest load at which
// each begins a resize for random keys: the cuckoo map past its growth load (C1; its sizing load
// bounds that from below, as it does where a path search fails first), Hopscotch when
// a placement first fails (0.79 at 2^23 items; 0.7 or more at smaller sizes).
template <class Map>
struct Factored;
template <>
struct Factored<ccf::CuckooMap<std::uint64_t, std::uint64_t>> {
  static constexpr double kLowestGrowthLoad =
      ccf::CuckooMap<std::uint64_t, std::uint64_t>::kSizingLoad;
};
template <>
struct Factored<ccf::HopscotchMap<32>> {
  static constexpr double kLowestGrowthLoad = 0.7;
};

template <class Map>
class GrowthFactor : public ::testing::Test {};
using FactoredMaps =
    ::testing::Types<ccf::CuckooMap<std::uint64_t, std::uint64_t>, ccf::HopscotchMap<32>>;
TYPED_TEST_SUITE(GrowthFactor, FactoredMaps);

// Each table of kFactorFrom buckets or more is ceil(factor * m) buckets of the one before
// (smaller ones double), so the grown map ends within about that factor of a map sized for its
// items: exactly within it if its last resize began at its sizing load or above.
TYPED_TEST(GrowthFactor, GrowsByItsFactorAndEndsWithinItOfASizedMap) {
  using Map = TypeParam;
  constexpr double kFactor = 1.25;
  Map map(1, typename Map::Growth{kFactor});
  const std::size_t n = 200'000;  // tens of thousands of buckets sized: over 10 factor steps
  std::mt19937_64 rng(12);
  std::vector<std::uint64_t> keys;
  std::uint64_t buckets = map.bucket_count();
  unsigned steps = 0;
  while (keys.size() < n) {
    const std::uint64_t key = rng() | 1;
    ASSERT_EQ(map.insert(key, ~key), Status::kOk) << keys.size();
    keys.push_back(key);
    // One insert may finish a migration and begin the next: follow every step to the new size.
    while (map.bucket_count() != buckets) {
      const double factor = buckets < Map::kFactorFrom ? 2.0 : kFactor;
      ASSERT_LT(buckets, map.bucket_count()) << "after " << buckets;
      steps += factor == kFactor;
      buckets =
          std::max(static_cast<std::uint64_t>(std::ceil(factor * static_cast<double>(buckets))),
                   buckets + 1);
      ASSERT_LE(buckets, map.bucket_count()) << "a step other than the factor's";
    }
  }
  map.reserve(n);  // completes a migration under way, if any
  EXPECT_GE(steps, 10u) << "the map was meant to grow by its factor through many sizes";
  const Map sized(n);
  EXPECT_LE(static_cast<double>(map.bucket_count()),
            kFactor * static_cast<double>(sized.bucket_count()) * Map::kSizingLoad /
                    Factored<Map>::kLowestGrowthLoad +
                1)
      << "grown to " << map.bucket_count() << "; sized: " << sized.bucket_count();
  for (const std::uint64_t key : keys) ASSERT_EQ(map.find(key), ~key);
}

TYPED_TEST(GrowthFactor, RefusesAFactorOutsideItsRange) {
  using Map = TypeParam;
  for (const double factor : {1.0, Map::kMinGrowth - 0.01, 2.01, -1.0, std::nan("")}) {
    try {
      Map map(16, typename Map::Growth{factor});
      ADD_FAILURE() << "accepted growth factor " << factor;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("growth factor must lie in ["), std::string::npos)
          << e.what();
    }
  }
  EXPECT_NO_THROW(Map(16, typename Map::Growth{Map::kMinGrowth}));
  EXPECT_NO_THROW(Map(16, typename Map::Growth{2.0}));
}

// reserve() migrates once, straight to the size asked for, whatever the growth factor.
TYPED_TEST(GrowthFactor, ReserveMigratesOnceToTheSizeAskedFor) {
  using Map = TypeParam;
  Map map(16, typename Map::Growth{Map::kMinGrowth});
  for (std::uint64_t key = 1; key <= 10; ++key) ASSERT_EQ(map.insert(key, key), Status::kOk);
  map.reserve(100'000);
  EXPECT_EQ(map.resizes(), 1u);
  EXPECT_EQ(map.bucket_count(), Map(100'000).bucket_count());
  for (std::uint64_t key = 1; key <= 10; ++key) ASSERT_EQ(map.find(key), key);
}

// reserve() far beyond the next size: one migration into a table thousands of times as large,
// whose copies' runs of new buckets are longer than the new table has stripes (a Hopscotch copy
// that locked such a run stripe by stripe took some stripes twice and waited for itself).
TYPED_TEST(GrowthFactor, ReserveFarBeyondTheNextSizeMigratesOnce) {
  using Map = TypeParam;
  for (const auto& [from, to] :
       {std::pair<std::size_t, std::size_t>{1, 12'200}, {300, 2'000'000}}) {
    Map map(from);
    for (std::uint64_t key = 1; key <= 100; ++key) ASSERT_EQ(map.insert(key, ~key), Status::kOk);
    const std::uint64_t resizes_before = map.resizes();
    map.reserve(to);
    EXPECT_EQ(map.resizes() - resizes_before, 1u) << from << " -> " << to;
    EXPECT_EQ(map.bucket_count(), Map(to).bucket_count());
    for (std::uint64_t key = 1; key <= 100; ++key) ASSERT_EQ(map.find(key), ~key);
  }
}

// The maps that grow by less than 2, at their smallest factor, from their kFactorFrom size on:
// more threads than cores insert distinct keys through about ten migrations or more, while a
// reader checks keys inserted before they started. None is refused (a migration stuck for want
// of room in its new table would refuse them: cuckoo_map.hpp C1, hopscotch_map.hpp R2), none
// lost.
template <class Map>
class SlowGrowth : public ::testing::Test {};
using SlowGrowingMaps = ::testing::Types<SlowGrowingCuckooMap, SlowGrowingHopscotch>;
TYPED_TEST_SUITE(SlowGrowth, SlowGrowingMaps);

TYPED_TEST(SlowGrowth, ThreadsGrowingItFromItsFactorSizeAreNeverRefused) {
  constexpr unsigned kThreads = 8;
  TypeParam map(1);
  std::uint64_t first = 0;  // keys 1 .. first: those in the map when it reaches kFactorFrom
  while (map.bucket_count() < TypeParam::kFactorFrom) {
    ++first;
    ASSERT_EQ(map.insert(first, first), Status::kOk);
  }
  const std::uint64_t resizes_before = map.resizes();
  const std::uint64_t per_thread = 2 * first;  // 17 times the items: 9 or more steps of 1.25
  const auto key_of = [](unsigned t, std::uint64_t i) {
    return ccf::mix64(std::uint64_t{1} << 40 | (t + i * kThreads)) | 1;
  };
  std::atomic<std::uint64_t> refused{0}, misses{0};
  std::atomic<unsigned> writing{kThreads};
  {
    std::vector<std::jthread> threads;
    for (unsigned t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (std::uint64_t i = 0; i < per_thread; ++i) {
          if (map.insert(key_of(t, i), i) != Status::kOk) refused.fetch_add(1);
        }
        writing.fetch_sub(1);
      });
    }
    threads.emplace_back([&] {
      for (std::uint64_t key = 1; writing.load() != 0; key = key % first + 1) {
        if (map.find(key) != key) misses.fetch_add(1);
      }
    });
  }
  EXPECT_EQ(refused.load(), 0u);
  EXPECT_EQ(misses.load(), 0u);
  EXPECT_GE(map.resizes() - resizes_before, 8u) << "the map was meant to grow by its factor";
  EXPECT_EQ(map.size(), first + kThreads * per_thread);
  for (unsigned t = 0; t < kThreads; ++t) {
    for (std::uint64_t i = 0; i < per_thread; ++i) ASSERT_EQ(map.find(key_of(t, i)), i) << t;
  }
}

TYPED_TEST(TableResize, AgreesWithAMapWhileMigrating) {
  TypeParam table(1);
  std::unordered_map<std::uint64_t, std::uint64_t> model;
  std::mt19937_64 rng(5);
  const std::size_t ops = ccf::testing::scaled<std::size_t>(300'000, 8);
  std::size_t while_migrating = 0;
  for (std::size_t i = 0; i < ops; ++i) {
    const std::uint64_t key = 1 + rng() % (16 + i / 4);  // a range that grows with i
    const std::uint64_t value = rng();
    while_migrating += table.resizing();
    switch (rng() % 4) {
      case 0:
      case 1: {
        const bool fresh = !model.contains(key);
        ASSERT_EQ(table.insert(key, value), fresh ? Status::kOk : Status::kExists) << i;
        if (fresh) model[key] = value;
        break;
      }
      case 2:
        ASSERT_EQ(table.erase(key), model.erase(key) == 1 ? Status::kOk : Status::kNotFound) << i;
        break;
      default: {
        const auto it = model.find(key);
        ASSERT_EQ(table.find(key),
                  it == model.end() ? std::nullopt : std::optional<std::uint64_t>(it->second))
            << i;
        ASSERT_EQ(table.contains(key), it != model.end()) << i;
      }
    }
    ASSERT_EQ(table.size(), model.size()) << i;
  }
  EXPECT_GE(table.resizes(), 8u) << "the table was meant to grow through many sizes";
  // A migration of a table of more than one unit spans several updates (one unit each).
  EXPECT_GT(while_migrating, 20u) << "migrations did not span several operations";
  for (const auto& [key, value] : model) ASSERT_EQ(table.find(key), value);
}

// Grown from one bucket, the map holds its current table and the old tables under 64 KiB (their
// pages come from the heap and are kept): the larger old tables' pages were handed back. Without
// that, the old tables together hold about as many buckets as the current one.
TYPED_TEST(TableResize, GrownTableKeepsLittleMoreThanItsCurrentTable) {
  TypeParam table(1);
  const std::uint64_t n = ccf::testing::scaled<std::uint64_t>(400'000, 4);
  for (std::uint64_t key = 1; key <= n; ++key) ASSERT_EQ(table.insert(key, key), Status::kOk);
  table.reserve(n);  // any migration under way completes
  ASSERT_FALSE(table.resizing());
  const std::size_t current = Resizing<TypeParam>::current_bytes(table);
  EXPECT_LT(table.memory_bytes(), current + current / 2)
      << "old tables are still held: " << table.memory_bytes() << " bytes for "
      << table.bucket_count() << " head buckets";
  for (std::uint64_t key = 1; key <= n; ++key) ASSERT_EQ(table.find(key), key) << key;
}

// Many threads insert distinct keys into a table built from empty: every insert succeeds. A
// small table full of other threads' items that a thread does not yet see counted must not
// pass for a degenerate hash (refused with kFull): the tables count an item before storing it.
// The race is likeliest while the table has one bucket, so the test starts over many times.
// (Before that fix, CuckooMap refused inserts in 6% of 8-thread builds of 2,048 keys, each in a
// fresh process whose first touches of memory preempt threads often; in this warm process the
// same race shows rarely, so this test guards the growth path more than it reproduces it.)
TYPED_TEST(TableResize, ThreadsGrowingATableFromEmptyAreNeverRefused) {
  constexpr unsigned kThreads = 8;  // on 2 cores: threads are preempted between store and count
  const unsigned starts = ccf::testing::scaled<unsigned>(150, 10);
  const std::uint64_t per_thread = 256;
  for (unsigned start = 0; start < starts; ++start) {
    TypeParam table(1);
    std::atomic<std::uint64_t> refused{0};
    std::vector<std::jthread> threads;
    for (unsigned t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (std::uint64_t i = 0; i < per_thread; ++i) {
          const std::uint64_t key = ccf::mix64((std::uint64_t{start} << 32) + 1 + t + i * kThreads);
          if (table.insert(key, key) != Status::kOk) refused.fetch_add(1);
        }
      });
    }
    threads.clear();  // joins
    ASSERT_EQ(refused.load(), 0u) << "start " << start;
    ASSERT_EQ(table.size(), kThreads * per_thread);
  }
}

// Writers churn their own keys through many migrations and check each update at once against
// their model (a find right after it: an item lost, or left twice by a copy, shows on the next
// find or erase); readers look up keys inserted first and never touched. At the end every
// writer's model is in the table, and size() adds up.
TYPED_TEST(TableResize, HammerThroughMigrationsLosesAndDuplicatesNothing) {
  constexpr unsigned kWriters = 6, kReaders = 3;  // 9 threads on 2 cores
  constexpr std::uint64_t kStable = 3'000;
  constexpr std::uint64_t kSalt = 0xabcdef0123456789;  // a large salt: no stream holds key 0
  const std::uint64_t per_writer = ccf::testing::scaled<std::uint64_t>(6'000, 6);
  const std::uint64_t ops = 6 * per_writer;
  TypeParam table(1);
  const auto stable = ccf::testing::member_keys(kStable, kSalt);
  for (const std::uint64_t key : stable) ASSERT_EQ(table.insert(key, ~key), Status::kOk);
  const auto owned = ccf::testing::non_member_keys(kWriters * per_writer, kSalt);
  std::vector<std::unordered_map<std::uint64_t, std::uint64_t>> models(kWriters);
  std::atomic<unsigned> writers_left{kWriters};
  std::atomic<std::uint64_t> wrong{0}, stable_misses{0};
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937_64 rng(w + 1);
      auto& model = models[w];
      for (std::uint64_t i = 0; i < ops; ++i) {
        // Keys from a range that grows: the table keeps growing while the writers churn.
        const std::uint64_t key = owned[w * per_writer + rng() % (1 + i * per_writer / ops)];
        const bool was = model.contains(key);
        bool ok = true;
        switch (rng() % 3) {
          case 0:
          case 1:
            ok = table.insert(key, key ^ i) == (was ? Status::kExists : Status::kOk);
            if (!was) model[key] = key ^ i;
            break;
          default:
            ok = table.erase(key) == (was ? Status::kOk : Status::kNotFound);
            model.erase(key);
        }
        const auto it = model.find(key);
        ok &= table.find(key) ==
              (it == model.end() ? std::nullopt : std::optional<std::uint64_t>(it->second));
        ok &= table.contains(key) == (it != model.end());
        if (!ok) wrong.fetch_add(1);
      }
      writers_left.fetch_sub(1);
    });
  }
  for (unsigned r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      std::mt19937_64 rng(100 + r);
      for (std::uint64_t done = 0; writers_left.load() > 0 || done < 1000; ++done) {
        const std::uint64_t key = stable[rng() % kStable];
        if (table.find(key) != ~key || !table.contains(key)) stable_misses.fetch_add(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0u) << "an update or the lookup after it disagreed with the model";
  EXPECT_EQ(stable_misses.load(), 0u) << "a key nobody touched was missed";
  EXPECT_GE(table.resizes(), 5u) << "the churn was meant to race migrations";
  std::size_t expected = kStable;
  for (const auto& model : models) {
    expected += model.size();
    for (const auto& [key, value] : model) ASSERT_EQ(table.find(key), value);
  }
  EXPECT_EQ(table.size(), expected);
}

// Writers insert their own keys into a table grown from one bucket, assign each a second value,
// and publish how many they have done (release); readers look up acknowledged keys of every
// writer while migrations run: each must be found with its second value -- an update, once it
// has returned, is seen by every lookup in every thread that starts afterwards.
TYPED_TEST(TableResize, AcknowledgedUpdatesAreSeenByOtherThreadsWhileMigrating) {
  constexpr unsigned kWriters = 4, kReaders = 4;  // 8 threads on 2 cores
  const std::uint64_t per_writer = ccf::testing::scaled<std::uint64_t>(40'000, 8);
  TypeParam table(1);
  std::vector<std::vector<std::uint64_t>> keys;
  for (unsigned w = 0; w < kWriters; ++w) {
    keys.push_back(ccf::testing::member_keys(per_writer, (w + 1) * 0x9e3779b97f4a7c15));
  }
  std::vector<std::atomic<std::uint64_t>> done(kWriters);
  std::atomic<unsigned> writers_left{kWriters};
  std::atomic<std::uint64_t> wrong{0}, checked{0};
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      for (std::uint64_t i = 0; i < per_writer; ++i) {
        const std::uint64_t key = keys[w][i];
        bool ok = table.insert(key, key) == Status::kOk;
        ok &= table.insert_or_assign(key, ~key) == Status::kExists;
        if (!ok) wrong.fetch_add(1);
        done[w].store(i + 1, std::memory_order_release);  // acknowledges keys [0, i]
      }
      writers_left.fetch_sub(1, std::memory_order_release);
    });
  }
  for (unsigned r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      std::mt19937_64 rng(r + 11);
      std::uint64_t mine = 0, misses = 0;
      do {
        const unsigned w = static_cast<unsigned>(rng() % kWriters);
        const std::uint64_t acknowledged = done[w].load(std::memory_order_acquire);
        if (acknowledged == 0) continue;
        const std::uint64_t key = keys[w][rng() % acknowledged];
        misses += table.find(key) != ~key;
        misses += !table.contains(key);
        mine += 2;
      } while (writers_left.load(std::memory_order_acquire) != 0);
      wrong.fetch_add(misses);
      checked.fetch_add(mine);
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0u) << "of " << checked.load() << " lookups";
  EXPECT_GT(checked.load(), 0u);
  EXPECT_GE(table.resizes(), 8u) << "the inserts were meant to race many migrations";
  EXPECT_EQ(table.size(), kWriters * per_writer);
}

// While a thread is suspended in a migration, `threads` others work: each inserts per_thread
// keys of its own, checks each, and erases every other one. Returns how many answers were wrong.
template <class Table>
std::uint64_t others_work(Table& table, unsigned threads, std::uint64_t per_thread) {
  std::atomic<std::uint64_t> wrong{0};
  std::vector<std::jthread> others;
  for (unsigned t = 0; t < threads; ++t) {
    others.emplace_back([&, t] {
      const std::uint64_t first = (std::uint64_t{1} << 40) + t * per_thread;
      for (std::uint64_t key = first; key < first + per_thread; ++key) {
        if (table.insert(key, key) != Status::kOk) wrong.fetch_add(1);
        if (table.find(key) != key) wrong.fetch_add(1);
        if (key % 2 == 0 && table.erase(key) != Status::kOk) wrong.fetch_add(1);
      }
    });
  }
  for (auto& thread : others) thread.join();
  return wrong.load();
}

// Bucket locks that suspend one thread in the middle of its chunk: the armed thread, after the
// first head it migrates, waits there until released.
struct StallingLocks : ccf::clht::BucketLocks {
  std::atomic<std::thread::id> victim{};
  std::atomic<bool> stalled{false}, released{false};

  void migration_step() {
    if (std::this_thread::get_id() != victim.load() || stalled.load()) return;
    stalled.store(true);
    while (!released.load()) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
};
using StallingClht = ccf::BasicClht<StallingLocks>;

// A thread suspended mid-chunk holds nobody (M3): while it sleeps, other threads' inserts,
// erases and lookups complete, and so does the resize -- its chunk's other heads migrated by
// their claims; when it resumes, it finds its heads migrated (in a table whose pages are gone:
// they read as forwarded, M6) and its own insert completes.
TEST(ClhtResizeStall, AThreadSuspendedMidChunkHoldsNobody) {
  constexpr std::uint64_t kHeads = 2048;  // 128 KiB of heads: off the heap, so retired (M6)
  StallingClht table(3 * kHeads);
  ASSERT_EQ(table.bucket_count(), kHeads);
  auto& locks = table.writers();
  std::uint64_t victim_keys = 0;  // keys 1..victim_keys, once the victim is done
  std::thread victim([&] {
    locks.victim.store(std::this_thread::get_id());
    // Inserts until one begins a migration, then one more: its help() claims the first chunk
    // (nobody else is running) and stalls after that chunk's first head.
    std::uint64_t key = 1;
    for (; !table.resizing(); ++key) ASSERT_EQ(table.insert(key, key), Status::kOk);
    ASSERT_EQ(table.insert(key, key), Status::kOk);
    victim_keys = key;
  });
  ASSERT_TRUE(ccf::testing::eventually([&] { return locks.stalled.load(); }))
      << "the victim never reached the hook";
  ASSERT_TRUE(table.resizing());
  ASSERT_EQ(table.resizes(), 0u);

  constexpr unsigned kOthers = 4;
  const std::uint64_t per_other = 4 * 3 * kHeads / kOthers;
  EXPECT_EQ(others_work(table, kOthers, per_other), 0u);
  EXPECT_TRUE(locks.stalled.load() && !locks.released.load());
  EXPECT_GE(table.resizes(), 1u) << "the resize waited for the suspended thread";
  EXPECT_GE(table.bucket_count(), 2 * kHeads);

  locks.released.store(true);
  victim.join();
  ASSERT_GT(victim_keys, 3 * kHeads);
  for (std::uint64_t key = 1; key <= victim_keys; ++key) ASSERT_EQ(table.find(key), key) << key;
  EXPECT_EQ(table.size(), victim_keys + kOthers * per_other / 2);
}

// Starts the victim of a stall test: it inserts keys 1, 2, ... until one begins a migration,
// then one more, whose help() claims a share of it and stalls in the Hook; `keys` is then the
// last key it inserted. Returns once it has stalled (or did not within the test's patience).
template <class Hook, class Map>
std::jthread start_victim(Map& map, std::uint64_t& keys) {
  std::jthread victim([&map, &keys] {
    Hook::victim.store(std::this_thread::get_id());
    std::uint64_t key = 1;
    for (; !map.resizing(); ++key) ASSERT_EQ(map.insert(key, key), Status::kOk);
    ASSERT_EQ(map.insert(key, key), Status::kOk);
    keys = key;
  });
  static_cast<void>(ccf::testing::eventually([] { return Hook::stalled.load(); }));
  return victim;
}

// Suspends one ClhtLf thread (the victim) once: right after it froze a head of its claim (L2) --
// the head's keys are then in a frozen chain whose new heads nobody has built -- or, with
// `at_last_build`, once its build took a migration's last count, before it publishes (L5).
struct FrozenHeadHook {
  static inline std::atomic<std::thread::id> victim{};
  static inline std::atomic<bool> at_last_build{false}, stalled{false}, released{false};
  static inline std::atomic<std::uint64_t> head{0};
  static void on_frozen(std::uint64_t i) noexcept {
    if (!at_last_build.load()) stall(i);
  }
  static void on_last_build() noexcept {
    if (at_last_build.load()) stall(0);
  }
  static void stall(std::uint64_t i) noexcept {
    if (std::this_thread::get_id() != victim.load() || stalled.load()) return;
    head.store(i);
    stalled.store(true);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!released.load() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
  static void arm(bool last_build) {  // the state is static: a repeated run starts over
    at_last_build.store(last_build);
    stalled.store(false);
    released.store(false);
  }
};

// A ClhtLf thread suspended between freezing a head and building its new heads holds nobody
// (L3): lookups of the frozen head's keys answer from its chain, updates of them build the new
// heads themselves, the other claims build the rest and the resize completes; when the thread
// resumes, its copies find the heads built and its own insert completes.
TEST(ClhtLfResizeStall, AThreadSuspendedWithAFrozenHeadHoldsNobody) {
  using Map = ccf::BasicClhtLf<FrozenHeadHook>;
  constexpr std::uint64_t kHeads = 2048;
  Map map(3 * kHeads);
  ASSERT_EQ(map.bucket_count(), kHeads);
  FrozenHeadHook::arm(/*last_build=*/false);
  std::uint64_t victim_keys = 0;  // keys 1..victim_keys, once the victim is done
  std::jthread victim = start_victim<FrozenHeadHook>(map, victim_keys);
  ASSERT_TRUE(FrozenHeadHook::stalled.load()) << "the victim never reached the hook";
  ASSERT_TRUE(map.resizing());
  ASSERT_EQ(map.resizes(), 0u);

  // Keys of the frozen head -- among the victim's keys, found by their head index -- are found,
  // and one is erased and inserted again, while the victim sleeps.
  const std::uint64_t frozen = FrozenHeadHook::head.load();
  std::vector<std::uint64_t> frozen_keys;
  for (std::uint64_t key = 1; key < 4 * kHeads; ++key) {
    if (ccf::reduce_range(ccf::detail::ClhtSizing::hash(key), kHeads) == frozen &&
        map.find(key).has_value()) {
      frozen_keys.push_back(key);
    }
  }
  ASSERT_FALSE(frozen_keys.empty());
  for (const std::uint64_t key : frozen_keys) ASSERT_EQ(map.find(key), key) << key;
  ASSERT_EQ(map.erase(frozen_keys[0]), Status::kOk);
  ASSERT_EQ(map.find(frozen_keys[0]), std::nullopt);
  ASSERT_EQ(map.insert(frozen_keys[0], frozen_keys[0]), Status::kOk);

  constexpr unsigned kOthers = 4;
  const std::uint64_t per_other = 4 * 3 * kHeads / kOthers;
  EXPECT_EQ(others_work(map, kOthers, per_other), 0u);
  EXPECT_TRUE(FrozenHeadHook::stalled.load() && !FrozenHeadHook::released.load());
  EXPECT_GE(map.resizes(), 1u) << "the resize waited for the suspended thread";
  EXPECT_GE(map.bucket_count(), 2 * kHeads);

  FrozenHeadHook::released.store(true);
  victim.join();
  ASSERT_GT(victim_keys, 3 * kHeads);
  for (std::uint64_t key = 1; key <= victim_keys; ++key) ASSERT_EQ(map.find(key), key) << key;
  EXPECT_EQ(map.size(), victim_keys + kOthers * per_other / 2);
}

// A ClhtLf thread suspended after its build took the migration's last count, before it
// publishes, holds nobody either (L5): the next update that finds every head built publishes
// the new table, and further resizes follow; the victim's own publication then fails harmlessly.
TEST(ClhtLfResizeStall, AThreadSuspendedBeforeItPublishesHoldsNobody) {
  using Map = ccf::BasicClhtLf<FrozenHeadHook>;
  constexpr std::uint64_t kHeads = 64;  // one chunk: the victim's own claim builds every head
  Map map(3 * kHeads);
  FrozenHeadHook::arm(/*last_build=*/true);
  std::uint64_t victim_keys = 0;  // keys 1..victim_keys, once the victim is done
  std::jthread victim = start_victim<FrozenHeadHook>(map, victim_keys);
  ASSERT_TRUE(FrozenHeadHook::stalled.load()) << "the victim never reached the hook";
  ASSERT_EQ(map.resizes(), 0u);
  ASSERT_TRUE(map.resizing());

  EXPECT_EQ(others_work(map, 4, 3 * kHeads), 0u);
  EXPECT_TRUE(FrozenHeadHook::stalled.load() && !FrozenHeadHook::released.load());
  EXPECT_GE(map.resizes(), 2u) << "the publication waited for the suspended thread";

  FrozenHeadHook::released.store(true);
  victim.join();
  for (std::uint64_t key = 1; key <= victim_keys; ++key) ASSERT_EQ(map.find(key), key) << key;
  EXPECT_EQ(map.size(), victim_keys + 4 * (3 * kHeads) / 2);
}

// Suspends one thread after it has claimed a segment of a migration and before it locks it.
struct StallingHook {
  static inline std::atomic<std::thread::id> victim{};
  static inline std::atomic<bool> stalled{false}, released{false};
  static void on_move(std::uint64_t) noexcept {}
  static void on_claim(std::uint64_t) noexcept {
    if (std::this_thread::get_id() != victim.load() || stalled.load()) return;
    stalled.store(true);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!released.load() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
};

// A thread suspended between its claim of a segment and the segment's lock holds nobody (R4):
// while it sleeps, the others' updates and lookups complete and so does the resize -- its
// segment migrated when the cursor comes round to it again; when it resumes, it finds the
// segment moved, in a table whose buckets are gone (R6), and its own insert completes.
TEST(HopscotchResizeStall, AThreadSuspendedInItsClaimHoldsNobody) {
  using Map = ccf::HopscotchMap<32, StallingHook>;
  Map map(32 * Map::kSegment * 3 / 4);  // 32 segments, 192 KiB: off the heap, so retired
  const std::size_t homes = map.bucket_count();
  StallingHook::stalled.store(false);  // the hook's state is static: a repeated run starts over
  StallingHook::released.store(false);
  std::uint64_t victim_keys = 0;  // keys 1..victim_keys, once the victim is done
  std::jthread victim = start_victim<StallingHook>(map, victim_keys);
  ASSERT_TRUE(StallingHook::stalled.load()) << "the victim never reached the hook";
  ASSERT_TRUE(map.resizing());
  ASSERT_EQ(map.resizes(), 0u);

  constexpr unsigned kOthers = 4;
  const std::uint64_t per_other = 2 * homes / kOthers;
  EXPECT_EQ(others_work(map, kOthers, per_other), 0u);
  EXPECT_TRUE(StallingHook::stalled.load() && !StallingHook::released.load());
  EXPECT_GE(map.resizes(), 1u) << "the resize waited for the suspended thread";
  EXPECT_GE(map.bucket_count(), 2 * homes);

  StallingHook::released.store(true);
  victim.join();
  ASSERT_GT(victim_keys, homes / 2);
  for (std::uint64_t key = 1; key <= victim_keys; ++key) ASSERT_EQ(map.find(key), key) << key;
  EXPECT_EQ(map.size(), victim_keys + kOthers * per_other / 2);
}

// A CuckooMap thread suspended between its claim of a chunk and the chunk's stripes holds nobody
// (C4): while it sleeps, the others' updates and lookups complete and so does the resize; when it
// resumes, it finds the chunk moved and its own insert completes. (An update claims a chunk only
// once its key's own chunks are moved, so the victim inserts until one of its inserts claims.)
TEST(CuckooResizeStall, AThreadSuspendedInItsClaimHoldsNobody) {
  using Map = ccf::CuckooMap<std::uint64_t, std::uint64_t, std::hash<std::uint64_t>,
                             std::equal_to<std::uint64_t>, StallingHook>;
  Map map(2048 * Map::kSlots * 9 / 10);  // 2048 buckets, 160 KiB: off the heap, so retired
  const std::size_t buckets = map.bucket_count();
  StallingHook::stalled.store(false);
  StallingHook::released.store(false);
  std::uint64_t victim_keys = 0;  // keys 1..victim_keys, once the victim is done
  std::thread victim([&] {
    StallingHook::victim.store(std::this_thread::get_id());
    std::uint64_t key = 1;
    for (; !StallingHook::stalled.load(); ++key) ASSERT_EQ(map.insert(key, key), Status::kOk);
    victim_keys = key - 1;
  });
  ASSERT_TRUE(ccf::testing::eventually([] { return StallingHook::stalled.load(); }))
      << "the victim never reached the hook";
  ASSERT_TRUE(map.resizing());
  ASSERT_EQ(map.resizes(), 0u);

  constexpr unsigned kOthers = 4;
  EXPECT_EQ(others_work(map, kOthers, buckets / 2), 0u);
  EXPECT_TRUE(StallingHook::stalled.load() && !StallingHook::released.load());
  EXPECT_GE(map.resizes(), 1u) << "the resize waited for the suspended thread";
  EXPECT_GE(map.bucket_count(), 2 * buckets);

  StallingHook::released.store(true);
  victim.join();
  for (std::uint64_t key = 1; key <= victim_keys; ++key) ASSERT_EQ(map.find(key), key) << key;
  EXPECT_EQ(map.size(), victim_keys + kOthers * (buckets / 2) / 2);
}

// The hash a key has in the map below: the key itself (mix64 of its unmix64).
struct KeyIsItsHash {
  std::uint64_t operator()(std::uint64_t key) const noexcept { return ccf::testing::unmix64(key); }
};

// A migration that gets stuck (C2): 9 keys with one tag whose primaries in the new table are P
// and its alternate R, so that all 9 can only sit in those two buckets (8 slots) there, while the
// old table holds them in two bucket pairs (three or four buckets). The copy of the 9th finds no
// path, takes its chunk's items back and marks the migration stuck; the map goes on serving from
// both tables -- every key found, erased, assigned and inserted as a model says, inserts of keys
// with an unmoved chunk going to the new table until it is full.
TEST(CuckooResizeStuck, AStuckMigrationKeepsServingFromBothTables) {
  using Map = ccf::CuckooMap<std::uint64_t, std::uint64_t, KeyIsItsHash>;
  using Addressing = ccf::detail::Addressing<11>;
  constexpr std::uint64_t kOld = 64;  // buckets: several chunks
  Map map(static_cast<std::size_t>(kOld * Map::kSlots * Map::kSizingLoad));
  ASSERT_EQ(map.bucket_count(), kOld);
  const Addressing old_addressing(kOld), new_addressing(2 * kOld);
  // A tag, and buckets P and R = its alternate in the new table, whose old pairs differ (two
  // pairs, at most one bucket shared: room for the 9 keys in 12 or 16 slots).
  std::uint32_t tag = 1;
  std::uint64_t p = 0, r = 0;
  const auto differ = [&] {
    r = new_addressing.alternate(p, tag);
    const std::uint64_t a = p / 2, b = old_addressing.alternate(a, tag);
    const std::uint64_t c = r / 2, d = old_addressing.alternate(c, tag);
    const bool same_pair = (a == c && b == d) || (a == d && b == c);
    return r != p && a != b && c != d && !same_pair;
  };
  for (; !differ(); p = (p + 1) % (2 * kOld), tag += p == 0) {
    ASSERT_LT(tag, 64u) << "no buckets as the test needs";
  }
  // Keys (= hashes) with that tag whose bucket among 2 * kOld is `bucket`.
  const auto keys_at = [&](std::uint64_t bucket, unsigned count, unsigned first) {
    std::vector<std::uint64_t> keys;
    // The first hash of the bucket (2 * kOld, a power of two, divides 2^64).
    const std::uint64_t start = bucket * (~std::uint64_t{0} / (2 * kOld) + 1);
    for (unsigned j = first; j < first + count; ++j) {
      keys.push_back((start | 0x7ff) + 1 + (std::uint64_t{j} << 11) + tag);
    }
    return keys;
  };
  std::vector<std::uint64_t> crowd = keys_at(p, 5, 0);
  for (const std::uint64_t key : keys_at(r, 4, 5)) crowd.push_back(key);
  std::unordered_map<std::uint64_t, std::uint64_t> model;
  for (std::size_t i = 0; i < crowd.size(); ++i) {
    const std::uint64_t key = crowd[i];
    ASSERT_EQ(new_addressing.index(key), i < 5 ? p : r);
    ASSERT_EQ(Addressing::fingerprint(key), tag);
    ASSERT_EQ(map.insert(key, ~key), Status::kOk);
    model[key] = ~key;
  }
  // Random keys until the migration is stuck: it begins when the old table is nearly full, and
  // never completes.
  std::mt19937_64 rng(3);
  for (int i = 0; i < 20'000 && map.resizes() == 0; ++i) {
    const std::uint64_t key = rng() | 1;
    const Status status = map.insert(key, key);
    ASSERT_NE(status, Status::kExists);
    if (status == Status::kOk) model[key] = key;
  }
  ASSERT_TRUE(map.resizing());
  ASSERT_EQ(map.resizes(), 0u) << "the migration completed: the crowd fitted after all";
  // Every operation still answers as the model says.
  std::size_t full = 0;
  for (int i = 0; i < 20'000; ++i) {
    const std::uint64_t key =
        i % 4 == 0 ? crowd[rng() % crowd.size()] : (rng() % 2 ? rng() | 1 : model.begin()->first);
    const auto it = model.find(key);
    switch (rng() % 4) {
      case 0: {
        const Status status = map.insert(key, i);
        if (it != model.end()) {
          ASSERT_EQ(status, Status::kExists);
        } else if (status == Status::kFull) {
          ++full;
        } else {
          ASSERT_EQ(status, Status::kOk);
          model[key] = i;
        }
        break;
      }
      case 1:
        ASSERT_EQ(map.erase(key), it != model.end() ? Status::kOk : Status::kNotFound);
        if (it != model.end()) model.erase(it);
        break;
      case 2:
        if (it != model.end()) {
          ASSERT_EQ(map.insert_or_assign(key, i + 1), Status::kExists);
          it->second = i + 1;
        }
        break;
      default:
        ASSERT_EQ(map.find(key),
                  it == model.end() ? std::nullopt : std::optional<std::uint64_t>(it->second));
    }
  }
  EXPECT_GT(full, 0u) << "the new table was meant to fill";
  EXPECT_TRUE(map.resizing());
  EXPECT_EQ(map.size(), model.size());
  for (const auto& [key, value] : model) ASSERT_EQ(map.find(key), value) << key;

  // Then 4 threads (on 2 cores): each erases and re-inserts keys of its own share of the model,
  // checking every answer, while the crowd's keys, which none of them updates, are looked up by
  // all.
  constexpr unsigned kThreads = 4;
  std::vector<std::vector<std::pair<std::uint64_t, std::uint64_t>>> shares(kThreads);
  std::size_t next = 0;
  for (const auto& item : model) {
    if (std::find(crowd.begin(), crowd.end(), item.first) == crowd.end()) {
      shares[next++ % kThreads].push_back(item);
    }
  }
  std::atomic<std::uint64_t> wrong{0};
  {
    std::vector<std::jthread> threads;
    for (unsigned t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        std::vector<bool> present(shares[t].size(), true);  // a re-insert may get kFull
        for (int round = 0; round < 4; ++round) {
          for (std::size_t i = 0; i < shares[t].size(); ++i) {
            const auto [key, value] = shares[t][i];
            const std::uint64_t other = crowd[(key + round) % crowd.size()];
            bool ok = map.contains(other) == model.contains(other);  // nobody erases the crowd
            if (present[i]) ok &= map.erase(key) == Status::kOk;
            ok &= !map.contains(key);
            const Status again = map.insert(key, value);  // kFull: the new table has no room
            present[i] = again == Status::kOk;
            ok &= again == Status::kOk || again == Status::kFull;
            ok &=
                map.find(key) == (present[i] ? std::optional<std::uint64_t>(value) : std::nullopt);
            if (!ok) wrong.fetch_add(1);
          }
        }
      });
    }
  }
  EXPECT_EQ(wrong.load(), 0u);
}

// A table as a set whose migration has begun when the history starts: every update of the
// history takes its share (a chunk or a segment), and lookups meet forwarded heads.
template <class Table>
struct MigratingSet {
  static constexpr std::uint64_t kHeads = 8 * Resizing<Table>::kUnit;
  Table table{3 * kHeads};
  MigratingSet() {
    for (std::uint64_t key = 1000; !table.resizing(); ++key) {
      EXPECT_EQ(table.insert(key, key), Status::kOk);
    }
  }
  Status insert(std::uint64_t key) { return table.insert(key, key); }
  Status erase(std::uint64_t key) { return table.erase(key); }
  bool contains(std::uint64_t key) const { return table.contains(key); }
};

TYPED_TEST(TableResize, HistoriesRacingAMigrationAreLinearizable) {
  ccf::testing::check_small_histories<ccf::testing::SetModel>(
      [] { return std::make_unique<MigratingSet<TypeParam>>(); }, ccf::testing::scaled(300, 6));
}

}  // namespace
