// HopscotchMap<H>: concurrent hopscotch hashing (Herlihy, Shavit and Tzafrir, "Hopscotch
// hashing", DISC 2008): a map from non-zero 64-bit keys to 64-bit values in which every item
// lies within H buckets of its home bucket (H = 32 or 64), so a lookup reads one short run of
// adjacent buckets, found through the home's hop bitmap. Lookups store nothing.
//
// Layout: m home buckets (any m: home = reduce_range(h, m)) and 2S more at the end, so that no
// neighbourhood or probe wraps around; each bucket 24 bytes:
//
//   | hop (u64: bit i set => bucket home + i holds an item whose home is this bucket) | key | value
//   |
//
// Key 0 marks a free bucket. Buckets form segments of S = 256 (segment = bucket / S); segment s
// belongs to stripe s mod T of a sync::SeqStripes (sync/seq_stripes.hpp), T fixed at
// construction (64 to 4096).
//
// Invariant (I): bit i of hop[b] is set only while bucket b + i holds a published item with home
// b; such an item (its key, value and place) changes only under the lock of its home's segment.
//
// Operations (h = mix64(key), detail/clht_sizing.hpp's hash; home b = reduce_range(h, m)):
//   find    optimistic: SeqStripes::read over the home's segment -- the hop bitmap, then the keys
//           it points at and the value -- validated by that segment's sequence number. By (I)
//           every change that could make the read wrong holds that lock, so a read that
//           validates saw one moment.
//   insert  lock the segments s and s + 1 of the home (in stripe order: no deadlock); refuse a
//           present key (kExists); claim the first free bucket f >= home with a CAS of its key
//           0 -> key (inserters of other segments probe the same buckets). While f is H or more
//           buckets from home: find in the H - 1 buckets before f a published item whose
//           neighbourhood reaches f, move it to f (its home's bitmap gains f and loses its old
//           place), and go on from its old bucket. Then write the value, and publish with the
//           home's bit (release). A moved item's home m has f - m < H <= f - home, so m > home;
//           and f <= reach(home), the end of segment s + 1: every home an insert touches lies in
//           the two locked segments, never before home's.
//   erase   lock the home's segment; clear the item's bit, then free its bucket (key 0).
//   resize  when no free bucket lies within reach (to the end of segment s + 1) or none can be
//           hopped into the neighbourhood, and the table is at least half full: every stripe
//           locked (SeqStripes::AllGuard), every item placed into a table twice as large, the
//           new table published. Below half full, a failure means more than H keys share one
//           home: a degenerate hash, and the insert returns kFull instead of growing without end.
//           Old tables are kept until the map is destroyed (detail/table_generations.hpp).
//
// Memory ordering: SeqStripes' points (1)-(6); bucket words are written with release stores and
// read with acquire loads ((2), (4)).
//
// Progress: finds retry while a writer holds their segment; updates block on segment locks.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "ccf/detail/clht_sizing.hpp"
#include "ccf/detail/map_api.hpp"
#include "ccf/detail/page_buffer.hpp"
#include "ccf/detail/prefetch.hpp"
#include "ccf/detail/table_generations.hpp"
#include "ccf/hash.hpp"
#include "ccf/status.hpp"
#include "ccf/sync/seq_stripes.hpp"

namespace ccf {

namespace hopscotch {
// The default test hook: nothing. A Hook with `static void on_move(std::uint64_t key)` is called
// by an insert that moves an item, after the item is copied to its new bucket and before it
// leaves the old one (tests pause there to show who else must wait).
struct NoHook {
  static void on_move(std::uint64_t) noexcept {}
};
}  // namespace hopscotch

template <unsigned H = 32, class Hook = hopscotch::NoHook>
class HopscotchMap : public detail::MapApi<HopscotchMap<H, Hook>, std::uint64_t, std::uint64_t> {
  static_assert(H == 32 || H == 64, "the neighbourhood is 32 or 64 buckets");

