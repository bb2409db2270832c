// The Bloom filters' loaders: BasicBloomFilter<Layout>::load of each layout (sequential and
// concurrent), ScalableBloomFilter::load and ScalableBloomFilter::from_header.
//
// Properties: a loaded filter answers lookups, saves bytes that load and save again unchanged,
// and finds a key inserted (added) into it; a sequential and a concurrent filter of one layout
// load exactly the same files and save the same bytes; at most one kind loads a file; a header
// from_header accepts gives a filter whose header() is that header.
#include "ccf/bloom_filter.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "ccf/scalable_bloom_filter.hpp"
#include "harness.hpp"

namespace {

using ccf::fuzz::require;
using ccf::fuzz::Result;
using ccf::fuzz::saved;

template <class Filter>
Result load_basic(const ccf::fuzz::Input& input) {
  ccf::fuzz::InputStream in(input);
  try {
    Filter filter = Filter::load(in);
    ccf::fuzz::probe(filter);
    std::string bytes = ccf::fuzz::round_trip(
        filter, [](std::istream& again) { return saved(Filter::load(again)); });
    for (const std::uint64_t key : ccf::fuzz::kProbeKeys) {
      filter.insert(key);
      require(filter.contains(key), "an inserted key is not found");
    }
    return bytes;
  } catch (const ccf::FormatError&) {
    return std::nullopt;
  }
}

// The sequential and the concurrent filter of a layout load the same files alike.
template <class Layout>
Result load_layout(const ccf::fuzz::Input& input) {
  const Result sequential = load_basic<ccf::BasicBloomFilter<Layout>>(input);
  require(
      load_basic<ccf::BasicBloomFilter<Layout, ccf::detail::AtomicWordAccess>>(input) == sequential,
      "a sequential and a concurrent Bloom filter load a file differently");
  return sequential;
}

Result load_scalable(const ccf::fuzz::Input& input) {
  ccf::fuzz::InputStream in(input);
  try {
    ccf::ScalableBloomFilter filter = ccf::ScalableBloomFilter::load(in);
    ccf::fuzz::probe(filter);
    std::string bytes = ccf::fuzz::round_trip(
        filter, [](std::istream& again) { return saved(ccf::ScalableBloomFilter::load(again)); });
    const auto empty = ccf::ScalableBloomFilter::from_header(filter.header());
    require(empty != nullptr && empty->header() == filter.header(),
            "from_header refuses a loaded filter's header, or changes it");
    for (const std::uint64_t key : ccf::fuzz::kProbeKeys) {
      const ccf::BloomAddResult result = filter.add(key);
      if (result == ccf::BloomAddResult::kAdded || result == ccf::BloomAddResult::kPresent) {
        require(filter.contains(key), "an added key is not found");
      }
    }
    return bytes;
  } catch (const ccf::FormatError&) {
    return std::nullopt;
  }
}

std::string check(const ccf::fuzz::Input& input) {
  const Result result = ccf::fuzz::only_success(
      {load_layout<ccf::detail::StandardBloomLayout>(input),
       load_layout<ccf::detail::BlockedBloomLayout>(input),
       load_layout<ccf::detail::CountingBloomLayout>(input), load_scalable(input)});
  if (!result) throw ccf::FormatError("no Bloom filter loads it");
  return *result;
}

// The input's checksums made right where the lengths it announces are present: the 80-byte
// header and payload of kinds 1-3, the scalable header (48 + 32 n bytes) and the payload its
// records describe.
std::string resealed(std::string_view bytes) {
  std::string out(bytes);
  if (out.size() < 48) return out;
  std::uint32_t kind = 0;
  std::memcpy(&kind, out.data() + 12, 4);
  std::size_t header = 80;
  std::uint64_t payload = 0;
  if (kind == 4) {
    std::uint32_t count = 0;
    std::memcpy(&count, out.data() + 36, 4);
    if (count > (out.size() - 48) / 32) return out;
    header = 48 + std::size_t{count} * 32 + 8;
    for (std::size_t at = 48 + 16; at < header - 8; at += 32) {
      std::uint64_t bits = 0;
      std::memcpy(&bits, out.data() + at, 8);
      payload += bits / 8;
    }
  } else if (out.size() >= 80) {
    std::memcpy(&payload, out.data() + 64, 8);
  }
  if (!ccf::fuzz::reseal_span(out, 0, header - 8)) return out;
  ccf::fuzz::reseal_span(out, header, payload);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const auto from_header = ccf::ScalableBloomFilter::from_header(bytes);
  require(from_header == nullptr || from_header->header() == bytes,
          "from_header accepts a header that the filter does not give back");
  static_cast<void>(ccf::fuzz::check_both_streams(bytes, check));
  const std::string sealed = resealed(bytes);
  if (sealed != bytes) static_cast<void>(ccf::fuzz::check_both_streams(sealed, check));
  return 0;
}
