// CfFilter: the filter behind one key of `ccf serve`, with RedisBloom's CF.* model
// (docs/server.md): a chain of sub-filters that grows when none has room for an item, with a
// bucket size, an expansion rate and a cap on the number of sub-filters chosen at CF.RESERVE.
//
//   sub-filter 0    sub-filter 1      ...   sub-filter n-1 (newest)
//   +-----------+   +-------------+         +------------------+
//   | B buckets |   | B*e buckets |   ...   | B*e^(n-1) buckets |  each a striped filter:
//   +-----------+   +-------------+         +------------------+  16-bit fingerprints, b slots
//
// Sub-filter k has buckets * expansion^k buckets (expansion 0 or 1: all the same size), and the
// sub-filters are levels of one nested addressing family (ccf/detail/nested_addressing.hpp):
// level k * log2(expansion) over the first sub-filter's buckets, one hash seed for all. That is
// what keeps deletes safe where RedisBloom's are not: two items that share a fingerprint and a
// bucket pair in one sub-filter share them in every older (smaller) one. A delete takes a copy
// from the NEWEST sub-filter that has one; if that copy is another item z's, z shares the
// deleted item x's fingerprint and buckets there and in every older sub-filter, and x's own
// copy lies in that sub-filter or an older one, where z finds it: every remaining item keeps a
// copy it can be charged to (the lock-free filter's argument, docs/lockfree.md, points 3-5).
// A sub-filter is at most 16 doublings larger than the first (the addressing's levels); a key
// that would need more answers "no memory".
//
// Concurrency (no lock on lookups, inserts or deletes; a mutex only to add a sub-filter):
//   (1) Sub-filters are only ever added or replaced (CF.LOADCHUNK), never freed while the
//       CfFilter lives; a sub-filter's pointer and then `filters_` are published with release
//       after it is built, and read with acquire.
//   (2) An insert takes a free slot of the item's pair in a sub-filter, newest first; only
//       when none has one, a path search in the newest; only when that fails does the filter
//       grow (the contract's insert rule, CF-COMMANDS.md). Deletes take a copy from the
//       newest sub-filter that has one; lookups scan newest to oldest. Copies never move
//       between sub-filters. (Where in the chain a copy lies does not matter to the delete
//       argument above, nor to lookups, which scan every sub-filter.)
//   (3) A lookup could still miss a present item when, during its scan, a delete removes the
//       copy ahead of it while an insert adds one behind it. So every delete raises its
//       fingerprint stripe's counter in `removals_` BEFORE it removes anything, and a scan that
//       found nothing re-reads that counter: unchanged means no removal could have hidden a
//       copy (a copy present when the scan began is gone at its probe only if its removal, and
//       so its raise, fell between the two reads -- or was raised before the first read, and
//       then the item it belonged to is counted out by that delete: a present item keeps a
//       copy nobody was removing). Only a removal of the same fingerprint can hide the item's
//       copies, and every sub-filter fingerprints alike, so one counter per stripe of
//       fingerprints suffices. Changed: scan again. A scan retries only when a delete in its
//       stripe ran: lookups are lock-free.
//   (4) CF.ADDNX / CF.INSERTNX test and add under a lock striped by item hash, so two NX adds
//       of one item cannot both add. Plain adds and lookups take no lock.
//   (5) A dump (CF.SCANDUMP, SAVE) needs the sub-filters still: adds and deletes hold
//       `writers_` shared, a dump holds it exclusively while it copies the tables out (the
//       striped filter's save() may not run beside its writers). Lookups never take it.
//   (6) Compaction also holds `writers_` exclusively. It moves a copy to an OLDER sub-filter
//       (into the parent pair of its bucket pair: nesting keeps the item's lineage) before it
//       raises the fingerprint's removal counter and removes the newer copy, so a lookup
//       scanning newest to oldest meets the copy in one of the two, or sees the counter move.
//       An emptied sub-filter leaves the chain by a smaller `filters_`; a lookup that read the
//       old count may still scan it, so it is never freed while the key lives.
//
// Dump format (CF.SCANDUMP's chunks, and a key's value in a snapshot), little-endian:
//   header   "CCFCF001", buckets u64, bucket size u32, max iterations u32, expansion u32,
//            sub-filters u32, items u64, deletes u64, then each sub-filter's blob size u64,
//            then the XXH3 checksum (u64) of all of the above
//   data     each sub-filter's blob in order: the library's checksummed filter file
//            (BasicCuckooFilter::save), so a damaged chunk is caught when it is loaded
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ccf::serve {

// What CF.RESERVE (or an auto-create) asked for, already validated.
struct CfParams {
  std::uint64_t buckets = 1;  // per sub-filter, a power of two
  unsigned bucket_size = 2;   // 1, 2 or 4
  unsigned max_iterations = 20;
  unsigned expansion = 1;   // 0: never grow; 1: grow by a sub-filter of the same size
  std::uint64_t items = 0;  // counters restored by a load
  std::uint64_t deletes = 0;
};

enum class AddResult { kAdded, kPresent, kFull, kMaxExpansions, kNoMemory };

class CfFilter {
 public:
  static constexpr unsigned kMaxFilters = 32;
  // CF.RESERVE's largest capacity: no dump header may ask a first sub-filter of more slots.
  static constexpr std::uint64_t kMaxSlots = std::uint64_t{1} << 30;

  // Throws std::bad_alloc when the first sub-filter cannot be had.
  explicit CfFilter(const CfParams& params);
  ~CfFilter();
  CfFilter(const CfFilter&) = delete;
  CfFilter& operator=(const CfFilter&) = delete;

  // RedisBloom refuses every insert once the filter has kMaxFilters sub-filters, free slots
  // or not: the command layer asks this before any insert work.
  bool at_max_filters() const noexcept { return filters() >= kMaxFilters; }
  // only_if_absent: CF.ADDNX (kPresent when the item's fingerprint is already there).
  AddResult add(std::string_view item, bool only_if_absent);
  // On a key of one sub-filter, adds items in order through the library's batch pipeline
  // (insert_many: the buckets of the items ahead are prefetched while one is placed) and stops
  // at the first that does not fit. Returns how many leading items were added (none on a key
  // that has grown: (2)'s order is add()'s); the caller adds the rest one by one. CF.INSERT.
  std::size_t add_many(std::span<const std::string_view> items);
  bool contains(std::string_view item) const;
  // out[i] = contains(items[i]), pipelined as add_many (CF.MEXISTS). out.size() >= items.size().
  void contains_many(std::span<const std::string_view> items, std::span<bool> out) const;
  std::uint64_t count(std::string_view item) const;
  // One copy removed; false if no sub-filter held the item's fingerprint. Then auto-compacts
  // (compact(false)).
  bool erase(std::string_view item);

  // Moves fingerprints from newer into older sub-filters, where a slot of the pair is free (as
  // RedisBloom: no path search), newest sub-filter first; an emptied newest sub-filter leaves
  // the chain and the delete count is reset. all = false (after a delete): only with >= 2
  // sub-filters and deletes above 10% of the items, stopping at the first sub-filter it cannot
  // empty. all = true (CF.COMPACT): every sub-filter, without stopping. Adds and deletes wait
  // (5); lookups go on (6). An emptied sub-filter keeps its memory (a lookup may be reading
  // it) and is reused when the key grows again.
  void compact(bool all);

  struct Info {
    std::uint64_t size_bytes;
    std::uint64_t buckets;  // of the first sub-filter
    std::uint64_t filters;
    std::uint64_t items;
    std::uint64_t deletes;
    unsigned bucket_size;
    unsigned expansion;
    unsigned max_iterations;
  };
  Info info() const;

  // A consistent copy of the filter: its header and each sub-filter's blob (format above).
  struct Dump {
    std::string header;
    std::vector<std::string> blobs;
  };
  // kScan (CF.SCANDUMP): kept for the next calls while no add or delete runs (the next one
  // frees it). kSnapshot: made for one use (a cached one is reused if still current).
  enum class DumpUse { kScan, kSnapshot };
  std::shared_ptr<const Dump> dump(DumpUse use = DumpUse::kScan) const;

  // The parameters and counters in a dump header, and the blob sizes it announces.
  struct DumpHeader {
    CfParams params;
    std::vector<std::uint64_t> blob_sizes;
  };
  // Whether `bytes` has a length a header may have (CF.LOADCHUNK: else "Invalid header").
  static bool header_length_fits(std::string_view bytes);
  // nullopt: not a header of this format, a bad checksum or values out of range.
  static std::optional<DumpHeader> parse_header(std::string_view bytes);
  // A filter with the header's parameters and counters whose sub-filters are all empty: the
  // blobs arrive later through load_chunk (CF.LOADCHUNK). nullptr if the announced blob sizes
  // are not those of the header's shape; throws std::bad_alloc.
  static std::unique_ptr<CfFilter> from_header(const DumpHeader& header);
  // CF.LOADCHUNK's data: bytes [offset, offset + data.size()) of the dump's data. Each blob's
  // chunks must come in order (as CF.SCANDUMP gives them) and once: staged until the blob's
  // last byte arrives, it then replaces its (empty) sub-filter. False: this filter was not made
  // by from_header, the chunk is empty, out of order, leaves its blob or belongs to a blob
  // already loaded, or the completed blob is not a filter of this key's shape (then it is
  // dropped: send it again from its start).
  bool load_chunk(std::uint64_t offset, std::string_view data);
  // A whole dump back (a snapshot's value); nullptr if any part is bad.
  static std::unique_ptr<CfFilter> restore(std::string_view header, std::string_view data);
  // Shape checks a header's values must pass (also those of CF.RESERVE's parameters).
  static bool valid(const CfParams& params, std::uint64_t filters);

  // A sub-filter: one of the bucket sizes behind one interface.
  class Sub {
   public:
    virtual ~Sub() = default;
    virtual bool insert(std::string_view item) = 0;  // false: full
    // Only into a free slot of the item's bucket pair, with no path search; false: none free.
    virtual bool insert_in_free_slot(std::string_view item) = 0;
    virtual bool contains(std::string_view item) const = 0;
    virtual void contains_many(std::span<const std::string_view> items,
                               std::span<bool> out) const = 0;
    virtual std::size_t insert_many(std::span<const std::string_view> items) = 0;
    virtual std::size_t count(std::string_view item) const = 0;
    virtual bool erase(std::string_view item) = 0;
    virtual std::size_t memory_bytes() const = 0;
    virtual std::string save() const = 0;
    virtual std::uint64_t saved_bytes() const = 0;  // save().size(), without saving
    // Fingerprint access for compaction (BasicCuckooFilter's by-bucket operations).
    virtual std::uint64_t buckets() const = 0;
    virtual unsigned slots() const = 0;
    virtual std::size_t size() const = 0;
    virtual std::uint32_t fingerprint_at(std::uint64_t bucket, unsigned slot) const = 0;
    virtual bool insert_fingerprint(std::uint64_t bucket, std::uint32_t fp) = 0;  // free slot
    virtual bool erase_fingerprint(std::uint64_t bucket, std::uint32_t fp) = 0;
  };

 private:
  unsigned filters() const noexcept { return filters_.load(std::memory_order_acquire); }  // (1)
  Sub& sub(unsigned k) const noexcept { return *subs_[k].load(std::memory_order_acquire); }
  // Makes `made` sub-filter k (replacing one, whose memory stays: a lookup may be reading it).
  void install(unsigned k, std::unique_ptr<Sub> made);
  AddResult add_unchecked(std::string_view item);
  // Stores item in the first `seen` sub-filters as (2) says; false: they have no room for it.
  bool place(std::string_view item, unsigned seen);
  bool erase_locked(std::string_view item);
  void compact_locked(bool all);
  // Frees a CF.SCANDUMP dump that the last write made stale (not under writers_: dump() takes
  // dump_mutex_ before writers_).
  void drop_stale_dump();
  // The removal counter of the item's fingerprint stripe (3).
  std::atomic<std::uint64_t>& removals(std::string_view item) const;
  std::atomic<std::uint64_t>& removals(std::uint32_t fp) const;
  // Adds a sub-filter unless one was added since `seen` filters were read. False: no memory.
  bool grow(unsigned seen);
  std::mutex& nx_lock(std::string_view item) const;
  bool load_blob(unsigned k, std::string_view blob);
  // A filter made of sub-filters already loaded (restore).
  CfFilter(const CfParams& params, std::vector<std::unique_ptr<Sub>> loaded);

  // Changes since construction: a dump is reused while this is unchanged.
  std::uint64_t version() const noexcept { return version_.load(); }

  CfParams params_;
  // The live sub-filters (published with release, read with acquire: (1)); all sub-filters
  // ever made, live or replaced, are owned by owned_.
  std::array<std::atomic<Sub*>, kMaxFilters> subs_{};
  std::vector<std::unique_ptr<Sub>> owned_;  // under grow_mutex_
  // A restore through CF.LOADCHUNK under way: each blob's size and the bytes received so far.
  struct Restore {
    std::mutex mutex;
    std::vector<std::uint64_t> sizes;
    std::vector<std::string> staged;
    std::vector<bool> loaded;
  };
  std::unique_ptr<Restore> restore_;
  std::atomic<unsigned> filters_{0};
  std::mutex grow_mutex_;
  std::atomic<std::uint64_t> items_;
  std::atomic<std::uint64_t> deletes_;
  // (3): one counter per stripe of fingerprints, each on its own cache line.
  static constexpr std::size_t kRemovalStripes = 16;
  struct alignas(64) RemovalCounter {
    std::atomic<std::uint64_t> count{0};
  };
  mutable std::array<RemovalCounter, kRemovalStripes> removals_{};
  mutable std::array<std::mutex, 64> nx_locks_;
  mutable std::shared_mutex writers_;  // (5)
  std::atomic<std::uint64_t> version_{0};
  mutable std::mutex dump_mutex_;
  mutable std::shared_ptr<const Dump> last_dump_;
  mutable std::atomic<bool> dump_cached_{false};

  mutable std::uint64_t last_dump_version_ = 0;
};

}  // namespace ccf::serve