 public:
  static constexpr unsigned kNeighbourhood = H;
  // The load a table is sized for.
  static constexpr double kSizingLoad = 0.8;

  // Room for `capacity` items at the sizing load without a resize. Throws std::invalid_argument
  // beyond the 2^40-bucket table limit; reserve() likewise, changing nothing.
  explicit HopscotchMap(std::size_t capacity = 1024)
      : stripes_(stripes_for(homes_for(capacity))),
        tables_(std::make_unique<Table>(homes_for(capacity))) {}
  HopscotchMap(const HopscotchMap&) = delete;
  HopscotchMap& operator=(const HopscotchMap&) = delete;

  std::optional<std::uint64_t> find(std::uint64_t key) const {
    check(key);
    const std::uint64_t h = detail::ClhtSizing::hash(key);
    const Table& table = *tables_.current();
    const std::uint64_t home = table.home(h);
    detail::prefetch_line(&table.buckets[home]);
    const std::uint64_t segment = home / kSegment;
    return stripes_.read(segment, segment, [&]() -> std::optional<std::uint64_t> {
      const auto at = table.locate(home, key);
      if (!at) return std::nullopt;
      return table.buckets[*at].value.load(std::memory_order_acquire);
    });
  }
  // contains, insert and insert_or_assign: detail::MapApi over find and put; kFull only for a
  // degenerate hash (see the header; nothing changed).

  // kOk, or kNotFound.
  Status erase(std::uint64_t key) {
    check(key);
    const std::uint64_t h = detail::ClhtSizing::hash(key);
    for (;;) {
      Table& table = *tables_.current();
      const std::uint64_t home = table.home(h);
      const std::uint64_t segment = home / kSegment;
      const sync::SeqStripes::Guard guard(stripes_, segment, segment);
      if (!tables_.is_current(&table)) continue;  // a resize replaced it before we locked
      const auto at = table.locate(home, key);
      if (!at) return Status::kNotFound;
      table.set_hop(home, *at - home, false);
      table.buckets[*at].key.store(0, std::memory_order_release);
      stripes_.add_items(segment, -1);
      return Status::kOk;
    }
  }

  // Exact when no update is in flight.
  std::size_t size() const noexcept { return stripes_.items(); }
  std::size_t bucket_count() const noexcept { return tables_.current()->homes; }
  // Home buckets of the current table.
  std::size_t capacity() const noexcept { return bucket_count(); }
  // Grows the table (if needed) so that `capacity` items fit at the sizing load.
  void reserve(std::size_t capacity) {
    const std::uint64_t homes = homes_for(capacity);
    while (bucket_count() < homes) grow(tables_.current(), homes);
  }
  std::uint64_t resizes() const noexcept { return tables_.resizes(); }
  std::uint64_t resize_nanoseconds() const noexcept { return tables_.resize_nanoseconds(); }
  std::size_t memory_bytes() const {
    return tables_.memory_bytes() + stripes_.memory_bytes() + sizeof(*this);
  }

 private:
  friend class detail::MapApi<HopscotchMap<H, Hook>, std::uint64_t, std::uint64_t>;
  static constexpr std::uint64_t kSegment = 256;  // buckets; at least 2H (see insert)
  static_assert(2 * H <= kSegment);
  static constexpr std::uint64_t kMaxHomes = std::uint64_t{1} << 40;

  struct Bucket {
    std::atomic<std::uint64_t> hop{0};
    std::atomic<std::uint64_t> key{0};
    std::atomic<std::uint64_t> value{0};
  };
  static_assert(std::is_trivially_destructible_v<Bucket>, "buckets are never destroyed");

  struct Table {
    explicit Table(std::uint64_t count)
        : homes(count),
          storage((count + 2 * kSegment) * sizeof(Bucket)),
          buckets(construct(storage, count + 2 * kSegment)) {}

