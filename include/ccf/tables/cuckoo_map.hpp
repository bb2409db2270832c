// CuckooMap: a concurrent cuckoo hash map after libcuckoo (Li, Andersen, Kaminsky and
// Freedman, "Algorithmic improvements for fast concurrent cuckoo hashing", EuroSys 2014):
// (2,4) buckets, lock striping, breadth-first cuckoo paths, and -- unlike libcuckoo, whose
// lookups take their buckets' locks -- optimistic lookups that store nothing. Keys and values
// are any trivially copyable types; the hash is the user's.
//
// Layout: m buckets (any m), each
//
//   | version (u64) | header (u64) | key0 .. key3 | value0 .. value3 |
//
//   header = | overflow (16 bits) | displaced (4 bits, one per slot) | tags (four 11-bit lanes) |
//
// stored as 64-bit atomic words (a key or value of s bytes takes ceil(s / 8) words): 80 bytes
// for 8-byte keys and values, so a table at load 0.9 spends 22 bytes per item. The version is
// the bucket's seqlock for lookups (below); the 8 bytes it costs bought lookups that read no
// line but their buckets' (docs/benchmarks.md). A tag is 11 bits
// of the key's hash, 0 for an empty slot. Addressing is the filters' partial-key rule
// (detail/addressing.hpp): from h = mix64(Hash(key)), bucket i1 = reduce_range(h, m), tag = the
// low 11 bits of h (0 -> 1), i2 = alternate(i1, tag) -- an involution computable from a bucket
// and a tag alone, so paths are searched on tags without touching or hashing keys.
//
// Primary first, and lookups that read one bucket. Like Horton tables (Breslow, Lee, Hauck,
// Kaminsky and Rottenberg, USENIX ATC 2016) and Cuckoo++ (Le Scouarnec, ANCS 2018), a bucket
// keeps a summary of what left it; here an exact count. i1 is the key's primary bucket, i2 its
// alternate. An item goes to its primary when that has room; a slot's displaced bit says that
// its item sits in its alternate, and a bucket's overflow field counts the items whose primary
// it is that sit in their alternates. Invariant, whenever no writer holds the bucket's stripe:
//
//   overflow(p) = #{ items with primary p stored in alternate(p, tag) != p }
//
// so a lookup of a key that is not in its primary bucket reads the alternate only when the
// primary's overflow is not zero. At load 0.45 (half the sizing load) 3% of the items sit in
// their alternates, at 0.9 23%; a lookup that needs only its primary reads one bucket's header
// and keys, and an update that needs only its primary locks one stripe (docs/benchmarks.md has
// what that bought). The field cannot
// overflow: the items counted for p sit in at most 2^11 - 1 buckets (one per tag), at most 4 each.
// The locking rule that keeps it, and that lookups rely on: a write to a bucket holds that
// bucket's stripe, and a write that changes whether or where an item with primary p is, or p's
// overflow, holds p's stripe (and the other bucket's, if it writes there).
//
// Synchronization: writers lock the table's sync::SeqStripes (sync/seq_stripes.hpp): bucket i
// belongs to stripe (i / 8) mod S (S from 64 to 4096 by the table's size; runs shorter than 8
// in small tables), so that a migration locks a run of buckets with few stripes (C2). Readers
// never touch the stripes: every mutation of the table (Table::mutate: store, erase, assign,
// move) makes the versions of the buckets it changes odd while it changes them, under those
// buckets' stripes.
//   find      optimistic, both buckets prefetched (Table::snapshot): read i1's version, then its
//             header, compare the keys whose tags match; absent there and i1's overflow not
//             zero, the same in i2 (its version first); copy the value; validate the versions
//             read (unchanged, and even). Stores nothing, and reads no line but its buckets'.
//   insert    a key that find sees present is refused (kExists) without a lock: a failed update
//             writes nothing (ASCY 3). Otherwise lock i1's stripe alone; the key in i1: kExists;
//             not there, i1's overflow zero and a slot free: store it there (value and key
//             first, then the tag). Else release it and lock the stripes of i1, i2; refuse if the
//             key is present now (kExists); else store in a free slot, i1's first (in i2 the
//             item is displaced and i1's overflow counts it). Both full: release the locks,
//             search a path breadth-first on the tags (detail/cuckoo_path.hpp, no locks), and
//             execute it back to front, one step per lock section on the step's two buckets'
//             stripes, re-validating each step (the source slot still has the tag the search
//             saw, so the same alternate; the target still has room). The last step, out of i1
//             or i2, locks the stripes of i1, i2 and its target together, checks again that the
//             key is absent, and stores the new item in the slot it vacates. A move flips the
//             item's displaced bit and counts it in, or out of, its primary's overflow. A step
//             that fails validation restarts the insert; moves already made kept every item.
//   erase     a key that find sees absent is kNotFound without a lock; else lock i1's stripe
//             and clear the key's tag there -- or, absent from i1 and its overflow zero,
//             kNotFound. Else lock the stripes of i1, i2; clear the key's tag (and, if it was
//             displaced, count it out of i1).
//   resize    when both buckets are full and the table holds more than kGrowthLoad of its slots,
//             or no path exists and the table is at least half full: a migration into a
//             table `Growth::factor` times as large (twice by default; below), carried out by
//             the updates together. Below half full a missing path means more than 8 keys share
//             one bucket pair and tag -- a degenerate hash -- and the insert returns kFull
//             instead of growing without end.
//
// Why a find never misses a present key, nor returns a torn value: a key's slot (stored, moved
// between its two buckets, cleared, its value assigned) and its primary's overflow only change
// inside mutations, each of which keeps the invariant and holds the versions of the buckets it
// changes odd; a find that overlaps one on a bucket it read retries. A validated find that
// skipped i2 saw, at one moment between mutations of i1, the key in i1, or absent from i1 and no
// item of i1 displaced: by the invariant, not in i2. One that read i2 read i2's version before
// re-reading i1's: the two buckets' quiet windows overlap, and at a moment in both it saw both. A
// find that loaded the table just before a resize published a larger one reads the old table,
// which no longer changes after the publication: its answer is the map's state at that moment,
// inside the find's run. Writers re-check after locking that their table is not migrating.
//
// Resize: cooperative and incremental (as tables/hopscotch_map.hpp's R1-R6, with the state of
// detail/table_migration.hpp), in chunks of kChunk buckets of the old table. An item belongs to
// the chunk of the bucket it sits in, so a key's two buckets may lie in two chunks.
//   C1  Begin. The insert that finds both its buckets full in the current table, once it holds
//       more than kGrowthLoad of its slots (or that finds no path, past half full), if it gets
//       resize_lock_ (a try-lock), allocates the larger table (ceil(factor * m) buckets, or
//       what reserve() asks for) and the migration's state, and stores the old table's
//       `migration` pointer (release). Only a current table begins one, once. Nothing below
//       depends on the new size for correctness: a copy inserts each item afresh (C2). For
//       progress it must leave room: inserts run in the new table while the copies fill it
//       (C3), and a copy that finds no path there makes the migration stuck. A migration ends
//       within about one update per chunk (C4), so about m / kChunk + T items arrive (T the
//       threads in flight) while the copies bring what the old table held when it began: about
//       kGrowthLoad * 4m = 3.68m (fewer if a path search failed first). A new table of
//       factor * m buckets holds 3.6 * factor * m at its sizing load: (3.6 * factor - 3.68) * m
//       more, at least 0.37m -- more than m / 8 + T once m >= kFactorFrom = 4096 and T < 1,000.
//       Smaller tables double: seen stuck with 8 threads on a 12-bucket table grown by 1.125.
//   C2  One chunk. move_chunk holds the stripes of the chunk's buckets in the old table
//       (SeqStripes::RangeGuard; one stripe, Table::stripe_shift) and inserts each item sitting
//       there into the new table, then sets moved[c] (release) and unlocks. No key of the chunk is
//       in the new table (C3: its updates wait for the chunk), so the copy looks for none: an item
//       that sat in its primary goes to its new primary if that has room, under that bucket's
//       stripe, which is all that the locking rule asks of a write into a key's primary. The new
//       primaries keep the order of the old (reduce_range is monotone; doubling sends bucket b's to
//       2b and 2b + 1), so the chunk's items come in runs that share a stripe, each run under one
//       lock. Every other item is inserted as any insert is there (its own stripes, cuckoo paths
//       step by step). It writes nothing into the old table, so lookups of the old table never
//       retry because of it. Invariant: an item lives in the old table while the chunk of its
//       bucket is unmoved, in the new table after. From the migration's start no update writes into
//       the old table (C3), so a chunk's items only leave it. Should an item find no path in the
//       new table (a degenerate hash), the copy takes back what it placed, leaves the chunk in the
//       old table and marks the migration stuck: it never completes, and the updates of keys with
//       an unmoved bucket then run one at a time (stuck_lock_) on both tables -- the key's unmoved
//       buckets in the old one, else the new one, which takes their inserts until it is full
//       (kFull); lookups that miss in the old table then ask the new one too.
//   C3  Routing. An update first takes its share (C4), then moves the chunks of both of its
//       key's buckets if they are not (waiting for their stripes), and runs in the new table:
//       there, and only there, the key's item can be. An update that took its stripes in a table
//       before a migration of it began finds the `migration` pointer set under them (the copies
//       of its buckets' chunks wait for those stripes) and starts over; one that read it unset
//       finishes first, and the copies see what it wrote.
//   C4  Sharing. Every insert and erase that finds its table migrating, and its own chunks moved
//       already, claims one chunk (TableMigration::claim: a wrapping cursor that passes over moved
//       chunks) and moves it unless moved or busy (try-lock). A thread suspended between claim and
//       lock holds nobody (the cursor comes round to its chunk again; tests/table_resize_test.cpp
//       suspends one there through the Hook); one suspended in a copy holds that chunk's stripes,
//       as any lock holder does. reserve() claims until done.
//   C5  Lookups never wait for a migration: with both of the key's chunks unmoved, the old table
//       answers (snapshot as above); with one moved, the other bucket in the old table (if its
//       chunk is unmoved), then the new table. Either way the moved flags read before are read
//       again after the old table's snapshot, and a change sends the lookup round again: an
//       answer from the old table stands only if the old table held the key's bucket(s) through
//       the snapshot. A lookup of a table with no migration reads its `migration` pointer again
//       after the snapshot for the same reason (a migration may begin, and even end, meanwhile). A
//       key's item is in the old table or the new one, never both; it moves only with its chunk,
//       whose flag then changes.
//   C6  Publication and memory. The thread that moves the last chunk publishes the new table
//       (TableGenerations::publish) and hands the old table's buckets back to the system
//       (MADV_DONTNEED: they read as zeros from then on; tables under 64 KiB are kept). No
//       update touches them any more (C3); a late lookup that reads zeros -- an empty bucket,
//       version 0 -- read them after every chunk's flag was set, and its re-check of the flags
//       (C5) sends it on to the new table (the argument of tables/basic_clht.hpp's M6).
//
// Memory ordering: the bucket versions follow SeqStripes' points (2)-(6) (Boehm's fence-free
// seqlock), with (1) a relaxed store of the odd version by the stripe's holder, the version's
// only writer, that (2) keeps ahead of the slot words' release stores; (4) slot words are read
// with acquire loads. The stripes order writers among themselves (SeqStripes (1), (3)). The table
// and migration pointers are published with release and loaded with acquire (C1, C6).
//
// Hash and KeyEqual: a find may compare the key it looks for against a copy of a slot's key
// that a writer is overwriting (the result is discarded when validation fails), so KeyEqual
// must be a pure function of the bytes. Hash is called only on keys the user passes and, during
// a resize, on stored keys.
//
// Progress: finds are blocking only while a mutation changes one of their buckets, never waiting
// for a migration; updates block on stripe locks and do at most two chunks' copies besides their
// own work (C3, C4).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cassert>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>

