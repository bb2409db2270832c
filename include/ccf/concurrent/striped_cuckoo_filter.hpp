// StripedCuckooFilter: a concurrent cuckoo filter with fine-grained (striped) locking
// (the "fine" design of the thesis's CCF; docs/concurrency.md), in two read modes:
//
//   ReadMode::kOptimistic  (chtbench: ccf-striped)          lookups write no shared memory
//   ReadMode::kLocking     (chtbench: ccf-striped-locking)  lookups lock their two stripes
//
// Layout
//   table    AtomicPackedTable<F, b>: the sequential filter's exact bits (same memory, same
//            file format), read and written through 64-bit atomic words.
//   stripes  S = min(4096, buckets / 256 rounded up to a power of two) stripes; bucket i
//            belongs to stripe i mod S. Each stripe is one cache line of its own:
//              | seq (u64) | items (i64) | padding ... |   (64 bytes)
//            seq is a seqlock and a spin lock at once: even = free, odd = a writer is inside.
//            items counts the fingerprints stored in the stripe's buckets (size() sums them),
//            so counting costs no extra shared cache line.
//
// Operations
//   contains  (optimistic) read both stripes' seq (even), read both buckets, re-read both
//             seq: unchanged => the two bucket reads saw one consistent moment. Stores
//             nothing, so read-only work scales with cores. Retries while a writer is inside
//             one of its stripes (blocking, but never for longer than one bucket update).
//   insert    lock both stripes of i1, i2 (in stripe order: no deadlock), store if there is
//             room. Otherwise release them, search a cuckoo path breadth-first WITHOUT locks
//             (detail/cuckoo_path.hpp), then execute it back to front: each step locks the
//             two stripes of its source and target, re-validates (the source slot still holds
//             the fingerprint the search saw, the target still has room), moves the
//             fingerprint (target written before source cleared, both inside the odd window)
//             and unlocks. The last step, out of i1 or i2, stores the new fingerprint in the
//             slot it vacates before unlocking (as libcuckoo keeps the root locked), so no
//             other insert takes that slot. A failed validation restarts the search. No path:
//             kFull, and nothing was changed (moves already made are ordinary cuckoo moves).
//   waiting   a writer waits for a stripe, and a reader for a writer to leave one, through
//             sync::SpinWait: pauses, then yields (a holder may be preempted).
//   erase     lock both stripes, clear one copy.
//
// Why lookups see no false negatives while items move: an item's fingerprint only ever moves
// between ITS two buckets i1, i2, under the locks of both their stripes, and a lookup validates
// exactly those two stripes. A move that overlaps the lookup's reads changes a seq it
// re-checks, so the lookup retries; a lookup that validates saw the item in i1 or i2.
//
// Memory ordering (a seqlock in the fence-free form of Boehm, "Can seqlocks get along with
// programming language memory models?", 2012), numbered for the comments at the points of use:
//   (1) writer: CAS seq even -> odd, acquire (the lock acquisition);
//   (2) writer: bucket updates are release RMWs (AtomicPackedTable::store), so the odd seq (1)
//       happens-before any reader that sees an update; pairs with (4);
//   (3) writer: seq.store(odd + 1, release): publishes the bucket updates; pairs with (5) and
//       with the next writer's (1);
//   (4) reader: bucket loads are acquire (AtomicPackedTable::load): a reader that saw an
//       update of a writer also sees that writer's odd seq at (6), and retries;
//   (5) reader: seq.load(acquire) before the bucket loads;
//   (6) reader: seq.load(relaxed) after the bucket loads (kept after them by (4)).
// No standalone fences: ThreadSanitizer does not model them, and on x86 acquire loads and
// release RMWs are what the plain instructions already do.
//
// No victim slot: a concurrent filter cannot park a displaced item outside the table without
// making it invisible to some reader, so a full insert changes nothing and reports kFull. The
// path search goes one level deeper than the sequential filter's to reach the same load
// (>= 95% for b = 4, F >= 12; see tests).
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <istream>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "ccf/cuckoo_filter.hpp"
#include "ccf/detail/addressing.hpp"
#include "ccf/detail/atomic_packed_table.hpp"
#include "ccf/detail/cuckoo_path.hpp"
#include "ccf/detail/key_api.hpp"
#include "ccf/detail/occupancy_api.hpp"
#include "ccf/detail/victimless_format.hpp"
#include "ccf/hash.hpp"
#include "ccf/status.hpp"
#include "ccf/sync/spin_wait.hpp"

