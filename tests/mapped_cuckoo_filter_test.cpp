// MappedCuckooFilter: a file mapped read-only answers as the loaded filter does, for every packed
// shape, the victim entry included; a file that is not a packed filter, or is too short for its
// payload, is refused at open; a corrupted payload is found by verify() and never makes a lookup
// read outside the mapping.
#include "ccf/mapped_cuckoo_filter.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include "ccf/any_cuckoo_filter.hpp"
#include "ccf/cuckoo_filter.hpp"
#include "saved_bytes.hpp"
#include "test_keys.hpp"

namespace {

using ccf::AnyCuckooFilter;
using ccf::FilterParams;
using ccf::FormatError;
using ccf::MappedCuckooFilter;
using ccf::Status;

// A file in the test's temporary directory, removed at the end of its scope.
class TempFile {
 public:
  explicit TempFile(const std::string& bytes)
      : path_(::testing::TempDir() + "mapped_" + std::to_string(::getpid()) + "_" +
              std::to_string(counter_++) + ".ccf") {
    std::ofstream(path_, std::ios::binary) << bytes;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::string path_;
};

// Every answer of the mapped view equals the loaded filter's: members (all true) and others.
void expect_same_answers(const AnyCuckooFilter& filter, const MappedCuckooFilter& mapped,
                         const std::vector<std::uint64_t>& members) {
  const std::vector<std::uint64_t> others = ccf::testing::non_member_keys(members.size() + 1000);
  for (const auto& keys : {members, others}) {
    const std::unique_ptr<bool[]> out_storage(new bool[keys.size()]);
    const std::span<bool> out(out_storage.get(), keys.size());
    const std::size_t hits = mapped.contains_many(std::span<const std::uint64_t>(keys), out);
    std::size_t expected_hits = 0;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      ASSERT_EQ(mapped.contains(keys[i]), filter.contains(keys[i])) << i;
      ASSERT_EQ(out[i], filter.contains(keys[i])) << i;
      expected_hits += filter.contains(keys[i]);
    }
    EXPECT_EQ(hits, expected_hits);
  }
  for (const std::uint64_t key : members) ASSERT_TRUE(mapped.contains(key));
  EXPECT_EQ(mapped.size(), filter.size());
  EXPECT_EQ(mapped.capacity(), filter.capacity());
}

TEST(MappedCuckooFilter, AnswersAsTheLoadedFilterForEveryPackedShape) {
  for (const unsigned fp_bits : {4u, 8u, 12u, 16u, 32u}) {
    for (const unsigned slots : {2u, 4u, 8u}) {
      SCOPED_TRACE(std::to_string(fp_bits) + " bits, " + std::to_string(slots) + " slots");
      AnyCuckooFilter filter(FilterParams{3000, fp_bits, slots, false, {}});
      const std::vector<std::uint64_t> members = ccf::testing::member_keys(2500);
      for (const std::uint64_t key : members) ASSERT_EQ(filter.insert(key), Status::kOk);
      ASSERT_EQ(filter.insert(std::string_view("a byte key")), Status::kOk);
      const TempFile file(ccf::testing::saved(filter));
      const MappedCuckooFilter mapped = MappedCuckooFilter::open(file.path());
      EXPECT_EQ(mapped.fp_bits(), fp_bits);
      EXPECT_EQ(mapped.slots_per_bucket(), slots);
      EXPECT_TRUE(mapped.contains(std::string_view("a byte key")));
      expect_same_answers(filter, mapped, members);
      EXPECT_NO_THROW(mapped.verify());
    }
  }
}

TEST(MappedCuckooFilter, FindsTheItemInTheVictimEntry) {
  AnyCuckooFilter filter(FilterParams{64, 8, 4, false, {}});
  std::vector<std::uint64_t> members;
  for (const std::uint64_t key : ccf::testing::member_keys(1000)) {
    if (filter.insert(key) != Status::kOk) break;
    members.push_back(key);
  }
  ASSERT_TRUE(filter.victim_used());  // the last stored key's walk ended in the victim entry
  const TempFile file(ccf::testing::saved(filter));
  expect_same_answers(filter, MappedCuckooFilter::open(file.path()), members);
}

TEST(MappedCuckooFilter, RefusesWhatItCannotServe) {
  AnyCuckooFilter filter(FilterParams{1000, 12, 4, false, {}});
  const std::string bytes = ccf::testing::saved(filter);
  const auto refusal = [](const std::string& file_bytes) {
    const TempFile file(file_bytes);
    try {
      MappedCuckooFilter::open(file.path());
    } catch (const FormatError& e) {
      return std::string(e.what());
    }
    return std::string("opened");
  };
  EXPECT_EQ(refusal(""), "not a ccf cuckoo filter (bad magic)");
  EXPECT_EQ(refusal("CCFCUCKO"), "truncated cuckoo filter header");
  EXPECT_NE(refusal(bytes.substr(0, bytes.size() - 1)).find("truncated cuckoo filter: "),
            std::string::npos);
  std::string corrupt_header = bytes;
  corrupt_header[30] ^= 1;  // the bucket count: the header checksum no longer holds
  EXPECT_EQ(refusal(corrupt_header), "cuckoo filter header checksum mismatch (corrupted file)");
  AnyCuckooFilter semi(FilterParams{1000, 12, 4, true, {}});
  EXPECT_NE(refusal(ccf::testing::saved(semi)).find("packed layouts only"), std::string::npos);
  EXPECT_THROW(MappedCuckooFilter::open(::testing::TempDir()), FormatError);  // a directory
  EXPECT_THROW(MappedCuckooFilter::open(::testing::TempDir() + "no/such/file"), std::system_error);
}

TEST(MappedCuckooFilter, VerifyFindsACorruptedPayloadThatLookupsSurvive) {
  AnyCuckooFilter filter(FilterParams{1000, 16, 4, false, {}});
  for (const std::uint64_t key : ccf::testing::member_keys(900)) filter.insert(key);
  std::string bytes = ccf::testing::saved(filter);
  for (std::size_t i = 96; i < bytes.size() - 8; ++i) bytes[i] = static_cast<char>(0xff);
  const TempFile file(bytes);
  const MappedCuckooFilter mapped = MappedCuckooFilter::open(file.path());
  EXPECT_THROW(mapped.verify(), FormatError);
  // Every slot holds 0xffff: only keys with that fingerprint hit (1 in 2^16).
  std::size_t hits = 0;
  for (const std::uint64_t key : ccf::testing::non_member_keys(1000)) hits += mapped.contains(key);
  EXPECT_LT(hits, 10u);
}

}  // namespace
