// `ccf serve`'s loaders on arbitrary bytes (server/): a snapshot file (start-up), a
// CF.LOADCHUNK sequence (a dump header, then data chunks at offsets), and a real dump of a
// small filter with bytes flipped. The first input byte picks which; snapshots and headers are
// also tried with their checksums recomputed (else nearly every mutation ends at a checksum).
//
// Properties: a snapshot either loads or throws SnapshotError; a loaded filter dumps and
// restores to the same CF.INFO; LOADCHUNK never accepts a header it cannot honour and never
// writes outside its staging; every filter built from hostile bytes answers adds, lookups,
// deletes and a compaction without a crash or a sanitizer report.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "harness.hpp"
#include "server/cf/filter.hpp"
#include "server/snapshot.hpp"

namespace {

using ccf::fuzz::require;
using ccf::serve::CfFilter;
using ccf::serve::CfParams;
using ccf::serve::Keyspace;
using ccf::serve::SnapshotError;

// The bytes with their last 8 replaced by the XXH3 of the rest (snapshots and dump headers
// both end with such a checksum).
std::string resealed(std::string_view bytes) {
  std::string out(bytes);
  if (out.size() < 16) return out;
  const std::uint64_t sum = XXH3_64bits(out.data(), out.size() - 8);
  std::memcpy(out.data() + out.size() - 8, &sum, 8);
  return out;
}

void exercise(CfFilter& filter) {
  for (const char* item : {"a", "b", "a"}) {
    (void)filter.add(item, false);
    (void)filter.contains(item);
    (void)filter.count(item);
  }
  (void)filter.erase("a");
  filter.compact(true);
  (void)filter.info();
}

bool same_info(const CfFilter::Info& a, const CfFilter::Info& b) {
  return a.buckets == b.buckets && a.filters == b.filters && a.items == b.items &&
         a.deletes == b.deletes && a.bucket_size == b.bucket_size && a.expansion == b.expansion &&
         a.max_iterations == b.max_iterations;
}

void check_snapshot(std::string_view bytes) {
  Keyspace keyspace;
  try {
    load_snapshot_bytes(keyspace, bytes, "fuzz input");
  } catch (const SnapshotError&) {
    return;
  }
  for (std::uint64_t cursor = 0;;) {
    const auto step = keyspace.scan(cursor);
    for (const auto& [key, value] : step->entries) {
      const auto* filter = std::get_if<std::shared_ptr<CfFilter>>(&value);
      if (filter == nullptr) continue;
      const auto dump = (*filter)->dump();
      std::string data;
      for (const std::string& blob : dump->blobs) data += blob;
      const auto back = CfFilter::restore(dump->header, data);
      require(back != nullptr, "a loaded filter's dump restores");
      require(same_info(back->info(), (*filter)->info()), "a restored filter has the same info");
      exercise(**filter);
    }
    if ((cursor = step->next) == 0) break;
  }
}

// [header length u16][header][(offset u32, length u16, bytes)...]
void check_chunks(std::string_view bytes) {
  if (bytes.size() < 2) return;
  std::uint16_t header_length;
  std::memcpy(&header_length, bytes.data(), 2);
  bytes.remove_prefix(2);
  if (header_length > bytes.size()) return;
  const std::string header = resealed(bytes.substr(0, header_length));
  bytes.remove_prefix(header_length);
  const auto parsed = CfFilter::parse_header(header);
  if (!parsed) return;
  std::unique_ptr<CfFilter> filter;
  try {
    filter = CfFilter::from_header(*parsed);
  } catch (const std::bad_alloc&) {
    return;  // refused: "Couldn't create filter!"
  }
  if (!filter) return;
  while (bytes.size() >= 6) {
    std::uint32_t offset;
    std::uint16_t length;
    std::memcpy(&offset, bytes.data(), 4);
    std::memcpy(&length, bytes.data() + 4, 2);
    bytes.remove_prefix(6);
    const std::string_view chunk = bytes.substr(0, length);
    bytes.remove_prefix(chunk.size());
    (void)filter->load_chunk(offset, chunk);
  }
  exercise(*filter);
}

// A real dump of a filter shaped and filled by the input, then bytes flipped where the input
// says, each sub-filter's blob resealed (its payload checksum recomputed), and restored.
void check_flipped_dump(std::string_view bytes) {
  if (bytes.size() < 4) return;
  CfParams params;
  params.bucket_size = std::array<unsigned, 3>{1, 2, 4}[static_cast<unsigned char>(bytes[0]) % 3];
  params.expansion = std::array<unsigned, 4>{0, 1, 2, 4}[static_cast<unsigned char>(bytes[1]) % 4];
  params.buckets = std::uint64_t{1} << (static_cast<unsigned char>(bytes[2]) % 7);
  const unsigned items = static_cast<unsigned char>(bytes[3]);
  bytes.remove_prefix(4);
  CfFilter filter(params);
  for (unsigned i = 0; i < items; ++i) (void)filter.add(std::to_string(i), false);
  const auto dump = filter.dump();
  std::string data;
  for (const std::string& blob : dump->blobs) data += blob;
  if (data.empty()) return;
  for (std::size_t i = 0; i + 3 <= bytes.size(); i += 3) {
    std::uint16_t at;
    std::memcpy(&at, bytes.data() + i, 2);
    data[at % data.size()] ^= bytes[i + 2];
  }
  std::string resealed_data;
  std::size_t at = 0;
  for (const std::string& blob : dump->blobs) {
    resealed_data += ccf::fuzz::resealed(std::string_view(data).substr(at, blob.size()));
    at += blob.size();
  }
  for (const std::string* candidate : {&data, &resealed_data}) {
    const auto back = CfFilter::restore(dump->header, *candidate);
    if (back) exercise(*back);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      check_snapshot(bytes);
      break;
    case 1:
      check_snapshot(resealed(bytes));
      break;
    case 2:
      check_chunks(bytes);
      break;
    default:
      check_flipped_dump(bytes);
  }
  return 0;
}
