// ClhtLf: the lock-free cache-line hash table of David, Guerraoui and Trigonakis ("Asynchronized
// concurrency: the secret to scaling concurrent search data structures", ASPLOS 2015): a map
// from non-zero 64-bit keys to 64-bit values whose updates take no lock -- each one is a few
// CAS operations on one 64-bit "snapshot" word per chain -- and whose lookups store nothing.
//
// Layout: m head buckets (any m: the index is reduce_range(h, m)), one 64-byte line each, and
// overflow buckets chained from them (up to kMaxChain buckets per chain, from a pool the table
// reserves up front: no allocator call on any operation):
//
//   | snapshot (8) | key0 key1 key2 (24) | val0 val1 val2 (24) | next (8) |
//
//   snapshot (head only): | version (39 bits) | frozen (1) | valid bits (24: slot 3c + j is
//                           slot j of the chain's c-th bucket) |
//
// A slot is free (key 0), reserved (key set, valid bit clear: an insert in progress, or an erased
// pair not yet cleared) or valid (bit set). Invariant (I): a valid slot's key and value never
// change; only the thread that reserved a slot (CAS key 0 -> k) or invalidated it writes it
// until it is free again. Every change of a snapshot raises its version.
//
// Operations (h = mix64(key), detail/clht_sizing.hpp):
//   find    read the snapshot s; look for the key among the slots valid in s; read the value;
//           read the snapshot again: unchanged => by (I) the slots valid in s held exactly
//           those pairs at that moment, so the answer (found with that value, or absent) was
//           true then. Changed => an update of this chain completed: retry.
//   insert  reserve a free slot of the chain (CAS its key 0 -> k; none free: link a pool bucket
//           with the pair already in it), write the value, then publish: read s; if the key is
//           valid under s, release the reservation (kExists); else CAS s -> s + valid bit +
//           version. A successful CAS proves the chain did not change since the check, so no
//           key is ever valid twice.
//   insert_or_assign  as insert; a present key is replaced by the reserved slot in ONE CAS
//           (its bit cleared and the new one set), so a reader sees the old pair or the new.
//   erase   find the key's valid slot under s; CAS s -> s - its bit + version; then clear the
//           key (the slot is free again).
//   resize  when an insert had to chain a bucket and the table holds more than 3 items per
//           head on average, or the overflow pool ran out. Never on one chain's length alone
//           (the reference design resizes on a single full bucket, which livelocks when hashes
//           collide): a chain of kMaxChain buckets in a table under half that full holds 24
//           keys with one hash prefix, a degenerate hash, and its insert returns kFull. One
//           thread at a time (a try-lock) doubles the table: it freezes each chain (a CAS
//           setting the frozen bit), copies its valid pairs and moves on; the new table is
//           published with release once every chain is copied. Old tables are kept until the
//           map is destroyed (finds may still read them; together they are smaller than the
//           current one).
//
// Progress: finds retry only when an update of their chain completed, and updates retry only
// when another update's CAS on their chain succeeded: both lock-free -- except that an update
// that meets a frozen chain waits (on the resize lock) until the resize that froze it ends (as
// in the reference design; a resizer preempted mid-copy stalls updates, never finds), and
// should that resize have failed (std::bad_alloc), does it again itself, throwing
// std::bad_alloc without a change if it fails too: a failed resize leaves no chain frozen for
// good. A find of a frozen chain reads it unchanged, since no update succeeds there once it is
// frozen.
//
// Versions have 39 bits: a stale snapshot could only pass for a current one after exactly a
// multiple of 2^39 (5.5 * 10^11) changes of one chain while one operation is stalled between
// its two reads -- hours of a single chain changing at the fastest rate one cache line allows.
//
// Memory ordering: the snapshot's CAS that publishes a slot is release, and its loads are
// acquire: a find that sees the valid bit sees the key and value written before it. Key and
// value loads are acquire so that the snapshot's second load stays after them. Overflow
// buckets are linked with release (their first pair written before) and followed with acquire.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <type_traits>

