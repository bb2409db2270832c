// Saved headers: for every filter that can save, every field of the header it writes is what
// was asked for or what the filter holds -- shape, bucket count, requested capacity, items,
// seed, max_kicks, payload size, victim -- read back with the library's own reader
// (detail::HeaderCodec), and a sequential filter loading the file reports the requested
// capacity, seed and max_kicks that were asked and finds every key.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "ccf/any_cuckoo_filter.hpp"
#include "ccf/concurrent/coarse_cuckoo_filter.hpp"
#include "ccf/concurrent/cop_cuckoo_filter.hpp"
#include "ccf/concurrent/striped_cuckoo_filter.hpp"
#include "ccf/cuckoo_filter.hpp"
#include "ccf/detail/addressing.hpp"
#include "ccf/detail/filter_format.hpp"
#include "ccf/lockfree/lock_free_cuckoo_filter.hpp"
#include "ccf/sync/htm.hpp"
#include "ccf/sync/rw_lock.hpp"
#include "ccf/sync/spin_locks.hpp"
#include "filter_shapes.hpp"
#include "saved_bytes.hpp"
#include "test_keys.hpp"

namespace {

using ccf::FilterOptions;
using ccf::Status;
using ccf::detail::FilterHeader;
using ccf::detail::HeaderCodec;
using ccf::detail::TableLayout;
using ccf::testing::member_keys;

// What every filter is asked for: none of them the defaults.
constexpr std::size_t kCapacity = 1000;
constexpr std::uint64_t kSeed = 0x5eed0123456789abULL;
constexpr unsigned kMaxKicks = 321;
constexpr FilterOptions kOptions{.seed = kSeed, .max_kicks = kMaxKicks};
constexpr std::size_t kItems = 300;

struct Asked {
  TableLayout layout;
  unsigned fp_bits;
  unsigned slots;
  std::size_t capacity = kCapacity;
  std::uint64_t seed = kSeed;
  unsigned max_kicks = kMaxKicks;
};

template <class Table>
Asked asked_for() {
  return {Table::kLayout == std::string_view("semi-sorted") ? TableLayout::kSemiSorted
                                                            : TableLayout::kPacked,
          Table::kFpBits, Table::kSlots};
}

// Buckets for `capacity` items at the documented default sizing load (docs/design.md:
// ceil(n / (b * load)), load 0.85 / 0.94 / 0.97 for b = 2 / 4 / 8).
std::uint64_t expected_buckets(std::size_t capacity, unsigned slots) {
  const double load = slots == 2 ? 0.85 : slots == 4 ? 0.94 : 0.97;
  return static_cast<std::uint64_t>(std::ceil(static_cast<double>(capacity) / (load * slots)));
}

// Payload bytes (docs/file-format.md): packed F * b bits per bucket; semi-sorted a 12-bit code
// and 4 * (F - 4) bits per bucket, bit-packed, rounded up to a byte.
std::uint64_t expected_payload(const Asked& asked, std::uint64_t buckets) {
  const std::uint64_t bucket_bits = asked.layout == TableLayout::kSemiSorted
                                        ? 12 + 4 * (asked.fp_bits - 4)
                                        : std::uint64_t{asked.fp_bits} * asked.slots;
  return (buckets * bucket_bits + 7) / 8;
}

using ccf::testing::saved;

FilterHeader header_of(const std::string& bytes) {
  std::istringstream in(bytes);
  return HeaderCodec::read(in);
}

// Every field but the victim's; `buckets` is the table's size in buckets.
void expect_header(const FilterHeader& h, const Asked& asked, std::uint64_t buckets,
                   std::size_t items, std::size_t file_bytes) {
  EXPECT_EQ(h.layout, asked.layout) << "header: layout";
  EXPECT_EQ(h.fp_bits, asked.fp_bits) << "header: fingerprint bits";
  EXPECT_EQ(h.slots, asked.slots) << "header: slots per bucket";
  EXPECT_EQ(h.buckets, buckets) << "header: buckets";
  EXPECT_EQ(h.capacity, asked.capacity) << "header: requested capacity";
  EXPECT_EQ(h.items, items) << "header: items";
  EXPECT_EQ(h.seed, asked.seed) << "header: seed";
  EXPECT_EQ(h.max_kicks, asked.max_kicks) << "header: max_kicks";
  EXPECT_EQ(h.payload_bytes, expected_payload(asked, h.buckets)) << "header: payload bytes";
  EXPECT_EQ(file_bytes, FilterHeader::kEncodedSize + h.payload_bytes + sizeof(std::uint64_t))
      << "file size";
}

void expect_no_victim(const FilterHeader& h) {
  EXPECT_FALSE(h.victim_used) << "header: victim used";
  EXPECT_EQ(h.victim_bucket, 0u) << "header: victim bucket";
  EXPECT_EQ(h.victim_fp, 0u) << "header: victim fingerprint";
}

// The victim entry is one of the stored keys': its fingerprint, in one of its two buckets.
template <unsigned FpBits>
bool victim_is_a_stored_key(const FilterHeader& h, std::span<const std::uint64_t> keys) {
  const ccf::detail::Addressing<FpBits> addressing(h.buckets);
  for (const std::uint64_t key : keys) {
    const std::uint64_t hash = ccf::hash_key(key, h.seed);
    const std::uint64_t primary = addressing.index(hash);
    const std::uint32_t fp = addressing.fingerprint(hash);
    if (fp == h.victim_fp &&
        (h.victim_bucket == primary || h.victim_bucket == addressing.alternate(primary, fp))) {
      return true;
    }
  }
  return false;
}

// A sequential filter loading the file reports what was asked and finds every key.
template <class Sequential>
void expect_sequential_load(const std::string& bytes, const Asked& asked, std::uint64_t buckets,
                            std::span<const std::uint64_t> keys) {
  std::istringstream in(bytes);
  std::unique_ptr<Sequential> loaded;
  ASSERT_NO_THROW(loaded = Sequential::load(in));
  EXPECT_EQ(loaded->requested_capacity(), asked.capacity) << "loaded: requested_capacity()";
  EXPECT_EQ(loaded->bucket_count(), buckets) << "loaded: bucket_count()";
  EXPECT_EQ(loaded->size(), keys.size()) << "loaded: size()";
  EXPECT_EQ(loaded->options().seed, asked.seed) << "loaded: seed";
  EXPECT_EQ(loaded->options().max_kicks, asked.max_kicks) << "loaded: max_kicks";
  std::size_t missing = 0;
  for (const std::uint64_t key : keys) missing += !loaded->contains(key);
  EXPECT_EQ(missing, 0u) << "loaded: keys not found";
}

template <class Filter>
std::vector<std::uint64_t> insert_keys(Filter& filter, std::size_t count, std::uint64_t salt) {
  const auto keys = member_keys(count, salt);
  for (const std::uint64_t key : keys) EXPECT_EQ(filter.insert(key), Status::kOk);
  return keys;
}

// ---- sequential filters, every shape ---------------------------------------------------

// Builds a Filter of kCapacity items with kOptions, inserts kItems keys, saves it, checks every
// header field against what was asked and loads the file into the sequential filter of Table's
// shape. Returns the file.
template <class Filter, class Table>
std::string expect_saved_as_asked(std::uint64_t salt) {
  Filter filter(kCapacity, kOptions);
  const auto keys = insert_keys(filter, kItems, salt);
  const Asked asked = asked_for<Table>();
  const std::string bytes = saved(filter);
  const FilterHeader h = header_of(bytes);
  const std::uint64_t buckets = expected_buckets(kCapacity, asked.slots);
  if constexpr (requires { filter.bucket_count(); }) {
    EXPECT_EQ(filter.bucket_count(), buckets);
  }
  expect_header(h, asked, buckets, filter.size(), bytes.size());
  expect_no_victim(h);
  expect_sequential_load<ccf::CuckooFilter<Table>>(bytes, asked, buckets, keys);
  return bytes;
}

template <class Filter>
class SequentialHeader : public ::testing::Test {};
TYPED_TEST_SUITE(SequentialHeader, ccf::testing::AllFilterShapes);

TYPED_TEST(SequentialHeader, EveryFieldIsWhatWasAsked) {
  expect_saved_as_asked<TypeParam, typename TypeParam::table_type>(1);
}

// Filled until kFull: the victim slot is in use, and the header names a stored key's
// fingerprint in one of that key's buckets; the loaded filter has it too.
TYPED_TEST(SequentialHeader, VictimFieldsAreAStoredKeys) {
  using Table = typename TypeParam::table_type;
  constexpr std::size_t kSmall = 200;
  TypeParam filter(kSmall, kOptions);
  const auto candidates = member_keys(4 * kSmall, 2);
  std::vector<std::uint64_t> keys;
  for (const std::uint64_t key : candidates) {
    if (filter.insert(key) != Status::kOk) break;
    keys.push_back(key);
  }
  ASSERT_TRUE(filter.victim_used());
  Asked asked = asked_for<Table>();
  asked.capacity = kSmall;
  const std::string bytes = saved(filter);
  const FilterHeader h = header_of(bytes);
  const std::uint64_t buckets = expected_buckets(kSmall, asked.slots);
  expect_header(h, asked, buckets, keys.size(), bytes.size());
  EXPECT_EQ(h.items, filter.size());
  EXPECT_TRUE(h.victim_used);
  EXPECT_LT(h.victim_bucket, h.buckets);
  EXPECT_NE(h.victim_fp, 0u);
  EXPECT_LE(h.victim_fp, Table::kFpMask);
  EXPECT_TRUE(victim_is_a_stored_key<Table::kFpBits>(h, keys));
  expect_sequential_load<TypeParam>(bytes, asked, buckets, keys);
  std::istringstream in(bytes);
  const auto loaded = TypeParam::load(in);
  EXPECT_TRUE(loaded->victim_used());
  EXPECT_EQ(saved(*loaded), bytes) << "a loaded filter saves the very same file";
}

// ---- AnyCuckooFilter -------------------------------------------------------------------

TEST(AnyFilterHeader, EveryFieldIsWhatWasAsked) {
  const ccf::FilterParams shapes[] = {
      {.capacity = kCapacity, .fp_bits = 12, .slots_per_bucket = 4, .options = kOptions},
      {.capacity = kCapacity, .fp_bits = 8, .slots_per_bucket = 2, .options = kOptions},
      {.capacity = kCapacity, .fp_bits = 16, .slots_per_bucket = 8, .options = kOptions},
      {.capacity = kCapacity,
       .fp_bits = 8,
       .slots_per_bucket = 4,
       .semi_sorted = true,
       .options = kOptions},
  };
  for (const ccf::FilterParams& params : shapes) {
    SCOPED_TRACE(std::to_string(params.fp_bits) + " bits, " +
                 std::to_string(params.slots_per_bucket) + " slots" +
                 (params.semi_sorted ? ", semi-sorted" : ""));
    ccf::AnyCuckooFilter filter(params);
    const auto keys = insert_keys(filter, kItems, 3);
    const Asked asked{params.semi_sorted ? TableLayout::kSemiSorted : TableLayout::kPacked,
                      params.fp_bits, params.slots_per_bucket};
    const std::string bytes = saved(filter);
    const FilterHeader h = header_of(bytes);
    const std::uint64_t buckets = expected_buckets(kCapacity, asked.slots);
    expect_header(h, asked, buckets, filter.size(), bytes.size());
    expect_no_victim(h);
    // Loaded (into the sequential filter of the file's shape, inside the variant).
    std::istringstream in(bytes);
    const ccf::AnyCuckooFilter loaded = ccf::AnyCuckooFilter::load(in);
    std::visit(
        [&](const auto& sequential) {
          EXPECT_EQ(sequential.requested_capacity(), kCapacity);
          EXPECT_EQ(sequential.bucket_count(), buckets);
          EXPECT_EQ(sequential.options().seed, kSeed);
          EXPECT_EQ(sequential.options().max_kicks, kMaxKicks);
        },
        loaded.variant());
    EXPECT_EQ(loaded.size(), kItems);
    for (const std::uint64_t key : keys) EXPECT_TRUE(loaded.contains(key));
  }
}

// ---- coarse ------------------------------------------------------------------------------

TEST(CoarseHeader, EveryFieldIsWhatWasAsked) {
  using Table = ccf::PackedTable<12, 4>;
  using Coarse = ccf::CoarseCuckooFilter<
      Table, ccf::sync::LockOnly<ccf::sync::ReaderWriterLock<ccf::sync::TtasLock>>>;
  expect_saved_as_asked<Coarse, Table>(4);
}

// ---- striped -----------------------------------------------------------------------------

template <class Filter>
class StripedHeader : public ::testing::Test {};
using StripedShapes =
    ::testing::Types<ccf::StripedCuckooFilter<12, 4>, ccf::StripedCuckooFilter<8, 2>,
                     ccf::StripedCuckooFilter<8, 8>, ccf::StripedCuckooFilter<4, 4>>;
TYPED_TEST_SUITE(StripedHeader, StripedShapes);

TYPED_TEST(StripedHeader, EveryFieldIsWhatWasAsked) {
  using Table = ccf::PackedTable<TypeParam::kFpBits, TypeParam::kSlots>;
  const std::string bytes = expect_saved_as_asked<TypeParam, Table>(5);
  // A striped filter loaded from the file saves it again unchanged.
  std::istringstream in(bytes);
  const auto loaded = TypeParam::load(in);
  EXPECT_EQ(saved(*loaded), bytes);
}

// ---- COP ---------------------------------------------------------------------------------

TEST(CopHeader, EveryFieldIsWhatWasAsked) {
  using Cop = ccf::CopCuckooFilter<12>;
  const std::string bytes = expect_saved_as_asked<Cop, ccf::PackedTable<12, 4>>(8);
  std::istringstream in(bytes);
  const auto loaded = Cop::load(in);
  EXPECT_EQ(saved(*loaded), bytes);
}

// ---- lock-free ---------------------------------------------------------------------------

template <class Filter>
class LockFreeHeader : public ::testing::Test {};
// F = 4 needs the lock-free filter of commit 7b47a12 or later (one line to drop for older code).
using LockFreeWidths = ::testing::Types<ccf::LockFreeCuckooFilter<8>, ccf::LockFreeCuckooFilter<12>,
                                        ccf::LockFreeCuckooFilter<4>>;
TYPED_TEST_SUITE(LockFreeHeader, LockFreeWidths);

// Built with the public constructor (growth on, as by default; 300 keys do not make it grow).
TYPED_TEST(LockFreeHeader, EveryFieldIsWhatWasAsked) {
  using Table = ccf::PackedTable<TypeParam::kFpBits, 4>;
  TypeParam filter(kCapacity, {.filter = kOptions});
  const auto keys = insert_keys(filter, kItems, 6);
  ASSERT_EQ(filter.levels(), 1u);
  const Asked asked = asked_for<Table>();
  const std::string bytes = saved(filter);
  const FilterHeader h = header_of(bytes);
  // The file's table is the filter's one level: all of capacity(), room for what was asked.
  const std::uint64_t buckets = filter.capacity() / 4;
  EXPECT_GE(buckets * 4, kCapacity);
  expect_header(h, asked, buckets, filter.size(), bytes.size());
  expect_no_victim(h);
  expect_sequential_load<ccf::CuckooFilter<Table>>(bytes, asked, buckets, keys);
}

// Built by load() from a sequential filter's file: saving it again gives the same header.
TYPED_TEST(LockFreeHeader, LoadedFilterSavesTheHeaderItWasLoadedFrom) {
  using Table = ccf::PackedTable<TypeParam::kFpBits, 4>;
  ccf::CuckooFilter<Table> sequential(kCapacity, kOptions);
  const auto keys = insert_keys(sequential, kItems, 7);
  const std::string bytes = saved(sequential);
  std::istringstream in(bytes);
  const auto loaded = TypeParam::load(in);
  const std::string again = saved(*loaded);
  const FilterHeader h = header_of(again);
  const std::uint64_t buckets = expected_buckets(kCapacity, 4);
  expect_header(h, asked_for<Table>(), buckets, kItems, again.size());
  expect_no_victim(h);
  expect_sequential_load<ccf::CuckooFilter<Table>>(again, asked_for<Table>(), buckets, keys);
}

// Grown to 3 levels: format version 2. Every header field is what was asked or what the filter
// holds; each level's record names its width (F, then the filter's kUpperFpBits), buckets
// (m * 2^k), items and payload; the file is the header plus each level's record, payload and
// checksum. A sequential filter refuses the file, naming the filter that loads it.
TYPED_TEST(LockFreeHeader, GrownFilterWritesVersionTwoWithEveryLevel) {
  TypeParam filter(kCapacity, {.filter = kOptions});
  const auto keys = insert_keys(filter, 4 * kCapacity, 8);
  ASSERT_EQ(filter.levels(), 3u);
  const std::string bytes = saved(filter);
  std::istringstream in(bytes);
  const FilterHeader h = HeaderCodec::read(in, ccf::detail::FileVersions::kOneTableOrLevels);
  const std::uint64_t m = filter.level_capacity(0) / 4;
  EXPECT_EQ(h.version, 2u);
  EXPECT_EQ(h.layout, TableLayout::kKcasWords);
  EXPECT_EQ(h.fp_bits, TypeParam::kFpBits);
  EXPECT_EQ(h.slots, 4u);
  EXPECT_EQ(h.buckets, m);
  EXPECT_EQ(h.capacity, kCapacity);
  EXPECT_EQ(h.items, keys.size());
  EXPECT_EQ(h.seed, kSeed);
  EXPECT_EQ(h.max_kicks, kMaxKicks);
  EXPECT_EQ(h.levels, 3u);
  EXPECT_EQ(h.upper_fp_bits, TypeParam::kUpperFpBits);
  EXPECT_FALSE(h.victim_used);
  std::uint64_t payload = 0, items = 0;
  for (unsigned k = 0; k < 3; ++k) {
    SCOPED_TRACE("level " + std::to_string(k));
    const ccf::detail::LevelRecord r = ccf::detail::LevelRecord::read(in, k);
    const unsigned width = k == 0 ? TypeParam::kFpBits : TypeParam::kUpperFpBits;
    EXPECT_EQ(r.fp_bits, width);
    EXPECT_EQ(filter.level_fp_bits(k), width);
    EXPECT_EQ(r.slots, 4u);
    EXPECT_EQ(r.buckets, m << k);
    EXPECT_EQ(r.items, filter.level_occupied(k));
    // floor(63 / width) slots per 64-bit word.
    const std::uint64_t per_word = 63 / width;
    EXPECT_EQ(r.payload_bytes, (r.buckets * 4 + per_word - 1) / per_word * 8);
    payload += r.payload_bytes;
    items += r.items;
    in.seekg(static_cast<std::streamoff>(r.payload_bytes + 8), std::ios::cur);
  }
  EXPECT_EQ(h.payload_bytes, payload);
  EXPECT_EQ(items, keys.size());
  EXPECT_EQ(bytes.size(),
            FilterHeader::kEncodedSize + payload + 3 * (ccf::detail::LevelRecord::kEncodedSize + 8))
      << "file size";
  std::istringstream again(bytes);
  try {
    static_cast<void>(ccf::CuckooFilter<ccf::PackedTable<TypeParam::kFpBits, 4>>::load(again));
    ADD_FAILURE() << "the sequential filter loaded a grown lock-free filter's file";
  } catch (const ccf::FormatError& error) {
    EXPECT_NE(
        std::string(error.what())
            .find("load it with LockFreeCuckooFilter<" + std::to_string(TypeParam::kFpBits) + ">"),
        std::string::npos)
        << error.what();
  }
}

}  // namespace