#include "ccf/detail/addressing.hpp"
#include "ccf/detail/bit_lanes.hpp"
#include "ccf/detail/cuckoo_path.hpp"
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
#include "ccf/sync/spin_wait.hpp"

namespace ccf {

// Hook: detail::NoMigrationHook, or a test's (detail/table_migration.hpp).
template <class Key, class Value, class Hash = std::hash<Key>, class KeyEqual = std::equal_to<Key>,
          class Hook = detail::NoMigrationHook>
class CuckooMap : public detail::MapApi<CuckooMap<Key, Value, Hash, KeyEqual, Hook>, Key, Value> {
  static_assert(std::is_trivially_copyable_v<Key> && std::is_trivially_copyable_v<Value>,
                "CuckooMap stores keys and values as words that lookups copy while writers may "
                "change them: both must be trivially copyable");

 public:
  static constexpr unsigned kSlots = 4;
  // The load a table is sized for.
  static constexpr double kSizingLoad = 0.9;
  // The load past which an insert that finds both its buckets full begins a resize (C1) rather
  // than search a cuckoo path. Above the sizing load, so that a map sized for n items and kept
  // near n by inserts and erases does not double for the few items over n that they bring; not
  // far above it, since each table a build from empty grows through fills to it by paths (0.95
  // built 10-14% slower than 0.9, 0.92 3-6%: docs/benchmarks.md).
  static constexpr double kGrowthLoad = 0.92;
  // Buckets a migration moves per claim (C2, C4): about 30 items near the sizing load.
  static constexpr std::uint64_t kChunk = 8;

