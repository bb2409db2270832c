// Save / load: round trips for every layout (victim included), and every way a file can be
// wrong -- truncated, corrupted, foreign, another version or shape, absurd sizes -- gives a
// FormatError and leaves the filter being loaded into unchanged.
#include <gtest/gtest.h>

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "ccf/any_cuckoo_filter.hpp"
#include "ccf/concurrent/cop_cuckoo_filter.hpp"
#include "ccf/concurrent/striped_cuckoo_filter.hpp"
#include "ccf/cuckoo_filter.hpp"
#include "ccf/lockfree/lock_free_cuckoo_filter.hpp"
#include "filter_shapes.hpp"
#include "saved_bytes.hpp"
#include "test_keys.hpp"

namespace {

using ccf::CuckooFilter;
using ccf::FormatError;
using ccf::PackedTable;
using ccf::SemiSortedTable;
using ccf::Status;
using ccf::testing::member_keys;

template <class Filter>
std::size_t fill_until_full(Filter& filter, const std::vector<std::uint64_t>& keys) {
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (filter.insert(keys[i]) == Status::kFull) return i;
  }
  return keys.size();
}

using ccf::testing::saved;

// `file` with its header re-encoded after `edit` (checksum valid again).
template <class Edit>
std::string reheadered(const std::string& file, ccf::detail::FileVersions versions, Edit edit) {
  std::istringstream in(file);
  ccf::detail::FilterHeader header = ccf::detail::HeaderCodec::read(in, versions);
  edit(header);
  const auto encoded = ccf::detail::HeaderCodec::encode(header);
  return std::string(reinterpret_cast<const char*>(encoded.data()), encoded.size()) +
         file.substr(encoded.size());
}

// Loading `bytes` into a Filter must fail with a FormatError mentioning `reason`.
template <class Filter>
void expect_load_rejected(const std::string& bytes, const std::string& reason) {
  std::istringstream in(bytes);
  try {
    static_cast<void>(Filter::load(in));
    ADD_FAILURE() << "accepted a bad file (expected: " << reason << ")";
  } catch (const FormatError& error) {
    EXPECT_NE(std::string(error.what()).find(reason), std::string::npos)
        << "message: " << error.what() << "; expected to mention: " << reason;
  }
}

template <class Filter>
class RoundTrip : public ::testing::Test {};
TYPED_TEST_SUITE(RoundTrip, ccf::testing::AllFilterShapes);

TYPED_TEST(RoundTrip, FullFilterWithVictimSurvivesSaveAndLoad) {
  TypeParam original(1'000'000, {.seed = 77});
  const auto keys = member_keys(2'000'000, 9);
  const std::size_t stored = fill_until_full(original, keys);
  ASSERT_TRUE(original.victim_used());
  const std::string bytes = saved(original);

  std::istringstream in(bytes);
  const auto loaded = TypeParam::load(in);
  EXPECT_EQ(loaded->size(), stored);
  EXPECT_EQ(loaded->capacity(), original.capacity());
  EXPECT_EQ(loaded->requested_capacity(), original.requested_capacity());
  EXPECT_TRUE(loaded->victim_used());
  EXPECT_EQ(loaded->options().seed, 77u);
  std::size_t missing = 0;
  for (std::size_t i = 0; i < stored; ++i) missing += !loaded->contains(keys[i]);
  EXPECT_EQ(missing, 0u);
  EXPECT_EQ(saved(*loaded), bytes);  // bit-identical

  // The loaded filter keeps working: erases free room and the victim goes home (with tiny
  // fingerprints the first freed slot may not be reachable from the victim's buckets).
  std::size_t erased = 0;
  while (loaded->victim_used() && erased < stored)
    ASSERT_EQ(loaded->erase(keys[erased++]), Status::kOk);
  EXPECT_FALSE(loaded->victim_used());
  for (std::size_t i = erased; i < stored; ++i) ASSERT_TRUE(loaded->contains(keys[i])) << i;
}

