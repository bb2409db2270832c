// BasicClht<Writers>: the cache-line hash table of David, Guerraoui and Trigonakis
// ("Asynchronized concurrency: the secret to scaling concurrent search data structures", ASPLOS
// 2015) with lock-based updates: a map from non-zero 64-bit keys to 64-bit values where a lookup
// touches one cache line and never writes, waits or retries. How updates exclude each other is
// the Writers policy:
//
//   ClhtLb       clht::BucketLocks         a lock per head bucket (CLHT-lb)      clht_lb.hpp
//   HtmClht<E>   clht::GlobalElided<E>     ONE lock for the table, elided with   htm_clht.hpp
//                                          RTM by the scheme E (thesis ch. 4)
//   HtmClhtFine  clht::BucketElided<>      the bucket locks, elided with RTM     htm_clht.hpp
//
// A Writers policy provides
//   static constexpr std::string_view kName;         the table's name in error messages
//   update(current, h, f)      f(head, table) on h's chain of the current table, exclusive with
//                              every other update of that chain and with a migration of it
//   migrate(from, copy, publish)   copy(head) for every chain of `from`, then publish(), with no
//                              update of a copied chain before publish() (a migrated chain's
//                              updates wait, then retry in the new table); if copy or publish
//                              throws, every chain is open to updates again, and it rethrows
//   speculative()              whether sections run as hardware transactions
// The lookups and the slot protocol below are the same under every policy.
//
// Layout: an array of m buckets (any m: the index is reduce_range(h, m), not a mask), one 64-byte
// line each, plus overflow buckets chained from it:
//
//   | lock (8) | key0 key1 key2 (24) | val0 val1 val2 (24) | next (8) |     key 0: empty slot
//
// Overflow buckets come from the table's pool (detail/bucket_pool.hpp: room for m, reserved
// with the table on huge pages, taken inside the section, never throwing), and from the heap
// only once the pool is used up. A heap bucket sits on an ordinary page among other
// allocations (a lookup that follows the chain may pay a page walk besides its miss) and costs
// a chaining insert an aligned allocation; the pool made CLHT-lb 1.2-1.3x faster at u = 10%
// (docs/benchmarks.md).
// Under RTM (HtmClht), a section that takes a pool bucket writes the pool's shared counter and
// may touch a fresh page, either of which can abort it; it then ends under the policy's
// fallback lock. Such sections are rare: only an insert into a full chain takes a bucket.
//
// Operations (h = mix64(key): CLHT indexes with the raw key; mixed, adversarial or strided keys
// cannot pile into one chain):
//   find    no lock, no store: for each slot of the chain, read key, value, key again; the key
//           unchanged means the value belongs to it (the atomic snapshot of key + value). A slot
//           whose key is not ours is skipped. (ASCY 1-4: searches do not write, wait or retry.)
//   contains  find without the value: each bucket's three keys compared at once (Bucket::holds).
//   insert  a key contains() sees present is refused (kExists) without update(): a failed
//           update writes nothing (ASCY 3). Else under update() of the head's chain (the head
//           guards its whole chain); refuse if the key is present now (kExists); else write the
//           value, then the key (release) into the first empty slot, or into a new overflow
//           bucket linked last (release).
//   erase   a key contains() sees absent is kNotFound without update(); else under update();
//           clear the key (release). Values are never cleared.
//   insert_or_assign: as insert, always under update(): a present key's value is overwritten
//           (a reader sees the old or the new value, never a torn one: values are single atomic
//           words).
//
// Sizing: a table built for n items gets ceil(n / 3) buckets -- every slot used at n, the excess
// of the fuller buckets in overflow buckets -- so at half that load (how benchmarks size it) it
// spends about 43 bytes of head bucket and 4 of overflow per item. Resize (double and rehash)
// when an insert had to chain a new overflow bucket and the table then holds more than 3 items
// per bucket on average -- never on one chain's length alone (the reference design resizes on a
// single overflow, which livelocks when hashes collide). One thread at a time (a try-lock; others
// just go on) copies every bucket into a table twice as large, through migrate(): bucket locks
// lock each old head for good while it is copied (lock word kMigrated), a global lock holds the
// whole copy; updates of a copied chain wait until the new table is published and then retry
// there; lookups go on in
// the old table, whose contents no longer change, so a lookup that started before the
// publication answers as of a moment inside its own run. Old tables are kept until the map is
// destroyed (they are smaller than the current one together, so the map never holds more than
// twice its current table) instead of a grace period: readers may still be inside them.
//
// Memory ordering: a writer's slot stores are release and a reader's loads acquire, so a reader
// that sees a key also sees the value written before it; the head lock's CAS is acquire and its
// release store publishes the critical section to the next holder (a global lock's, or a
// committed transaction's, likewise). The table pointer is
// published with release after every bucket is copied, and loaded with acquire.
//
// Progress: lookups wait-free; updates blocking (the policy's lock, and a resize in progress).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "ccf/detail/bucket_pool.hpp"
#include "ccf/detail/clht_sizing.hpp"
#include "ccf/detail/map_api.hpp"
#include "ccf/detail/page_buffer.hpp"
#include "ccf/detail/sharded_counter.hpp"
#include "ccf/detail/table_generations.hpp"
#include "ccf/detail/word_block.hpp"
#include "ccf/hash.hpp"
#include "ccf/status.hpp"
#include "ccf/sync/spin_wait.hpp"

