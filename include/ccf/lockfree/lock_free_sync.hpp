// LockFreeSync: the filter core's lock-free policy (basic_cuckoo_filter.hpp), over a
// KcasTable (kcas_table.hpp); one level of LockFreeCuckooFilter (lock_free_cuckoo_filter.hpp,
// after "Lock-free concurrent cuckoo filter", J. Software 2025). docs/lockfree.md has the
// design and the whole argument; the numbers below are its points.
//
// What synchronization adds to the table: removal counters. S stripes (a power of two, about
// one per 128 buckets, at most 16384); bucket i's stripe is i mod S; each counter is a K-CAS
// word. Every write that REMOVES a fingerprint from a bucket raises the bucket's stripe
// counter in the same K-CAS (2): an erase (remove) and the source of a migration step (move).
// Writes that add a fingerprint are one single-word CAS (KcasTable::try_insert) and raise
// nothing.
//
// The sections:
//   read(at, probe)   probe: a probe that found its fingerprint is done. One that found
//                     nothing proves nothing yet: read both stripes' counters, probe, read them
//                     again; a miss counts only when neither counter moved (1), else it runs
//                     again.
//   update(at, plan, apply)   an insert's store: apply(plan()) as it stands (a false "no room"
//                     costs nothing: the core's path search looks again). An erase: plan and
//                     apply between two counter reads, again until it removed a copy or neither
//                     counter moved: "nothing to remove" then held at one moment. (An apply
//                     that changed something is never re-run.)
//   remove(table, bucket, fp)  one K-CAS: a slot of `bucket` holding fp -> 0, and the stripe's
//                     counter + 1.
//   move(table, path, fp)   the path from its empty end back to the root, one K-CAS per step:
//                     source slot -> 0 (the root's: fp), target's free slot -> the moved
//                     fingerprint, source stripe's counter + 1; a step whose source no longer
//                     holds what the search saw, or whose target has no room, ends the move
//                     (false: the core searches again; the steps made each kept every item).
//   operation<>(f)    f(): nothing is locked, anywhere.
//
// Progress: a read reruns only when a removal completed in one of its stripes; every other
// retry follows another operation's successful CAS or K-CAS: lock-free.
#pragma once

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>
#include <utility>

#include "ccf/detail/addressing.hpp"
#include "ccf/detail/cuckoo_path.hpp"
#include "ccf/detail/page_buffer.hpp"
#include "ccf/detail/prefetch.hpp"
#include "ccf/detail/sharded_counter.hpp"
#include "ccf/lockfree/kcas.hpp"
#include "ccf/lockfree/kcas_table.hpp"
#include "ccf/status.hpp"
#include "ccf/sync/access.hpp"

namespace ccf::lockfree {

// What the levels of one lock-free filter share: the K-CAS, the item count and the counts that
// benchmarks read.
template <class Kcas>
struct LockFreeShared {
  template <class... KcasArgs>
  explicit LockFreeShared(KcasArgs&&... kcas_args) : kcas(std::forward<KcasArgs>(kcas_args)...) {}
  Kcas kcas;
  ccf::detail::ShardedCounter items;
  ccf::detail::ShardedCounter migrations;       // steps carried out
  ccf::detail::ShardedCounter kcas_operations;  // steps that got as far as their K-CAS
  ccf::detail::ShardedCounter restarts;         // moves ended by a changed path
};

template <class Kcas>
class LockFreeSync {
 public:
  static constexpr bool kExclusive = false;
  static constexpr std::size_t kBatchChunk = std::numeric_limits<std::size_t>::max();
  static constexpr std::string_view kName = "lock-free";
  static constexpr unsigned kBucketsPerStripe = 128;
  static constexpr std::uint64_t kMaxStripes = 16384;

  static constexpr std::uint64_t stripes_for(std::uint64_t buckets) noexcept {
    return std::min(kMaxStripes,
                    std::bit_floor(std::max<std::uint64_t>(1, buckets / kBucketsPerStripe)));
  }

