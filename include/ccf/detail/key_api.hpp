// The key-level API that every cuckoo filter offers, written once (CRTP): 64-bit integer keys
// and byte strings, hashed with the filter's seed (hash.hpp) and passed to the filter's
// insert_hash / contains_hash / erase_hash; batched operations through its stage_lookup(hash)
// (locate and prefetch; returns what the finishing step needs), finish_lookup(staged) and
// finish_insert(staged). A filter derives from KeyApi<Filter>, declares it a friend, and
// provides those six and seed().
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "ccf/detail/software_pipeline.hpp"
#include "ccf/hash.hpp"
#include "ccf/status.hpp"

namespace ccf::detail {

// The usual stage_lookup: prefetch both candidate buckets of a located key.
template <class Table, class Location>
Location prefetch_both(const Table& table, const Location& at) noexcept {
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

  // Inserts keys in order and stops at the first kFull: returns how many leading keys were
  // stored (keys.size() unless the filter filled up). Pipelined as contains_many, so an insert
  // that finds room in one of its buckets costs no memory latency of its own. In a concurrent
  // filter each insert is linearizable on its own; the batch is not atomic.
  template <class Key>
  std::size_t insert_many(std::span<const Key> keys) noexcept(
      noexcept(std::declval<Filter&>().insert_hash(0))) {
    std::size_t stored = 0;
    detail::software_pipeline(
        keys.size(),
        [&](std::size_t i) { return self().stage_lookup(hash_key(keys[i], self().seed())); },
        [&](std::size_t, const auto& staged) {
          if (self().finish_insert(staged) != Status::kOk) return false;
          ++stored;
          return true;
        });
    return stored;
  }

 private:
  Filter& self() noexcept { return static_cast<Filter&>(*this); }
  const Filter& self() const noexcept { return static_cast<const Filter&>(*this); }
};

}  // namespace ccf::detail