namespace ccf {

namespace clht {
// The head bucket's lock word, for the policies that lock buckets.
inline constexpr std::uint64_t kFree = 0, kLocked = 1, kMigrated = 2;
}  // namespace clht

template <class Writers>
class BasicClht : public detail::MapApi<BasicClht<Writers>, std::uint64_t, std::uint64_t> {
 public:
  static constexpr unsigned kSlots = detail::ClhtSizing::kSlots;  // pairs per 64-byte bucket

  // Room for `capacity` items at the resize threshold (3 per bucket) without resizing. Throws
  // std::invalid_argument if that needs more than 2^40 head buckets (64 TiB), the library's
  // table limit; reserve() likewise, changing nothing.
  explicit BasicClht(std::size_t capacity = 1024)
      : tables_(std::make_unique<Table>(buckets_for(capacity))) {}
  BasicClht(const BasicClht&) = delete;
  BasicClht& operator=(const BasicClht&) = delete;

  std::optional<std::uint64_t> find(std::uint64_t key) const {
    check(key);
    const Table& table = *tables_.current();
    for (const Bucket* b = &table.head(hash(key)); b != nullptr;
         b = b->next.load(std::memory_order_acquire)) {
      for (unsigned s = 0; s < kSlots; ++s) {
        if (b->key[s].load(std::memory_order_acquire) != key) continue;
        const std::uint64_t value = b->value[s].load(std::memory_order_acquire);
        if (b->key[s].load(std::memory_order_acquire) == key) return value;
      }
    }
    return std::nullopt;
  }
  // find without the value, and with one branch per bucket, the chain's end, which is taken
  // almost always (see Bucket::holds). Linearizable as find: a key is in at most one slot at a
  // time and never moves within a table, so a key present throughout the scan is seen by it.
  bool contains(std::uint64_t key) const {
    check(key);
    return present(key, hash(key));
  }
  // insert (kOk or kExists) and insert_or_assign: detail::MapApi over find and put.

  // kOk, or kNotFound.
  Status erase(std::uint64_t key) {
    check(key);
    const std::uint64_t h = hash(key);
    // A failed update writes nothing (ASCY 3): an absent key is reported without the lock, at
    // the moment contains() saw it absent.
    if (!present(key, h)) return Status::kNotFound;
    return writers_.update(tables_, h, [&](Bucket& head, Table&) {
      for (Bucket* b = &head; b != nullptr; b = b->next.load(std::memory_order_relaxed)) {
        for (unsigned s = 0; s < kSlots; ++s) {
          if (b->key[s].load(std::memory_order_relaxed) == key) {
            b->key[s].store(0, std::memory_order_release);
            items_.add(-1);
            return Status::kOk;
          }
        }
      }
      return Status::kNotFound;
    });
  }

  // Exact when no update is in flight.
  std::size_t size() const noexcept { return static_cast<std::size_t>(items_.value()); }
  std::size_t bucket_count() const noexcept { return tables_.current()->buckets; }
  // Slots in the current table's head buckets (chains hold more).
  std::size_t capacity() const noexcept { return kSlots * bucket_count(); }
  // Grows the table (if needed) so that `capacity` items fit without a resize.
  void reserve(std::size_t capacity) {
    while (bucket_count() < buckets_for(capacity)) resize(tables_.current());
  }
  // Resizes done so far, and the time they took in all (the cost the benchmarks report).
  std::uint64_t resizes() const noexcept { return tables_.resizes(); }
  std::uint64_t resize_nanoseconds() const noexcept { return tables_.resize_nanoseconds(); }
  // True when updates run as hardware transactions (RTM present and the policy elides).
  bool speculative() const noexcept { return writers_.speculative(); }
  // The writers' policy (its locks, for statistics).
  Writers& writers() noexcept { return writers_; }
  const Writers& writers() const noexcept { return writers_; }

