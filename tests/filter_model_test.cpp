// Model-based tests (tests/filter_model.hpp) of every cuckoo filter: random inserts, erases and
// lookups against an exact multiset model on tiny tables with short fingerprints, so that
// collisions, relocations, kFull, growth and save/load happen all the time. No false negative
// for a key inserted and not erased, size() exact, kFull changes nothing, erase of a live key
// succeeds: single-threaded for every filter (A), and with 2 and 8 threads sharing one filter,
// each checking its own keys, for the concurrent ones (B).
#include "filter_model.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <sstream>

#include "ccf/any_cuckoo_filter.hpp"
#include "ccf/concurrent/coarse_cuckoo_filter.hpp"
#include "ccf/concurrent/cop_cuckoo_filter.hpp"
#include "ccf/concurrent/striped_cuckoo_filter.hpp"
#include "ccf/cuckoo_filter.hpp"
#include "ccf/lockfree/lock_free_cuckoo_filter.hpp"
#include "ccf/sync/htm.hpp"
#include "ccf/sync/rw_lock.hpp"
#include "ccf/sync/spin_locks.hpp"
#include "sanitizer_scale.hpp"

namespace {

using ccf::FilterOptions;
using ccf::testing::check_concurrent_model;
using ccf::testing::check_model;
using ccf::testing::kThreadSanitizerExtra;
using ccf::testing::ModelConfig;
using ccf::testing::scaled;

// Operation counts: Release; ASan and TSan builds (sanitizer_scale.hpp) divide them, and TSan,
// slower still, by kThreadSanitizerExtra more (the concurrent tests, where TSan matters, by
// half of that).
constexpr std::uint64_t kOps = scaled<std::uint64_t>(1'000'000, 10) / kThreadSanitizerExtra;
// The lock-free filter's single-threaded runs are the longest of the suite: CI runs a fifth.
const std::uint64_t kLockFreeOps = ccf::testing::bounded<std::uint64_t>(
    scaled<std::uint64_t>(10'000'000, 20) / kThreadSanitizerExtra, 5);
constexpr std::uint64_t kConcurrentOps =
    scaled<std::uint64_t>(400'000, 10) / std::max<std::uint64_t>(kThreadSanitizerExtra / 2, 1);
// A tiny table: 64 items asked for (18 buckets of 4, 38 of 2); the lock-free filter, which
// runs 10x the operations, gets half of that (sweeps after kFull cost a lookup per item).
constexpr std::size_t kTiny = 64;
constexpr std::size_t kTinier = 32;
constexpr std::uint64_t kReloadEvery = 4096;

// ---- save + load round trips for the model's reload ------------------------------------

// Filters whose static load() builds a new filter (by unique_ptr; AnyCuckooFilter by value).
template <class Filter>
bool reload_static(std::unique_ptr<Filter>& filter) {
  std::stringstream bytes;
  filter->save(bytes);
  if constexpr (requires { Filter::load(bytes).get(); }) {
    filter = Filter::load(bytes);
  } else {
    filter = std::make_unique<Filter>(Filter::load(bytes));
  }
  return true;
}

// Lock-free filters whose grown state saves (format version 2: those with level_fp_bits, the
// same change; one line to drop for older code).
template <class Filter>
constexpr bool kLevelsSaved = requires(const Filter& f) {
  f.level_fp_bits(0);
};

// The lock-free filter saves one level in format version 1 and a grown filter's levels in
// version 2 (where it can: `levels_saved`), and its load takes the options the file does not
// hold (grow); where load(in, options) does not exist, a fixed-size filter is not reloaded (it
// would come back growing).
template <class Filter>
bool reload_lock_free(std::unique_ptr<Filter>& filter, typename Filter::Options options) {
  if (filter->levels() != 1 && !kLevelsSaved<Filter>) return false;
  std::stringstream bytes;
  if constexpr (requires { Filter::load(bytes, options); }) {
    filter->save(bytes);
    filter = Filter::load(bytes, options);
    return true;
  } else {
    if (!options.grow) return false;
    filter->save(bytes);
    filter = Filter::load(bytes);
    return true;
  }
}

// ---- A: sequential filters ----------------------------------------------------------------

template <class Filter>
class SequentialModel : public ::testing::Test {};
using SequentialShapes = ::testing::Types<
    ccf::CuckooFilter<ccf::PackedTable<4, 4>>, ccf::CuckooFilter<ccf::PackedTable<8, 4>>,
    ccf::CuckooFilter<ccf::PackedTable<8, 2>>, ccf::CuckooFilter<ccf::PackedTable<4, 2>>,
    ccf::CuckooFilter<ccf::SemiSortedTable<8>>>;
TYPED_TEST_SUITE(SequentialModel, SequentialShapes);

TYPED_TEST(SequentialModel, NoFalseNegativesNearFullWithSaveAndLoad) {
  auto filter = std::make_unique<TypeParam>(kTiny, FilterOptions{.seed = 11});
  check_model(filter, {.operations = kOps, .seed = 1, .reload_every = kReloadEvery},
              reload_static<TypeParam>);
}

TEST(AnyFilterModel, NoFalseNegativesNearFullWithSaveAndLoad) {
  auto filter = std::make_unique<ccf::AnyCuckooFilter>(ccf::FilterParams{
      .capacity = kTiny, .fp_bits = 4, .slots_per_bucket = 8, .options = {.seed = 12}});
  check_model(filter, {.operations = kOps, .seed = 2, .reload_every = kReloadEvery},
              reload_static<ccf::AnyCuckooFilter>);
}

using Coarse =
    ccf::CoarseCuckooFilter<ccf::PackedTable<4, 4>,
                            ccf::sync::LockOnly<ccf::sync::ReaderWriterLock<ccf::sync::TtasLock>>>;
using Striped = ccf::StripedCuckooFilter<4, 4>;
using Cop = ccf::CopCuckooFilter<4, 4>;

TEST(CoarseModel, NoFalseNegativesNearFullWithSaveAndLoad) {
  auto filter = std::make_unique<Coarse>(kTiny, FilterOptions{.seed = 13});
  check_model(filter, {.operations = kOps, .seed = 3, .reload_every = kReloadEvery},
              reload_static<Coarse>);
}

TEST(StripedModel, NoFalseNegativesNearFullWithSaveAndLoad) {
  auto filter = std::make_unique<Striped>(kTiny, FilterOptions{.seed = 14});
  check_model(filter, {.operations = kOps, .seed = 4, .reload_every = kReloadEvery},
              reload_static<Striped>);
}

TEST(CopModel, NoFalseNegativesNearFull) {
  auto filter = std::make_unique<Cop>(kTiny, FilterOptions{.seed = 15});
  check_model(filter, {.operations = kOps, .seed = 5});
}

// ---- A: the lock-free filter, fixed size and growing ---------------------------------------

template <class Filter>
class LockFreeModel : public ::testing::Test {};
// F = 4 needs the lock-free filter of commit 7b47a12 or later (one line to drop for older code).
using LockFreeWidths = ::testing::Types<ccf::LockFreeCuckooFilter<8>, ccf::LockFreeCuckooFilter<12>,
                                        ccf::LockFreeCuckooFilter<4>>;
TYPED_TEST_SUITE(LockFreeModel, LockFreeWidths);

TYPED_TEST(LockFreeModel, FixedSizeNoFalseNegativesNearFullWithSaveAndLoad) {
  const typename TypeParam::Options options{.filter = {.seed = 16}, .grow = false};
  auto filter = std::make_unique<TypeParam>(kTinier, options);
  check_model(filter, {.operations = kLockFreeOps, .seed = 6, .reload_every = kReloadEvery},
              [&](std::unique_ptr<TypeParam>& f) { return reload_lock_free(f, options); });
}

// Capacity 16 (5 buckets): grows to 3 levels, drains, re-grows level by level up to 6 levels
// (5 + 10 + ... + 160 buckets), then keeps filling to 30% of capacity() and draining. Growth
// happens early in a filter's life, so the run is cut into epochs of kGrownEpoch operations,
// each on a new filter: old levels stay populated while newer ones churn, all along the run.
constexpr std::uint64_t kGrownEpoch = 20'000;

// Saved and loaded every kReloadEvery operations (format version 2 once grown: every level, its
// width and contents), so that a reload happens at every stage of an epoch's growth.
TYPED_TEST(LockFreeModel, GrownNoFalseNegativesAfterEraseAndRegrowthWithSaveAndLoad) {
  const auto fresh = [] { return std::make_unique<TypeParam>(16); };  // default Options: grows
  auto filter = fresh();
  check_model(
      filter,
      {.operations = kLockFreeOps,
       .seed = 7,
       .grows = true,
       .max_levels = 6,
       .reload_every = kReloadEvery,
       .restart_every = kGrownEpoch},
      [](std::unique_ptr<TypeParam>& f) {
        return reload_lock_free(f, typename TypeParam::Options{});
      },
      fresh);
}

// ---- B: concurrent, each thread checking its own keys on a shared filter --------------------

template <class Filter>
class LockFreeConcurrentModel : public ::testing::Test {};
TYPED_TEST_SUITE(LockFreeConcurrentModel, LockFreeWidths);

TYPED_TEST(LockFreeConcurrentModel, FixedSizeTwoThreads) {
  TypeParam filter(256, {.filter = {.seed = 21}, .grow = false});
  check_concurrent_model(filter, {.operations = kConcurrentOps, .seed = 21}, 2);
}
TYPED_TEST(LockFreeConcurrentModel, FixedSizeEightThreads) {
  TypeParam filter(256, {.filter = {.seed = 22}, .grow = false});
  check_concurrent_model(filter, {.operations = kConcurrentOps, .seed = 22}, 8);
}
// In epochs (a new filter every 2 * kGrownEpoch operations), as the single-threaded test.
TYPED_TEST(LockFreeConcurrentModel, GrownTwoThreads) {
  check_concurrent_model<TypeParam>([] { return std::make_unique<TypeParam>(16); },
                                    {.operations = kConcurrentOps,
                                     .seed = 23,
                                     .grows = true,
                                     .max_levels = 6,
                                     .restart_every = 2 * kGrownEpoch},
                                    2);
}
TYPED_TEST(LockFreeConcurrentModel, GrownEightThreads) {
  check_concurrent_model<TypeParam>([] { return std::make_unique<TypeParam>(16); },
                                    {.operations = kConcurrentOps,
                                     .seed = 24,
                                     .grows = true,
                                     .max_levels = 6,
                                     .restart_every = 2 * kGrownEpoch},
                                    8);
}

// 2048 items: 545 buckets, 4 stripes, so moves cross stripes.
TEST(StripedConcurrentModel, TwoThreads) {
  Striped filter(2048, {.seed = 25});
  check_concurrent_model(filter, {.operations = kConcurrentOps, .seed = 25}, 2);
}
TEST(StripedConcurrentModel, EightThreads) {
  Striped filter(2048, {.seed = 26});
  check_concurrent_model(filter, {.operations = kConcurrentOps, .seed = 26}, 8);
}

TEST(CopConcurrentModel, TwoThreads) {
  Cop filter(256, {.seed = 27});
  check_concurrent_model(filter, {.operations = kConcurrentOps, .seed = 27}, 2);
}
TEST(CopConcurrentModel, EightThreads) {
  Cop filter(256, {.seed = 28});
  check_concurrent_model(filter, {.operations = kConcurrentOps, .seed = 28}, 8);
}

TEST(CoarseConcurrentModel, TwoThreads) {
  Coarse filter(256, {.seed = 29});
  check_concurrent_model(filter, {.operations = kConcurrentOps, .seed = 29}, 2);
}
TEST(CoarseConcurrentModel, EightThreads) {
  Coarse filter(256, {.seed = 30});
  check_concurrent_model(filter, {.operations = kConcurrentOps, .seed = 30}, 8);
}

}  // namespace
