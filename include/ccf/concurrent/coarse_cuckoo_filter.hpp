// CoarseCuckooFilter: the sequential cuckoo filter behind one synchronization policy for the
// whole table (the "coarse" design of the thesis's CCF; docs/concurrency.md).
//
//   lookups          policy.read(...)   -- mode 0 (shared / speculative read)
//   inserts, erases  policy.write(...)  -- mode 1 (exclusive / speculative write)
//
// The policy is any of ccf/sync/htm.hpp: LockOnly<Lock> with a spin or reader-writer lock
// (TAS, TTAS, MCS, CLH; ccf-global-*), or an elision policy over a lock (RetryElision,
// SlrElision, ScmElision, MixElision; ccf-rtm-*), which runs each operation as an Intel RTM
// transaction where the CPU has RTM and falls back to the lock where it has not (then
// speculative() is false, and benchmarks say so).
//
// The default policy is the phase-fair reader-writer lock (sync/phase_fair_lock.hpp): neither
// lookups nor updates starve when both run at once (tests/rw_fairness_test.cpp). With more
// threads than cores it costs more than the writer-preferring ReaderWriterLock (a phase change
// waits for every reader of the phase to be scheduled; docs/concurrency.md has the figures).
//
// Because the filter inside is the sequential one, the coarse filter has exactly its
// properties: same memory (plus the lock), same load factor (>= 95% at b = 4), the victim slot,
// the same file format. Progress: blocking (the policy's lock); with RTM, operations that do
// not conflict run in parallel.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <istream>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "ccf/cuckoo_filter.hpp"
#include "ccf/sync/htm.hpp"
#include "ccf/sync/phase_fair_lock.hpp"

namespace ccf {

template <class Table, class Sync = sync::LockOnly<sync::PhaseFairLock>>
class CoarseCuckooFilter {
 public:
  using filter_type = CuckooFilter<Table>;
  using sync_type = Sync;
  static constexpr unsigned kFpBits = Table::kFpBits;
  static constexpr unsigned kSlots = Table::kSlots;

  explicit CoarseCuckooFilter(std::size_t capacity, FilterOptions options = {})
      : filter_(capacity, options) {}

  Status insert(std::uint64_t key) {
    return sync_.write([&] { return filter_.insert(key); });
  }
  Status insert(std::string_view key) {
    return sync_.write([&] { return filter_.insert(key); });
  }
  bool contains(std::uint64_t key) const {
    return sync_.read([&] { return filter_.contains(key); });
  }
  bool contains(std::string_view key) const {
    return sync_.read([&] { return filter_.contains(key); });
  }
  Status erase(std::uint64_t key) {
    return sync_.write([&] { return filter_.erase(key); });
  }
  Status erase(std::string_view key) {
    return sync_.write([&] { return filter_.erase(key); });
  }

  // Batched operations, as every filter has them (detail/key_api.hpp): the sequential filter's
  // pipelined batch runs on chunks of kBatchChunk keys, one synchronized section per chunk --
  // the lock is taken once per chunk rather than per key, and a writer waits for at most one
  // chunk. Each chunk is atomic; the batch is not. out must be at least as long as keys (else
  // std::invalid_argument); returns the number of hits.
  static constexpr std::size_t kBatchChunk = 64;

  template <class Key>
  std::size_t contains_many(std::span<const Key> keys, std::span<bool> out) const {
    if (out.size() < keys.size()) throw std::invalid_argument("contains_many: output too short");
    std::size_t hits = 0;
    for (std::size_t begin = 0; begin < keys.size(); begin += kBatchChunk) {
      const std::size_t n = std::min(kBatchChunk, keys.size() - begin);
      hits += sync_.read(
          [&] { return filter_.contains_many(keys.subspan(begin, n), out.subspan(begin, n)); });
    }
    return hits;
  }

  // Inserts keys in order and stops at the first kFull: returns how many leading keys were
  // stored.
  template <class Key>
  std::size_t insert_many(std::span<const Key> keys) {
    std::size_t stored = 0;
    for (std::size_t begin = 0; begin < keys.size(); begin += kBatchChunk) {
      const std::size_t n = std::min(kBatchChunk, keys.size() - begin);
      const std::size_t chunk_stored =
          sync_.write([&] { return filter_.insert_many(keys.subspan(begin, n)); });
      stored += chunk_stored;
      if (chunk_stored < n) break;
    }
    return stored;
  }

  std::size_t size() const {
    return sync_.read([&] { return filter_.size(); });
  }
  std::size_t capacity() const noexcept { return filter_.capacity(); }
  double load_factor() const {
    return sync_.read([&] { return filter_.load_factor(); });
  }
  double bits_per_item() const {
    return sync_.read([&] { return filter_.bits_per_item(); });
  }
  std::size_t memory_bytes() const noexcept { return filter_.memory_bytes() + sizeof(Sync); }
  std::string shape() const { return "coarse " + filter_.shape(); }

  // True when operations run as hardware transactions (RTM present and the policy elides).
  bool speculative() const noexcept { return sync_.speculative(); }
  Sync& sync() noexcept { return sync_; }

  void save(std::ostream& out) const {
    sync_.read([&] { filter_.save(out); });
  }
  // Strong guarantee, as CuckooFilter::load.
  void load(std::istream& in) {
    sync_.write([&] { filter_.load(in); });
  }

 private:
  filter_type filter_;
  mutable Sync sync_;
};

}  // namespace ccf