#include "ccf/detail/bucket_pool.hpp"
#include "ccf/detail/clht_sizing.hpp"
#include "ccf/detail/map_api.hpp"
#include "ccf/detail/page_buffer.hpp"
#include "ccf/detail/sharded_counter.hpp"
#include "ccf/detail/table_generations.hpp"
#include "ccf/status.hpp"

namespace ccf {

class ClhtLf : public detail::MapApi<ClhtLf, std::uint64_t, std::uint64_t> {
 public:
  static constexpr unsigned kSlots = detail::ClhtSizing::kSlots;  // pairs per 64-byte bucket
  static constexpr unsigned kMaxChain = 8;                        // buckets per chain

  // Room for `capacity` items at the resize threshold (3 per head bucket) without resizing.
  // Throws std::invalid_argument beyond the 64 TiB table limit; reserve() likewise, changing
  // nothing.
  explicit ClhtLf(std::size_t capacity = 1024)
      : tables_(std::make_unique<Table>(detail::ClhtSizing::buckets_for(capacity, "ClhtLf"))) {}
  ClhtLf(const ClhtLf&) = delete;
  ClhtLf& operator=(const ClhtLf&) = delete;

  std::optional<std::uint64_t> find(std::uint64_t key) const {
    check(key);
    const std::uint64_t h = detail::ClhtSizing::hash(key);
    for (;;) {
      const Bucket& head = tables_.current()->head(h);
      const std::uint64_t s = head.snapshot.load(std::memory_order_acquire);
      const std::optional<SlotRef> slot = find_valid(head, s, key);
      const std::uint64_t value =
          slot ? slot->bucket->value[slot->lane].load(std::memory_order_acquire) : 0;
      if (head.snapshot.load(std::memory_order_acquire) == s) {
        return slot ? std::optional<std::uint64_t>(value) : std::nullopt;
      }
    }
  }
  // contains, insert and insert_or_assign: detail::MapApi over find and put; kFull only for a
  // degenerate hash (see the header; nothing changed).

  // kOk, or kNotFound.
  Status erase(std::uint64_t key) {
    check(key);
    const std::uint64_t h = detail::ClhtSizing::hash(key);
    for (;;) {
      Table* table = tables_.current();
      Bucket& head = table->head(h);
      std::uint64_t s = head.snapshot.load(std::memory_order_acquire);
      if (s & kFrozen) {
        resize(table, true);  // finishes the resize that froze it (see Progress)
        continue;
      }
      const std::optional<SlotRef> slot = find_valid(head, s, key);
      if (!slot) {
        if (head.snapshot.load(std::memory_order_acquire) == s) return Status::kNotFound;
        continue;
      }
      if (head.snapshot.compare_exchange_strong(s, changed(s, valid_bit(slot->index), 0),
                                                std::memory_order_acq_rel)) {
        slot->bucket->key[slot->lane].store(0, std::memory_order_release);  // ours: free it
        items_.add(-1);
        return Status::kOk;
      }
    }
  }

  // Exact when no update is in flight.
  std::size_t size() const noexcept { return static_cast<std::size_t>(items_.value()); }
  std::size_t bucket_count() const noexcept { return tables_.current()->buckets; }
  // Slots in the current table's head buckets (chains hold more).
  std::size_t capacity() const noexcept { return kSlots * bucket_count(); }
  // Grows the table (if needed) so that `capacity` items fit without a resize.
  void reserve(std::size_t capacity) {
    while (bucket_count() < detail::ClhtSizing::buckets_for(capacity, "ClhtLf")) {
      if (!resize(tables_.current(), true)) break;  // at the limit
    }
  }
  // Resizes done so far, and the time they took in all (the cost the benchmarks report).
  std::uint64_t resizes() const noexcept { return tables_.resizes(); }
  std::uint64_t resize_nanoseconds() const noexcept { return tables_.resize_nanoseconds(); }
  // Head buckets and overflow buckets in use, of every table still held, and the map object.
  std::size_t memory_bytes() const { return tables_.memory_bytes() + sizeof(*this); }