    static Bucket* construct(detail::PageBuffer& storage, std::uint64_t count) {
      auto* first = reinterpret_cast<Bucket*>(storage.data());
      for (std::uint64_t i = 0; i < count; ++i) new (first + i) Bucket;
      return std::launder(first);
    }

    std::uint64_t home(std::uint64_t h) const noexcept { return reduce_range(h, homes); }
    // The bucket of `key` in home's neighbourhood (by its hop bitmap), if there.
    std::optional<std::uint64_t> locate(std::uint64_t home, std::uint64_t key) const {
      for (std::uint64_t hop = buckets[home].hop.load(std::memory_order_acquire); hop != 0;
           hop &= hop - 1) {
        const std::uint64_t at = home + static_cast<unsigned>(std::countr_zero(hop));
        if (buckets[at].key.load(std::memory_order_acquire) == key) return at;
      }
      return std::nullopt;
    }
    void set_hop(std::uint64_t home, std::uint64_t offset, bool on) noexcept {
      std::atomic<std::uint64_t>& hop = buckets[home].hop;
      const std::uint64_t bit = std::uint64_t{1} << offset;
      const std::uint64_t old = hop.load(std::memory_order_relaxed);
      hop.store(on ? old | bit : old & ~bit, std::memory_order_release);
    }
    // The last bucket an insert with this home may use: the end of the segment after home's.
    std::uint64_t reach(std::uint64_t home) const noexcept {
      return (home / kSegment + 2) * kSegment - 1;
    }
    std::size_t memory_bytes() const noexcept { return storage.reserved_bytes(); }

    std::uint64_t homes;
    detail::PageBuffer storage;
    Bucket* buckets;  // homes + 2 S of them, in storage
  };

  static std::uint64_t homes_for(std::size_t capacity) {
    const double wanted = static_cast<double>(capacity) / kSizingLoad;
    if (wanted > static_cast<double>(kMaxHomes)) {
      throw std::invalid_argument("HopscotchMap capacity " + std::to_string(capacity) +
                                  " needs more than the 2^40-bucket table limit");
    }
    return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(wanted));
  }
  static std::size_t stripes_for(std::uint64_t homes) {
    return std::clamp<std::size_t>(std::bit_ceil(homes / kSegment + 1), 64, 4096);
  }
  static void check(std::uint64_t key) { detail::ClhtSizing::check(key, "HopscotchMap"); }

  Status put(std::uint64_t key, std::uint64_t value, bool assign) {
    check(key);
    const std::uint64_t h = detail::ClhtSizing::hash(key);
    for (;;) {
      Table& table = *tables_.current();
      const std::uint64_t home = table.home(h);
      const std::uint64_t segment = home / kSegment;
      std::optional<Status> status;
      {
        const sync::SeqStripes::Guard guard(stripes_, segment, segment + 1);
        if (!tables_.is_current(&table)) continue;
        status = place(table, home, key, value, assign);
      }
      if (status) {
        if (*status == Status::kOk) stripes_.add_items(segment, +1);
        return *status;
      }
      // No room within reach. Below half full that means a degenerate hash (see the header).
      if (2 * size() < table.homes || 2 * table.homes > kMaxHomes) return Status::kFull;
      grow(&table, 2 * table.homes);
    }
  }

  // Under the locks of home's segment and the next, or in a table nobody else sees:
  // the key's value assigned (kExists), or the item placed in home's neighbourhood (kOk).
  // nullopt: no room within reach (nothing changed).
  static std::optional<Status> place(Table& table, std::uint64_t home, std::uint64_t key,
                                     std::uint64_t value, bool assign) {
    if (const auto at = table.locate(home, key)) {
      if (assign) table.buckets[*at].value.store(value, std::memory_order_release);
      return Status::kExists;
    }
    std::uint64_t free = claim_free(table, home, key);
    if (free > table.reach(home)) return std::nullopt;
    while (free - home >= H) {
      const std::uint64_t next = hop_into(table, free);
      if (next == free) {  // nothing can move: give the claimed bucket back
        table.buckets[free].key.store(0, std::memory_order_release);
        return std::nullopt;
      }
      free = next;
    }
    table.buckets[free].value.store(value, std::memory_order_release);
    table.set_hop(home, free - home, true);  // publishes the item (release)
    return Status::kOk;
  }

