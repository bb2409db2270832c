// The concurrent filters save and load the sequential filter's format: a file written by any
// of them loads into any other of the same shape, with no item lost. A lock-free filter grown to
// several levels saves format version 2, which loads into a lock-free filter of the same F with
// every key found and every answer the same, and which every other filter refuses, naming why.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <vector>

#include "ccf/any_cuckoo_filter.hpp"
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

TEST(ConcurrentPersistence, ShapeMismatchIsRefused) {
  ccf::StripedCuckooFilter<16, 4> sixteen(1000);
  std::istringstream file(saved(sixteen));
  EXPECT_THROW(LockFree::load(file), ccf::FormatError);
}

// ---- grown lock-free filters: format version 2 --------------------------------------------

std::uint32_t version_of(const std::string& file) {
  std::uint32_t version = 0;
  std::memcpy(&version, file.data() + 8, sizeof version);
  return version;
}

// A stream over bytes that cannot seek, as a pipe: the load cannot measure what is left.
class Unseekable : public std::streambuf {
 public:
  explicit Unseekable(const std::string& bytes) {
    char* begin = const_cast<char*>(bytes.data());  // only read
    setg(begin, begin, begin + bytes.size());
  }
};

template <class Filter>
class GrownPersistence : public ::testing::Test {};
using LockFreeWidths = ::testing::Types<ccf::LockFreeCuckooFilter<4>, ccf::LockFreeCuckooFilter<8>,
                                        ccf::LockFreeCuckooFilter<12>>;
TYPED_TEST_SUITE(GrownPersistence, LockFreeWidths);

// Grown to >= 3 levels, saved (version 2) and loaded, through a seekable and an unseekable
// stream: the same levels, size and items, every key found, the same answer for 2^16 absent
// keys, and the loaded filter keeps working (grows further, erases keep every other key).
TYPED_TEST(GrownPersistence, AGrownFilterSavedAndLoadedFindsEveryKeyAndAnswersAsBefore) {
  TypeParam grown(1024, {.filter = {.seed = 94, .max_kicks = 123}});
  const auto keys = ccf::testing::member_keys(6000, 94);
  for (const auto key : keys) ASSERT_EQ(grown.insert(key), Status::kOk);
  ASSERT_GE(grown.levels(), 3u);
  const std::string file = saved(grown);
  EXPECT_EQ(version_of(file), 2u);
  const auto absent = ccf::testing::non_member_keys(1 << 16, 95);
  std::vector<bool> before;
  for (const auto key : absent) before.push_back(grown.contains(key));

  for (const bool seekable : {true, false}) {
    SCOPED_TRACE(seekable ? "seekable" : "unseekable");
    std::istringstream seekable_in(file);
    Unseekable buffer(file);
    std::istream unseekable_in(&buffer);
    const auto loaded = TypeParam::load(seekable ? seekable_in : unseekable_in);
    EXPECT_EQ(loaded->levels(), grown.levels());
    EXPECT_EQ(loaded->size(), keys.size());
    EXPECT_EQ(loaded->capacity(), grown.capacity());
    EXPECT_EQ(loaded->requested_capacity(), grown.requested_capacity());
    EXPECT_EQ(loaded->seed(), 94u);
    EXPECT_EQ(loaded->options().max_kicks, 123u);
    for (unsigned k = 0; k < grown.levels(); ++k) {
      EXPECT_EQ(loaded->level_occupied(k), grown.level_occupied(k)) << "level " << k;
      EXPECT_EQ(loaded->level_fp_bits(k), grown.level_fp_bits(k)) << "level " << k;
    }
    std::size_t missing = 0;
    for (const auto key : keys) missing += !loaded->contains(key);
    EXPECT_EQ(missing, 0u);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < absent.size(); ++i)
      differ += loaded->contains(absent[i]) != before[i];
    EXPECT_EQ(differ, 0u) << "absent keys answered differently after loading";
    // Loading is a fixed point from then on: the loaded filter's file loads to the same file.
    const std::string again = saved(*loaded);
    std::istringstream again_in(again);
    EXPECT_EQ(saved(*TypeParam::load(again_in)), again);
  }

  std::istringstream in(file);
  const auto loaded = TypeParam::load(in);
  const auto more = ccf::testing::member_keys(12'000, 96);
  for (const auto key : more) ASSERT_EQ(loaded->insert(key), Status::kOk);
  EXPECT_GT(loaded->levels(), grown.levels()) << "the loaded filter grows on";
  for (std::size_t i = 0; i < keys.size(); i += 2) ASSERT_EQ(loaded->erase(keys[i]), Status::kOk);
  std::size_t lost = 0;
  for (std::size_t i = 1; i < keys.size(); i += 2) lost += !loaded->contains(keys[i]);
  for (const auto key : more) lost += !loaded->contains(key);
  EXPECT_EQ(lost, 0u);
}

