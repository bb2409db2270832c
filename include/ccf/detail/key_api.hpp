// The key-level API that every cuckoo filter offers, written once (CRTP): 64-bit integer keys
// and byte strings, hashed with the filter's seed (hash.hpp) and passed to the filter's
// insert_hash / contains_hash / erase_hash; batched operations through its stage_lookup(hash)
// (locate and prefetch; returns what the finishing step needs), stage_update(hash) (the same for
// an insert or erase, whose lines a concurrent filter fetches for writing), finish_lookup(staged),
// finish_insert(staged) and finish_erase(staged), and, for insert_many's overlapped path
// searches, try_place(staged) (the insert without a path search), GroupSearch (a shallow
// detail::CuckooPathSearch), start_search(staged, search) and finish_along(staged, path) (the
// insert along a path a group search found). A filter derives from KeyApi<Filter>, declares it
// a friend, and provides those and seed().
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string_view>
#include <type_traits>
#include <utility>

#include "ccf/detail/cuckoo_path.hpp"
#include "ccf/detail/software_pipeline.hpp"
#include "ccf/hash.hpp"
#include "ccf/status.hpp"

namespace ccf::detail {

// The usual stage_lookup: prefetch both candidate buckets of a located key.
template <class Table, class Location>
[[gnu::always_inline]] inline Location prefetch_both(const Table& table,
                                                     const Location& at) noexcept {
  table.prefetch(at.primary);
  table.prefetch(at.alternate);
  return at;
}

// a || b with both already evaluated: lookups probe both buckets unconditionally (their cache
// misses overlap, and no data-dependent branch can mispredict), then combine without a branch.
constexpr bool found_in_either(bool a, bool b) noexcept {
  return (static_cast<unsigned>(a) | static_cast<unsigned>(b)) != 0;
}

template <class Filter>
class KeyApi {
 public:
  Status insert(std::uint64_t key) noexcept(noexcept(std::declval<Filter&>().insert_hash(0))) {
    return self().insert_hash(hash_key(key, self().seed()));
  }
  Status insert(std::string_view key) noexcept(noexcept(std::declval<Filter&>().insert_hash(0))) {
    return self().insert_hash(hash_key(key, self().seed()));
  }
  bool contains(std::uint64_t key) const
      noexcept(noexcept(std::declval<const Filter&>().contains_hash(0))) {
    return self().contains_hash(hash_key(key, self().seed()));
  }
  bool contains(std::string_view key) const
      noexcept(noexcept(std::declval<const Filter&>().contains_hash(0))) {
    return self().contains_hash(hash_key(key, self().seed()));
  }
  Status erase(std::uint64_t key) noexcept(noexcept(std::declval<Filter&>().erase_hash(0))) {
    return self().erase_hash(hash_key(key, self().seed()));
  }
  Status erase(std::string_view key) noexcept(noexcept(std::declval<Filter&>().erase_hash(0))) {
    return self().erase_hash(hash_key(key, self().seed()));
  }
  // Copies of the key's fingerprint in its two buckets (a bucket counted once if both are the
  // same): at least the times the key was inserted and not erased, more where other keys share
  // its fingerprint and buckets. Filters whose copies stay in one table (count_hash) only.
  std::size_t count(std::uint64_t key) const {
    return self().count_hash(hash_key(key, self().seed()));
  }
  std::size_t count(std::string_view key) const {
    return self().count_hash(hash_key(key, self().seed()));
  }

  // out[i] = contains(keys[i]), each lookup linearizable on its own; returns the number of hits.
  // out must be at least as long as keys (else std::invalid_argument). Pipelined: the keys
  // ahead are hashed and their buckets prefetched (stage_lookup) before key i is probed
  // (finish_lookup), so that the cache misses of consecutive lookups overlap.
  template <class Key>
  std::size_t contains_many(std::span<const Key> keys, std::span<bool> out) const {
    if (out.size() < keys.size()) throw std::invalid_argument("contains_many: output too short");
    std::size_t hits = 0;
    detail::software_pipeline(
        keys.size(),
        [&](std::size_t i) { return self().stage_lookup(hash_key(keys[i], self().seed())); },
        [&](std::size_t i, const auto& staged) {
          out[i] = self().finish_lookup(staged);
          hits += out[i];
          return true;
        });
    return hits;
  }

