// BfFilter: the value behind one BF.* key -- RedisBloom's scalable Bloom filter
// (../shared/BF-COMMANDS.md §2, docs/server.md), which is the library's ScalableBloomFilter
// (ccf/scalable_bloom_filter.hpp: a chain of blocked Bloom sub-filters, each larger by the
// expansion factor at half the error rate), plus what Redis's one-command-at-a-time model
// promises a client and the library leaves to its callers:
//
//   (1) Writes to one key are serialized by `writers_`: BF.MADD and BF.INSERT add their items
//       in order as one step, and of two concurrent BF.ADD of one new item exactly one answers
//       1 (the library's add tests and then sets, so two racing adds could both answer 1).
//   (2) Lookups take no lock: the library's contains is store-free and sees every item whose
//       add returned before it began (its points 1-3), whatever the writers do meanwhile.
//   (3) Counters, the sub-filters' shapes and dumps are read under `writers_`, so BF.CARD and
//       BF.INFO never see half a BF.MADD, and a dump's header matches its bits: bits are only
//       ever set, and no write runs while the header and the data are copied.
//   (4) BF.LOADCHUNK's data chunks overwrite bytes of the bit arrays under `writers_` too; a
//       lookup racing one may answer from either the old or the new bytes of a word.
//
// Dump format (BF.SCANDUMP, the snapshot's and the module's RDB values): the library's header()
// (options, counters and every sub-filter's shape, versioned and checksummed), then the data:
// the sub-filters' bit arrays concatenated, oldest first. BF.SCANDUMP gives the data in chunks
// of at most kMaxChunkBytes that never cross a sub-filter's end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ccf/scalable_bloom_filter.hpp"

namespace ccf::serve {

class BfFilter {
 public:
  // std::invalid_argument for options the library refuses; std::bad_alloc.
  explicit BfFilter(const ScalableBloomOptions& options);

  BloomAddResult add(std::string_view item);
  // Adds items in order as one step (1); the results of those tried: every item's, or up to
  // and including the first kFull (a full non-scaling filter stops the command).
  std::vector<BloomAddResult> add_in_order(std::span<const std::string_view> items);
  bool contains(std::string_view item) const { return filter_->contains(item); }
  // out[i] = contains(items[i]), through the library's prefetching batch.
  void contains_many(std::span<const std::string_view> items, std::span<bool> out) const {
    filter_->contains_many(items, out);
  }

  struct Info {
    std::uint64_t capacity;    // the sub-filters' capacities summed
    std::uint64_t size_bytes;  // the library filter's memory_bytes()
    std::uint64_t filters;
    std::uint64_t items;
    std::uint32_t expansion;  // 0: non-scaling
  };
  Info info() const;
  std::vector<ScalableBloomFilter::SubFilterInfo> sub_filters() const;
  std::size_t memory_bytes() const { return filter_->memory_bytes(); }

  std::string header() const;
  // BF.SCANDUMP's chunk at `iterator` (>= 1): bytes from iterator - 1 of the data on, to the
  // end of their sub-filter or kMaxChunkBytes; nullopt past the end.
  std::optional<std::string> chunk(std::uint64_t iterator) const;
  // The header and every sub-filter's bit array (its blob) at one moment (3): snapshots, RDB,
  // AOF rewrite, COPY, DEBUG DIGEST. Shaped as CfFilter::Dump, so that both families persist
  // alike.
  struct Dump {
    std::string header;
    std::vector<std::string> blobs;
  };
  std::shared_ptr<const Dump> dump() const;

  // BF.LOADCHUNK on a filter made from a header: the checks of the contract, in its order.
  enum class LoadResult { kOk, kBadData, kNoLink, kTooBig };
  LoadResult load_chunk(long long iterator, std::string_view data);

  // A filter with the header's shape and counters and no bit set; nullptr for a header this
  // build would not write. std::bad_alloc may escape.
  static std::unique_ptr<BfFilter> from_header(std::string_view header);
  // A dump back (the blobs concatenated); nullptr if the header is bad or the data is not
  // exactly the bit arrays.
  static std::unique_ptr<BfFilter> restore(std::string_view header, std::string_view data);

 private:
  explicit BfFilter(std::unique_ptr<ScalableBloomFilter> filter);

  std::unique_ptr<ScalableBloomFilter> filter_;  // never null
  mutable std::mutex writers_;                   // (1), (3), (4)
};

}  // namespace ccf::serve