 private:
  friend class detail::MapApi<ClhtLf, std::uint64_t, std::uint64_t>;
  using Word = std::atomic<std::uint64_t>;
  static constexpr unsigned kChainSlots = kSlots * kMaxChain;  // 24 valid bits
  static constexpr std::uint64_t kValidMask = (std::uint64_t{1} << kChainSlots) - 1;
  static constexpr std::uint64_t kFrozen = std::uint64_t{1} << kChainSlots;
  static constexpr std::uint64_t kVersionOne = kFrozen << 1;  // adding it wraps mod 2^39

  struct alignas(64) Bucket {
    Word snapshot{0};  // head buckets only
    Word key[kSlots]{};
    Word value[kSlots]{};
    std::atomic<Bucket*> next{nullptr};
  };
  static_assert(sizeof(Bucket) == 64, "one bucket, one cache line");
  static_assert(std::is_trivially_destructible_v<Bucket>, "buckets are never destroyed");

  // A slot of a chain: its bucket, its lane there and its index in the chain (3c + lane).
  struct SlotRef {
    Bucket* bucket;
    unsigned lane;
    unsigned index;
  };

  // One table: head buckets and the overflow pool (as many buckets again, address space only
  // until used, detail/bucket_pool.hpp), both on huge pages where the system allows
  // (detail/page_buffer.hpp).
  struct Table {
    explicit Table(std::uint64_t count)
        : buckets(count),
          head_storage(count * sizeof(Bucket)),
          heads(construct(head_storage, count)),
          pool(count) {}

    static Bucket* construct(detail::PageBuffer& storage, std::uint64_t count) {
      auto* first = reinterpret_cast<Bucket*>(storage.data());
      for (std::uint64_t i = 0; i < count; ++i) new (first + i) Bucket;
      return std::launder(first);
    }
    Bucket& head(std::uint64_t h) const noexcept { return heads[reduce_range(h, buckets)]; }
    std::size_t memory_bytes() const noexcept {
      return head_storage.reserved_bytes() + pool.memory_bytes();
    }

    std::uint64_t buckets;
    detail::PageBuffer head_storage;
    Bucket* heads;  // in head_storage
    detail::BucketPool<Bucket> pool;
  };

  static void check(std::uint64_t key) { detail::ClhtSizing::check(key, "ClhtLf"); }
  static constexpr std::uint64_t valid_bit(unsigned index) noexcept {
    return std::uint64_t{1} << index;
  }
  // s with the valid bits `clear` cleared and `set` set, and its version raised.
  static constexpr std::uint64_t changed(std::uint64_t s, std::uint64_t clear,
                                         std::uint64_t set) noexcept {
    return ((s & ~clear) | set) + kVersionOne;
  }

  // The slot valid in snapshot s that holds `key` (by (I), what it held when s was current).
  static std::optional<SlotRef> find_valid(const Bucket& head, std::uint64_t s, std::uint64_t key) {
    std::uint64_t valid = s & kValidMask;
    auto* bucket = const_cast<Bucket*>(&head);
    for (unsigned c = 0; valid != 0; ++c, valid >>= kSlots) {
      for (unsigned lane = 0; lane < kSlots; ++lane) {
        if ((valid >> lane & 1) != 0 && bucket->key[lane].load(std::memory_order_acquire) == key) {
          return SlotRef{bucket, lane, c * kSlots + lane};
        }
      }
      // A valid slot further on lies in a bucket linked before it was published.
      bucket = bucket->next.load(std::memory_order_acquire);
    }
    return std::nullopt;
  }

