// The concurrent filters save and load the sequential filter's format: a file written by any
// of them loads into any other of the same shape, with no item lost.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "ccf/concurrent/striped_cuckoo_filter.hpp"
#include "ccf/cuckoo_filter.hpp"
#include "ccf/lockfree/lock_free_cuckoo_filter.hpp"
#include "saved_bytes.hpp"
#include "test_keys.hpp"

namespace {

using ccf::Status;
using Sequential = ccf::CuckooFilter<ccf::PackedTable<12, 4>>;
using Striped = ccf::StripedCuckooFilter<12, 4>;
using LockFree = ccf::LockFreeCuckooFilter<12>;

using ccf::testing::saved;

TEST(ConcurrentPersistence, FilesMoveBetweenSequentialStripedAndLockFree) {
  const auto keys = ccf::testing::member_keys(60'000, 91);
  Striped striped(65'536);
  for (const auto key : keys) ASSERT_EQ(striped.insert(key), Status::kOk);

  std::istringstream striped_file(saved(striped));
  auto lock_free = LockFree::load(striped_file);
  EXPECT_EQ(lock_free->size(), keys.size());
  for (const auto key : keys) ASSERT_TRUE(lock_free->contains(key));

  std::istringstream lock_free_file(saved(*lock_free));
  const auto sequential = Sequential::load(lock_free_file);
  EXPECT_EQ(sequential->size(), keys.size());
  for (const auto key : keys) ASSERT_TRUE(sequential->contains(key));
  EXPECT_EQ(saved(*sequential), saved(striped));  // the same bits all the way round

  std::istringstream sequential_file(saved(*sequential));
  auto striped_again = Striped::load(sequential_file);
  EXPECT_EQ(striped_again->size(), keys.size());
  for (const auto key : keys) ASSERT_TRUE(striped_again->contains(key));
  // The loaded filters keep working.
  for (const auto key : keys) ASSERT_EQ(striped_again->erase(key), Status::kOk);
  EXPECT_EQ(striped_again->size(), 0u);
  for (const auto key : keys) ASSERT_EQ(lock_free->erase(key), Status::kOk);
  EXPECT_EQ(lock_free->size(), 0u);
}

TEST(ConcurrentPersistence, SequentialVictimIsPlacedOrRefused) {
  // Placed: the victim's buckets are full, but the lock-free filter's cuckoo path search, one
  // level deeper than the sequential filter's, usually finds room (with no random walk, the
  // victim is the first item whose own search failed); then no item is lost. Whether it finds
  // room depends on the keys, so several key sets are tried: each file either loads with every
  // item or is refused naming the victim, and at least one loads.
  int placed = 0;
  for (std::uint64_t key_seed = 92; key_seed < 100; ++key_seed) {
    Sequential full(4096, {.max_kicks = 0});
    const auto keys = ccf::testing::member_keys(10'000, key_seed);
    std::size_t stored = 0;
    while (full.insert(keys[stored]) == Status::kOk) ++stored;
    ASSERT_TRUE(full.victim_used());
    std::istringstream file(saved(full));
    std::unique_ptr<LockFree> loaded;
    try {
      loaded = LockFree::load(file);
    } catch (const ccf::FormatError& error) {
      EXPECT_NE(std::string(error.what()).find("victim"), std::string::npos) << error.what();
      continue;
    }
    ++placed;
    EXPECT_EQ(loaded->size(), stored);
    for (std::size_t i = 0; i < stored; ++i) ASSERT_TRUE(loaded->contains(keys[i])) << key_seed;
  }
  EXPECT_GT(placed, 0) << "no victim found room in the lock-free filter's deeper search";

  // Refused: every slot of the table and the victim are in use, so there is no room at all.
  {
    Sequential full(4);
    const auto keys = ccf::testing::member_keys(100, 92);
    std::size_t stored = 0;
    while (full.insert(keys[stored]) == Status::kOk) ++stored;
    ASSERT_TRUE(full.victim_used());
    ASSERT_EQ(stored, full.bucket_count() * 4 + 1) << "the table is not completely full";
    std::istringstream file(saved(full));
    try {
      static_cast<void>(LockFree::load(file));
      ADD_FAILURE() << "a victim with no room anywhere was accepted";
    } catch (const ccf::FormatError& error) {
      EXPECT_NE(std::string(error.what()).find("victim"), std::string::npos) << error.what();
    }
  }
}

TEST(ConcurrentPersistence, ShapeMismatchAndGrownFiltersAreRefused) {
  ccf::StripedCuckooFilter<16, 4> sixteen(1000);
  std::istringstream file(saved(sixteen));
  EXPECT_THROW(LockFree::load(file), ccf::FormatError);
  LockFree grown(1 << 10);
  for (const auto key : ccf::testing::member_keys(4000, 93))
    ASSERT_EQ(grown.insert(key), Status::kOk);
  ASSERT_GT(grown.levels(), 1u);
  std::ostringstream out;
  EXPECT_THROW(grown.save(out), std::logic_error);
  EXPECT_TRUE(out.str().empty()) << "a refused save writes nothing";
}

// Bad sizing parameters are refused before anything is reserved, naming what was wrong.
TEST(ConcurrentPersistence, LockFreeFilterRefusesBadParameters) {
  const auto message = [](auto make) -> std::string {
    try {
      make();
    } catch (const std::invalid_argument& error) {
      return error.what();
    }
    return "";
  };
  EXPECT_NE(message([] { LockFree filter(0); }).find("capacity"), std::string::npos);
  EXPECT_NE(message([] { LockFree filter(1000, {.filter = {.max_load = 1.5}}); }).find("max_load"),
            std::string::npos);
  EXPECT_NE(message([] { LockFree filter(std::size_t{1} << 62); }).find("64 TiB"),
            std::string::npos);
}

}  // namespace
