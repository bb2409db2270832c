// The Bloom file format (detail/bloom_format.hpp, docs/file-format.md): every Bloom filter
// loads what it saved, sequential and concurrent filters of a layout read each other's files,
// and every malformed input -- through a seekable stream and one that cannot seek -- is a
// FormatError with the message that names what was wrong, never a crash or an allocation of
// what a forged header announces.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <sstream>
#include <streambuf>
#include <string>
#include <string_view>
#include <utility>

#include "ccf/bloom_filter.hpp"
#include "ccf/scalable_bloom_filter.hpp"
#include "test_keys.hpp"

namespace {

using ccf::FormatError;

// A stream over bytes that cannot seek (tellg fails), as a pipe.
class OneWayBuf : public std::streambuf {
 public:
  explicit OneWayBuf(std::string bytes) : bytes_(std::move(bytes)) {
    setg(bytes_.data(), bytes_.data(), bytes_.data() + bytes_.size());
  }

 private:
  std::string bytes_;
};

template <class Filter>
std::string saved(const Filter& filter) {
  std::ostringstream out;
  filter.save(out);
  return out.str();
}

// The message of the FormatError that loading `bytes` gives, through a seekable stream
// (seekable) or one that cannot seek; "" if it loads.
template <class Filter>
std::string load_error(const std::string& bytes, bool seekable = true) {
  try {
    if (seekable) {
      std::istringstream in(bytes);
      static_cast<void>(Filter::load(in));
    } else {
      OneWayBuf buf(bytes);
      std::istream in(&buf);
      static_cast<void>(Filter::load(in));
    }
  } catch (const FormatError& error) {
    return error.what();
  }
  return "";
}

template <class T>
void put_at(std::string& bytes, std::size_t at, T value) {
  std::memcpy(bytes.data() + at, &value, sizeof value);
}

// `bytes` with the field at `at` replaced and the 80-byte header's checksum made right again.
template <class T>
std::string reheadered(std::string bytes, std::size_t at, T value) {
  put_at(bytes, at, value);
  put_at(bytes, 72, static_cast<std::uint64_t>(XXH3_64bits(bytes.data(), 72)));
  return bytes;
}

template <class F>
class BloomFileTest : public ::testing::Test {};
using Filters =
    ::testing::Types<ccf::BloomFilter, ccf::BlockedBloomFilter, ccf::CountingBloomFilter,
                     ccf::ConcurrentBloomFilter, ccf::ConcurrentBlockedBloomFilter,
                     ccf::ConcurrentCountingBloomFilter>;
TYPED_TEST_SUITE(BloomFileTest, Filters);

TYPED_TEST(BloomFileTest, RoundTripThroughBothStreams) {
  TypeParam filter(3000, 12, 99);
  const auto keys = ccf::testing::member_keys(3000);
  for (const std::uint64_t key : keys) filter.insert(key);
  const std::string bytes = saved(filter);
  for (const bool seekable : {true, false}) {
    std::istringstream plain(bytes);
    OneWayBuf buf(bytes);
    std::istream one_way(&buf);
    const TypeParam loaded =
        TypeParam::load(seekable ? static_cast<std::istream&>(plain) : one_way);
    EXPECT_EQ(loaded.size(), filter.size());
    EXPECT_EQ(loaded.seed(), 99u);
    EXPECT_EQ(loaded.hash_count(), filter.hash_count());
    EXPECT_EQ(saved(loaded), bytes);
    for (const std::uint64_t key : keys) ASSERT_TRUE(loaded.contains(key));
    for (const std::uint64_t key : ccf::testing::non_member_keys(3000)) {
      ASSERT_EQ(loaded.contains(key), filter.contains(key));
    }
  }
}

TEST(BloomFile, SequentialAndConcurrentReadEachOther) {
  ccf::CountingBloomFilter seq(100, 16);
  for (std::uint64_t key = 0; key < 20; ++key) {
    for (int times = 0; times < 16; ++times) seq.insert(key);  // saturates counters
  }
  std::istringstream in(saved(seq));
  const auto conc = ccf::ConcurrentCountingBloomFilter::load(in);
  EXPECT_EQ(conc.saturations(), seq.saturations());
  EXPECT_GT(conc.saturations(), 0u);
  EXPECT_EQ(saved(conc), saved(seq));
}

// Every check, with its message: the header, then its fields one at a time (each with a valid
// checksum, so the field check itself is what refuses), then the payload.
TEST(BloomFile, MalformedFilesNameWhatIsWrong) {
  using Blocked = ccf::BlockedBloomFilter;
  Blocked filter(1000, 10);
  for (std::uint64_t key = 0; key < 1000; ++key) filter.insert(key);
  const std::string good = saved(filter);
  ASSERT_EQ(load_error<Blocked>(good), "");
  const std::string payload_bytes = std::to_string(good.size() - 88);

  EXPECT_EQ(load_error<Blocked>(""), "not a ccf Bloom filter (bad magic)");
  EXPECT_EQ(load_error<Blocked>("CCFCUCKO" + good.substr(8)), "not a ccf Bloom filter (bad magic)");
  EXPECT_EQ(load_error<Blocked>(good.substr(0, 12)), "truncated Bloom filter header");
  EXPECT_EQ(load_error<Blocked>(good.substr(0, 60)), "truncated Bloom filter header");
  EXPECT_EQ(load_error<Blocked>(reheadered(good, 8, std::uint32_t{2})),
            "unsupported Bloom filter format version 2 (this build reads version 1)");
  EXPECT_EQ(load_error<ccf::BloomFilter>(good),
            "the file holds a blocked Bloom filter (ccf::BlockedBloomFilter); this filter is a "
            "standard Bloom filter (ccf::BloomFilter)");
  EXPECT_EQ(load_error<Blocked>(reheadered(good, 12, std::uint32_t{9})),
            "the file holds an unknown Bloom filter kind 9; this filter is a blocked Bloom filter "
            "(ccf::BlockedBloomFilter)");
  std::string flipped = good;
  flipped[20] ^= 1;
  EXPECT_EQ(load_error<Blocked>(flipped), "Bloom filter header checksum mismatch (corrupted file)");
  EXPECT_EQ(load_error<Blocked>(reheadered(good, 36, std::uint32_t{1})),
            "corrupted reserved header field (not zero)");
  EXPECT_EQ(load_error<Blocked>(reheadered(good, 16, std::uint64_t{0})),
            "corrupted Bloom filter capacity 0");
  EXPECT_EQ(load_error<Blocked>(reheadered(good, 24, std::uint64_t{10000})),
            "corrupted bit count 10000 for capacity 1000 (a positive multiple of 512, at most 64 "
            "bits per item)");
  EXPECT_EQ(load_error<Blocked>(reheadered(good, 24, std::uint64_t{512} * 1000)),
            "corrupted bit count 512000 for capacity 1000 (a positive multiple of 512, at most 64 "
            "bits per item)");
  EXPECT_EQ(load_error<Blocked>(reheadered(good, 64, std::uint64_t{8})),
            "payload size does not match the bit count");
  EXPECT_EQ(load_error<Blocked>(reheadered(good, 32, std::uint32_t{31})),
            "corrupted hash count 31 (this build uses " + std::to_string(filter.hash_count()) +
                " for 10240 bits and capacity 1000)");
  EXPECT_EQ(load_error<Blocked>(reheadered(good, 48, ~std::uint64_t{0})),
            "corrupted item or saturation count (above 2^63 - 1)");
  EXPECT_EQ(load_error<Blocked>(reheadered(good, 56, std::uint64_t{3})),
            "corrupted saturation count (not zero in a filter without counters)");

  const std::string cut = good.substr(0, good.size() - 100);
  EXPECT_EQ(load_error<Blocked>(cut),
            "truncated Bloom filter: " + std::to_string(good.size() - 80) +
                " bytes announced for the payload and its checksum, " +
                std::to_string(cut.size() - 80) + " present");
  EXPECT_EQ(load_error<Blocked>(cut, false), "truncated Bloom filter payload: " + payload_bytes +
                                                 " bytes announced, " +
                                                 std::to_string(cut.size() - 80) + " present");
  EXPECT_EQ(load_error<Blocked>(good.substr(0, good.size() - 3), false),
            "truncated Bloom filter: the payload checksum is missing");
  std::string bad_payload = good;
  bad_payload[100] ^= 0x10;
  for (const bool seekable : {true, false}) {
    EXPECT_EQ(load_error<Blocked>(bad_payload, seekable),
              "Bloom filter payload checksum mismatch (corrupted file)");
  }
}

// A forged header announcing 2^46 bytes (a valid checksum) with nothing behind it: refused as
// truncated through either stream. Were the array allocated first, the 64 TiB mapping would
// fail with std::bad_alloc instead.
TEST(BloomFile, ForgedHugeHeaderAllocatesNothing) {
  ccf::BloomFilter filter(64, 8);
  std::string forged = saved(filter).substr(0, 80);
  const std::uint64_t bits = std::uint64_t{1} << 49;
  put_at(forged, 16, bits / 64);  // capacity at 64 bits per item
  put_at(forged, 24, bits);
  put_at(forged, 32, static_cast<std::uint32_t>(ccf::detail::ln2_hash_count(64)));
  forged = reheadered(forged, 64, bits / 8);
  for (const bool seekable : {true, false}) {
    const std::string error = load_error<ccf::BloomFilter>(forged, seekable);
    EXPECT_NE(error.find("truncated Bloom filter"), std::string::npos) << error;
  }
}

// ScalableBloomFilter::load: the same family of checks, with the scalable header's own.
TEST(ScalableBloomFile, MalformedFilesNameWhatIsWrong) {
  using ccf::ScalableBloomFilter;
  ScalableBloomFilter filter({10, 0.01, 2});
  for (std::uint64_t key = 0; key < 50; ++key) filter.add(key);
  ASSERT_EQ(filter.filter_count(), 3u);
  const std::string good = saved(filter);
  const std::string header = filter.header();
  ASSERT_EQ(good.substr(0, header.size()), header);
  ASSERT_EQ(load_error<ScalableBloomFilter>(good), "");
  ASSERT_EQ(load_error<ScalableBloomFilter>(good, false), "");

  EXPECT_EQ(load_error<ScalableBloomFilter>("garbage"), "not a ccf Bloom filter (bad magic)");
  EXPECT_EQ(load_error<ScalableBloomFilter>(saved(ccf::BlockedBloomFilter(10, 10))),
            "the file holds a blocked Bloom filter (ccf::BlockedBloomFilter); this filter is a "
            "scalable Bloom filter (ccf::ScalableBloomFilter)");
  EXPECT_EQ(load_error<ccf::BlockedBloomFilter>(good),
            "the file holds a scalable Bloom filter (ccf::ScalableBloomFilter); this filter is a "
            "blocked Bloom filter (ccf::BlockedBloomFilter)");
  EXPECT_EQ(load_error<ScalableBloomFilter>(good.substr(0, 40)),
            "truncated scalable Bloom filter header");
  std::string count = good;
  put_at(count, 36, std::uint32_t{0});
  EXPECT_EQ(load_error<ScalableBloomFilter>(count), "corrupted sub-filter count 0 (1 to 1048576)");
  put_at(count, 36, std::uint32_t{5'000'000});
  EXPECT_EQ(load_error<ScalableBloomFilter>(count),
            "corrupted sub-filter count 5000000 (1 to 1048576)");
  put_at(count, 36, std::uint32_t{1'000'000});  // 32 MB announced, a few hundred bytes there
  EXPECT_EQ(load_error<ScalableBloomFilter>(count),
            "truncated Bloom filter: 32000008 bytes announced for the sub-filter records, " +
                std::to_string(good.size() - 48) + " present");
  EXPECT_EQ(load_error<ScalableBloomFilter>(count, false),
            "truncated scalable Bloom filter header");
  std::string flipped = good;
  flipped[60] ^= 4;  // sub-filter 0's record
  EXPECT_EQ(load_error<ScalableBloomFilter>(flipped),
            "scalable Bloom filter header checksum mismatch (corrupted)");

  const auto resummed = [&](std::string bytes) {
    put_at(bytes, header.size() - 8,
           static_cast<std::uint64_t>(XXH3_64bits(bytes.data(), header.size() - 8)));
    return bytes;
  };
  std::string bad = good;
  put_at(bad, 24, 1.5);
  EXPECT_EQ(load_error<ScalableBloomFilter>(resummed(bad)),
            "corrupted options: error_rate must be in (0, 1)");
  bad = good;
  put_at(bad, 32, std::uint32_t{0});
  EXPECT_EQ(load_error<ScalableBloomFilter>(resummed(bad)),
            "a non-scaling filter with 3 sub-filters");
  bad = good;
  put_at(bad, 48 + 32 + 16, std::uint64_t{999});  // sub-filter 1's bits
  const auto subs = filter.sub_filters();
  EXPECT_EQ(load_error<ScalableBloomFilter>(resummed(bad)),
            "sub-filter 1 is not the one these options make (capacity 20, 999 bits, " +
                std::to_string(subs[1].hashes) + " hashes where this build makes 20, " +
                std::to_string(subs[1].bits) + ", " + std::to_string(subs[1].hashes) + ")");
  bad = good;
  put_at(bad, 48 + 32 + 8, std::uint64_t{19});  // sub-filter 1 not full, yet 2 follows
  EXPECT_EQ(load_error<ScalableBloomFilter>(resummed(bad)),
            "sub-filter 1 holds 19 items of 20 (all but the newest must be full)");
  bad = good;
  put_at(bad, 48 + 64 + 8, std::uint64_t{41});
  EXPECT_EQ(load_error<ScalableBloomFilter>(resummed(bad)), "sub-filter 2 holds 41 items of 40");

  const std::string cut = good.substr(0, good.size() - 20);
  EXPECT_NE(
      load_error<ScalableBloomFilter>(cut).find("bytes announced for the payload and its checksum"),
      std::string::npos);
  EXPECT_NE(load_error<ScalableBloomFilter>(cut, false).find("truncated Bloom filter payload"),
            std::string::npos);
  std::string bad_payload = good;
  bad_payload[header.size() + 5] ^= 1;
  EXPECT_EQ(load_error<ScalableBloomFilter>(bad_payload, false),
            "Bloom filter payload checksum mismatch (corrupted file)");
}

TEST(ScalableBloomFile, RoundTripKeepsAnswersAndShape) {
  for (const std::uint32_t expansion : {0u, 1u, 2u, 3u}) {
    ccf::ScalableBloomFilter filter({7, 0.01, expansion});
    for (std::uint64_t key = 0; key < 300; ++key) filter.add(key);
    for (const bool seekable : {true, false}) {
      const std::string bytes = saved(filter);
      OneWayBuf buf(bytes);
      std::istream one_way(&buf);
      std::istringstream plain(bytes);
      const auto loaded =
          ccf::ScalableBloomFilter::load(seekable ? static_cast<std::istream&>(plain) : one_way);
      EXPECT_EQ(saved(loaded), bytes);
      EXPECT_EQ(loaded.size(), filter.size());
      EXPECT_EQ(loaded.filter_count(), filter.filter_count());
      EXPECT_EQ(loaded.options().expansion, expansion);
      for (std::uint64_t key = 0; key < 1000; ++key) {
        ASSERT_EQ(loaded.contains(key), filter.contains(key));
      }
    }
  }
}

}  // namespace