  // Reserves a free slot of the chain for (key, value): its key CAS'd 0 -> key and its value
  // written, or a pool bucket linked with the pair in slot 0. nullopt: the chain is full or the
  // pool is used up. `chained` is set when a bucket was linked.
  static std::optional<SlotRef> reserve_slot(Table& table, Bucket& head, std::uint64_t key,
                                             std::uint64_t value, bool& chained) {
    Bucket* bucket = &head;
    unsigned c = 0;
    for (;;) {
      for (unsigned lane = 0; lane < kSlots; ++lane) {
        std::uint64_t expected = 0;
        if (bucket->key[lane].load(std::memory_order_relaxed) == 0 &&
            bucket->key[lane].compare_exchange_strong(expected, key, std::memory_order_acq_rel)) {
          bucket->value[lane].store(value, std::memory_order_release);
          return SlotRef{bucket, lane, c * kSlots + lane};
        }
      }
      if (Bucket* next = bucket->next.load(std::memory_order_acquire)) {
        bucket = next;
        ++c;
        continue;
      }
      if (c + 1 >= kMaxChain) return std::nullopt;
      Bucket* added = table.pool.allocate();
      if (added == nullptr) return std::nullopt;
      added->key[0].store(key, std::memory_order_relaxed);
      added->value[0].store(value, std::memory_order_relaxed);
      Bucket* expected = nullptr;
      // Release: the pair is in the bucket before anyone can reach it.
      if (bucket->next.compare_exchange_strong(expected, added, std::memory_order_release,
                                               std::memory_order_acquire)) {
        chained = true;
        return SlotRef{added, 0, (c + 1) * kSlots};
      }
      // Another insert linked a bucket first: ours stays unused in the pool; go on in theirs.
      bucket = expected;
      ++c;
    }
  }

  Status put(std::uint64_t key, std::uint64_t value, bool assign) {
    check(key);
    const std::uint64_t h = detail::ClhtSizing::hash(key);
    for (;;) {
      Table* table = tables_.current();
      Bucket& head = table->head(h);
      if (head.snapshot.load(std::memory_order_acquire) & kFrozen) {
        resize(table, true);  // finishes the resize that froze it (see Progress)
        continue;
      }
      bool chained = false;
      const std::optional<SlotRef> reserved = reserve_slot(*table, head, key, value, chained);
      if (!reserved) {
        // No room in the chain. A larger table makes room -- unless the hash is degenerate
        // (see the header): then the table is not even half as full as the resize threshold.
        const bool crowded = table->pool.exhausted() ||
                             2 * size() >= detail::ClhtSizing::kItemsPerBucket * table->buckets;
        if (!crowded || !resize(table, true)) {
          return !assign && find(key) ? Status::kExists : Status::kFull;
        }
        continue;
      }
      const std::optional<Status> status = publish(head, *reserved, key, assign);
      if (!status) {  // the chain was frozen: finish that resize and insert in the new table
        resize(table, true);
        continue;
      }
      if (*status == Status::kOk) {
        items_.add(1);
        if (chained && size() > detail::ClhtSizing::kItemsPerBucket * table->buckets) {
          try {
            resize(table, false);
          } catch (const std::bad_alloc&) {
            // The item is stored. The next update that needs the room, or meets a chain this
            // resize froze, does the resize again (see Progress).
          }
        }
      }
      return *status;
    }
  }