  // The counters are zero pages until a removal touches them.
  LockFreeSync(std::uint64_t buckets, LockFreeShared<Kcas>& shared)
      : shared_(&shared),
        stripe_mask_(stripes_for(buckets) - 1),
        counters_((stripe_mask_ + 1) * sizeof(KcasWord)),
        stripes_(reinterpret_cast<KcasWord*>(counters_.data())) {}

  template <sync::Access, class F>
  decltype(auto) operation(F&& f) const {
    return f();
  }

  template <class Probe>
  auto read(const ccf::detail::Location& at, Probe&& probe) const {
    // A probe that found its fingerprint needs no counter (1): the first probe runs before any
    // counter is read, and only a miss pays for them. Every other result counts only from a
    // scan between two equal counter reads. (One probe call site, so that it inlines.)
    constexpr bool kFoundEnds = std::is_same_v<std::invoke_result_t<Probe&>, bool>;
    bool checked = !kFoundEnds;
    std::uint64_t before_primary = checked ? counter(at.primary) : 0;
    std::uint64_t before_alternate = checked ? counter(at.alternate) : 0;
    for (;;) {
      if (checked) lookup_hook(kcas(), LookupHookPoint::kAfterCounters);
      const auto result = probe();
      if constexpr (kFoundEnds) {
        if (result) return result;  // a copy was there: found, whatever moved since
      }
      if (checked) lookup_hook(kcas(), LookupHookPoint::kBeforeRecheck);
      const std::uint64_t primary = counter(at.primary);
      const std::uint64_t alternate = counter(at.alternate);
      if (checked && primary == before_primary && alternate == before_alternate) return result;
      // Read before the next scan: its first counter read.
      before_primary = primary;
      before_alternate = alternate;
      checked = true;
    }
  }

  // An insert or erase writes one of its buckets through a K-CAS: both fetched for writing.
  template <class Table>
  [[gnu::always_inline]] void prefetch_update(const Table& table,
                                              const ccf::detail::Location& at) const noexcept {
    table.prefetch_for_write(at.primary);
    table.prefetch_for_write(at.alternate);
  }

  // An insert's store (apply returns bool) needs no proof of "no room": the core searches a path
  // next, which reads the buckets again. An erase's "nothing to remove" (a Status other than
  // kOk) does: it counts only when neither counter moved, as a lookup's miss.
  template <class Plan, class Apply>
  auto update(const ccf::detail::Location& at, Plan&& plan, Apply&& apply) {
    if constexpr (std::is_same_v<decltype(apply(plan())), bool>) {
      return apply(plan());
    } else {
      for (;;) {
        const std::uint64_t before_primary = counter(at.primary);
        const std::uint64_t before_alternate = counter(at.alternate);
        const Status status = apply(plan());
        if (status == Status::kOk ||
            (counter(at.primary) == before_primary && counter(at.alternate) == before_alternate)) {
          return status;
        }
      }
    }
  }

  // (2) Removes a copy of fp from `bucket`; false if the bucket holds none. A K-CAS that loses
  // a race (another write to the word or the stripe succeeded) is retried.
  template <class Table>
  bool remove(Table& table, std::uint64_t bucket, std::uint32_t fp) {
    using Lanes = typename Table::Lanes;
    KcasWord& stripe = stripe_of(bucket);
    for (;;) {
      const std::uint64_t count = kcas().read(stripe);
      const auto read = table.read_bucket(bucket);
      const std::uint64_t match = Lanes::lanes_equal(read.bits(), fp);
      if (match == 0) return false;
      const auto [slot, value] = read.locate_slot(Lanes::first_flagged_lane(match));
      if (kcas().compare_exchange(
              {{&table.word(slot), value, Table::WordLanes::set(value, slot.lane, 0)},
               {&stripe, count, next_count(count)}})) {
        return true;
      }
    }
  }