  // How much larger each table is than the one it replaces (C1; detail/growth_factor.hpp): any
  // factor in [kMinGrowth, 2], 2 by default. Tables under kFactorFrom buckets double whatever
  // the factor (C1 says why).
  using Growth = detail::Growth;
  static constexpr double kMinGrowth = 1.125;
  static constexpr std::uint64_t kFactorFrom = 4096;

  // Room for `capacity` items without a resize. Throws std::invalid_argument if that needs more
  // than 2^40 buckets, the library's table limit (reserve() likewise, changing nothing), or if
  // the growth factor is outside [kMinGrowth, 2].
  explicit CuckooMap(std::size_t capacity = 1024, Hash hash = {}, KeyEqual equal = {})
      : CuckooMap(capacity, Growth{}, std::move(hash), std::move(equal)) {}
  CuckooMap(std::size_t capacity, Growth growth, Hash hash = {}, KeyEqual equal = {})
      : hash_(std::move(hash)),
        equal_(std::move(equal)),
        growth_(detail::checked_growth(growth, kMinGrowth, "CuckooMap")),
        tables_(std::make_unique<Table>(buckets_for(capacity), detail::BucketPages::kWritten)) {}
  CuckooMap(const CuckooMap&) = delete;
  CuckooMap& operator=(const CuckooMap&) = delete;

  std::optional<Value> find(const Key& key) const {
    return read(key, hash(key),
                [](const Table& table, const std::optional<Slot>& slot) -> std::optional<Value> {
                  if (slot) return table.value(*slot);
                  return std::nullopt;
                });
  }
  // find without copying the value.
  bool contains(const Key& key) const { return present(key, hash(key)); }
  // insert and insert_or_assign: detail::MapApi over put; kFull only for a degenerate hash (more
  // than 8 keys with one 64-bit hash; nothing changed).

  // kOk, or kNotFound.
  Status erase(const Key& key) {
    const std::uint64_t h = hash(key);
    // A failed update writes nothing (ASCY 3, as in tables/basic_clht.hpp): an absent key is
    // reported from an optimistic lookup, at the moment it validated.
    if (!present(key, h)) return Status::kNotFound;
    for (;;) {
      Table* table = table_for_update(h);
      if (table == nullptr) return update_stuck(h, key, nullptr, false);
      if (const auto status = erase_in(*table, h, key)) {
        if (*status == Status::kOk) items_.add(-1);
        return *status;
      }
    }
  }

  // Exact when no update is in flight.
  std::size_t size() const noexcept { return static_cast<std::size_t>(items_.value()); }
  std::size_t bucket_count() const noexcept { return tables_.current()->buckets; }
  // Slots in the current table.
  std::size_t capacity() const noexcept { return bucket_count() * kSlots; }
  // Grows the table so that `capacity` items fit at the sizing load -- one migration straight to
  // that size, unless an insert began a smaller one first -- migrating until it does (with
  // whichever threads help); stops early if a migration is stuck (C2).
  void reserve(std::size_t capacity) {
    const std::uint64_t buckets = buckets_for(capacity);
    for (Table* table = tables_.current(); table->buckets < buckets; table = tables_.current()) {
      Migration* m = table->migration.load(std::memory_order_acquire);
      if (m == nullptr) {
        begin_migration(*table, std::max(buckets, grown(table->buckets)));
      } else if (m->stuck()) {
        return;
      } else {
        migrate_claimed(*table, *m);
      }
    }
  }
  // Whether a resize is under way: begun, its new table not yet current.
  bool resizing() const noexcept { return tables_.current()->migrating(); }
  std::size_t stripe_count() const noexcept { return tables_.current()->stripes.count(); }
  // Items stored in their alternate bucket: the sum of the primaries' overflow counts. A lookup
  // whose primary counts none reads one bucket. Exact when no update is in flight; O(buckets).
  std::size_t displaced() const noexcept {
    const Table& table = *tables_.current();
    std::size_t total = 0;
    for (std::uint64_t b = 0; b < table.buckets; ++b) total += Table::overflow(table.header(b));
    return total;
  }
  // Resizes done so far, and the time they took in all (the cost the benchmarks report).
  std::uint64_t resizes() const noexcept { return tables_.resizes(); }
  std::uint64_t resize_nanoseconds() const noexcept { return tables_.resize_nanoseconds(); }
  // Every table still held (buckets and stripes; a retired table's stripes only, C6) and the
  // map object.
  std::size_t memory_bytes() const { return tables_.memory_bytes() + sizeof(*this); }

 private:
  friend class detail::MapApi<CuckooMap<Key, Value, Hash, KeyEqual, Hook>, Key, Value>;
  static constexpr unsigned kTagBits = 11;
  using Tags = detail::BitLanes<kTagBits, kSlots>;
  using Addressing = detail::Addressing<kTagBits>;
  // The header's fields above the tags (see the layout at the top).
  static constexpr unsigned kDisplacedShift = kTagBits * kSlots;
  static constexpr unsigned kOverflowShift = kDisplacedShift + kSlots;
  static_assert(kOverflowShift + 16 == 64, "the overflow count has the header's top 16 bits");
  static_assert(kSlots * ((1u << kTagBits) - 1) < (1u << 16),
                "the overflow count must hold every item that can be counted");
  using Word = std::atomic<std::uint64_t>;
  static constexpr unsigned kPathDepth = detail::kConcurrentPathDepth<kSlots>;
  using Path = detail::CuckooPath<kSlots, kPathDepth>;
  static constexpr std::uint64_t kMaxBuckets = std::uint64_t{1} << 40;

  // A trivially copyable T as ceil(sizeof(T) / 8) atomic words.
  template <class T>
  struct Words {
    static constexpr std::size_t kCount = (sizeof(T) + 7) / 8;
    static T load(const Word* from) noexcept {
      std::array<std::uint64_t, kCount> words;
      for (std::size_t i = 0; i < kCount; ++i) words[i] = from[i].load(std::memory_order_acquire);
      std::array<std::byte, sizeof(T)> bytes;
      std::memcpy(bytes.data(), words.data(), sizeof(T));
      return std::bit_cast<T>(bytes);
    }
    static void store(Word* to, const T& value) noexcept {
      std::array<std::uint64_t, kCount> words{};
      std::memcpy(words.data(), &value, sizeof(T));
      for (std::size_t i = 0; i < kCount; ++i) to[i].store(words[i], std::memory_order_release);
    }
  };
  using KeyWords = Words<Key>;
  using ValueWords = Words<Value>;

  struct Bucket {
    Word version{0};  // the bucket's seqlock: odd while a mutation changes the bucket
    Word header{0};
    Word keys[kSlots * KeyWords::kCount]{};
    Word values[kSlots * ValueWords::kCount]{};
  };
  static_assert(std::is_trivially_destructible_v<Bucket>, "buckets are never destroyed");

  struct Slot {
    std::uint64_t bucket;
    unsigned lane;
  };

  struct Table;
  using Migration = detail::TableMigration<Table>;  // its chunks: kChunk buckets (C1-C6)

