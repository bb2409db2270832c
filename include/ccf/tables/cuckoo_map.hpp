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
// Synchronization: writers lock sync::SeqStripes (sync/seq_stripes.hpp): bucket i belongs to
// stripe i mod S (S fixed at construction, 64 to 4096). Readers never touch the stripes: every
// mutation of the table (Table::mutate: store, erase, assign, move) makes the versions of the
// buckets it changes odd while it changes them, under those buckets' stripes.
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
//   resize    when no path exists and the table is at least half full: lock every stripe,
//             rehash into a table twice as large, publish it, unlock. Below half full a missing
//             path means more than 8 keys share one bucket pair and tag -- a degenerate hash --
//             and the insert returns kFull instead of doubling the table without end.
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
// inside the find's run (old tables are kept until the map is destroyed, so it is readable).
// Writers re-check after locking that their table is still the current one.
//
// Memory ordering: the bucket versions follow SeqStripes' points (2)-(6) (Boehm's fence-free
// seqlock), with (1) a relaxed store of the odd version by the stripe's holder, the version's
// only writer, that (2) keeps ahead of the slot words' release stores; (4) slot words are read
// with acquire loads. The stripes order writers among themselves (SeqStripes (1), (3)). The table
// pointer is published with release after the rehash and loaded with acquire.
//
// Hash and KeyEqual: a find may compare the key it looks for against a copy of a slot's key
// that a writer is overwriting (the result is discarded when validation fails), so KeyEqual
// must be a pure function of the bytes. Hash is called only on keys the user passes and, during
// a resize, on stored keys.
//
// Progress: finds are blocking only while a mutation changes one of their buckets; updates
// block on stripe locks (a resize holds them all, and finds of the old table go on meanwhile).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cassert>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "ccf/detail/addressing.hpp"
#include "ccf/detail/bit_lanes.hpp"
#include "ccf/detail/cuckoo_path.hpp"
#include "ccf/detail/map_api.hpp"
#include "ccf/detail/page_buffer.hpp"
#include "ccf/detail/prefetch.hpp"
#include "ccf/detail/table_generations.hpp"
#include "ccf/hash.hpp"
#include "ccf/status.hpp"
#include "ccf/sync/seq_stripes.hpp"
#include "ccf/sync/spin_wait.hpp"

namespace ccf {

template <class Key, class Value, class Hash = std::hash<Key>, class KeyEqual = std::equal_to<Key>>
class CuckooMap : public detail::MapApi<CuckooMap<Key, Value, Hash, KeyEqual>, Key, Value> {
  static_assert(std::is_trivially_copyable_v<Key> && std::is_trivially_copyable_v<Value>,
                "CuckooMap stores keys and values as words that lookups copy while writers may "
                "change them: both must be trivially copyable");

 public:
  static constexpr unsigned kSlots = 4;
  // The load a table is sized for; it fills to about 0.95 before the first resize.
  static constexpr double kSizingLoad = 0.9;

  // Room for `capacity` items without a resize. Throws std::invalid_argument if that needs more
  // than 2^40 buckets, the library's table limit; reserve() likewise, changing nothing.
  explicit CuckooMap(std::size_t capacity = 1024, Hash hash = {}, KeyEqual equal = {})
      : hash_(std::move(hash)),
        equal_(std::move(equal)),
        stripes_(stripes_for(buckets_for(capacity))),
        tables_(std::make_unique<Table>(buckets_for(capacity))) {}
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
    const std::uint32_t tag = Addressing::fingerprint(h);
    // Its tag not in the primary: present (as it just was), it sits in its alternate.
    const auto in_primary = [&](std::uint64_t header) {
      return Tags::lanes_equal(header, tag) != 0;
    };
    const std::optional<Status> erased = with_primary(
        h, in_primary, [&](Table& table, std::uint64_t primary) -> std::optional<Status> {
          const std::uint64_t header = table.header(primary);
          if (const auto slot = table.find_in(primary, header, tag, key, equal_)) {
            table.erase(*slot, primary);
            stripes_.add_items(primary, -1);
            return Status::kOk;
          }
          if (Table::overflow(header) == 0) return Status::kNotFound;
          return std::nullopt;  // it may sit in its alternate
        });
    if (erased) return *erased;
    return locked(h, [&](Table& table, const detail::Location& at) {
      const auto slot = table.find(at, key, equal_);
      if (!slot) return Status::kNotFound;
      table.erase(*slot, at.primary);
      stripes_.add_items(at.primary, -1);
      return Status::kOk;
    });
  }

  // Exact when no update is in flight.
  std::size_t size() const noexcept { return stripes_.items(); }
  std::size_t bucket_count() const noexcept { return tables_.current()->buckets; }
  // Slots in the current table.
  std::size_t capacity() const noexcept { return bucket_count() * kSlots; }
  // Grows the table (if needed) so that `capacity` items fit at the sizing load.
  void reserve(std::size_t capacity) {
    const std::uint64_t buckets = buckets_for(capacity);
    while (bucket_count() < buckets) grow(tables_.current(), buckets);
  }
  std::size_t stripe_count() const noexcept { return stripes_.count(); }
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
  // Every table still held (the current one and the ones lookups may still read), the stripes
  // and the map object.
  std::size_t memory_bytes() const {
    return tables_.memory_bytes() + stripes_.memory_bytes() + sizeof(*this);
  }