  // Carries out the path from its empty end back to the root, one K-CAS per step; the root
  // step stores fp in the slot it vacates (as the striped filter does under its root locks),
  // so no other insert takes that slot and the item is in when move returns true.
  // (A step's target is never its source: the search puts no bucket on a path twice.)
  template <class Table, class Path>
  bool move(Table& table, const Path& path, std::uint32_t fp) {
    assert(path.length >= 2);  // find_cuckoo_path looks for room from depth 1 on: a step exists
    // Every word the steps' K-CAS will write, fetched for writing at once: their misses overlap
    // instead of coming one step at a time. A step raises its source bucket's stripe counter.
    for (unsigned step = 0; step < path.length; ++step) {
      table.prefetch_for_write(path.steps[step].bucket);
      if (step + 1 < path.length) {
        ccf::detail::prefetch_line_for_write(&stripe_of(path.steps[step].bucket));
      }
    }
    for (unsigned step = path.length - 1; step > 0; --step) {
      const std::uint32_t refill = step == 1 ? fp : 0;
      if (!move_one(table, path.steps[step - 1], path.steps[step].bucket, refill)) {
        shared_->restarts.add(1);
        return false;
      }
      shared_->migrations.add(1);
    }
    return true;
  }

  void count(std::uint64_t /*bucket*/, std::int64_t delta) noexcept { shared_->items.add(delta); }
  std::size_t items() const noexcept {
    return static_cast<std::size_t>(std::max<std::int64_t>(0, shared_->items.value()));
  }
  std::size_t memory_bytes() const noexcept { return counters_.size(); }

 private:
  static std::uint64_t next_count(std::uint64_t count) noexcept {
    return (count + 1) & KcasWord::kPayloadMask;
  }

  Kcas& kcas() const noexcept { return shared_->kcas; }
  KcasWord& stripe_of(std::uint64_t bucket) const noexcept {
    return stripes_[bucket & stripe_mask_];
  }
  std::uint64_t counter(std::uint64_t bucket) const { return kcas().read(stripe_of(bucket)); }

  // One K-CAS: the fingerprint the search saw in from.slot of from.bucket goes to a free slot
  // of `target` (its alternate: same fingerprint, same alternate), from.slot takes `refill`
  // (0, or the inserted item's fingerprint on the root step), and the source stripe's counter
  // is raised (2).
  template <class Table>
  bool move_one(Table& table, const ccf::detail::CuckooPathStep& from, std::uint64_t target,
                std::uint32_t refill) {
    using Lanes = typename Table::Lanes;
    using WordLanes = typename Table::WordLanes;
    const std::uint64_t room = Lanes::zero_lanes(table.bits(target));
    if (room == 0) return false;
    const auto source = Table::slot_ref(from.bucket, from.slot);
    const auto to = Table::slot_ref(target, Lanes::first_flagged_lane(room));
    KcasWord& source_word = table.word(source);
    KcasWord& target_word = table.word(to);
    KcasWord& stripe = stripe_of(from.bucket);
    const std::uint64_t source_value = kcas().read(source_word);
    const std::uint64_t count = kcas().read(stripe);
    if (WordLanes::get(source_value, source.lane) != from.fp) return false;
    const std::uint64_t source_after = WordLanes::set(source_value, source.lane, refill);
    const KcasEntry counted{&stripe, count, next_count(count)};
    shared_->kcas_operations.add(1);
    if (source.word == to.word) {  // neighbouring buckets sharing a word: one word changes
      if (WordLanes::get(source_after, to.lane) != 0) return false;
      return kcas().compare_exchange(
          {{&source_word, source_value, WordLanes::set(source_after, to.lane, from.fp)}, counted});
    }
    const std::uint64_t target_value = kcas().read(target_word);
    if (WordLanes::get(target_value, to.lane) != 0) return false;
    return kcas().compare_exchange(
        {{&source_word, source_value, source_after},
         {&target_word, target_value, WordLanes::set(target_value, to.lane, from.fp)},
         counted});
  }

  LockFreeShared<Kcas>* shared_;
  std::uint64_t stripe_mask_;
  ccf::detail::PageBuffer counters_;  // stripe_mask_ + 1 K-CAS words, zero (payload 0) at first
  KcasWord* stripes_;                 // in counters_
};

}  // namespace ccf::lockfree