  // One table: its buckets on huge pages where the system allows (detail/page_buffer.hpp).
  struct Table {
    // The map's first table has its pages written now; a migration's, by those who fill it.
    Table(std::uint64_t count, detail::BucketPages pages)
        : buckets(count),
          addressing(count),
          stripes(stripes_for(count)),
          stripe_shift(stripe_shift_for(count, stripes.count())),
          storage(count * sizeof(Bucket)),
          bucket(detail::zeroed_buckets<Bucket>(storage, count, pages)) {}

    detail::Location locate(std::uint64_t h) const noexcept {
      return detail::locate(addressing, h);
    }
    // Whether a migration of this table has begun (C1). Relaxed: for a writer under a stripe
    // (C3), whose lock orders it; lookups load the pointer with acquire.
    bool migrating() const noexcept { return migration.load(std::memory_order_relaxed) != nullptr; }
    std::uint64_t chunks() const noexcept { return (buckets + kChunk - 1) / kChunk; }
    std::uint64_t header(std::uint64_t b) const noexcept {
      return bucket[b].header.load(std::memory_order_acquire);
    }
    static std::uint32_t overflow(std::uint64_t header) noexcept {
      return static_cast<std::uint32_t>(header >> kOverflowShift);
    }
    static bool displaced(std::uint64_t header, unsigned lane) noexcept {
      return (header >> (kDisplacedShift + lane) & 1) != 0;
    }
    Key key(const Slot& s) const noexcept {
      return KeyWords::load(&bucket[s.bucket].keys[s.lane * KeyWords::kCount]);
    }
    Value value(const Slot& s) const noexcept {
      return ValueWords::load(&bucket[s.bucket].values[s.lane * ValueWords::kCount]);
    }

    // The slot of i1 -- or, when i1's overflow is not zero, of i2 -- holding `key`. Tags are
    // compared exactly: lanes_equal may flag a lane above a match, and an empty slot keeps its
    // old key.
    std::optional<Slot> find(const detail::Location& at, const Key& key,
                             const KeyEqual& equal) const {
      const std::uint64_t primary = header(at.primary);
      if (const auto slot = find_in(at.primary, primary, at.fp, key, equal)) return slot;
      if (overflow(primary) == 0) return std::nullopt;
      return find_in(at.alternate, header(at.alternate), at.fp, key, equal);
    }
    // f(the slot holding `key`, or nullopt) -- the same search as find -- as of one moment at
    // which no mutation was changing the buckets read; nullopt if one overlapped (the caller
    // retries). Stores nothing. A bucket's version is read before its header, first with acquire
    // (5), and again after f, relaxed (6): f's loads are acquire (4), so if they see a mutation's
    // write (2) the second read sees its odd version (1). The alternate's versions are read only
    // when the alternate is: the two windows (first read to second read) overlap, and at a moment
    // in both, neither bucket was changing.
    template <class F>
    [[gnu::always_inline]] auto snapshot(const detail::Location& at, const Key& key,
                                         const KeyEqual& equal, F&& f) const
        -> std::optional<std::invoke_result_t<F&, const std::optional<Slot>&>> {
      const std::uint64_t primary_version = version(at.primary);
      if ((primary_version & 1) != 0) return std::nullopt;
      const std::uint64_t primary = header(at.primary);
      std::optional<Slot> slot = find_in(at.primary, primary, at.fp, key, equal);
      std::uint64_t alternate_version = 0;
      const bool both = !slot && overflow(primary) != 0;
      if (both) {
        alternate_version = version(at.alternate);
        if ((alternate_version & 1) != 0) return std::nullopt;
        slot = find_in(at.alternate, header(at.alternate), at.fp, key, equal);
      }
      auto result = f(slot);
      if (bucket[at.primary].version.load(std::memory_order_relaxed) != primary_version ||
          (both &&
           bucket[at.alternate].version.load(std::memory_order_relaxed) != alternate_version)) {
        return std::nullopt;
      }
      return result;
    }
    // f(the slot of bucket b holding `key`, or nullopt) as of one moment at which no mutation was
    // changing b; nullopt if one overlapped. snapshot()'s protocol for one bucket (C5).
    template <class F>
    auto snapshot_bucket(std::uint64_t b, std::uint32_t tag, const Key& key, const KeyEqual& equal,
                         F&& f) const
        -> std::optional<std::invoke_result_t<F&, const std::optional<Slot>&>> {
      const std::uint64_t before = version(b);
      if ((before & 1) != 0) return std::nullopt;
      auto result = f(find_in(b, header(b), tag, key, equal));
      if (bucket[b].version.load(std::memory_order_relaxed) != before) return std::nullopt;
      return result;
    }
    // The slot of bucket b (whose header is `header`) holding `key`.
    std::optional<Slot> find_in(std::uint64_t b, std::uint64_t header, std::uint32_t tag,
                                const Key& key, const KeyEqual& equal) const {
      for (std::uint64_t match = Tags::lanes_equal(header, tag); match != 0; match &= match - 1) {
        const Slot slot{b, Tags::first_flagged_lane(match)};
        if (Tags::get(header, slot.lane) == tag && equal(key, this->key(slot))) return slot;
      }
      return std::nullopt;
    }
    std::optional<Slot> free_slot(std::uint64_t b) const noexcept {
      const std::uint64_t empty = Tags::zero_lanes(header(b));
      if (empty == 0) return std::nullopt;
      return Slot{b, Tags::first_flagged_lane(empty)};
    }
    // A free slot for the item located at `at`: in its primary bucket if that has one.
    std::optional<Slot> free_slot(const detail::Location& at) const noexcept {
      if (const auto slot = free_slot(at.primary)) return slot;
      return free_slot(at.alternate);
    }

    // Writes, under the stripes of the item's two buckets.
    // The item with primary bucket `primary` into the free slot `s` of one of its buckets: key and
    // value before the header that makes them visible; in its alternate, the item is displaced and
    // counted in its primary's overflow.
    void store(const Slot& s, std::uint64_t primary, std::uint32_t tag, const Key& k,
               const Value& v) noexcept {
      mutate(s.bucket, primary, [&] {
        const bool in_alternate = s.bucket != primary;
        fill(s, tag, in_alternate, k, v);
        if (in_alternate) add_overflow(primary, +1);
      });
    }
    // Clears slot `s`, which holds an item with primary bucket `primary`.
    void erase(const Slot& s, std::uint64_t primary) noexcept {
      mutate(s.bucket, primary, [&] {
        clear(s);
        if (s.bucket != primary) add_overflow(primary, -1);
      });
    }
    void assign(const Slot& s, const Value& v) noexcept {
      mutate(s.bucket, s.bucket, [&] { store_value(s, v); });
    }