 private:
  friend class detail::MapApi<CuckooMap<Key, Value, Hash, KeyEqual>, Key, Value>;
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

  // One table: its buckets on huge pages where the system allows (detail/page_buffer.hpp).
  struct Table {
    explicit Table(std::uint64_t count)
        : buckets(count),
          addressing(count),
          storage(count * sizeof(Bucket)),
          bucket(construct(storage, count)) {}

    static Bucket* construct(detail::PageBuffer& storage, std::uint64_t count) {
      auto* first = reinterpret_cast<Bucket*>(storage.data());
      for (std::uint64_t i = 0; i < count; ++i) new (first + i) Bucket;
      return std::launder(first);
    }

    detail::Location locate(std::uint64_t h) const noexcept {
      return detail::locate(addressing, h);
    }
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

    // Writes, under the stripes of the item's two buckets (or into a table nobody else sees).
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

    std::size_t memory_bytes() const noexcept { return storage.reserved_bytes(); }

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
    detail::PageBuffer storage;
    Bucket* bucket;  // in storage
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

  std::uint64_t hash(const Key& key) const { return mix64(static_cast<std::uint64_t>(hash_(key))); }

  // Runs f(table, primary) -> std::optional<Status> under the stripe of the key's primary bucket
  // alone, in the current table. Enough for an update that needs only that bucket: every write
  // that changes whether or where an item with primary p is holds p's stripe, so while f holds
  // it the key is in p, or displaced and counted in p's overflow, or absent -- and stays so.
  // nullopt without locking when worth(header), an unlocked look at the primary's header, says
  // that f would need both buckets: near the sizing load many updates do.
  template <class Worth, class F>
  std::optional<Status> with_primary(std::uint64_t h, Worth&& worth, F&& f) {
    for (;;) {
      Table& table = *tables_.current();
      const std::uint64_t primary = table.addressing.index(h);
      if (!worth(table.header(primary))) return std::nullopt;
      const sync::SeqStripes::Guard guard(stripes_, primary);
      // A resize holds every stripe while it swaps tables: under ours, the current table stays.
      if (tables_.is_current(&table)) return f(table, primary);
    }
  }
  // Runs f(table, at) under the stripes of the key's two buckets in the current table.
  template <class F>
  auto locked(std::uint64_t h, F&& f) {
    for (;;) {
      Table& table = *tables_.current();
      const detail::Location at = table.locate(h);
      table.prefetch(at.primary);  // the buckets' misses overlap with taking the locks
      table.prefetch(at.alternate);
      const sync::SeqStripes::Guard guard(stripes_, at.primary, at.alternate);
      // A resize holds every stripe while it swaps tables: under ours, the current table stays.
      if (tables_.is_current(&table)) return f(table, at);
    }
  }

  // f(table, the slot holding `key` or nullopt), optimistic (Table::snapshot, retried while a
  // mutation overlaps it): stores nothing. Inlined: a loop of lookups is bound by how many lookups'
  // misses the processor overlaps, so a call per lookup costs (docs/benchmarks.md).
  template <class F>
  [[gnu::always_inline]] auto read(const Key& key, std::uint64_t h, F&& f) const {
    const Table& table = *tables_.current();
    const detail::Location at = table.locate(h);
    // Both misses start before the stripes are read. The alternate's costs no wait, and a lookup
    // that does need it (near the sizing load, many do) does not wait for it after the primary's.
    table.prefetch(at.primary);
    table.prefetch(at.alternate);
    const auto probe = [&](const std::optional<Slot>& slot) { return f(table, slot); };
    sync::SpinWait wait;  // while a mutation changes one of the buckets (or overlapped the read)
    for (;;) {
      if (auto result = table.snapshot(at, key, equal_, probe)) return *std::move(result);
      wait.wait();
    }
  }
  // Whether the key (with hash h) is present, as find sees it.
  bool present(const Key& key, std::uint64_t h) const {
    return read(key, h,
                [](const Table&, const std::optional<Slot>& slot) { return slot.has_value(); });
  }

