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
// belongs to stripe s mod T of the table's sync::SeqStripes (sync/seq_stripes.hpp), T from 64 to
// 4096 by the table's size.
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
//           hopped into the neighbourhood, and the table is at least half full: a migration
//           into a table `Growth::factor` times as large (twice by default; below), which the
//           updates carry out together. Below half full, a failure means more than H keys share
//           one home: a degenerate hash, and the insert returns kFull instead of growing without
//           end.
//
// Resize: cooperative and incremental, one segment at a time (as growt's migrations and Java's
// ConcurrentHashMap's transfers; BasicClht's M1-M6 in tables/basic_clht.hpp). Each table has its
// own SeqStripes; a migration holds the old table's segment lock, then the new table's.
//   R1  Begin. The insert that finds no room in the current table, if it gets resize_lock_ (a
//       try-lock: others go on), allocates the table of ceil(factor * m) homes (or what
//       reserve() asks for) and the migration's state (a `moved` flag per old segment,
//       counters) and stores the old table's `migration` pointer (release; loaded with acquire).
//       Only a current table begins one, and only once (the pointer is never reset), so at most two
//       tables take updates at any time.
//   R2  One segment. reduce_range keeps the order of hashes: from m homes to m' ones, old home
//       b's items go to new homes floor(b m' / m) .. ceil((b + 1) m' / m) - 1, so old segment
//       s's go to one run of new segments (2s and 2s + 1 when doubling; at most three for any
//       factor up to 2; for a reserve() far larger, possibly every stripe of the new table), and
//       their inserts reach no further than the end of the segment after it
//       (target_segments()). migrate_segment holds old segment s's lock -- every change to an
//       item homed in s holds it (I) -- and that run's new segments' (a RangeGuard; neighbouring
//       copies share a segment at the run's ends, and updates of the new table take theirs too:
//       no two copies or updates touch one new item at once), places each item homed in s,
//       then sets moved[s] (release) before it unlocks. Invariant: an item homed in old segment
//       s lives in the old table while moved[s] is clear, in the new table once it is set, and
//       moved[s] is never cleared. Should an item find no room in the new table (a degenerate
//       hash), the copy takes back what it placed, leaves s in the old table and marks the
//       migration stuck: both tables keep serving, and inserts that would need the resize get
//       kFull, as they would below half full.
//   R3  Routing. An update locks its home's segment(s) in the table it starts from (current())
//       and reads moved[s] under that lock: set, it unlocks and goes on in the successor; clear,
//       the segment is its items' holder for as long as the lock is held. A lookup reads moved[s]
//       inside its optimistic read: the copy holds the segment's lock, so a read that validates
//       saw moved[s] and the items of one moment.
//   R4  Sharing the work. Every insert and erase that finds its table migrating first claims one
//       segment (TableMigration::claim: a wrapping cursor over the even segments, then the odd
//       ones, so that claims in a row do not lock the same new segment when doubling, R2) and
//       migrates it unless it is moved already or its lock is busy (try-lock: skipped, a later
//       claim comes round to it). A thread suspended in the middle of a segment's copy holds that
//       stripe's operations, as any suspended lock holder does; one suspended after its claim and
//       before the lock holds nobody, and the others' claims migrate every other segment. An insert
//       that finds no room in a migrating table migrates its own segment (waiting for its lock) and
//       goes on in the new one. reserve() claims until done.
//   R5  Publication. Each segment moved decrements `left` (acq_rel); the thread that takes it to
//       zero has seen every copy and makes the new table current (TableGenerations::publish,
//       release). Publishing never throws: the table was kept when the migration began.
//   R6  Memory. Then the old table's buckets are handed back to the system (MADV_DONTNEED: the
//       range stays mapped and reads as zeros), its stripes and migration state kept for late
//       threads. Updates never touch them: they find moved[s] under the lock and leave. A lookup
//       that read zeros read them after every moved flag was set, so it either read moved[s]
//       set and left, or began its read before the copy of s locked the stripe -- and then its
//       validation sees the stripe's sequence changed and it reads again (the kernel's TLB
//       shootdown is a full barrier on every CPU that had the pages mapped). Tables under 64
//       KiB (heap memory) are kept whole until the map goes.
//
// Memory ordering: SeqStripes' points (1)-(6); bucket words and moved flags are written with
// release stores and read with acquire loads ((2), (4)). R1-R5 give the migration's.
//
// Progress: finds retry while a writer (an update or a segment's copy) holds their segment, never
// waiting for a migration as a whole; updates block on segment locks, and do at most one
// segment's copy besides their own work (or their own segment's, when their insert needs it).
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cassert>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