  // Buckets (head and overflow) of every table still held, and the map object.
  std::size_t memory_bytes() const { return tables_.memory_bytes() + sizeof(*this); }

 private:
  friend class detail::MapApi<BasicClht<Writers>, std::uint64_t, std::uint64_t>;
  struct alignas(64) Bucket {
    std::atomic<std::uint64_t> lock{clht::kFree};  // head buckets; only bucket-lock policies
    std::atomic<std::uint64_t> key[kSlots]{};
    std::atomic<std::uint64_t> value[kSlots]{};
    std::atomic<Bucket*> next{nullptr};

    // Whether a slot holds `wanted`: the line's first 32 bytes, | lock | key0 key1 key2 |,
    // compared at once (detail/word_block.hpp), with no loop and no exit at a match. Lookups one
    // at a time overlap their cache misses only as far as the out-of-order window reaches: a
    // branch on which slot matched mispredicts at random, and its flush discards the next
    // lookups' loads already issued; every load and loop instruction takes room in the window.
    bool holds(std::uint64_t wanted) const noexcept {
#if CCF_DETAIL_VECTOR_WORD_LOADS
      constexpr unsigned kKeyWords = 0b1110;  // words 1-3 of the block: word 0 is the lock
      return (detail::equal_words(this, wanted) & kKeyWords) != 0;
#else
      bool found = false;
      for (const auto& slot_key : key) found |= slot_key.load(std::memory_order_acquire) == wanted;
      return found;
#endif
    }
  };
  static_assert(sizeof(Bucket) == 64, "one bucket, one cache line");
  static_assert(offsetof(Bucket, key) == 8 && kSlots == 3, "holds(): | lock | key0 key1 key2 |");
  static_assert(std::is_trivially_destructible_v<Bucket>, "head buckets are never destroyed");

  struct Table {
    // Head buckets on huge pages where the system allows (detail/page_buffer.hpp): random probes
    // into a table larger than the TLB's reach pay a page walk each otherwise.
    explicit Table(std::uint64_t count)
        : buckets(count),
          storage(count * sizeof(Bucket)),
          heads(construct(storage, count)),
          pool(count) {}
    ~Table() {
      for (std::uint64_t i = 0; i < buckets; ++i) {
        for (Bucket* b = heads[i].next.load(std::memory_order_relaxed); b != nullptr;) {
          Bucket* next = b->next.load(std::memory_order_relaxed);
          if (!pool.owns(b)) delete b;
          b = next;
        }
      }
    }
    // An overflow bucket: from the pool, or -- once the pool is used up (by chains that erases
    // emptied, or that grew while resizes failed) -- from the heap, which may throw
    // std::bad_alloc.
    Bucket* chain_bucket() {
      Bucket* added = pool.allocate();
      return added != nullptr ? added : new Bucket;
    }
    Bucket& head(std::uint64_t h) const noexcept { return heads[reduce_range(h, buckets)]; }
    std::size_t memory_bytes() const noexcept {
      return (buckets + overflow.load(std::memory_order_relaxed)) * sizeof(Bucket);
    }

    static Bucket* construct(detail::PageBuffer& storage, std::uint64_t count) {
      auto* first = reinterpret_cast<Bucket*>(storage.data());
      for (std::uint64_t i = 0; i < count; ++i) new (first + i) Bucket;
      return std::launder(first);
    }

    std::uint64_t buckets;
    detail::PageBuffer storage;
    Bucket* heads;  // in storage; trivially destructible
    // Overflow buckets: as many as heads, address space only until used (detail/bucket_pool.hpp).
    detail::BucketPool<Bucket> pool;
    std::atomic<std::uint64_t> overflow{0};  // overflow buckets chained, pooled or not
  };

  static constexpr std::uint64_t kItemsPerBucket = detail::ClhtSizing::kItemsPerBucket;
  static constexpr std::uint64_t kMaxBuckets = detail::ClhtSizing::kMaxBuckets;
  static std::uint64_t buckets_for(std::size_t capacity) {
    return detail::ClhtSizing::buckets_for(capacity, Writers::kName);
  }
  static std::uint64_t hash(std::uint64_t key) noexcept {
    return detail::ClhtSizing::hash(key);
  }
  static void check(std::uint64_t key) {
    detail::ClhtSizing::check(key, Writers::kName);
  }

  // contains() of a checked key with hash h.
  bool present(std::uint64_t key, std::uint64_t h) const {
    const Bucket* b = &tables_.current()->head(h);
    for (;;) {
      const bool found = b->holds(key);
      b = b->next.load(std::memory_order_acquire);
      if (found | (b == nullptr)) return found;
    }
  }