TEST(AnyCuckooFilterLoad, ReadsAFileOfAnyShape) {
  CuckooFilter<SemiSortedTable<16>> original(50'000);
  for (std::uint64_t key = 0; key < 40'000; ++key) ASSERT_EQ(original.insert(key), Status::kOk);
  std::istringstream in(saved(original));
  const ccf::AnyCuckooFilter loaded = ccf::AnyCuckooFilter::load(in);
  EXPECT_EQ(loaded.shape(), original.shape());
  EXPECT_EQ(loaded.size(), 40'000u);
  for (std::uint64_t key = 0; key < 40'000; ++key) ASSERT_TRUE(loaded.contains(key));
}

// A small filter in a known state, and a check that it is still in that state.
class Corruption : public ::testing::Test {
 protected:
  using Filter = CuckooFilter<PackedTable<12, 4>>;

  void SetUp() override {
    for (std::uint64_t key = 0; key < 3000; ++key) ASSERT_EQ(source_.insert(key), Status::kOk);
    good_ = saved(source_);
  }

  void expect_rejected(const std::string& bytes, const std::string& reason) {
    expect_load_rejected<Filter>(bytes, reason);
  }

  // The good file with its header re-encoded after `edit` (checksum valid again).
  template <class Edit>
  std::string with_header(Edit edit) {
    return reheadered(good_, ccf::detail::FileVersions::kOneTable, edit);
  }

  Filter source_{4000};
  std::string good_;
};

TEST_F(Corruption, GoodFileLoads) {
  std::istringstream in(good_);
  const auto loaded = Filter::load(in);
  EXPECT_EQ(loaded->size(), 3000u);
  EXPECT_EQ(loaded->capacity(), source_.capacity());
  std::size_t missing = 0;
  for (std::uint64_t key = 0; key < 3000; ++key) missing += !loaded->contains(key);
  EXPECT_EQ(missing, 0u);
  EXPECT_EQ(saved(*loaded), good_);
}

TEST_F(Corruption, EveryTruncationIsRejected) {
  for (std::size_t length = 0; length < good_.size(); length += (length < 200 ? 1 : 97)) {
    std::istringstream in(good_.substr(0, length));
    EXPECT_THROW(static_cast<void>(Filter::load(in)), FormatError) << "length " << length;
  }
  expect_rejected(good_.substr(0, good_.size() - 1), "truncated");
}

TEST_F(Corruption, EveryFlippedHeaderByteIsRejected) {
  for (std::size_t at = 0; at < ccf::detail::FilterHeader::kEncodedSize; ++at) {
    std::string bytes = good_;
    bytes[at] = static_cast<char>(bytes[at] ^ 0x20);
    std::istringstream in(bytes);
    EXPECT_THROW(static_cast<void>(Filter::load(in)), FormatError) << "byte " << at;
  }
}

TEST_F(Corruption, FlippedPayloadOrChecksumIsRejected) {
  for (std::size_t at = ccf::detail::FilterHeader::kEncodedSize; at < good_.size(); at += 211) {
    std::string bytes = good_;
    bytes[at] = static_cast<char>(bytes[at] ^ 0x01);
    expect_rejected(bytes, "checksum");
  }
  std::string bytes = good_;
  bytes.back() = static_cast<char>(bytes.back() ^ 0x80);
  expect_rejected(bytes, "checksum");
}

TEST_F(Corruption, ForeignFilesAreRejected) {
  expect_rejected("", "bad magic");
  expect_rejected("hello, world: this is not a filter at all, just some text ...", "bad magic");
  expect_rejected(std::string(4096, '\0'), "bad magic");
  expect_rejected("CCFCUCKO", "truncated");
}

TEST_F(Corruption, OtherVersionIsRejected) {
  std::string bytes = good_;
  bytes[8] = 3;  // version field; the header checksum also fails, but version is checked first
  expect_rejected(bytes, "unsupported cuckoo filter format version 3");
}

TEST_F(Corruption, OtherShapeIsRejected) {
  CuckooFilter<PackedTable<16, 4>> other(1000);
  ASSERT_EQ(other.insert(std::uint64_t{1}), Status::kOk);
  expect_rejected(saved(other), "16-bit fingerprints");
  CuckooFilter<SemiSortedTable<12>> semi(1000);
  expect_rejected(saved(semi), "semi-sorted");
}

TEST_F(Corruption, ImpossibleParametersAreRejectedBeforeAllocating) {
  // Consistent, checksummed header claiming a 1 TiB table: refused, nothing allocated.
  expect_rejected(with_header([](auto& h) {
                    h.buckets = std::uint64_t{1} << 40;
                    h.payload_bytes = ccf::PackedTable<12, 4>::payload_bytes(h.buckets);
                  }),
                  "truncated");
  expect_rejected(with_header([](auto& h) { h.buckets = ~std::uint64_t{0}; }), "bucket count");
  expect_rejected(with_header([](auto& h) { h.payload_bytes += 6; }), "payload size");
  expect_rejected(with_header([](auto& h) { h.items += 1; }), "item count");
  expect_rejected(with_header([](auto& h) { h.items = ~std::uint64_t{0}; }), "item count");
  expect_rejected(with_header([](auto& h) {
                    h.victim_used = true;
                    h.victim_bucket = h.buckets;
                  }),
                  "victim");
  expect_rejected(with_header([](auto& h) {
                    h.victim_used = true;
                    h.victim_fp = 0;
                  }),
                  "victim");
  expect_rejected(with_header([](auto& h) { h.max_kicks = ~0u; }), "max_kicks");
  expect_rejected(with_header([](auto& h) { h.fp_bits = 13; }), "13-bit");
}

// Every load reads the header through the same checks: a max_kicks that no constructor accepts
// is refused by the concurrent filters' loads and by AnyCuckooFilter too, not only by the
// sequential filter (a fuzzer found the striped and lock-free loads taking it and saving it on).
TEST_F(Corruption, EveryLoadRefusesAnImpossibleMaxKicks) {
  const std::string bytes =
      with_header([](auto& h) { h.max_kicks = ccf::detail::kMaxKicksLimit + 1; });
  const auto expect_refused = [&](const char* which, auto load) {
    std::istringstream in(bytes);
    try {
      load(in);
      ADD_FAILURE() << which << " accepted max_kicks above the limit";
    } catch (const FormatError& error) {
      EXPECT_NE(std::string(error.what()).find("max_kicks"), std::string::npos) << error.what();
    }
  };
  expect_refused("sequential", [](std::istream& in) { static_cast<void>(Filter::load(in)); });
  expect_refused("striped", [](std::istream& in) {
    static_cast<void>(ccf::StripedCuckooFilter<12>::load(in));
  });
  expect_refused("COP",
                 [](std::istream& in) { static_cast<void>(ccf::CopCuckooFilter<12>::load(in)); });
  expect_refused("lock-free", [](std::istream& in) {
    static_cast<void>(ccf::LockFreeCuckooFilter<12>::load(in));
  });
  expect_refused("any", [](std::istream& in) { ccf::AnyCuckooFilter::load(in); });
}

// ---- format version 2: a lock-free filter grown to several levels ---------------------------

// A grown filter's file (3 levels) and what each of its levels spans in it.
class GrownCorruption : public ::testing::Test {
 protected:
  using Filter = ccf::LockFreeCuckooFilter<12>;
  static constexpr std::size_t kHeader = ccf::detail::FilterHeader::kEncodedSize;
  static constexpr std::size_t kRecord = ccf::detail::LevelRecord::kEncodedSize;

  struct Span {
    std::size_t record, payload, payload_bytes, checksum;  // offsets; the payload's size
  };

  void SetUp() override {
    for (std::uint64_t key = 0; key < 4000; ++key) ASSERT_EQ(source_.insert(key), Status::kOk);
    ASSERT_EQ(source_.levels(), 3u);
    good_ = saved(source_);
    std::size_t at = kHeader;
    for (unsigned k = 0; k < source_.levels(); ++k) {
      std::uint64_t payload = 0;
      std::memcpy(&payload, good_.data() + at + 24, sizeof payload);
      levels_.push_back({at, at + kRecord, payload, at + kRecord + payload});
      at += kRecord + payload + 8;
    }
    ASSERT_EQ(at, good_.size());
  }

  void expect_rejected(const std::string& bytes, const std::string& reason) {
    expect_load_rejected<Filter>(bytes, reason);
  }

  // The good file with level k's record edited and checksummed again.
  template <class Edit>
  std::string with_record(unsigned k, Edit edit) {
    std::istringstream in(good_.substr(levels_[k].record, kRecord));
    ccf::detail::LevelRecord record = ccf::detail::LevelRecord::read(in, k);
    edit(record);
    const auto encoded = record.encode();
    std::string bytes = good_;
    bytes.replace(levels_[k].record, kRecord, reinterpret_cast<const char*>(encoded.data()),
                  kRecord);
    return bytes;
  }
  // The good file with level k's payload word `word` set to `value`, its checksum recomputed.
  std::string with_word(unsigned k, std::size_t word, std::uint64_t value) {
    std::string bytes = good_;
    std::memcpy(bytes.data() + levels_[k].payload + 8 * word, &value, sizeof value);
    const std::uint64_t sum =
        XXH3_64bits(bytes.data() + levels_[k].payload, levels_[k].payload_bytes);
    std::memcpy(bytes.data() + levels_[k].checksum, &sum, sizeof sum);
    return bytes;
  }
  // The good file with its header edited and checksummed again.
  template <class Edit>
  std::string with_header(Edit edit) {
    return reheadered(good_, ccf::detail::FileVersions::kOneTableOrLevels, edit);
  }

  Filter source_{1024};
  std::string good_;
  std::vector<Span> levels_;
};

TEST_F(GrownCorruption, GoodFileLoads) {
  std::istringstream in(good_);
  const auto loaded = Filter::load(in);
  EXPECT_EQ(loaded->levels(), 3u);
  EXPECT_EQ(loaded->size(), 4000u);
  for (std::uint64_t key = 0; key < 4000; ++key) ASSERT_TRUE(loaded->contains(key)) << key;
}

TEST_F(GrownCorruption, EveryTruncationIsRejected) {
  for (std::size_t length = 0; length < good_.size(); length += (length < 400 ? 1 : 89)) {
    std::istringstream in(good_.substr(0, length));
    EXPECT_THROW(static_cast<void>(Filter::load(in)), FormatError) << "length " << length;
  }
  // Each level's record, payload and checksum cut short (seekable: found before any level is
  // read; the unseekable path is hostile_load_test's).
  for (const Span& level : levels_) {
    expect_rejected(good_.substr(0, level.record + kRecord / 2), "truncated");
    expect_rejected(good_.substr(0, level.payload + level.payload_bytes / 2), "truncated");
    expect_rejected(good_.substr(0, level.checksum + 4), "truncated");
  }
}

TEST_F(GrownCorruption, AFlippedByteInAnyLevelIsRejected) {
  for (std::size_t at = 0; at < kHeader; ++at) {
    std::string bytes = good_;
    bytes[at] = static_cast<char>(bytes[at] ^ 0x20);
    std::istringstream in(bytes);
    EXPECT_THROW(static_cast<void>(Filter::load(in)), FormatError) << "header byte " << at;
  }
  for (unsigned k = 0; k < levels_.size(); ++k) {
    SCOPED_TRACE("level " + std::to_string(k));
    const Span& level = levels_[k];
    for (std::size_t at = level.record; at < level.payload; ++at) {
      std::string bytes = good_;
      bytes[at] = static_cast<char>(bytes[at] ^ 0x04);
      expect_rejected(bytes, "record checksum mismatch");
    }
    for (std::size_t at = level.payload; at < level.checksum + 8; at += 97) {
      std::string bytes = good_;
      bytes[at] = static_cast<char>(bytes[at] ^ 0x01);
      expect_rejected(bytes, "checksum mismatch");
    }
    std::string bytes = good_;
    bytes[level.checksum + 7] = static_cast<char>(bytes[level.checksum + 7] ^ 0x80);
    expect_rejected(bytes, "payload checksum mismatch");
  }
}

// Forgeries whose checksums hold: each refused by the check behind them.
TEST_F(GrownCorruption, InconsistentLevelsAreRejected) {
  expect_rejected(with_record(1, [](auto& r) { r.buckets += 1; }), "does not match the header");
  expect_rejected(with_record(2, [](auto& r) { r.fp_bits = 12; }), "does not match the header");
  expect_rejected(with_record(0, [](auto& r) { r.payload_bytes += 8; }),
                  "does not match the header");
  expect_rejected(with_record(1, [](auto& r) { r.items += 1; }), "item count");
  expect_rejected(with_record(2, [](auto& r) { r.items = ~std::uint64_t{0}; }), "item count");
  // A word with the K-CAS bit, a bit above its last lane, or a fingerprint past the last slot.
  expect_rejected(with_word(1, 0, std::uint64_t{1} << 63), "malformed bucket");
  expect_rejected(with_word(2, 3, std::uint64_t{1} << 62), "malformed bucket");
  const std::size_t last_word = levels_[0].payload_bytes / 8 - 1;
  const std::uint64_t slots = source_.level_capacity(0);
  if (slots % Filter::kSlotsPerWord != 0) {  // level 0's last word has lanes past the last slot
    expect_rejected(with_word(0, last_word, std::uint64_t{1} << (12 * (Filter::kSlotsPerWord - 1))),
                    "malformed bucket");
  }
  expect_rejected(with_header([](auto& h) { h.items += 1; }), "item count");
  expect_rejected(with_header([](auto& h) { h.levels = 9; }), "level count");
  expect_rejected(with_header([](auto& h) { h.levels = 1; }), "level count");
  expect_rejected(with_header([](auto& h) { h.levels = 4; }), "payload size");
  expect_rejected(with_header([](auto& h) { h.upper_fp_bits = 12; }), "12-bit fingerprints after");
  expect_rejected(with_header([](auto& h) { h.payload_bytes += 8; }), "payload size");
  expect_rejected(with_header([](auto& h) { h.layout = ccf::detail::TableLayout::kPacked; }),
                  "unknown bucket layout");
}

TEST(SemiSortedCorruption, InvalidCodeIsRejected) {
  CuckooFilter<SemiSortedTable<12>> filter(100);
  std::string bytes = saved(filter);
  // Make the first bucket's 12-bit code 0xfff (>= 3876) and fix the payload checksum.
  const std::size_t payload = ccf::detail::FilterHeader::kEncodedSize;
  bytes[payload] = static_cast<char>(0xff);
  bytes[payload + 1] = static_cast<char>(bytes[payload + 1] | 0x0f);
  const std::size_t size = bytes.size() - payload - 8;
  const std::uint64_t sum = XXH3_64bits(bytes.data() + payload, size);
  bytes.replace(bytes.size() - 8, 8, reinterpret_cast<const char*>(&sum), 8);
  std::istringstream in(bytes);
  try {
    static_cast<void>(CuckooFilter<SemiSortedTable<12>>::load(in));
    ADD_FAILURE() << "accepted an invalid semi-sorted code";
  } catch (const FormatError& error) {
    EXPECT_NE(std::string(error.what()).find("malformed bucket"), std::string::npos)
        << error.what();
  }
}

TEST(AnyCuckooFilterLoad, RejectsUnsupportedShapeInFile) {
  CuckooFilter<PackedTable<12, 4>> filter(100);
  std::ostringstream out;
  filter.save(out);
  std::istringstream good(out.str());
  ccf::detail::FilterHeader header = ccf::detail::HeaderCodec::read(good);
  header.slots = 3;
  const auto encoded = ccf::detail::HeaderCodec::encode(header);
  std::istringstream in(std::string(reinterpret_cast<const char*>(encoded.data()), encoded.size()) +
                        out.str().substr(encoded.size()));
  EXPECT_THROW(ccf::AnyCuckooFilter::load(in), FormatError);
}

}  // namespace