#include "ccf/detail/clht_sizing.hpp"
#include "ccf/detail/growth_factor.hpp"
#include "ccf/detail/map_api.hpp"
#include "ccf/detail/page_buffer.hpp"
#include "ccf/detail/prefetch.hpp"
#include "ccf/detail/sharded_counter.hpp"
#include "ccf/detail/table_generations.hpp"
#include "ccf/detail/table_migration.hpp"
#include "ccf/hash.hpp"
#include "ccf/status.hpp"
#include "ccf/sync/seq_stripes.hpp"

namespace ccf {

namespace hopscotch {
// The default test hook: nothing. A Hook with `static void on_move(std::uint64_t key)` is called
// by an insert that moves an item, after the item is copied to its new bucket and before it
// leaves the old one (tests pause there to show who else must wait); its optional
// `static void on_claim(std::uint64_t segment)`, by a thread that has claimed a segment of a
// migration, before it locks the segment (R4).
struct NoHook {
  static void on_move(std::uint64_t) noexcept {}
};
}  // namespace hopscotch

template <unsigned H = 32, class Hook = hopscotch::NoHook>
class HopscotchMap : public detail::MapApi<HopscotchMap<H, Hook>, std::uint64_t, std::uint64_t> {
  static_assert(H == 32 || H == 64, "the neighbourhood is 32 or 64 buckets");

 public:
  static constexpr unsigned kNeighbourhood = H;
  // The load a table is sized for. With H = 32, inserts first find no room near load 0.79 (2^23
  // random keys: at 0.788 and 0.795 in two runs of three), so a table sized for 0.8 could
  // resize before it held what it was sized for; at 0.75 none did.
  static constexpr double kSizingLoad = 0.75;
  static constexpr std::uint64_t kSegment = 256;  // buckets; at least 2H (see insert)

  // How much larger each table is than the one it replaces (R1; detail/growth_factor.hpp): any
  // factor in [kMinGrowth, 2], 2 by default. Not below 1.25: a copy that finds no room in the
  // new table makes the migration stuck (R2), and a table grown by g from load 0.79 stands at
  // 0.79 / g after it -- 0.63 at 1.25, well below the load where placements first fail. Tables
  // under kFactorFrom homes (16 segments) double whatever the factor (the growth_factor.hpp
  // header says why).
  using Growth = detail::Growth;
  static constexpr double kMinGrowth = 1.25;
  static constexpr std::uint64_t kFactorFrom = 16 * kSegment;

  // Room for `capacity` items at the sizing load without a resize. Throws std::invalid_argument
  // beyond the 2^40-bucket table limit (reserve() likewise, changing nothing), or if the growth
  // factor is outside [kMinGrowth, 2].
  explicit HopscotchMap(std::size_t capacity = 1024) : HopscotchMap(capacity, Growth{}) {}
  HopscotchMap(std::size_t capacity, Growth growth)
      : growth_(detail::checked_growth(growth, kMinGrowth, "HopscotchMap")),
        tables_(std::make_unique<Table>(homes_for(capacity), detail::BucketPages::kWritten)) {}
  HopscotchMap(const HopscotchMap&) = delete;
  HopscotchMap& operator=(const HopscotchMap&) = delete;

  std::optional<std::uint64_t> find(std::uint64_t key) const {
    check(key);
    const std::uint64_t h = detail::ClhtSizing::hash(key);
    for (const Table* table = tables_.current();; table = table->successor()) {
      const std::uint64_t home = table->home(h);
      detail::prefetch_line(&table->buckets[home]);
      const std::uint64_t segment = home / kSegment;
      // nullopt: the segment moved on (R3); else what the table holds.
      const auto found = table->stripes.read(
          segment, segment, [&]() -> std::optional<std::optional<std::uint64_t>> {
            if (table->moved(segment)) return std::nullopt;
            const auto at = table->locate(home, key);
            if (!at) return std::optional<std::uint64_t>();
            return table->buckets[*at].value.load(std::memory_order_acquire);
          });
      if (found) return *found;
    }
  }
  // contains, insert and insert_or_assign: detail::MapApi over find and put; kFull only for a
  // degenerate hash (see the header; nothing changed).