  // The first bucket from home on whose key was 0 and is now `key` (claimed); past reach() if
  // none within it.
  static std::uint64_t claim_free(Table& table, std::uint64_t home, std::uint64_t key) {
    for (std::uint64_t b = home; b <= table.reach(home); ++b) {
      std::uint64_t expected = 0;
      if (table.buckets[b].key.load(std::memory_order_relaxed) == 0 &&
          table.buckets[b].key.compare_exchange_strong(expected, key, std::memory_order_acq_rel)) {
        return b;
      }
    }
    return table.reach(home) + 1;
  }

  // Moves into `free` (claimed by us for the insert at `home`, free - home >= H) a published item
  // from one of the H - 1 buckets before it whose neighbourhood reaches `free` -- so its home
  // lies after `home`, in the locked segments (see the header); returns the bucket it left (now
  // ours, holding our key), or `free` if none.
  static std::uint64_t hop_into(Table& table, std::uint64_t free) {
    const std::uint64_t our_key = table.buckets[free].key.load(std::memory_order_relaxed);
    for (std::uint64_t from = free - (H - 1); from < free; ++from) {
      const std::uint64_t moved = table.buckets[from].key.load(std::memory_order_relaxed);
      if (moved == 0) continue;
      const std::uint64_t moved_home = table.home(detail::ClhtSizing::hash(moved));
      // Published: its home's bit for `from` is set (a claimed bucket's is not yet).
      if (moved_home > from || free - moved_home >= H ||
          !(table.buckets[moved_home].hop.load(std::memory_order_relaxed) >> (from - moved_home) &
            1)) {
        continue;
      }
      Bucket& target = table.buckets[free];
      target.value.store(table.buckets[from].value.load(std::memory_order_relaxed),
                         std::memory_order_release);
      target.key.store(moved, std::memory_order_release);
      table.set_hop(moved_home, free - moved_home, true);
      Hook::on_move(moved);
      table.set_hop(moved_home, from - moved_home, false);
      table.buckets[from].key.store(our_key, std::memory_order_release);  // claimed for us
      return from;
    }
    return free;
  }

  // Replaces `from`, if it is still the current table, by one of `homes` home buckets (or more,
  // should its items not all fit). Blocks every operation but finds meanwhile.
  void grow(Table* from, std::uint64_t homes) {
    const sync::SeqStripes::AllGuard all(stripes_);
    if (!tables_.is_current(from) || homes <= from->homes) return;
    const auto start = std::chrono::steady_clock::now();
    for (;; homes *= 2) {
      auto to = std::make_unique<Table>(homes);
      if (copy_all(*from, *to)) {
        tables_.publish(std::move(to), start);
        return;
      }
    }
  }
  static bool copy_all(const Table& from, Table& to) {
    for (std::uint64_t home = 0; home < from.homes; ++home) {
      for (std::uint64_t hop = from.buckets[home].hop.load(std::memory_order_relaxed); hop != 0;
           hop &= hop - 1) {
        const Bucket& b = from.buckets[home + static_cast<unsigned>(std::countr_zero(hop))];
        const std::uint64_t key = b.key.load(std::memory_order_relaxed);
        if (!place(to, to.home(detail::ClhtSizing::hash(key)), key,
                   b.value.load(std::memory_order_relaxed), false)) {
          return false;
        }
      }
    }
    return true;
  }

  mutable sync::SeqStripes stripes_;
  detail::TableGenerations<Table> tables_;
};

}  // namespace ccf