    // Moves the item in `from` to a free slot of `to`, its other bucket, flipping its displaced
    // bit: out of its primary, it is counted in that primary's overflow; back into its primary
    // (`to`), it is counted out. False, changing nothing, if `from` no longer holds tag `tag` or
    // `to` has no room.
    bool move(const Slot& from, std::uint32_t tag, std::uint64_t to) noexcept {
      assert(from.bucket != to);  // the path search never moves an item within its bucket
      const auto target = free_slot(to);
      const std::uint64_t source = header(from.bucket);
      if (!target || Tags::get(source, from.lane) != tag) return false;
      const bool was_displaced = displaced(source, from.lane);
      mutate(from.bucket, to, [&] {
        fill(*target, tag, !was_displaced, key(from), value(from));
        clear(from);
        add_overflow(was_displaced ? to : from.bucket, was_displaced ? -1 : +1);
      });
      return true;
    }

    // What the path search reads (detail/cuckoo_path.hpp): tags only.
    static constexpr unsigned kSlots = CuckooMap::kSlots;
    std::uint32_t read(std::uint64_t b, unsigned lane) const noexcept {
      return Tags::get(bucket[b].header.load(std::memory_order_relaxed), lane);
    }
    bool has_empty(std::uint64_t b) const noexcept { return free_slot(b).has_value(); }
    // Both lines a bucket may straddle.
    void prefetch(std::uint64_t b) const noexcept {
      const auto* first = reinterpret_cast<const char*>(&bucket[b]);
      detail::prefetch_line(first);
      detail::prefetch_line(first + sizeof(Bucket) - 1);
    }

    // Buckets with the same key share a stripe (stripe_shift).
    std::uint64_t stripe_key(std::uint64_t b) const noexcept { return b >> stripe_shift; }
    // The stripes of buckets a[, b[, c]] (SeqStripes::Guard), and of buckets first .. first + n - 1
    // (RangeGuard; all of them, or none if one is busy and not `wait`).
    sync::SeqStripes::Guard lock(std::uint64_t a) const noexcept {
      return sync::SeqStripes::Guard(stripes, stripe_key(a));
    }
    sync::SeqStripes::Guard lock(std::uint64_t a, std::uint64_t b) const noexcept {
      return sync::SeqStripes::Guard(stripes, stripe_key(a), stripe_key(b));
    }
    sync::SeqStripes::Guard lock(std::uint64_t a, std::uint64_t b, std::uint64_t c) const noexcept {
      return sync::SeqStripes::Guard(stripes, stripe_key(a), stripe_key(b), stripe_key(c));
    }
    sync::SeqStripes::RangeGuard lock_run(std::uint64_t first, std::uint64_t n,
                                          bool wait) const noexcept {
      const std::uint64_t key = stripe_key(first);
      return sync::SeqStripes::RangeGuard(stripes, key, stripe_key(first + n - 1) - key + 1, wait);
    }

    std::size_t memory_bytes() const noexcept {
      return stripes.memory_bytes() +
             (retired.load(std::memory_order_relaxed) ? 0 : storage.reserved_bytes());
    }

   private:
    std::uint64_t version(std::uint64_t b) const noexcept {
      return bucket[b].version.load(std::memory_order_acquire);  // (5)
    }
    // One mutation, seen by snapshot() whole or not at all: the versions of the buckets it
    // changes (a and b, the same or not) are odd while change() runs. The odd stores are relaxed:
    // change()'s stores are release (2), so a reader that sees one of them sees the odd version
    // too. The even stores are release (3): a reader that sees one sees every change before it.
    // Under the stripes of a and b, whose holder is the buckets' only writer.
    template <class Change>
    void mutate(std::uint64_t a, std::uint64_t b, Change&& change) noexcept {
      bump(a, std::memory_order_relaxed);
      if (b != a) bump(b, std::memory_order_relaxed);
      change();
      if (b != a) bump(b, std::memory_order_release);
      bump(a, std::memory_order_release);
    }
    void bump(std::uint64_t b, std::memory_order order) noexcept {
      Word& word = bucket[b].version;
      word.store(word.load(std::memory_order_relaxed) + 1, order);
    }
    void store_value(const Slot& s, const Value& v) noexcept {
      ValueWords::store(&bucket[s.bucket].values[s.lane * ValueWords::kCount], v);
    }
    void fill(const Slot& s, std::uint32_t tag, bool in_alternate, const Key& k,
              const Value& v) noexcept {
      KeyWords::store(&bucket[s.bucket].keys[s.lane * KeyWords::kCount], k);
      store_value(s, v);
      const std::uint64_t bit = std::uint64_t{1} << (kDisplacedShift + s.lane);
      update_header(s.bucket, [&](std::uint64_t h) {
        return (Tags::set(h, s.lane, tag) & ~bit) | (in_alternate ? bit : 0);
      });
    }
    void clear(const Slot& s) noexcept {
      const std::uint64_t bit = std::uint64_t{1} << (kDisplacedShift + s.lane);
      update_header(s.bucket, [&](std::uint64_t h) { return Tags::set(h, s.lane, 0) & ~bit; });
    }
    void add_overflow(std::uint64_t b, int delta) noexcept {
      update_header(b, [&](std::uint64_t h) {
        assert(delta > 0 ? overflow(h) < 0xffff : overflow(h) > 0);
        return h + (static_cast<std::uint64_t>(static_cast<std::int64_t>(delta)) << kOverflowShift);
      });
    }
    // Under the bucket's stripe, whose holder is its only writer: load, change, release (2).
    template <class Change>
    void update_header(std::uint64_t b, Change&& change) noexcept {
      Word& word = bucket[b].header;
      word.store(change(word.load(std::memory_order_relaxed)), std::memory_order_release);
    }

   public:
    std::uint64_t buckets;
    Addressing addressing;
    mutable sync::SeqStripes stripes;
    // Bucket b belongs to stripe (b >> stripe_shift) mod S: runs of 2^stripe_shift buckets share
    // one, so that a chunk (kChunk buckets) is one stripe, and the copy of a chunk's items into
    // their new primaries, a run of 2 * kChunk buckets when doubling, takes two (C2).
    const unsigned stripe_shift;
    detail::PageBuffer storage;
    Bucket* bucket;  // in storage
    // Set once, under resize_lock_, when a migration of this table begins (release: C1).
    std::atomic<Migration*> migration{nullptr};
    std::unique_ptr<Migration> owned_migration;
    std::atomic<bool> retired{false};  // its buckets handed back (C6)
  };