  // kOk, or kNotFound.
  Status erase(std::uint64_t key) {
    check(key);
    const std::uint64_t h = detail::ClhtSizing::hash(key);
    Table* table = tables_.current();
    help(*table);
    for (;; table = table->successor()) {
      const std::uint64_t home = table->home(h);
      const std::uint64_t segment = home / kSegment;
      const sync::SeqStripes::Guard guard(table->stripes, segment);
      if (table->moved(segment)) continue;  // (R3)
      const auto at = table->locate(home, key);
      if (!at) return Status::kNotFound;
      table->set_hop(home, *at - home, false);
      table->buckets[*at].key.store(0, std::memory_order_release);
      items_.add(-1);
      return Status::kOk;
    }
  }

  // Exact when no update is in flight.
  std::size_t size() const noexcept { return static_cast<std::size_t>(items_.value()); }
  std::size_t bucket_count() const noexcept { return tables_.current()->homes; }
  // Home buckets of the current table.
  std::size_t capacity() const noexcept { return bucket_count(); }
  // Grows the table so that `capacity` items fit at the sizing load -- one migration, straight
  // to that size (or one growth step, if more) -- migrating until it does (with whichever
  // threads help); stops early, changing nothing more, if a migration is stuck (R2) or at the
  // table limit.
  void reserve(std::size_t capacity) {
    const std::uint64_t homes = homes_for(capacity);
    for (Table* table = tables_.current(); table->homes < homes; table = tables_.current()) {
      Migration* m = table->migration.load(std::memory_order_acquire);
      if (m == nullptr) {
        if (table->homes >= kMaxHomes) return;
        begin_migration(*table, std::max(homes, grown(table->homes)));
      } else if (m->stuck()) {
        return;
      } else {
        migrate_claimed(*table, *m);
      }
    }
  }
  // Whether a resize is under way: begun, its new table not yet current.
  bool resizing() const noexcept {
    return tables_.current()->migration.load(std::memory_order_relaxed) != nullptr;
  }
  std::uint64_t resizes() const noexcept { return tables_.resizes(); }
  std::uint64_t resize_nanoseconds() const noexcept { return tables_.resize_nanoseconds(); }
  // Buckets and stripes of every table held (a retired table's buckets are not: R6), and the
  // map object.
  std::size_t memory_bytes() const { return tables_.memory_bytes() + sizeof(*this); }

 private:
  friend class detail::MapApi<HopscotchMap<H, Hook>, std::uint64_t, std::uint64_t>;
  static_assert(2 * H <= kSegment);
  static constexpr std::uint64_t kMaxHomes = std::uint64_t{1} << 40;

  struct Bucket {
    std::atomic<std::uint64_t> hop{0};
    std::atomic<std::uint64_t> key{0};
    std::atomic<std::uint64_t> value{0};
  };
  static_assert(std::is_trivially_destructible_v<Bucket>, "buckets are never destroyed");

  struct Table;

  // Its chunks: segments (R1-R5), claimed even ones first (R4).
  using Migration = detail::TableMigration<Table, detail::ClaimOrder::kEvenThenOdd>;

  struct Table {
    // The map's first table has its pages written now; a migration's, by those who fill it.
    Table(std::uint64_t count, detail::BucketPages pages)
        : homes(count),
          stripes(stripes_for(count)),
          storage((count + 2 * kSegment) * sizeof(Bucket)),
          buckets(detail::zeroed_buckets<Bucket>(storage, count + 2 * kSegment, pages)) {}

    std::uint64_t home(std::uint64_t h) const noexcept { return reduce_range(h, homes); }
    std::uint64_t segments() const noexcept { return (homes + kSegment - 1) / kSegment; }
    // Whether segment s's items have moved to the successor (R2, R3): stable under s's lock.
    bool moved(std::uint64_t segment) const noexcept {
      const Migration* m = migration.load(std::memory_order_acquire);
      return m != nullptr && m->moved(segment);
    }
    // Where a moved segment's items are (R2); only after moved() returned true.
    Table* successor() const noexcept { return migration.load(std::memory_order_acquire)->to; }
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
    std::size_t memory_bytes() const noexcept {
      return stripes.memory_bytes() +
             (retired.load(std::memory_order_relaxed) ? 0 : storage.reserved_bytes());
    }

