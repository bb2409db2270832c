// SmartCuckooTable: the pseudoforest accounting against a brute-force recount after every
// operation, "refused without a kick" on a table of maximal subgraphs, and the table's contents
// against a model for every insertion policy, with and without a stash.
#include "ccf/tables/smart_cuckoo.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <numeric>
#include <random>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "sanitizer_scale.hpp"

namespace {

using ccf::Status;
using Table = ccf::SmartCuckooTable<>;
using ccf::smart_cuckoo::Insertion;
using ccf::testing::scaled;

// The components of the graph of the stored keys, recomputed from nothing.
struct BruteForce {
  std::vector<std::uint64_t> root;  // per bucket: a representative of its component
  std::map<std::uint64_t, std::uint64_t> vertices, edges;

  explicit BruteForce(const Table& t) : root(t.buckets()) {
    std::vector<std::uint64_t> parent(t.buckets());
    std::iota(parent.begin(), parent.end(), 0);
    const auto find = [&](std::uint64_t b) {
      while (parent[b] != b) b = parent[b];
      return b;
    };
    std::vector<std::pair<std::uint64_t, std::uint64_t>> stored;
    for (std::uint64_t b = 0; b < t.buckets(); ++b) {
      const auto key = t.key_in(b);
      if (!key) continue;
      const auto [a, c] = t.candidates(*key);
      EXPECT_TRUE(b == a || b == c) << "key " << *key << " stored outside its buckets";
      parent[find(a)] = find(c);
      stored.emplace_back(a, c);
    }
    for (std::uint64_t b = 0; b < t.buckets(); ++b) {
      root[b] = find(b);
      ++vertices[root[b]];
    }
    for (const auto& [a, c] : stored) ++edges[root[a]];
  }
  bool maximal(std::uint64_t bucket) const {
    const std::uint64_t r = root[bucket];
    return edges.contains(r) && edges.at(r) == vertices.at(r);
  }
};

// The table's union-find is the same partition with the same counts.
void expect_accounting_exact(const Table& t, const BruteForce& truth) {
  std::map<std::uint64_t, std::uint64_t> ours_to_truth, truth_to_ours;
  for (std::uint64_t b = 0; b < t.buckets(); ++b) {
    const Table::Component c = t.component(b);
    const std::uint64_t r = truth.root[b];
    const auto [it, fresh] = ours_to_truth.try_emplace(c.root, r);
    ASSERT_EQ(it->second, r) << "bucket " << b << ": two true components share a root";
    const auto [back, fresh_back] = truth_to_ours.try_emplace(r, c.root);
    ASSERT_EQ(back->second, c.root) << "bucket " << b << ": one true component, two roots";
    ASSERT_EQ(c.vertices, truth.vertices.at(r)) << "bucket " << b;
    ASSERT_EQ(c.edges, truth.edges.contains(r) ? truth.edges.at(r) : 0) << "bucket " << b;
  }
}

// Random inserts, erases and lookups on a tiny table, keys from a small space so that the
// table runs full and erases split components often.
TEST(SmartCuckoo, AccountingMatchesABruteForceRecountAfterEveryOperation) {
  const std::uint64_t ops = scaled<std::uint64_t>(1'000'000, 20);
  std::uint64_t done = 0, refused = 0, erased = 0, recomputed = 0;
  for (const std::uint64_t m : {4u, 16u, 64u}) {
    for (const std::size_t stash : {0u, 2u}) {
      Table t(m, {.insertion = Insertion::kSmart, .stash = stash, .seed = m * 7 + stash});
      std::unordered_map<std::uint64_t, std::uint64_t> model;
      std::mt19937_64 rng(m + stash);
      for (std::uint64_t i = 0; i < ops / 6; ++i, ++done) {
        const std::uint64_t key = rng() % (3 * m);
        const auto what = rng() % 100;
        if (what < 50) {
          const BruteForce before(t);
          const auto [a, b] = t.candidates(key);
          const bool fits =
              !t.key_in(a) || !t.key_in(b) || !before.maximal(a) || !before.maximal(b);
          const std::uint64_t kicks = t.stats().kicks;
          const std::size_t stash_before = t.stash_size();
          const Status s = t.insert(key, i);
          if (model.contains(key)) {
            ASSERT_EQ(s, Status::kExists);
            continue;
          }
          const bool stashed = t.stash_size() > stash_before;
          if (s == Status::kOk) model[key] = i;
          if (s == Status::kOk && !stashed) {
            ASSERT_TRUE(fits) << "placed although both candidates' components are maximal";
          } else {  // refused by the tables: stashed, or kFull
            ASSERT_TRUE(s == Status::kOk || s == Status::kFull);
            ASSERT_FALSE(fits) << "refused although a candidate's component is a tree";
            ASSERT_EQ(t.stats().kicks, kicks) << "a refused insert kicked";
            ++refused;
          }
        } else if (what < 80) {
          const Status s = t.erase(key);
          ASSERT_EQ(s, model.erase(key) == 1 ? Status::kOk : Status::kNotFound);
          erased += s == Status::kOk;
        } else {
          const auto found = t.find(key);
          const auto it = model.find(key);
          ASSERT_EQ(found.has_value(), it != model.end()) << "key " << key;
          if (found) {
            ASSERT_EQ(*found, it->second);
          }
        }
        ASSERT_EQ(t.size(), model.size());
        expect_accounting_exact(t, BruteForce(t));
        if (::testing::Test::HasFatalFailure()) return;
      }
      recomputed += t.stats().recomputed_buckets;
    }
  }
  EXPECT_GE(done, ops - 6);
  EXPECT_GT(refused, ops / 100);  // the tables did run full
  EXPECT_GT(erased, ops / 10);
  EXPECT_GE(recomputed, erased);  // every erase re-united at least its own bucket
}

// Fills tables until every bucket is full (every component maximal), then offers fresh keys:
// the smart table refuses every one without a single kick, where the textbook table spends
// max_loop kicks on each, undoes them and refuses too.
TEST(SmartCuckoo, RefusesWithoutKickingWhenEverySubgraphIsMaximal) {
  constexpr std::uint64_t m = 32;
  Table smart(m, {.insertion = Insertion::kSmart});
  Table textbook(m, {.insertion = Insertion::kMaxLoop, .max_loop = 100});
  std::mt19937_64 rng(5);
  std::vector<std::uint64_t> stored;
  for (std::uint64_t tries = 0; smart.size() < 2 * m && tries < 10'000'000; ++tries) {
    const std::uint64_t key = rng();
    if (smart.insert(key, key) == Status::kOk) stored.push_back(key);
  }
  ASSERT_EQ(smart.size(), 2 * m) << "could not fill every bucket";
  const BruteForce truth(smart);
  for (std::uint64_t b = 0; b < smart.buckets(); ++b) ASSERT_TRUE(truth.maximal(b));
  for (const std::uint64_t key : stored) ASSERT_EQ(textbook.insert(key, key), Status::kOk);

  const std::uint64_t smart_kicks = smart.stats().kicks;
  const std::uint64_t refused_before = smart.stats().refused_unkicked;
  constexpr unsigned kFresh = 1000;
  for (unsigned i = 0; i < kFresh; ++i) {
    const std::uint64_t key = rng();
    ASSERT_EQ(smart.insert(key, key), Status::kFull);
    ASSERT_EQ(textbook.insert(key, key), Status::kFull);
  }
  EXPECT_EQ(smart.stats().kicks, smart_kicks);  // not one kick
  EXPECT_EQ(smart.stats().refused_unkicked - refused_before, kFresh);
  EXPECT_EQ(textbook.stats().futile_kicks, std::uint64_t{kFresh} * 100);
  EXPECT_EQ(textbook.stats().failed_after_kicks, kFresh);
  for (const std::uint64_t key : stored) {  // the undone walks lost nothing
    ASSERT_EQ(textbook.find(key), key);
    ASSERT_EQ(smart.find(key), key);
  }
}

// Every policy, with and without a stash: the table holds exactly the model's keys and values
// through inserts, reassignments and erases (stash entries move back into the tables when
// erases make room).
TEST(SmartCuckoo, EveryInsertionPolicyKeepsExactlyTheModelsContents) {
  const std::uint64_t ops = scaled<std::uint64_t>(300'000, 10);
  for (const Insertion insertion : {Insertion::kSmart, Insertion::kMaxLoop, Insertion::kBfs}) {
    for (const std::size_t stash : {0u, 4u}) {
      constexpr std::uint64_t m = 64;
      Table t(m, {.insertion = insertion, .max_loop = 64, .stash = stash, .seed = 3});
      std::unordered_map<std::uint64_t, std::uint64_t> model;
      std::mt19937_64 rng(static_cast<unsigned>(insertion) * 10 + stash);
      std::uint64_t full = 0;
      for (std::uint64_t i = 0; i < ops; ++i) {
        const std::uint64_t key = rng() % (3 * m);
        switch (rng() % 4) {
          case 0: {
            const Status s = t.insert(key, i);
            if (model.contains(key)) {
              ASSERT_EQ(s, Status::kExists);
            } else if (s == Status::kOk) {
              model[key] = i;
            } else {
              ASSERT_EQ(s, Status::kFull);
              ++full;
            }
            break;
          }
          case 1: {
            const Status s = t.insert_or_assign(key, i);
            if (model.contains(key)) {
              ASSERT_EQ(s, Status::kExists);
              model[key] = i;
            } else if (s == Status::kOk) {
              model[key] = i;
            } else {
              ASSERT_EQ(s, Status::kFull);
            }
            break;
          }
          case 2:
            ASSERT_EQ(t.erase(key), model.erase(key) == 1 ? Status::kOk : Status::kNotFound);
            break;
          default: {
            const auto it = model.find(key);
            const auto found = t.find(key);
            ASSERT_EQ(found.has_value(), it != model.end());
            if (found) {
              ASSERT_EQ(*found, it->second);
            }
          }
        }
        ASSERT_EQ(t.size(), model.size());
        ASSERT_LE(t.stash_size(), stash);
      }
      for (const auto& [key, value] : model) ASSERT_EQ(t.find(key), value);
      EXPECT_GT(full, 0u) << "the table never ran full";
      if (insertion != Insertion::kSmart) {
        EXPECT_GT(t.stats().kicks, 0u);
      }
    }
  }
}

// Options::grow: a refused insert doubles the tables instead, for every policy; every key stays
// findable through the rehashes, and the smart table's accounting is exact after them (and
// after erases on the grown table).
TEST(SmartCuckoo, GrowsInsteadOfRefusingWhenAsked) {
  constexpr std::uint64_t kKeys = 5000;
  for (const Insertion insertion : {Insertion::kSmart, Insertion::kMaxLoop, Insertion::kBfs}) {
    Table t(4, {.insertion = insertion, .max_loop = 64, .seed = 9, .grow = true});
    std::mt19937_64 rng(static_cast<unsigned>(insertion) + 1);
    std::vector<std::uint64_t> keys(kKeys);
    for (auto& key : keys) key = rng();
    for (std::size_t i = 0; i < keys.size(); ++i) {
      ASSERT_EQ(t.insert(keys[i], i), Status::kOk) << "key " << i;
    }
    EXPECT_EQ(t.size(), kKeys);
    // One-slot tables refuse from load ~0.5 on: 5000 keys need m >= 5000, i.e. 4 * 2^11.
    EXPECT_GE(t.buckets(), 2 * kKeys);
    EXPECT_GE(t.stats().resizes, 11u);
    for (std::size_t i = 0; i < keys.size(); ++i) ASSERT_EQ(t.find(keys[i]), i);
    for (std::size_t i = 0; i < keys.size(); i += 2) ASSERT_EQ(t.erase(keys[i]), Status::kOk);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      ASSERT_EQ(t.contains(keys[i]), i % 2 == 1) << "key " << i;
    }
    if (insertion == Insertion::kSmart) expect_accounting_exact(t, BruteForce(t));
  }
  Table fixed(4);  // without grow: kFull, nothing changed
  std::uint64_t key = 0;
  while (fixed.insert(++key, key) == Status::kOk) {
  }
  EXPECT_EQ(fixed.size(), key - 1);
  EXPECT_FALSE(fixed.contains(key));
  EXPECT_EQ(fixed.stats().resizes, 0u);
}

TEST(SmartCuckoo, BadArgumentsAreRefusedWithAReason) {
  EXPECT_THROW(Table(0), std::invalid_argument);
  EXPECT_THROW(Table(Table::kMaxBucketsPerTable + 1), std::length_error);
  EXPECT_THROW(Table(8, {.insertion = Insertion::kMaxLoop, .max_loop = 0}), std::invalid_argument);
  EXPECT_THROW(Table(8, {.insertion = Insertion::kBfs}).component(0), std::logic_error);
  try {
    Table(0);
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("buckets_per_table"), std::string::npos);
  }
}

// The textbook walk with a stash keeps the key its walk left homeless: every key stays findable.
TEST(SmartCuckoo, MaxLoopStashesTheHomelessKey) {
  Table t(8, {.insertion = Insertion::kMaxLoop, .max_loop = 10, .stash = 3, .seed = 11});
  std::vector<std::uint64_t> stored;
  std::mt19937_64 rng(1);
  while (t.stash_size() < 3) {
    const std::uint64_t key = rng();
    ASSERT_EQ(t.insert(key, ~key), Status::kOk);
    stored.push_back(key);
  }
  for (const std::uint64_t key : stored) ASSERT_EQ(t.find(key), ~key);
  EXPECT_GE(t.stats().stashed, 3u);
}

}  // namespace