  Status put(const Key& key, const Value& value, bool assign) {
    const std::uint64_t h = hash(key);
    if (!assign && present(key, h)) return Status::kExists;  // read-only failure, as erase's
    const std::uint32_t tag = Addressing::fingerprint(h);
    // The primary has room and no displaced items, or holds the tag (insert_or_assign of a key
    // there).
    const auto room = [&](std::uint64_t header) {
      return (Table::overflow(header) == 0 && Tags::zero_lanes(header) != 0) ||
             Tags::lanes_equal(header, tag) != 0;
    };
    const std::optional<Status> quick =
        with_primary(h, room, [&](Table& table, std::uint64_t primary) -> std::optional<Status> {
          const std::uint64_t header = table.header(primary);
          if (const auto slot = table.find_in(primary, header, tag, key, equal_)) {
            if (assign) table.assign(*slot, value);
            return Status::kExists;
          }
          // Displaced items (the key's among them?) or no room: both buckets are needed.
          const auto slot = table.free_slot(primary);
          if (Table::overflow(header) != 0 || !slot) return std::nullopt;
          table.store(*slot, primary, tag, key, value);
          stripes_.add_items(primary, +1);
          return Status::kOk;
        });
    if (quick) return *quick;
    for (;;) {
      Table* full = nullptr;
      detail::Location at{};
      const std::optional<Status> stored = locked(h, [&](Table& table, const detail::Location& l) {
        at = l;
        full = &table;
        return store_new(table, l, key, value, assign);
      });
      if (stored) return *stored;
      Path path;
      if (detail::find_cuckoo_path(*full, full->addressing, at.primary, at.alternate, path)) {
        if (const auto done = cuckoo(*full, at, path, key, value, assign)) return *done;
        continue;  // the path changed under us
      }
      // No path. Below half full that means a degenerate hash (see the header): growing would
      // not help, however often.
      if (2 * size() < kSlots * full->buckets || 2 * full->buckets > kMaxBuckets) {
        return Status::kFull;
      }
      grow(full, 2 * full->buckets);
    }
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
    stripes_.add_items(at.primary, +1);
    return Status::kOk;
  }

  // Executes `path` back to front; the last step stores the new item in the root slot it
  // frees. nullopt: a step no longer matched the table (or the table was replaced): restart.
  std::optional<Status> cuckoo(Table& table, const detail::Location& at, const Path& path,
                               const Key& key, const Value& value, bool assign) {
    for (unsigned step = path.length - 1; step > 1; --step) {
      const detail::CuckooPathStep& from = path.steps[step - 1];
      const std::uint64_t to = path.steps[step].bucket;
      const sync::SeqStripes::Guard guard(stripes_, from.bucket, to);
      if (!tables_.is_current(&table) || !table.move({from.bucket, from.slot}, from.fp, to)) {
        return std::nullopt;
      }
    }
    const detail::CuckooPathStep& root = path.steps[0];
    const sync::SeqStripes::Guard guard(stripes_, at.primary, at.alternate, path.steps[1].bucket);
    if (!tables_.is_current(&table)) return std::nullopt;
    if (const auto slot = table.find(at, key, equal_)) {  // inserted meanwhile by another thread
      if (assign) table.assign(*slot, value);
      return Status::kExists;
    }
    if (!table.move({root.bucket, root.slot}, root.fp, path.steps[1].bucket)) return std::nullopt;
    table.store({root.bucket, root.slot}, at.primary, at.fp, key, value);
    stripes_.add_items(at.primary, +1);
    return Status::kOk;
  }

  // Replaces `from`, if it is still the current table, by one of `buckets` buckets (or more,
  // should its items not all fit). Blocks every operation but finds meanwhile.
  void grow(Table* from, std::uint64_t buckets) {
    const sync::SeqStripes::AllGuard all(stripes_);
    if (!tables_.is_current(from) || buckets <= from->buckets) return;
    const auto start = std::chrono::steady_clock::now();
    // Every rehashed slot before the new table is seen (the unlocks publish it to writers too).
    tables_.publish(rehash(*from, buckets), start);
  }

  // Every item of `from` in a new table of `buckets` buckets (doubled again until they all fit).
  std::unique_ptr<Table> rehash(const Table& from, std::uint64_t buckets) const {
    for (;; buckets *= 2) {
      auto to = std::make_unique<Table>(buckets);
      if (copy_all(from, *to)) return to;
    }
  }
  bool copy_all(const Table& from, Table& to) const {
    for (std::uint64_t b = 0; b < from.buckets; ++b) {
      const std::uint64_t header = from.header(b);
      for (unsigned lane = 0; lane < kSlots; ++lane) {
        if (Tags::get(header, lane) == 0) continue;
        const Key key = from.key({b, lane});
        if (!place(to, key, from.value({b, lane}))) return false;
      }
    }
    return true;
  }
  // Into a table no other thread sees yet.
  bool place(Table& table, const Key& key, const Value& value) const {
    const detail::Location at = table.locate(hash(key));
    auto slot = table.free_slot(at);
    if (!slot) {
      Path path;
      if (!detail::find_cuckoo_path(table, table.addressing, at.primary, at.alternate, path)) {
        return false;
      }
      for (unsigned step = path.length - 1; step > 0; --step) {
        const detail::CuckooPathStep& from = path.steps[step - 1];
        const bool moved = table.move({from.bucket, from.slot}, from.fp, path.steps[step].bucket);
        assert(moved);  // nothing else writes this table
        static_cast<void>(moved);
      }
      slot = Slot{path.steps[0].bucket, path.steps[0].slot};
    }
    table.store(*slot, at.primary, at.fp, key, value);
    return true;
  }

  [[no_unique_address]] Hash hash_;
  [[no_unique_address]] KeyEqual equal_;
  mutable sync::SeqStripes stripes_;
  detail::TableGenerations<Table> tables_;
};

}  // namespace ccf