  // Makes the reserved slot valid (kOk), or replaces the key's valid slot with it (assign;
  // kExists), or releases it (kExists). nullopt: the chain is frozen (the slot is released).
  std::optional<Status> publish(Bucket& head, const SlotRef& reserved, std::uint64_t key,
                                bool assign) {
    for (;;) {
      std::uint64_t s = head.snapshot.load(std::memory_order_acquire);
      if (s & kFrozen) {
        release(reserved);
        return std::nullopt;
      }
      const std::optional<SlotRef> present = find_valid(head, s, key);
      if (present && !assign) {
        if (head.snapshot.load(std::memory_order_acquire) != s) continue;  // not proven yet
        release(reserved);
        return Status::kExists;
      }
      const std::uint64_t clear = present ? valid_bit(present->index) : 0;
      // Release: the reserved pair before its valid bit.
      if (head.snapshot.compare_exchange_strong(s, changed(s, clear, valid_bit(reserved.index)),
                                                std::memory_order_acq_rel)) {
        if (!present) return Status::kOk;
        release(*present);  // replaced: the old slot is ours to free
        return Status::kExists;
      }
    }
  }

  static void release(const SlotRef& slot) noexcept {
    slot.bucket->key[slot.lane].store(0, std::memory_order_release);
  }

  // Doubles `from` if it is still the current table. If another thread is resizing: when `wait`
  // (an update that needs the room, or met a frozen chain), waits for it to end and, should it
  // have failed, resizes itself; else returns at once. False only at the table limit. A
  // std::bad_alloc propagates, with chains of `from` possibly frozen: the next resize of `from`
  // copies them again.
  bool resize(Table* from, bool wait) {
    std::unique_lock guard(resize_lock_, std::defer_lock);
    if (wait) {
      guard.lock();
    } else if (!guard.try_lock()) {
      return true;
    }
    if (tables_.current() != from) return true;
    if (2 * from->buckets > detail::ClhtSizing::kMaxBuckets) return false;
    const auto start = std::chrono::steady_clock::now();
    // What may throw (std::bad_alloc) comes before the first freeze where it can: room to keep
    // the new table, and the new table. Only when a chain overflows the doubled table (a
    // degenerate hash, see the header) is a larger one allocated after some chains froze.
    tables_.make_room();
    std::uint64_t buckets = 2 * from->buckets;
    auto to = std::make_unique<Table>(buckets);
    for (std::uint64_t i = 0; i < from->buckets;) {
      if (copy_chain(from->heads[i], *to)) {
        ++i;
      } else {  // a chain overflowed: start over, larger
        buckets *= 2;
        to = std::make_unique<Table>(buckets);
        i = 0;
      }
    }
    tables_.publish(std::move(to), start);  // every copy before the publication
    return true;
  }

  // Freezes a chain (once: a retry into a larger table finds it frozen already) and copies its
  // valid pairs into a table nobody else sees yet. False if one did not fit there.
  static bool copy_chain(Bucket& head, Table& to) {
    std::uint64_t s = head.snapshot.load(std::memory_order_acquire);
    while (!(s & kFrozen) && !head.snapshot.compare_exchange_weak(s, changed(s, 0, kFrozen),
                                                                  std::memory_order_acq_rel)) {
    }
    const Bucket* bucket = &head;
    for (std::uint64_t valid = s & kValidMask; valid != 0; valid >>= kSlots) {
      for (unsigned lane = 0; lane < kSlots; ++lane) {
        if ((valid >> lane & 1) != 0 &&
            !place(to, bucket->key[lane].load(std::memory_order_relaxed),
                   bucket->value[lane].load(std::memory_order_relaxed))) {
          return false;
        }
      }
      bucket = bucket->next.load(std::memory_order_acquire);
    }
    return true;
  }

  // Into a table no other thread sees yet.
  static bool place(Table& table, std::uint64_t key, std::uint64_t value) {
    Bucket& head = table.head(detail::ClhtSizing::hash(key));
    bool chained = false;
    const std::optional<SlotRef> slot = reserve_slot(table, head, key, value, chained);
    if (!slot) return false;
    head.snapshot.store(head.snapshot.load(std::memory_order_relaxed) | valid_bit(slot->index),
                        std::memory_order_relaxed);
    return true;
  }

  detail::TableGenerations<Table> tables_;
  std::mutex resize_lock_;  // one resize at a time
  detail::ShardedCounter items_;
};

}  // namespace ccf
