// CfFilter: the filter behind one key of `ccf serve`, with RedisBloom's CF.* model
// (docs/server.md): a chain of sub-filters that grows when the newest is full, with a bucket
// size, an expansion rate and a cap on the number of sub-filters chosen at CF.RESERVE.
//
//   sub-filter 0    sub-filter 1    ...   sub-filter n-1 (newest)
//   +-----------+   +-----------+         +-----------+
//   | B buckets |   | B buckets |   ...   | B buckets |   each a StripedCuckooFilter<16, b>:
//   +-----------+   +-----------+         +-----------+   16-bit fingerprints, b slots
//
// Every sub-filter has the same bucket count and hash seed, so an item has the same fingerprint
// and the same two buckets in each (expansion 1; expansion 0 never adds one). That is what keeps
// deletes safe, where RedisBloom's sub-filters of different sizes are not: two items that share
// a fingerprint and a bucket pair in one sub-filter share them in all, so any copy of that
// fingerprint serves both, and a delete that removes "the other item's" copy leaves one that
// the remaining item still finds.
//
// Concurrency (no lock on lookups, inserts or deletes; a mutex only to add a sub-filter):
//   (1) Sub-filters are only ever added (never freed while the CfFilter lives); `filters_` is
//       published with release after the new sub-filter is built, and read with acquire.
//   (2) Inserts go to the newest sub-filter; deletes take a copy from the newest sub-filter
//       that has one; lookups scan newest to oldest. Copies never move between sub-filters.
//   (3) A lookup could still miss a present item when, during its scan, a delete removes the
//       copy ahead of it while an insert adds one behind it. So every delete raises
//       `removals_` BEFORE it removes anything, and a scan that found nothing re-reads
//       `removals_`: unchanged means no removal could have hidden a copy (a copy present when
//       the scan began is gone at its probe only if its removal, and so its raise, fell between
//       the two reads -- or was raised before the first read, and then the item it belonged
//       to is counted out by that delete: a present item keeps a copy nobody was removing).
//       Changed: scan again. A scan retries only when a delete ran: lookups are lock-free.
//   (4) CF.ADDNX / CF.INSERTNX test and add under a lock striped by item hash, so two NX adds
//       of one item cannot both add. Plain adds and lookups take no lock.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>

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
  bool contains(std::string_view item) const;
  std::uint64_t count(std::string_view item) const;
  // One copy removed; false if no sub-filter held the item's fingerprint.
  bool erase(std::string_view item);

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

  // A sub-filter: one of the bucket sizes behind one interface.
  class Sub {
   public:
    virtual ~Sub() = default;
    virtual bool insert(std::string_view item) = 0;  // false: full
    virtual bool contains(std::string_view item) const = 0;
    virtual std::size_t count(std::string_view item) const = 0;
    virtual bool erase(std::string_view item) = 0;
    virtual std::size_t memory_bytes() const = 0;
  };

 private:
  unsigned filters() const noexcept { return filters_.load(std::memory_order_acquire); }  // (1)
  AddResult add_unchecked(std::string_view item);
  // Adds a sub-filter unless one was added since `seen` filters were read. False: no memory.
  bool grow(unsigned seen);
  std::mutex& nx_lock(std::string_view item) const;

  CfParams params_;
  std::array<std::unique_ptr<Sub>, kMaxFilters> subs_;
  std::atomic<unsigned> filters_{0};
  std::mutex grow_mutex_;
  std::atomic<std::uint64_t> items_;
  std::atomic<std::uint64_t> deletes_;
  std::atomic<std::uint64_t> removals_{0};  // (3)
  mutable std::array<std::mutex, 64> nx_locks_;
};

}  // namespace ccf::serve