    const std::uint64_t homes;
    mutable sync::SeqStripes stripes;
    detail::PageBuffer storage;
    Bucket* const buckets;  // homes + 2 S of them, in storage
    // Set once, under resize_lock_, when a migration of this table begins (release: R1).
    std::atomic<Migration*> migration{nullptr};
    std::unique_ptr<Migration> owned_migration;
    std::atomic<bool> retired{false};  // its buckets handed back (R6)
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
    // Counted ahead: make_room's test for a degenerate hash reads size().
    return detail::count_ahead(items_, [&] { return put_counted(h, key, value, assign); });
  }
  Status put_counted(std::uint64_t h, std::uint64_t key, std::uint64_t value, bool assign) {
    Table* table = tables_.current();
    help(*table);
    for (;;) {
      const std::uint64_t home = table->home(h);
      const std::uint64_t segment = home / kSegment;
      std::optional<Status> status;
      {
        const sync::SeqStripes::Guard guard(table->stripes, segment, segment + 1);
        if (!table->moved(segment)) status = place(*table, home, key, value, assign);
      }
      if (status) return *status;
      if (!table->moved(segment) && !make_room(*table, segment)) return Status::kFull;
      if (table->moved(segment)) table = table->successor();  // (R3)
    }
  }

  // For an insert that found no room in `table` for an item homed in `segment`: moves the
  // segment on (beginning the migration if there is none) or, for a table a migration still
  // fills, helps that migration to its end. False: the insert gets kFull -- the table is under
  // half full (a degenerate hash), at the size limit, or its migration is stuck (R2).
  bool make_room(Table& table, std::uint64_t segment) {
    if (Migration* m = table.migration.load(std::memory_order_acquire)) {
      return migrate_segment(table, *m, segment, /*wait=*/true) != Move::kStuck;
    }
    if (!tables_.is_current(&table)) {
      // The target of a migration under way, or already superseded (tables only grow, so a
      // current table as large means `table` was published): help until it is.
      for (Table* old = tables_.current(); old->homes < table.homes; old = tables_.current()) {
        Migration* m = old->migration.load(std::memory_order_acquire);  // into `table`
        if (m->stuck()) return false;
        migrate_claimed(*old, *m);
      }
      return true;
    }
    if (2 * size() < table.homes || table.homes >= kMaxHomes) return false;
    begin_migration(table, grown(table.homes));
    return true;
  }

  // Its share of the migration under way from `table`, if any (R4).
  void help(Table& table) {
    if (Migration* m = table.migration.load(std::memory_order_acquire)) migrate_claimed(table, *m);
  }

  // The size of the table that replaces one of `homes` homes when it fills (R1): at least one
  // home more, at most the table limit.
  std::uint64_t grown(std::uint64_t homes) const noexcept {
    return detail::grown_size(homes, growth_, kFactorFrom, kMaxHomes);
  }

  // (R1) Begins the migration of `table`, the current one, into a table of `homes` homes (more
  // than it has), unless another thread is beginning one (it then yields, so that one
  // finishes). May throw std::bad_alloc, having changed nothing.
  void begin_migration(Table& table, std::uint64_t homes) {
    assert(homes > table.homes && homes <= kMaxHomes);
    const std::unique_lock lock(resize_lock_, std::try_to_lock);
    if (!lock.owns_lock()) {
      std::this_thread::yield();
      return;
    }
    if (table.migration.load(std::memory_order_relaxed) != nullptr) return;
    Table* to = tables_.keep(std::make_unique<Table>(homes, detail::BucketPages::kOnFirstUse));
    table.owned_migration = std::make_unique<Migration>(to, table.segments());
    table.migration.store(table.owned_migration.get(), std::memory_order_release);
  }

  // One claim (R4): the segment at the cursor, unless moved or busy.
  void migrate_claimed(Table& from, Migration& m) {
    const std::uint64_t segment = m.claim();
    if constexpr (requires { Hook::on_claim(segment); }) Hook::on_claim(segment);
    migrate_segment(from, m, segment, /*wait=*/false);
  }

