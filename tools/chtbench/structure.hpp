// The one adapter interface every benchmarked structure implements (STYLE.md point 12).
//
// The harness sees a structure only through `Structure`: uint64 keys in, booleans out. Hash
// tables are sets (insert fails if the key is present, erase fails if it is absent); filters
// report `false` from insert when full and from erase when no copy of the fingerprint is found.
// Updates pay one indirect call each, the same for every structure. Runs of lookups go through
// one indirect call per run: `contains_each`, which every adapter implements (through
// StructureBase) as a plain loop over its structure's own lookup, inlined -- the loop a user
// writes --, or `contains_many` for structures with a native batch API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace chtbench {

// What a structure is built for. Every structure in one comparison gets the same values.
struct StructureConfig {
  std::size_t capacity = std::size_t{1} << 20;  // items it must be able to hold
  unsigned fp_bits = 12;  // filters: fingerprint bits (Bloom filters: bits per item)
  double growth = 0;      // hash tables: the factor a table grows by; 0 means its default
  std::uint64_t seed = 1;
};

// A count a structure keeps of its own internal events, cumulative since construction.
struct EventCount {
  std::string name;
  std::uint64_t value = 0;
};

class Structure {
 public:
  Structure() = default;
  Structure(const Structure&) = delete;
  Structure& operator=(const Structure&) = delete;
  virtual ~Structure() = default;

  virtual bool insert(std::uint64_t key) = 0;
  virtual bool contains(std::uint64_t key) const = 0;
  virtual bool erase(std::uint64_t key) = 0;
  // Looks up keys[i] into out[i], one lookup call after the other, and returns the number of
  // hits. Pure: every adapter gets it from StructureBase (below), so that no structure's lookups
  // pay a per-key indirect call that another's do not.
  virtual std::size_t contains_each(std::span<const std::uint64_t> keys,
                                    std::span<bool> out) const = 0;
  // Looks up keys[i] into out[i]; returns the number of hits. Structures with a native batch
  // API (hash all, prefetch, then probe) override it; for the others StructureBase makes it
  // contains_each (one indirect call per batch, as for every structure).
  virtual std::size_t contains_many(std::span<const std::uint64_t> keys,
                                    std::span<bool> out) const = 0;

  // Inserts keys in order and stops at the first failure; returns how many leading keys were
  // inserted. Structures with a native batch API (hash ahead, prefetch, insert) override it.
  virtual std::size_t insert_many(std::span<const std::uint64_t> keys) {
    std::size_t done = 0;
    while (done < keys.size() && insert(keys[done])) ++done;
    return done;
  }

  // Not called while operations run (may be O(n) for some peers).
  virtual std::size_t size() const = 0;
  // The items it was built to hold: slots for a cuckoo filter, the design size for a Bloom
  // filter, the configured capacity for a (growable) hash table.
  virtual std::size_t capacity() const = 0;
  // The structure's own accounting of the bytes it holds.
  virtual std::size_t memory_bytes() const = 0;
  // Filters: stored items / slots (NaN where the notion does not apply).
  virtual double load_factor() const { return std::numeric_limits<double>::quiet_NaN(); }
  // Internal events the structure counts itself (a lock-free filter's K-CAS operations, an
  // insert's restarted path searches); the harness reports their growth during the timed
  // phase, also per successful insert. Not called while operations run.
  virtual std::vector<EventCount> event_counts() const { return {}; }

  // Called by every thread before its first and after its last operation (RCU registration).
  virtual void thread_enter() {}
  virtual void thread_exit() {}
};

// The base every adapter derives from: contains_each as a direct loop over the adapter's own
// contains (a qualified, non-virtual call the compiler inlines), so a run of lookups costs what
// the structure's lookups cost in a user's loop, not an indirect call each; and the same loop as
// contains_many for structures without a native batch API.
template <class Adapter>
class StructureBase : public Structure {
 public:
  std::size_t contains_each(std::span<const std::uint64_t> keys, std::span<bool> out) const final {
    const auto& self = static_cast<const Adapter&>(*this);
    std::size_t hits = 0;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      hits += (out[i] = self.Adapter::contains(keys[i]));
    }
    return hits;
  }
  std::size_t contains_many(std::span<const std::uint64_t> keys,
                            std::span<bool> out) const override {
    return StructureBase::contains_each(keys, out);
  }
};

struct StructureTraits {
  bool filter = false;       // fingerprints, not keys: false positives, duplicates allowed
  bool thread_safe = false;  // may be used by several threads at once
  bool erase = true;         // supports erase
  bool batched = false;      // has a native batched lookup
  bool stores = true;        // false only for `null`, which keeps nothing (no set invariants)
  bool peer = false;         // another library's structure (plots group ccf's and the peers)
};

using StructureFactory = std::function<std::unique_ptr<Structure>(const StructureConfig&)>;

struct StructureInfo {
  std::string name;
  std::string description;
  StructureTraits traits;
  StructureFactory make;
};

// RAII for thread_enter / thread_exit.
class ThreadScope {
 public:
  explicit ThreadScope(Structure& s) : s_(s) { s_.thread_enter(); }
  ~ThreadScope() { s_.thread_exit(); }
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  Structure& s_;
};

}  // namespace chtbench