// An ungrown lock-free filter still writes version 1, which every filter of the shape loads.
TYPED_TEST(GrownPersistence, AnUngrownFilterStillWritesVersionOne) {
  TypeParam filter(1024);
  const auto keys = ccf::testing::member_keys(500, 97);
  for (const auto key : keys) ASSERT_EQ(filter.insert(key), Status::kOk);
  ASSERT_EQ(filter.levels(), 1u);
  const std::string file = saved(filter);
  EXPECT_EQ(version_of(file), 1u);
  std::istringstream in(file);
  const auto sequential = ccf::CuckooFilter<ccf::PackedTable<TypeParam::kFpBits, 4>>::load(in);
  for (const auto key : keys) ASSERT_TRUE(sequential->contains(key));
}

// Loading `file` into `load` throws FormatError whose message has every one of `parts`.
template <class Load>
void expect_refused(const std::string& file, Load load, std::vector<std::string> parts,
                    const std::string& who) {
  std::istringstream in(file);
  try {
    load(in);
    ADD_FAILURE() << who << " loaded a grown lock-free filter's file";
  } catch (const ccf::FormatError& error) {
    for (const std::string& part : parts) {
      EXPECT_NE(std::string(error.what()).find(part), std::string::npos)
          << who << ": " << error.what() << " (expected to mention " << part << ")";
    }
  }
}

// A version-2 file offered to a filter that cannot hold it: a FormatError that names the
// filter that loads it, or why this one cannot.
TEST(ConcurrentPersistence, GrownFilesAreRefusedByFiltersThatCannotHoldThem) {
  LockFree grown(1 << 10);
  for (const auto key : ccf::testing::member_keys(4000, 93)) {
    ASSERT_EQ(grown.insert(key), Status::kOk);
  }
  ASSERT_EQ(grown.levels(), 3u);
  const std::string file = saved(grown);
  const std::vector<std::string> names = {"grown to 3 levels", "LockFreeCuckooFilter<12>"};
  expect_refused(
      file, [](std::istream& in) { static_cast<void>(Sequential::load(in)); }, names,
      "CuckooFilter");
  expect_refused(
      file, [](std::istream& in) { static_cast<void>(Striped::load(in)); }, names,
      "StripedCuckooFilter");
  expect_refused(
      file, [](std::istream& in) { ccf::AnyCuckooFilter::load(in); }, names, "AnyCuckooFilter");
  expect_refused(
      file, [](std::istream& in) { static_cast<void>(ccf::LockFreeCuckooFilter<8>::load(in)); },
      {"grown to 3 levels", "load it with LockFreeCuckooFilter<12>, not LockFreeCuckooFilter<8>"},
      "LockFreeCuckooFilter<8>");
  expect_refused(
      file,
      [](std::istream& in) {
        static_cast<void>(LockFree::load(in, {.filter = {}, .grow = false}));
      },
      {"grown to 3 levels", "growth off"}, "LockFreeCuckooFilter<12> without growth");
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