  static std::uint64_t buckets_for(std::size_t capacity) {
    const double wanted = std::ceil(static_cast<double>(capacity) / (kSlots * kSizingLoad));
    if (wanted > static_cast<double>(kMaxBuckets)) {
      throw std::invalid_argument("CuckooMap capacity " + std::to_string(capacity) +
                                  " needs more than the 2^40-bucket table limit");
    }
    return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(wanted));
  }
  static std::size_t stripes_for(std::uint64_t buckets) {
    return std::clamp<std::size_t>(std::bit_ceil(buckets / 64 + 1), 64, 4096);
  }
  // Runs of kChunk buckets per stripe, or shorter ones where the table has fewer than kChunk
  // buckets per stripe (small tables keep every stripe in use).
  static unsigned stripe_shift_for(std::uint64_t buckets, std::size_t stripes) {
    const std::uint64_t per_stripe = std::max<std::uint64_t>(1, buckets / stripes);
    return static_cast<unsigned>(std::countr_zero(std::min(std::bit_floor(per_stripe), kChunk)));
  }

  std::uint64_t hash(const Key& key) const { return mix64(static_cast<std::uint64_t>(hash_(key))); }

  // Runs f(primary) -> std::optional<Status> under the stripe of the key's primary bucket alone,
  // in `table`. Enough for an update that needs only that bucket: every write that changes
  // whether or where an item with primary p is holds p's stripe, so while f holds it the key is
  // in p, or displaced and counted in p's overflow, or absent -- and stays so. nullopt without
  // locking when worth(header), an unlocked look at the primary's header, says that f would need
  // both buckets (near the sizing load many updates do), or when the table is migrating (C3: the
  // long way, locked(), then starts over).
  template <class Worth, class F>
  std::optional<Status> with_primary(Table& table, std::uint64_t h, Worth&& worth, F&& f) {
    const std::uint64_t primary = table.addressing.index(h);
    if (!worth(table.header(primary))) return std::nullopt;
    const auto guard = table.lock(primary);
    if (table.migrating()) return std::nullopt;
    return f(primary);
  }
  // f(at) under the stripes of the key's two buckets in `table`; nullopt if the table is
  // migrating (C3: the update starts over).
  template <class F>
  auto locked(Table& table, std::uint64_t h, F&& f)
      -> std::optional<std::invoke_result_t<F&, const detail::Location&>> {
    const detail::Location at = table.locate(h);
    table.prefetch(at.primary);  // the buckets' misses overlap with taking the locks
    table.prefetch(at.alternate);
    const auto guard = table.lock(at.primary, at.alternate);
    if (table.migrating()) return std::nullopt;
    return f(at);
  }

  // f(table, the slot holding `key` or nullopt), optimistic (Table::snapshot, retried while a
  // mutation overlaps it): stores nothing. Inlined: a loop of lookups is bound by how many lookups'
  // misses the processor overlaps, so a call per lookup costs (docs/benchmarks.md).
  template <class F>
  [[gnu::always_inline]] auto read(const Key& key, std::uint64_t h, F&& f) const {
    const Table* table = tables_.current();
    for (;;) {
      const detail::Location at = table->locate(h);
      // Both misses start before the stripes are read. The alternate's costs no wait, and a
      // lookup that does need it (near the sizing load, many do) does not wait for it after the
      // primary's.
      table->prefetch(at.primary);
      table->prefetch(at.alternate);
      const auto probe = [&](const std::optional<Slot>& slot) { return f(*table, slot); };
      const Migration* m = table->migration.load(std::memory_order_acquire);
      sync::SpinWait wait;  // while a mutation changes one of the buckets (or overlapped the read)
      if (m == nullptr) [[likely]] {
        // The pointer is read again after the snapshot (acquire, ordered after its loads): still
        // unset, no chunk had moved, and the table held the key's buckets throughout (C5).
        auto result = table->snapshot(at, key, equal_, probe);
        if (result && table->migration.load(std::memory_order_acquire) == nullptr) {
          return *std::move(result);
        }
        wait.wait();
        continue;
      }
      // (C5) A migration under way.
      const std::uint64_t chunk1 = at.primary / kChunk, chunk2 = at.alternate / kChunk;
      const bool moved1 = m->moved(chunk1), moved2 = m->moved(chunk2);
      const auto flags_held = [&] {
        return m->moved(chunk1) == moved1 && m->moved(chunk2) == moved2;
      };
      std::optional<Slot> slot;
      const auto seen = [&](const std::optional<Slot>& s) {
        slot = s;
        return f(*table, s);
      };
      if (!moved1 && !moved2) {
        auto result = table->snapshot(at, key, equal_, seen);
        if (!result || !flags_held()) {
          wait.wait();
          continue;
        }
        // A stuck migration's new table also takes keys of unmoved chunks (C2).
        if (slot || !m->stuck()) return *std::move(result);
        table = m->to;
        continue;
      }
      if (!moved1 || !moved2) {  // the unmoved bucket first
        const std::uint64_t b = moved1 ? at.alternate : at.primary;
        const auto found = table->snapshot_bucket(b, at.fp, key, equal_, seen);
        if (!found || !flags_held()) {
          wait.wait();
          continue;
        }
        if (slot) return *found;
      }
      table = m->to;
    }
  }
  // Whether the key (with hash h) is present, as find sees it.
  bool present(const Key& key, std::uint64_t h) const {
    return read(key, h,
                [](const Table&, const std::optional<Slot>& slot) { return slot.has_value(); });
  }

  // (C3) The table an update of hash h runs in: the current one, or, while that migrates, the new
  // one once both of h's buckets' chunks are moved there -- by this thread if need be, else it
  // takes its share of the migration (C4): at most two chunks' copies per update. nullptr: the
  // migration is stuck with a chunk of h's left in the old table (C2).
  Table* table_for_update(std::uint64_t h) {
    Table* table = tables_.current();
    while (Migration* m = table->migration.load(std::memory_order_acquire)) {
      const detail::Location at = table->locate(h);
      const Move first = move_chunk(*table, *m, at.primary / kChunk, /*wait=*/true);
      const Move second = move_chunk(*table, *m, at.alternate / kChunk, /*wait=*/true);
      if (first == Move::kStuck || second == Move::kStuck) return nullptr;
      if (first == Move::kAlready && second == Move::kAlready) migrate_claimed(*table, *m);
      table = m->to;
    }
    return table;
  }

  Status put(const Key& key, const Value& value, bool assign) {
    const std::uint64_t h = hash(key);
    if (!assign && present(key, h)) return Status::kExists;  // read-only failure, as erase's
    // Counted ahead: make_room's test for a degenerate hash reads size().
    return detail::count_ahead(items_, [&] { return put_counted(h, key, value, assign); });
  }
  Status put_counted(std::uint64_t h, const Key& key, const Value& value, bool assign) {
    for (;;) {
      Table* table = table_for_update(h);
      if (table == nullptr) return update_stuck(h, key, &value, assign);
      if (const auto status = put_in(*table, h, key, value, assign)) return *status;
    }
  }

  enum class OnNoPath { kResize, kFull };

