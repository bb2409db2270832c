// Keyspace: the named values of `ccf serve` -- cuckoo filters (CfFilter), Bloom filters
// (BfFilter) and plain strings
// (SET / GET) -- in 64 shards, each a mutex and a hash map. A command holds one shard's mutex
// only to find, create or drop an entry; it then works on the filter through a shared_ptr, with
// no keyspace lock held, so commands on one filter run in parallel and DEL or FLUSHALL never
// pulls a filter from under a command that is using it.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "server/bf/filter.hpp"
#include "server/cf/filter.hpp"

namespace ccf::serve {

using Value = std::variant<std::shared_ptr<CfFilter>, std::shared_ptr<BfFilter>,
                           std::shared_ptr<const std::string>>;

// RedisBloom's type names, answered by TYPE and matched by SCAN ... TYPE.
inline constexpr std::string_view kCuckooTypeName = "MBbloomCF";
inline constexpr std::string_view kBloomTypeName = "MBbloom--";

class Keyspace {
 public:
  static constexpr std::size_t kShards = 64;

  std::optional<Value> find(std::string_view key) const;

  // A client's memo of the last key it found. While no key has been dropped or replaced since
  // (the keyspace's generation is unchanged), finding the same key again takes neither the
  // shard's lock nor a reference-count change: the cache lines that two cores would otherwise
  // pass back and forth on every command to one hot filter. The memo keeps its value alive, so
  // a session forgets it whenever it waits for input (a dropped filter is freed then at latest).
  class Memo {
   public:
    void forget() noexcept { *this = Memo(); }

   private:
    friend class Keyspace;
    bool valid_ = false;
    std::uint64_t generation_ = 0;
    std::string key_;
    Value value_;
  };
  // find() through `memo`: the value returned is held by the memo until its next use.
  const Value* find(std::string_view key, Memo& memo) const;
  // Inserts `make()`'s value unless the key exists. Returns the value now under the key and
  // whether it was created. make() runs under the shard's lock (it may throw: nothing changes).
  std::pair<Value, bool> find_or_create(std::string_view key, const std::function<Value()>& make);
  void set(std::string_view key, Value value);
  bool erase(std::string_view key);
  std::size_t size() const;
  void clear();
  // Keys matching a glob pattern (Redis's syntax: * ? [abc] [^a-z] and \ escapes).
  std::vector<std::string> keys(std::string_view pattern) const;
  // One SCAN step: the keys of shard `cursor`, and the next cursor (0 when done). nullopt: the
  // cursor is not one this keyspace hands out.
  struct ScanStep {
    std::uint64_t next;
    std::vector<std::pair<std::string, Value>> entries;
  };
  std::optional<ScanStep> scan(std::uint64_t cursor) const;

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  struct Shard {
    mutable std::mutex mutex;
    std::unordered_map<std::string, Value, Hash, std::equal_to<>> map;
  };
  Shard& shard_of(std::string_view key) const;

  mutable std::array<Shard, kShards> shards_;
  // Raised after every drop or replacement of a key (erase, set, clear), once the map shows it.
  std::atomic<std::uint64_t> generation_{0};
};

// Redis's glob match (stringmatchlen): * ? [set] [^set] [a-z] and \x; binary-safe.
bool glob_match(std::string_view pattern, std::string_view text);

std::string_view type_name(const Value& value);

}  // namespace ccf::serve