  Status put(std::uint64_t key, std::uint64_t value, bool assign) {
    check(key);
    const std::uint64_t h = hash(key);
    if (!assign && present(key, h)) return Status::kExists;  // read-only failure, as erase's
    // A bucket to chain comes from the table's pool, which never throws, inside the section.
    // Only when the pool is used up does it come from the heap, allocated before a section and
    // never inside one: a std::bad_alloc thrown while a head's lock (or the global one) is held
    // would leave it held for good.
    std::unique_ptr<Bucket> spare;
    for (;;) {
      Table* chained_in = nullptr;
      const std::optional<Status> status =
          writers_.update(tables_, h, [&](Bucket& head, Table& table) -> std::optional<Status> {
            chained_in = nullptr;  // a transaction's section may run again
            std::atomic<std::uint64_t>* empty_key = nullptr;
            std::atomic<std::uint64_t>* empty_value = nullptr;
            Bucket* last = &head;
            for (Bucket* b = &head; b != nullptr; b = b->next.load(std::memory_order_relaxed)) {
              last = b;
              for (unsigned s = 0; s < kSlots; ++s) {
                const std::uint64_t k = b->key[s].load(std::memory_order_relaxed);
                if (k == key) {
                  if (assign) b->value[s].store(value, std::memory_order_release);
                  return Status::kExists;
                }
                if (k == 0 && empty_key == nullptr) {
                  empty_key = &b->key[s];
                  empty_value = &b->value[s];
                }
              }
            }
            if (empty_key == nullptr) {  // chain a bucket, its first slot filled before linking
              Bucket* added = table.pool.allocate();
              if (added == nullptr) {
                if (!spare) return std::nullopt;  // allocated outside, then this runs again
                added = spare.release();
              }
              added->value[0].store(value, std::memory_order_relaxed);
              added->key[0].store(key, std::memory_order_relaxed);
              last->next.store(added, std::memory_order_release);
              table.overflow.fetch_add(1, std::memory_order_relaxed);
              chained_in = &table;
            } else {
              empty_value->store(value, std::memory_order_release);
              empty_key->store(key, std::memory_order_release);
            }
            items_.add(1);
            return Status::kOk;
          });
      if (!status) {
        spare = std::make_unique<Bucket>();
        continue;
      }
      if (chained_in != nullptr && size() > kItemsPerBucket * chained_in->buckets) {
        try {
          resize(chained_in);
        } catch (const std::bad_alloc&) {
          // The item is stored; the table is as it was (see resize) and its chains grow until a
          // later insert's resize finds the memory.
        }
      }
      return *status;
    }
  }

  // Doubles `from` if it is still the current table and no other thread is resizing. Strong
  // guarantee: a std::bad_alloc (the new table, an overflow bucket of the copy) leaves `from`
  // current, unchanged and open to updates (Writers::migrate releases what it took).
  void resize(Table* from) {
    const std::unique_lock guard(resize_lock_, std::try_to_lock);
    if (!guard.owns_lock() || tables_.current() != from) return;
    if (2 * from->buckets > kMaxBuckets) return;  // at the limit: chains grow instead
    const auto start = std::chrono::steady_clock::now();
    auto to = std::make_unique<Table>(2 * from->buckets);
    writers_.migrate(
        *from,
        [&](const Bucket& head) {
          for (const Bucket* b = &head; b != nullptr; b = b->next.load(std::memory_order_relaxed)) {
            for (unsigned s = 0; s < kSlots; ++s) {
              const std::uint64_t k = b->key[s].load(std::memory_order_relaxed);
              if (k != 0) place(*to, k, b->value[s].load(std::memory_order_relaxed));
            }
          }
        },
        [&] { tables_.publish(std::move(to), start); });  // after every copy
  }

  // Into a table no other thread sees yet.
  static void place(Table& table, std::uint64_t key, std::uint64_t value) {
    Bucket* b = &table.head(hash(key));
    for (;;) {
      for (unsigned s = 0; s < kSlots; ++s) {
        if (b->key[s].load(std::memory_order_relaxed) == 0) {
          b->value[s].store(value, std::memory_order_relaxed);
          b->key[s].store(key, std::memory_order_relaxed);
          return;
        }
      }
      Bucket* next = b->next.load(std::memory_order_relaxed);
      if (next == nullptr) {
        next = table.chain_bucket();
        b->next.store(next, std::memory_order_relaxed);
        table.overflow.fetch_add(1, std::memory_order_relaxed);
      }
      b = next;
    }
  }

  detail::TableGenerations<Table> tables_;
  [[no_unique_address]] Writers writers_;
  std::mutex resize_lock_;  // one resize at a time
  detail::ShardedCounter items_;
};

}  // namespace ccf
