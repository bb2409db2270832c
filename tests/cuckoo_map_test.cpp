// What is particular to CuckooMap (include/ccf/tables/cuckoo_map.hpp): keys and values of any
// trivially copyable type, a user hash (also a weak or degenerate one), its table limit, its
// space. The contract it shares with every table is tested in hash_table_contract_test.cpp.
#include "ccf/tables/cuckoo_map.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "sanitizer_scale.hpp"

namespace {

using ccf::Status;

// A 20-byte key (three words, the last one partly padding) and a 24-byte value.
struct Key {
  std::uint32_t a, b, c, d, e;
  friend bool operator==(const Key&, const Key&) = default;
  friend auto operator<=>(const Key&, const Key&) = default;
};
struct Value {
  std::uint64_t x, y, z;  // y = ~x and z = 3 x: a torn copy breaks these
  friend bool operator==(const Value&, const Value&) = default;
};
Value value_of(std::uint64_t x) {
  return {x, ~x, 3 * x};
}
bool whole(const Value& v) {
  return v.y == ~v.x && v.z == 3 * v.x;
}

// A good hash: XXH3 over the key's bytes (it has no padding).
struct KeyHash {
  std::size_t operator()(const Key& key) const noexcept {
    return ccf::hash_key(std::string_view(reinterpret_cast<const char*>(&key), sizeof key));
  }
};
// A weak hash: few distinct values, so buckets and tags collide all the time.
struct WeakHash {
  std::size_t operator()(const Key& key) const noexcept { return (key.a * 31 + key.e) % 97; }
};
// Every key hashes alike.
struct ConstantHash {
  std::size_t operator()(const Key&) const noexcept { return 42; }
};

Key key_of(std::uint64_t i) {
  const auto n = static_cast<std::uint32_t>(i);
  return {n, n ^ 0x5555, 7, n * 3, n % 1000};
}

TEST(CuckooMap, WideKeysAndValuesAgreeWithAMap) {
  ccf::CuckooMap<Key, Value, KeyHash> map(4);
  std::map<Key, Value> model;
  std::mt19937_64 rng(3);
  const std::size_t ops = ccf::testing::scaled<std::size_t>(300'000, 8);
  for (std::size_t i = 0; i < ops; ++i) {
    const Key key = key_of(rng() % (32 + i / 32));
    const Value value = value_of(rng());
    switch (rng() % 4) {
      case 0:
        ASSERT_EQ(map.insert(key, value),
                  model.emplace(key, value).second ? Status::kOk : Status::kExists);
        break;
      case 1: {
        const bool fresh = !model.contains(key);
        ASSERT_EQ(map.insert_or_assign(key, value), fresh ? Status::kOk : Status::kExists);
        model[key] = value;
        break;
      }
      case 2:
        ASSERT_EQ(map.erase(key), model.erase(key) == 1 ? Status::kOk : Status::kNotFound);
        break;
      default: {
        const auto found = map.find(key);
        const auto it = model.find(key);
        ASSERT_EQ(found.has_value(), it != model.end()) << i;
        if (found) {
          ASSERT_EQ(*found, it->second) << i;
        }
      }
    }
    ASSERT_EQ(map.size(), model.size()) << i;
  }
  EXPECT_GE(map.resizes(), 4u);
  for (const auto& [key, value] : model) ASSERT_EQ(map.find(key), value);
}

// With 97 distinct hashes, keys pile into 97 bucket pairs of 8 slots: the map holds up to 776
// of them and refuses the rest (kFull, nothing changed, nothing lost), without growing itself
// without end; erasing makes room again.
TEST(CuckooMap, WeakHashFillsItsPairsThenRefusesWithoutLosingAnything) {
  ccf::CuckooMap<Key, std::uint64_t, WeakHash> map(64);
  std::map<Key, std::uint64_t> model;
  std::size_t refused = 0;
  for (std::uint64_t i = 0; i < 2'000; ++i) {
    const Status status = map.insert(key_of(i), i);
    ASSERT_NE(status, Status::kExists);
    if (status == Status::kOk) {
      model[key_of(i)] = i;
    } else {
      ++refused;
    }
  }
  EXPECT_GT(refused, 0u);
  EXPECT_LE(model.size(), 97u * 8);
  EXPECT_EQ(map.size(), model.size());
  EXPECT_LE(map.bucket_count(), 4096u) << "a degenerate hash must not double the table on and on";
  for (const auto& [key, value] : model) ASSERT_EQ(map.find(key), value);
  for (std::uint64_t i = 2'000; i < 2'100; ++i) ASSERT_FALSE(map.contains(key_of(i)));
  const Key first = model.begin()->first;
  ASSERT_EQ(map.erase(first), Status::kOk);
  model.erase(first);
  for (std::uint64_t i = 0; i < 2'000; ++i) {
    if (!model.contains(key_of(i)) && map.insert(key_of(i), i) == Status::kOk) {
      model[key_of(i)] = i;
      break;
    }
  }
  EXPECT_EQ(map.size(), model.size());
  for (const auto& [key, value] : model) ASSERT_EQ(map.find(key), value);
}

// One-word keys, crowded: with 97 distinct hashes, keys that share a hash share its tag too, so
// only the key compare tells them apart, and erased keys' stale copies (an emptied slot keeps
// its key) sit beside live ones. Checked against a model through inserts, assignments, erases
// and finds, and while the table grows.
TEST(CuckooMap, OneWordKeysAreToldApartFromSameTagKeysAndStaleSlots) {
  struct WeakHash64 {
    std::size_t operator()(std::uint64_t key) const noexcept { return key % 97; }
  };
  ccf::CuckooMap<std::uint64_t, std::uint64_t, WeakHash64> map(8);
  std::map<std::uint64_t, std::uint64_t> model;
  std::mt19937_64 rng(5);
  const std::size_t ops = ccf::testing::scaled<std::size_t>(200'000, 4);
  for (std::size_t i = 0; i < ops; ++i) {
    const std::uint64_t key = rng() % 400;  // about 4 keys per hash: some pairs fill up
    const std::uint64_t value = rng();
    switch (rng() % 4) {
      case 0: {
        const Status status = map.insert_or_assign(key, value);
        if (status == Status::kFull) {
          ASSERT_FALSE(model.contains(key)) << i;
        } else {
          ASSERT_EQ(status, model.contains(key) ? Status::kExists : Status::kOk) << i;
          model[key] = value;
        }
        break;
      }
      case 1:
        ASSERT_EQ(map.erase(key), model.erase(key) == 1 ? Status::kOk : Status::kNotFound) << i;
        break;
      default: {
        const auto it = model.find(key);
        ASSERT_EQ(map.find(key), it == model.end() ? std::nullopt : std::optional(it->second)) << i;
        ASSERT_EQ(map.contains(key), it != model.end()) << i;
      }
    }
  }
  EXPECT_EQ(map.size(), model.size());
  EXPECT_GT(model.size(), 150u) << "the keys were meant to crowd their pairs";
  for (std::uint64_t key = 0; key < 400; ++key) {
    const auto it = model.find(key);
    ASSERT_EQ(map.find(key), it == model.end() ? std::nullopt : std::optional(it->second)) << key;
  }
}

TEST(CuckooMap, ConstantHashHoldsEightKeys) {
  ccf::CuckooMap<Key, std::uint64_t, ConstantHash> map(1000);
  for (std::uint64_t i = 0; i < 8; ++i) ASSERT_EQ(map.insert(key_of(i), i), Status::kOk) << i;
  const std::size_t buckets = map.bucket_count();
  EXPECT_EQ(map.insert(key_of(8), 8), Status::kFull);
  EXPECT_EQ(map.insert_or_assign(key_of(8), 8), Status::kFull);
  EXPECT_EQ(map.insert(key_of(3), 99), Status::kExists);
  EXPECT_EQ(map.bucket_count(), buckets);
  EXPECT_EQ(map.size(), 8u);
  for (std::uint64_t i = 0; i < 8; ++i) ASSERT_EQ(map.find(key_of(i)), i);
}

// Sized for n and filled with n 16-byte pairs: at most 24 bytes per item, with no resize. The
// table is reserved in 2 MiB pages (detail/page_buffer.hpp), and memory_bytes counts the last
// one whole: n is large enough that this rounding is a few percent, not a third, of the table.
TEST(CuckooMap, FilledToItsCapacityWithoutResizingInLittleSpace) {
  constexpr std::size_t kItems = 1'000'000;
  ccf::CuckooMap<std::uint64_t, std::uint64_t> map(kItems);
  std::mt19937_64 rng(5);
  for (std::size_t i = 0; i < kItems; ++i) {
    const std::uint64_t key = rng();
    ASSERT_EQ(map.insert(key, ~key), Status::kOk) << i;
  }
  EXPECT_EQ(map.resizes(), 0u);
  EXPECT_LE(static_cast<double>(map.memory_bytes()) / kItems, 24.0);
  EXPECT_GE(static_cast<double>(kItems) / static_cast<double>(map.capacity()), 0.85);
}

// Past its growth load the map doubles at the first insert that finds both its buckets full,
// rather than search cuckoo paths until none is left (near 0.97-0.98): its first doubling begins
// within a hair of that load, and it kept every item.
TEST(CuckooMap, DoublesPastItsGrowthLoadWithoutWaitingForAFailedPath) {
  using Map = ccf::CuckooMap<std::uint64_t, std::uint64_t>;
  constexpr std::size_t kItems = 100'000;
  Map map(kItems);
  const auto slots = static_cast<double>(map.capacity());
  ASSERT_GE(slots * Map::kSizingLoad, static_cast<double>(kItems));
  std::mt19937_64 rng(11);
  std::vector<std::uint64_t> keys;
  while (!map.resizing() && map.resizes() == 0) {
    ASSERT_LT(static_cast<double>(keys.size()), 0.97 * slots) << "no doubling begun";
    const std::uint64_t key = rng();
    ASSERT_EQ(map.insert(key, ~key), Status::kOk) << keys.size();
    keys.push_back(key);
  }
  const double load = static_cast<double>(keys.size()) / slots;
  EXPECT_GT(load, Map::kGrowthLoad) << "grew before its growth load";
  EXPECT_LT(load, Map::kGrowthLoad + 0.005) << "waited past its growth load";
  // Completes the migration under way: 2 * kItems needs more than the first table's buckets and
  // no more than twice as many.
  map.reserve(2 * kItems);
  EXPECT_EQ(static_cast<double>(map.capacity()), 2 * slots);
  EXPECT_EQ(map.resizes(), 1u);
  for (std::uint64_t key : keys) ASSERT_EQ(map.find(key), ~key);
}

// A map sized for n items, filled with n and then kept near n by inserts and erases that bring
// it 1% over n and back, again and again, never grows: the growth load sits above the sizing
// load. (When both were 0.9, the first insert past n that found its buckets full doubled it:
// twice the memory for a few items.)
TEST(CuckooMap, AChurnAroundTheSizeItWasMadeForDoesNotGrowIt) {
  using Map = ccf::CuckooMap<std::uint64_t, std::uint64_t>;
  constexpr std::size_t kItems = 100'000, kSwing = kItems / 100;
  Map map(kItems);
  std::mt19937_64 rng(13);
  std::vector<std::uint64_t> keys;
  const auto insert_new = [&](std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) {
      const std::uint64_t key = rng();
      ASSERT_EQ(map.insert(key, ~key), Status::kOk);
      keys.push_back(key);
    }
  };
  insert_new(kItems);
  for (int swing = 0; swing < 20; ++swing) {
    insert_new(kSwing);
    ASSERT_EQ(map.size(), kItems + kSwing);
    for (std::size_t i = 0; i < kSwing; ++i) {
      const std::size_t victim = rng() % keys.size();
      ASSERT_EQ(map.erase(keys[victim]), Status::kOk);
      keys[victim] = keys.back();
      keys.pop_back();
    }
  }
  EXPECT_EQ(map.resizes(), 0u);
  EXPECT_FALSE(map.resizing());
  ASSERT_EQ(map.size(), kItems);
  for (std::uint64_t key : keys) ASSERT_EQ(map.find(key), ~key);
}

// Once a migration is under way, an insert moves its key's chunks, or claims one, passing over
// chunks at the cursor that are moved already (detail/table_migration.hpp): one thread alone
// ends a migration in fewer inserts than it has chunks (1,782 for 2,276 here). A claim that took
// the chunk at the cursor even when moved moved nothing late in a migration, whose chunks the
// inserts' own moves had mostly taken: the migration lasted until the cursor came round (3,628).
TEST(CuckooMap, AMigrationEndsWithinAnInsertPerChunk) {
  using Map = ccf::CuckooMap<std::uint64_t, std::uint64_t>;
  Map map(1 << 16);
  const std::uint64_t chunks = (map.bucket_count() + Map::kChunk - 1) / Map::kChunk;
  std::mt19937_64 rng(13);
  std::vector<std::uint64_t> keys;
  while (!map.resizing()) {
    keys.push_back(rng());
    ASSERT_EQ(map.insert(keys.back(), 1), Status::kOk);
  }
  std::uint64_t inserts = 0;
  while (map.resizing()) {
    keys.push_back(rng());
    ASSERT_EQ(map.insert(keys.back(), 1), Status::kOk);
    ++inserts;
  }
  EXPECT_LE(inserts, chunks);
  for (std::uint64_t key : keys) ASSERT_EQ(map.find(key), 1u);
}

// Random inserts and erases against a model, the map checked against it every 512 operations;
// at the end every key is erased. Returns the most items seen displaced (in their alternate).
template <class Hash>
std::size_t churn_against_a_model(std::size_t capacity, std::uint64_t key_range,
                                  std::uint64_t seed) {
  ccf::CuckooMap<Key, std::uint64_t, Hash> map(capacity);
  std::map<Key, std::uint64_t> model;
  std::mt19937_64 rng(seed);
  std::size_t most_displaced = 0;
  const std::size_t ops = ccf::testing::scaled<std::size_t>(200'000, 8);
  for (std::size_t i = 0; i < ops; ++i) {
    const Key key = key_of(rng() % key_range);
    if (rng() % 2 == 0) {
      const Status status = map.insert(key, i);
      EXPECT_EQ(status == Status::kExists, model.contains(key)) << i;
      if (status == Status::kOk) model[key] = i;
    } else {
      EXPECT_EQ(map.erase(key), model.erase(key) == 1 ? Status::kOk : Status::kNotFound) << i;
    }
    if (i % 512 == 0) {
      for (const auto& [k, v] : model) EXPECT_EQ(map.find(k), v) << i;
      most_displaced = std::max(most_displaced, map.displaced());
      EXPECT_LE(map.displaced(), map.size()) << i;
    }
    if (::testing::Test::HasFailure()) return most_displaced;
  }
  EXPECT_EQ(map.size(), model.size());
  for (const auto& [k, v] : model) EXPECT_EQ(map.erase(k), Status::kOk);
  EXPECT_EQ(map.size(), 0u);
  EXPECT_EQ(map.displaced(), 0u) << "the overflow counts drifted from the items they count";
  return most_displaced;
}

// Lookups read a key's alternate bucket only when its primary counts a displaced item; a count
// too low would hide keys, one too high would cost lookups a line. Near full (a good hash, loads
// up to 0.9) and with bucket pairs packed by a weak hash (moves in both directions), every key
// stays findable and the counts return to zero with the items.
TEST(CuckooMap, DisplacedItemsAreCountedExactlyThroughChurn) {
  EXPECT_GT(churn_against_a_model<KeyHash>(3'000, 6'000, 1), 50u);
  EXPECT_GT(churn_against_a_model<WeakHash>(64, 2'000, 2), 50u);
}

// Wide values change under the readers' eyes (insert_or_assign, erase, re-insert, and the moves
// and resizes these cause) while 8 threads share 2 cores: a value read is never torn, and a key
// that nobody touches is never missed.
TEST(CuckooMap, WideValuesAreNeverTornUnderChurn) {
  constexpr unsigned kWriters = 4, kReaders = 4;
  constexpr std::uint64_t kStable = 500, kChurned = 4'000;
  const std::uint64_t rounds = ccf::testing::scaled<std::uint64_t>(60'000, 10);
  ccf::CuckooMap<Key, Value, KeyHash> map(16);
  for (std::uint64_t i = 0; i < kStable; ++i)
    ASSERT_EQ(map.insert(key_of(i), value_of(i)), Status::kOk);
  std::atomic<unsigned> writers_left{kWriters};
  std::atomic<std::uint64_t> torn{0}, missed{0};
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937_64 rng(w);
      for (std::uint64_t i = 0; i < rounds; ++i) {
        const Key key = key_of(kStable + w + kWriters * (rng() % (kChurned / kWriters)));
        if (rng() % 3 == 0) {
          map.erase(key);
        } else {
          map.insert_or_assign(key, value_of(rng()));
        }
      }
      writers_left.fetch_sub(1);
    });
  }
  for (unsigned r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      std::mt19937_64 rng(50 + r);
      for (std::uint64_t n = 0; writers_left.load() > 0 || n < 1000; ++n) {
        const std::uint64_t stable = rng() % kStable;
        if (map.find(key_of(stable)) != value_of(stable)) missed.fetch_add(1);
        if (const auto v = map.find(key_of(kStable + rng() % kChurned)); v && !whole(*v)) {
          torn.fetch_add(1);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(torn.load(), 0u);
  EXPECT_EQ(missed.load(), 0u);
  EXPECT_GE(map.resizes(), 3u);
  for (std::uint64_t i = 0; i < kStable + kChurned; ++i) map.erase(key_of(i));
  EXPECT_EQ(map.size(), 0u);
  EXPECT_EQ(map.displaced(), 0u) << "concurrent moves left the overflow counts wrong";
}

// A few hot keys whose wide values are reassigned without pause while readers read them: the
// window in which a reader could copy half of an old value and half of a new one is as wide as
// it gets. (Without the readers' validation this fails within a few thousand reads.)
TEST(CuckooMap, HotWideValuesAreNeverTorn) {
  constexpr unsigned kThreads = 4;  // 2 writers, 2 readers, on 2 cores
  constexpr std::uint64_t kHot = 4;
  const std::uint64_t rounds = ccf::testing::scaled<std::uint64_t>(400'000, 20);
  ccf::CuckooMap<Key, Value, KeyHash> map(64);
  for (std::uint64_t i = 0; i < kHot; ++i)
    ASSERT_EQ(map.insert(key_of(i), value_of(i)), Status::kOk);
  std::atomic<std::uint64_t> torn{0}, missed{0};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      for (std::uint64_t i = 0; i < rounds; ++i) {
        const Key key = key_of(i % kHot);
        if (t % 2 == 0) {
          map.insert_or_assign(key, value_of(rng()));
        } else if (const auto v = map.find(key); !v) {
          missed.fetch_add(1);
        } else if (!whole(*v)) {
          torn.fetch_add(1);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(torn.load(), 0u);
  EXPECT_EQ(missed.load(), 0u);
}

}  // namespace