  // put in `table`; nullopt: the table began migrating, or a resize was begun or helped on (the
  // update starts over, C3). Counts nothing (the callers do). A copy (C2), which holds a chunk
  // of the migration it would help, asks for kFull when no path exists.
  std::optional<Status> put_in(Table& table, std::uint64_t h, const Key& key, const Value& value,
                               bool assign, OnNoPath on_no_path = OnNoPath::kResize) {
    const std::uint32_t tag = Addressing::fingerprint(h);
    // The primary has room and no displaced items, or holds the tag (insert_or_assign of a key
    // there).
    const auto room = [&](std::uint64_t header) {
      return (Table::overflow(header) == 0 && Tags::zero_lanes(header) != 0) ||
             Tags::lanes_equal(header, tag) != 0;
    };
    const std::optional<Status> quick =
        with_primary(table, h, room, [&](std::uint64_t primary) -> std::optional<Status> {
          const std::uint64_t header = table.header(primary);
          if (const auto slot = table.find_in(primary, header, tag, key, equal_)) {
            if (assign) table.assign(*slot, value);
            return Status::kExists;
          }
          // Displaced items (the key's among them?) or no room: both buckets are needed.
          const auto slot = table.free_slot(primary);
          if (Table::overflow(header) != 0 || !slot) return std::nullopt;
          table.store(*slot, primary, tag, key, value);
          return Status::kOk;
        });
    if (quick) return quick;
    for (;;) {
      detail::Location at{};
      const auto stored = locked(table, h, [&](const detail::Location& l) {
        at = l;
        return store_new(table, l, key, value, assign);
      });
      if (!stored) return std::nullopt;
      if (*stored) return *stored;
      // Both buckets full. Past the growth load the current table grows rather than search a
      // path (C1): paths grow long and their moves many near the table's limit, and every insert
      // there would pay for one (the first doubling begins at 0.92 of the slots instead of about
      // 0.975: docs/benchmarks.md).
      if (on_no_path == OnNoPath::kResize && past_growth_load(table)) {
        begin_migration(table, grown(table.buckets));
        return std::nullopt;
      }
      Path path;
      if (detail::find_cuckoo_path(table, table.addressing, at.primary, at.alternate, path)) {
        if (const auto done = cuckoo(table, at, path, key, value, assign)) return done;
        if (table.migrating()) return std::nullopt;
        continue;  // the path changed under us
      }
      // No path. Below half full that means a degenerate hash (see the header): growing would
      // not help, however often.
      if (on_no_path == OnNoPath::kFull || !make_room(table)) return Status::kFull;
      return std::nullopt;
    }
  }

  // kOk or kNotFound in `table`; nullopt: the table began migrating (C3). Counts nothing.
  std::optional<Status> erase_in(Table& table, std::uint64_t h, const Key& key) {
    const std::uint32_t tag = Addressing::fingerprint(h);
    // Its tag not in the primary: present (as it just was), it sits in its alternate.
    const auto in_primary = [&](std::uint64_t header) {
      return Tags::lanes_equal(header, tag) != 0;
    };
    const std::optional<Status> quick =
        with_primary(table, h, in_primary, [&](std::uint64_t primary) -> std::optional<Status> {
          const std::uint64_t header = table.header(primary);
          if (const auto slot = table.find_in(primary, header, tag, key, equal_)) {
            table.erase(*slot, primary);
            return Status::kOk;
          }
          if (Table::overflow(header) == 0) return Status::kNotFound;
          return std::nullopt;  // it may sit in its alternate
        });
    if (quick) return quick;
    return locked(table, h, [&](const detail::Location& at) {
      const auto slot = table.find(at, key, equal_);
      if (!slot) return Status::kNotFound;
      table.erase(*slot, at.primary);
      return Status::kOk;
    });
  }

  // Under the stripes of at's buckets: the key's value if present, else the new item in a free
  // slot of i1 or i2. nullopt: both buckets full.
  std::optional<Status> store_new(Table& table, const detail::Location& at, const Key& key,
                                  const Value& value, bool assign) {
    if (const auto slot = table.find(at, key, equal_)) {
      if (assign) table.assign(*slot, value);
      return Status::kExists;
    }
    const auto slot = table.free_slot(at);
    if (!slot) return std::nullopt;
    table.store(*slot, at.primary, at.fp, key, value);
    return Status::kOk;
  }

  // Executes `path` back to front; the last step stores the new item in the root slot it
  // frees. nullopt: a step no longer matched the table, or the table began migrating: restart.
  std::optional<Status> cuckoo(Table& table, const detail::Location& at, const Path& path,
                               const Key& key, const Value& value, bool assign) {
    for (unsigned step = path.length - 1; step > 1; --step) {
      const detail::CuckooPathStep& from = path.steps[step - 1];
      const std::uint64_t to = path.steps[step].bucket;
      const auto guard = table.lock(from.bucket, to);
      if (table.migrating() || !table.move({from.bucket, from.slot}, from.fp, to)) {
        return std::nullopt;
      }
    }
    const detail::CuckooPathStep& root = path.steps[0];
    const auto guard = table.lock(at.primary, at.alternate, path.steps[1].bucket);
    if (table.migrating()) return std::nullopt;
    if (const auto slot = table.find(at, key, equal_)) {  // inserted meanwhile by another thread
      if (assign) table.assign(*slot, value);
      return Status::kExists;
    }
    if (!table.move({root.bucket, root.slot}, root.fp, path.steps[1].bucket)) return std::nullopt;
    table.store({root.bucket, root.slot}, at.primary, at.fp, key, value);
    return Status::kOk;
  }

  // For an insert that found no path in `table`: true once there is something to start over
  // for -- a migration of `table` begun (by this thread or another), or, for a migration's
  // target, that migration finished. False: the insert gets kFull -- the table is under half
  // full (a degenerate hash), at the size limit, or the migration filling it is stuck (C2).
  bool make_room(Table& table) {
    if (table.migration.load(std::memory_order_acquire) != nullptr) return true;
    if (!tables_.is_current(&table)) {
      // The target of a migration under way, or already superseded (tables only grow, so a
      // current table as large means `table` was published): help until it is.
      for (Table* old = tables_.current(); old->buckets < table.buckets; old = tables_.current()) {
        Migration* m = old->migration.load(std::memory_order_acquire);  // into `table`
        if (m->stuck()) return false;
        migrate_claimed(*old, *m);
      }
      return true;
    }
    if (2 * size() < kSlots * table.buckets || table.buckets == kMaxBuckets) return false;
    begin_migration(table, grown(table.buckets));
    return true;
  }

  // Whether `table` is current, not migrating, and holds more than kGrowthLoad of its slots.
  bool past_growth_load(const Table& table) const {
    return !table.migrating() && tables_.is_current(&table) &&
           static_cast<double>(size()) > kGrowthLoad * static_cast<double>(kSlots * table.buckets);
  }

  // The size of the table that replaces one of `buckets` buckets when it fills (C1): at least
  // one bucket more, at most the table limit.
  std::uint64_t grown(std::uint64_t buckets) const noexcept {
    return detail::grown_size(buckets, growth_, kFactorFrom, kMaxBuckets);
  }