  using Move = typename Migration::Move;

  // (R2) Moves old segment s's items into the new table, waiting for s's lock if `wait`; the
  // last segment publishes the new table and retires `from` (R5, R6).
  Move migrate_segment(Table& from, Migration& m, std::uint64_t s, bool wait) {
    return m.move(
        s, [&] { return sync::SeqStripes::RangeGuard(from.stripes, s, 1, wait); },
        [&] {
          const auto [first, count] = target_segments(from, *m.to, s);
          const sync::SeqStripes::RangeGuard guard(m.to->stripes, first, count, /*wait=*/true);
          return copy_segment(from, *m.to, s);
        },
        [&] {
          tables_.publish(m.to, m.start);
          // (R6) Every segment is moved: no update touches the buckets any more.
          from.retired.store(from.storage.discard(), std::memory_order_relaxed);
        });
  }

  // (R2) The run of `to`'s segments that the copy of `from`'s segment s may touch: the first and
  // how many (3 when doubling, at most 4 for a factor up to 2; reserve() may grow by more).
  // reduce_range(h, m) = floor(h m / 2^64), so a hash with old home b has b m' / m <= its new
  // home < (b + 1) m' / m. A run longer than `to`'s stripes is all of them (segment i belongs to
  // stripe i mod T), so the count stops there.
  static std::pair<std::uint64_t, std::uint64_t> target_segments(const Table& from, const Table& to,
                                                                 std::uint64_t s) {
    __extension__ using u128 = unsigned __int128;
    const std::uint64_t first_home = s * kSegment;
    const std::uint64_t end_home = std::min(first_home + kSegment, from.homes);
    const auto lowest = static_cast<std::uint64_t>(u128{first_home} * to.homes / from.homes);
    const auto highest =
        static_cast<std::uint64_t>((u128{end_home} * to.homes + from.homes - 1) / from.homes - 1);
    const std::uint64_t first = lowest / kSegment;
    const std::uint64_t run = highest / kSegment + 2 - first;  // + the segment after: reach()
    return {first, std::min<std::uint64_t>(run, to.stripes.count())};
  }

  // Places every item homed in old segment s into `to` (under the locks R2 names); false, with
  // `to` as it was, if one finds no room.
  static bool copy_segment(const Table& from, Table& to, std::uint64_t s) {
    const std::uint64_t first = s * kSegment;
    const std::uint64_t last = std::min(first + kSegment, from.homes);
    for (std::uint64_t home = first; home < last; ++home) {
      for (std::uint64_t hop = from.buckets[home].hop.load(std::memory_order_relaxed); hop != 0;
           hop &= hop - 1) {
        const Bucket& b = from.buckets[home + static_cast<unsigned>(std::countr_zero(hop))];
        const std::uint64_t key = b.key.load(std::memory_order_relaxed);
        if (!place(to, to.home(detail::ClhtSizing::hash(key)), key,
                   b.value.load(std::memory_order_relaxed), false)) {
          take_back(from, to, first, home);
          return false;
        }
      }
    }
    return true;
  }
  // Erases from `to` the items of old homes [first, end) (a copy that failed at `end`).
  static void take_back(const Table& from, Table& to, std::uint64_t first, std::uint64_t end) {
    for (std::uint64_t home = first; home < end; ++home) {
      for (std::uint64_t hop = from.buckets[home].hop.load(std::memory_order_relaxed); hop != 0;
           hop &= hop - 1) {
        const std::uint64_t key =
            from.buckets[home + static_cast<unsigned>(std::countr_zero(hop))].key.load(
                std::memory_order_relaxed);
        const std::uint64_t to_home = to.home(detail::ClhtSizing::hash(key));
        const auto at = to.locate(to_home, key);
        to.set_hop(to_home, *at - to_home, false);
        to.buckets[*at].key.store(0, std::memory_order_release);
      }
    }
  }

  // Under the locks of home's segment and the next (an update), or R2's (a copy):
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

  const Growth growth_;
  std::mutex resize_lock_;  // who begins a migration (R1)
  detail::ShardedCounter items_;
  detail::TableGenerations<Table> tables_;
};

}  // namespace ccf