namespace ccf {

enum class ReadMode { kOptimistic, kLocking };

template <unsigned FpBits, unsigned Slots = 4, ReadMode Reads = ReadMode::kOptimistic>
class StripedCuckooFilter : public detail::KeyApi<StripedCuckooFilter<FpBits, Slots, Reads>>,
                            public detail::OccupancyApi<StripedCuckooFilter<FpBits, Slots, Reads>> {
  friend class detail::KeyApi<StripedCuckooFilter>;
  friend class detail::OccupancyApi<StripedCuckooFilter>;

 public:
  using table_type = AtomicPackedTable<FpBits, Slots>;
  static constexpr unsigned kFpBits = FpBits;
  static constexpr unsigned kSlots = Slots;
  static constexpr std::size_t kMaxStripes = 4096;
  static constexpr unsigned kPathDepth = detail::kConcurrentPathDepth<Slots>;

  // Throws std::invalid_argument as CuckooFilter does (max_kicks is unused: no random walk, but
  // it is kept and saved, so that a file loaded by a sequential filter says what was asked).
  explicit StripedCuckooFilter(std::size_t capacity, FilterOptions options = {})
      : StripedCuckooFilter(detail::checked_bucket_count<table_type>(capacity, options), capacity,
                            options) {}

  StripedCuckooFilter(const StripedCuckooFilter&) = delete;
  StripedCuckooFilter& operator=(const StripedCuckooFilter&) = delete;

  // insert, contains, erase, contains_many of integer and byte-string keys:
  // detail/key_api.hpp.

  // Exact when no operation is in flight; otherwise a value the count had recently.
  std::size_t size() const noexcept {
    std::int64_t total = 0;
    for (std::size_t s = 0; s < stripe_count_; ++s) {
      total += stripes_[s].items.load(std::memory_order_relaxed);
    }
    return static_cast<std::size_t>(total);
  }
  std::size_t capacity() const noexcept { return table_.bucket_count() * kSlots; }
  std::size_t requested_capacity() const noexcept { return requested_capacity_; }
  std::size_t bucket_count() const noexcept { return table_.bucket_count(); }
  std::size_t stripe_count() const noexcept { return stripe_count_; }
  // load_factor(), bits_per_item(): detail/occupancy_api.hpp.
  // Table plus stripes: what the filter costs.
  std::size_t memory_bytes() const noexcept {
    return table_.memory_bytes() + stripe_count_ * sizeof(Stripe) + sizeof(*this);
  }
  std::string shape() const {
    return "striped " + std::to_string(kFpBits) + "-bit fingerprints, " + std::to_string(kSlots) +
           " slots/bucket" +
           (Reads == ReadMode::kOptimistic ? ", optimistic reads" : ", locking reads");
  }

  // ---- persistence: the sequential filter's format (detail/filter_format.hpp) -----------

  // Not concurrent with writers: quiesce the filter first (lookups may go on).
  void save(std::ostream& out) const {
    detail::write_victimless(out, table_, size(), {requested_capacity_, seed_, max_kicks_});
  }

  // Reads a filter saved by any filter of this shape (sequential, striped, COP). Throws
  // FormatError, also for a sequential filter's victim entry that has no room.
  static std::unique_ptr<StripedCuckooFilter> load(std::istream& in) {
    auto file = detail::read_victimless<table_type>(in, "striped filter");
    FilterOptions options;
    options.seed = file.fields.seed;
    options.max_kicks = file.fields.max_kicks;
    std::unique_ptr<StripedCuckooFilter> filter(
        new StripedCuckooFilter(std::move(file.table), file.fields.capacity, options));
    for (std::uint64_t bucket = 0; bucket < filter->table_.bucket_count(); ++bucket) {
      for (unsigned slot = 0; slot < kSlots; ++slot) {
        if (filter->table_.read(bucket, slot) != 0) {
          filter->stripe_of(bucket).items.fetch_add(1, std::memory_order_relaxed);
        }
      }
    }
    return filter;
  }

  // Counts of restarted path executions (validation failures), for benchmarks.
  std::uint64_t restarts() const noexcept { return path_restarts_.load(std::memory_order_relaxed); }

 private:
  std::size_t table_bits() const noexcept { return 8 * table_.payload().size(); }

  struct alignas(64) Stripe {
    std::atomic<std::uint64_t> seq{0};
    std::atomic<std::int64_t> items{0};
  };
  using Location = detail::Location;

  // Locks the stripes of two buckets (one if they share it) for the guard's lifetime.
  class StripeGuard {
   public:
    StripeGuard(const StripedCuckooFilter& filter, std::uint64_t a, std::uint64_t b) noexcept
        : first_(&filter.stripe_of(a)), second_(&filter.stripe_of(b)) {
      if (first_ > second_) std::swap(first_, second_);
      lock(*first_);
      if (second_ != first_) lock(*second_);
    }
    ~StripeGuard() {
      unlock(*first_);
      if (second_ != first_) unlock(*second_);
    }
    StripeGuard(const StripeGuard&) = delete;
    StripeGuard& operator=(const StripeGuard&) = delete;

   private:
    static void lock(Stripe& stripe) noexcept {
      sync::SpinWait wait;
      for (;;) {
        std::uint64_t seq = stripe.seq.load(std::memory_order_relaxed);
        // (1) acquire: everything the previous holder wrote before its release (3) is visible.
        if ((seq & 1) == 0 &&
            stripe.seq.compare_exchange_weak(seq, seq + 1, std::memory_order_acquire)) {
          return;  // our bucket updates (2) are release RMWs: ordered after this
        }
        wait.wait();
      }
    }
    static void unlock(Stripe& stripe) noexcept {
      // (3) release: publishes our bucket updates to readers' acquire load (5) and to the
      // next writer's acquire CAS (1).
      stripe.seq.store(stripe.seq.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    }

    Stripe* first_;
    Stripe* second_;
  };

  StripedCuckooFilter(std::uint64_t buckets, std::size_t capacity, const FilterOptions& options)
      : StripedCuckooFilter(table_type(buckets), capacity, options) {}
  StripedCuckooFilter(table_type&& table, std::size_t capacity, const FilterOptions& options)
      : table_(std::move(table)),
        addressing_(table_.bucket_count()),
        stripe_count_(std::clamp<std::size_t>(std::bit_ceil(table_.bucket_count() / 256 + 1), 1,
                                              kMaxStripes)),
        stripes_(std::make_unique<Stripe[]>(stripe_count_)),
        requested_capacity_(capacity),
        seed_(options.seed),
        max_kicks_(options.max_kicks) {}

  std::uint64_t seed() const noexcept { return seed_; }

  Stripe& stripe_of(std::uint64_t bucket) const noexcept {
    return stripes_[bucket & (stripe_count_ - 1)];
  }

  Location locate(std::uint64_t hash) const noexcept { return detail::locate(addressing_, hash); }

  bool contains_hash(std::uint64_t hash) const noexcept {
    const Location at = locate(hash);
    table_.prefetch(at.alternate);
    return probe(at);
  }

  // KeyApi's batched lookups and inserts. Not the stripes: at most 4096 lines, they stay in L2, and
  // a prefetch of them would take a miss buffer that the table's lines need.
  Location stage_lookup(std::uint64_t hash) const noexcept {
    return detail::prefetch_both(table_, locate(hash));
  }
  bool finish_lookup(const Location& at) const noexcept { return probe(at); }

  bool probe(const Location& at) const noexcept {
    if constexpr (Reads == ReadMode::kLocking) {
      StripeGuard guard(*this, at.primary, at.alternate);
      return detail::found_in_either(table_.contains(at.primary, at.fp),
                                     table_.contains(at.alternate, at.fp));
    } else {
      const Stripe& first = stripe_of(at.primary);
      const Stripe& second = stripe_of(at.alternate);
      sync::SpinWait wait;  // a writer holds a stripe: it may be preempted, so back off
      for (;;) {
        // (5) acquire: pairs with the release (3) of the last writer of each stripe.
        const std::uint64_t seq1 = first.seq.load(std::memory_order_acquire);
        const std::uint64_t seq2 = second.seq.load(std::memory_order_acquire);
        if (((seq1 | seq2) & 1) == 0) {
          // (4) acquire loads: if they see a writer's update (2), (6) sees its odd seq.
          const bool found = detail::found_in_either(table_.contains(at.primary, at.fp),
                                                     table_.contains(at.alternate, at.fp));
          // (6)
          if (first.seq.load(std::memory_order_relaxed) == seq1 &&
              second.seq.load(std::memory_order_relaxed) == seq2) {
            return found;
          }
        }
        wait.wait();
      }
    }
  }

  Status insert_hash(std::uint64_t hash) noexcept {
    const Location at = locate(hash);
    table_.prefetch(at.alternate);
    return finish_insert(at);
  }

  // Also KeyApi's batched inserts (after stage_lookup).
  Status finish_insert(const Location& at) noexcept {
    for (;;) {
      if (store_in_either(at)) return Status::kOk;
      detail::CuckooPath<kSlots, kPathDepth> path;
      if (!detail::find_cuckoo_path(table_, addressing_, at.primary, at.alternate, path)) {
        return Status::kFull;
      }
      if (execute(path, at.fp)) return Status::kOk;
      path_restarts_.fetch_add(1, std::memory_order_relaxed);
    }
  }

  bool store_in_either(const Location& at) noexcept {
    StripeGuard guard(*this, at.primary, at.alternate);
    const std::uint64_t bucket = table_.has_empty(at.primary) ? at.primary : at.alternate;
    if (!table_.try_insert(bucket, at.fp)) return false;
    stripe_of(bucket).items.fetch_add(1, std::memory_order_relaxed);  // under the stripe lock
    return true;
  }

  // Moves the path's fingerprints one step each, from the empty end back to the root, each step
  // under the locks of its two buckets' stripes. The last step frees a slot of the root bucket
  // and stores `fp` there under the same locks (as libcuckoo does), so no other insert can take
  // the slot first. Returns false, with fp not stored, if a step no longer matches the table
  // (another writer got there first); the steps already made stay (each kept every item).
  bool execute(const detail::CuckooPath<kSlots, kPathDepth>& path, std::uint32_t fp) noexcept {
    assert(path.length >= 2);  // find_cuckoo_path looks for room from depth 1 on: a step exists
    for (unsigned step = path.length - 1; step > 0; --step) {
      const detail::CuckooPathStep& from = path.steps[step - 1];
      const std::uint64_t to = path.steps[step].bucket;
      StripeGuard guard(*this, from.bucket, to);
      // Same fingerprint => same alternate bucket, so the move stays within the item's pair.
      if (table_.read(from.bucket, from.slot) != from.fp || !table_.try_insert(to, from.fp)) {
        return false;
      }
      stripe_of(to).items.fetch_add(1, std::memory_order_relaxed);
      if (step == 1) {  // the root: the new fingerprint takes the slot just vacated
        table_.exchange(from.bucket, from.slot, fp);
      } else {
        table_.exchange(from.bucket, from.slot, 0);
        stripe_of(from.bucket).items.fetch_sub(1, std::memory_order_relaxed);
      }
    }
    return true;
  }

  Status erase_hash(std::uint64_t hash) noexcept {
    const Location at = locate(hash);
    table_.prefetch(at.alternate);
    StripeGuard guard(*this, at.primary, at.alternate);
    const std::uint64_t bucket = table_.contains(at.primary, at.fp) ? at.primary : at.alternate;
    if (!table_.try_erase(bucket, at.fp)) return Status::kNotFound;
    stripe_of(bucket).items.fetch_sub(1, std::memory_order_relaxed);
    return Status::kOk;
  }

  table_type table_;
  detail::Addressing<kFpBits> addressing_;
  std::size_t stripe_count_;
  std::unique_ptr<Stripe[]> stripes_;
  std::size_t requested_capacity_;
  std::uint64_t seed_;
  unsigned max_kicks_;
  alignas(64) std::atomic<std::uint64_t> path_restarts_{0};
};

}  // namespace ccf