  // (C1) Begins the migration of `table`, the current one, into a table of `buckets` buckets
  // (more than it has), unless another thread is beginning one (it then yields, so that one
  // finishes). May throw std::bad_alloc, having changed nothing.
  void begin_migration(Table& table, std::uint64_t buckets) {
    assert(buckets > table.buckets && buckets <= kMaxBuckets);
    const std::unique_lock lock(resize_lock_, std::try_to_lock);
    if (!lock.owns_lock()) {
      std::this_thread::yield();
      return;
    }
    if (table.migrating()) return;
    Table* to = tables_.keep(std::make_unique<Table>(buckets, detail::BucketPages::kOnFirstUse));
    table.owned_migration = std::make_unique<Migration>(to, table.chunks());
    table.migration.store(table.owned_migration.get(), std::memory_order_release);
  }

  // One claim (C4): the chunk at the cursor, unless moved or busy.
  void migrate_claimed(Table& from, Migration& m) {
    const std::uint64_t chunk = m.claim();
    if constexpr (requires { Hook::on_claim(chunk); }) Hook::on_claim(chunk);
    move_chunk(from, m, chunk, /*wait=*/false);
  }

  using Move = typename Migration::Move;

  // (C2) Moves the items sitting in chunk c of `from` into the new table, waiting for the
  // chunk's stripes if `wait`; the last chunk publishes the new table and retires `from` (C6).
  Move move_chunk(Table& from, Migration& m, std::uint64_t c, bool wait) {
    const std::uint64_t first = c * kChunk;
    return m.move(
        c, [&] { return from.lock_run(first, std::min(kChunk, from.buckets - first), wait); },
        [&] { return copy_chunk(from, *m.to, first); },
        [&] {
          tables_.publish(m.to, m.start);
          from.retired.store(from.storage.discard(), std::memory_order_relaxed);
        });
  }

  // Inserts every item of the chunk at `first` of `from` into `to` (under the chunk's stripes
  // in `from`); false, with `to` as it was, if one finds no path. The items' hashes come first,
  // each starting the miss on its primary bucket in `to`, so that the stores overlap their
  // misses rather than wait for them one by one. Then the items that sat in their primaries go
  // to their new primaries where those have room, a run of them per stripe lock (C2), and the
  // rest are inserted as any insert is.
  bool copy_chunk(const Table& from, Table& to, std::uint64_t first) {
    struct Item {
      Slot slot;
      std::uint64_t h;
      std::uint64_t primary;  // in `to`
      bool sat_in_primary;    // in `from`
    };
    std::array<Item, kChunk * kSlots> items;
    std::size_t count = 0;
    const std::uint64_t end = std::min(first + kChunk, from.buckets);
    for (std::uint64_t b = first; b < end; ++b) {
      const std::uint64_t header = from.header(b);
      for (unsigned lane = 0; lane < kSlots; ++lane) {
        if (Tags::get(header, lane) == 0) continue;
        const Slot slot{b, lane};
        const std::uint64_t h = hash(from.key(slot));
        const std::uint64_t primary = to.addressing.index(h);
        to.prefetch(primary);
        items[count++] = {slot, h, primary, !Table::displaced(header, lane)};
      }
    }
    std::array<const Item*, kChunk * kSlots> rest;
    std::size_t left = 0;
    for (std::size_t i = 0; i < count;) {
      if (!items[i].sat_in_primary) {
        rest[left++] = &items[i++];
        continue;
      }
      // The items that sat in their primaries come in the order of their new primaries
      // (reduce_range is monotone): the run of them whose new primaries share this stripe.
      const std::uint64_t key = to.stripe_key(items[i].primary);
      const auto guard = to.lock(items[i].primary);
      for (; i < count; ++i) {
        const Item& item = items[i];
        if (item.sat_in_primary && to.stripe_key(item.primary) != key) break;
        const auto slot = item.sat_in_primary ? to.free_slot(item.primary) : std::nullopt;
        if (!slot) {
          rest[left++] = &item;
          continue;
        }
        to.store(*slot, item.primary, Addressing::fingerprint(item.h), from.key(item.slot),
                 from.value(item.slot));
      }
    }
    for (const Item* item : std::span(rest.data(), left)) {
      // `to` is not current, so it never migrates: put_in answers, or finds no path (kFull).
      if (put_in(to, item->h, from.key(item->slot), from.value(item->slot), false,
                 OnNoPath::kFull) != Status::kOk) {
        take_back(from, to, first);
        return false;
      }
    }
    return true;
  }
  // Erases from `to` every item of the chunk at `first` of `from` that a failed copy placed
  // there. Users never update them meanwhile: their chunk is not moved (C3); and none of the
  // chunk's keys was in `to` before the copy.
  void take_back(const Table& from, Table& to, std::uint64_t first) {
    const std::uint64_t end = std::min(first + kChunk, from.buckets);
    for (std::uint64_t b = first; b < end; ++b) {
      const std::uint64_t header = from.header(b);
      for (unsigned lane = 0; lane < kSlots; ++lane) {
        if (Tags::get(header, lane) == 0) continue;
        const Key key = from.key({b, lane});
        erase_in(to, hash(key), key);
      }
    }
  }

  // (C2) An update in a stuck migration of a key with a chunk left in the old table (the current
  // one, for good): one at a time, the key's unmoved buckets in the old table, else the new
  // table. `value` null: an erase.
  Status update_stuck(std::uint64_t h, const Key& key, const Value* value, bool assign) {
    const std::lock_guard serial(stuck_lock_);
    Table& old = *tables_.current();
    const Migration& m = *old.migration.load(std::memory_order_acquire);
    const detail::Location at = old.locate(h);
    {
      const auto guard = old.lock(at.primary, at.alternate);
      for (const std::uint64_t b : {at.primary, at.alternate}) {
        if (m.moved(b / kChunk)) continue;
        const auto slot = old.find_in(b, old.header(b), at.fp, key, equal_);
        if (!slot) continue;
        if (value == nullptr) {
          old.erase(*slot, at.primary);
          items_.add(-1);
          return Status::kOk;
        }
        if (assign) old.assign(*slot, *value);
        return Status::kExists;
      }
    }
    // The new table never migrates (it is not current): put_in and erase_in answer.
    const Status status =
        value == nullptr ? *erase_in(*m.to, h, key) : *put_in(*m.to, h, key, *value, assign);
    if (status == Status::kOk && value == nullptr) items_.add(-1);  // put counts its own
    return status;
  }

  [[no_unique_address]] Hash hash_;
  [[no_unique_address]] KeyEqual equal_;
  Growth growth_;
  std::mutex resize_lock_;  // who begins a migration (C1)
  std::mutex stuck_lock_;   // updates in a stuck migration (C2)
  detail::ShardedCounter items_;
  detail::TableGenerations<Table> tables_;
};

}  // namespace ccf