  // Inserts keys and stops at the first kFull: returns how many leading keys were stored
  // (keys.size() unless the filter filled up), and the keys after those are not stored.
  // Pipelined as contains_many, so an insert that finds room in one of its buckets costs no
  // memory latency of its own. In a concurrent filter each insert is linearizable on its own;
  // the batch is not atomic.
  //
  // The inserts that find both buckets full wait in a group of kGroup, whose path searches run
  // together: a round of every search is in flight at once (find_cuckoo_paths_together), so
  // near full a batch pays about one memory latency per round for the whole group instead of
  // one per round per insert. The waiting inserts then complete in key order, each along its
  // path, or through the filter's full insert where the group search found none within
  // kGroupSearchDepth or the path changed meanwhile. Keys therefore land out of order: when
  // one fails, the keys after it that were already stored are erased again (a concurrent reader
  // may have seen them in between) and the failed one is retried, since those removals may
  // have made room. The batch stops only at a key that finds no room while no later key is in
  // the filter.
  template <class Key>
  std::size_t insert_many(std::span<const Key> keys) {
    for (std::size_t begin = 0;;) {
      const std::size_t failed = begin + insert_run(keys.subspan(begin));
      if (failed == keys.size()) return failed;
      const auto staged = self().stage_update(hash_key(keys[failed], self().seed()));
      if (self().finish_insert(staged) != Status::kOk) return failed;
      begin = failed + 1;
    }
  }

 private:
  // Waiting inserts per group: enough searches that a round, one parent of each (8b buckets,
  // 32 at b = 4), keeps about as many misses in flight as a core's miss buffers hold.
  static constexpr std::size_t kGroup = 8;

  // Stores keys until one fails; returns its index (keys.size() if none did), with exactly the
  // keys before it stored.
  template <class Key>
  std::size_t insert_run(std::span<const Key> keys) {
    using Staged = std::remove_cvref_t<decltype(self().stage_update(0))>;
    using Search = typename Filter::GroupSearch;
    using Path = CuckooPath<Filter::kSlots, kGroupSearchDepth>;
    struct Waiting {
      std::size_t index;
      Staged staged;
    };
    std::array<Waiting, kGroup> waiting;
    std::array<Search, kGroup> searches;
    std::array<Path, kGroup> paths;
    std::array<bool, kGroup> found;
    std::size_t count = 0;
    std::size_t failed = keys.size();  // the first key not stored
    std::size_t failed_at = 0;         // its place in `waiting`; those after it are not stored
    const auto complete_group = [&] {
      for (std::size_t i = 0; i < count; ++i) self().start_search(waiting[i].staged, searches[i]);
      find_cuckoo_paths_together(std::span(searches.data(), count), std::span(paths.data(), count),
                                 std::span(found.data(), count));
      for (std::size_t i = 0; i < count; ++i) {
        const Waiting& w = waiting[i];
        const Status status =
            found[i] ? self().finish_along(w.staged, paths[i]) : self().finish_insert(w.staged);
        if (status != Status::kOk) {
          failed = w.index;
          failed_at = i;
          return false;
        }
      }
      count = 0;
      return true;
    };
    std::size_t visited = 0;
    detail::software_pipeline(
        keys.size(),
        [&](std::size_t i) { return self().stage_update(hash_key(keys[i], self().seed())); },
        [&](std::size_t i, const Staged& staged) {
          visited = i + 1;
          if (self().try_place(staged)) return true;
          waiting[count++] = {i, staged};
          return count < kGroup || complete_group();
        });
    if (failed == keys.size() && (count == 0 || complete_group())) return keys.size();
    // The keys after the failed one that were stored (placed at once, or earlier in its group)
    // are taken out again.
    const auto still_waiting = [&](std::size_t index) {
      for (std::size_t i = failed_at + 1; i < count; ++i) {
        if (waiting[i].index == index) return true;
      }
      return false;
    };
    for (std::size_t i = failed + 1; i < visited; ++i) {
      if (!still_waiting(i)) {
        self().finish_erase(self().stage_update(hash_key(keys[i], self().seed())));
      }
    }
    return failed;
  }

  Filter& self() noexcept { return static_cast<Filter&>(*this); }
  const Filter& self() const noexcept { return static_cast<const Filter&>(*this); }
};

}  // namespace ccf::detail
