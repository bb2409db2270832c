#include "server/keyspace.hpp"

namespace ccf::serve {

Keyspace::Shard& Keyspace::shard_of(std::string_view key) const {
  // The high bits pick the shard: the map inside uses the low ones.
  return shards_[(Hash{}(key) >> 58) % kShards];
}

std::optional<Value> Keyspace::find(std::string_view key) const {
  Shard& shard = shard_of(key);
  const std::lock_guard lock(shard.mutex);
  const auto it = shard.map.find(key);
  if (it == shard.map.end()) return std::nullopt;
  return it->second;
}

const Value* Keyspace::find(std::string_view key, Memo& memo) const {
  // Read before the map: a drop that the map lookup below misses raises the generation only
  // after it, so the memo then holds an older generation and is refreshed on its next use.
  const std::uint64_t generation = generation_.load();
  if (memo.valid_ && memo.generation_ == generation && memo.key_ == key) return &memo.value_;
  std::optional<Value> found = find(key);
  if (!found) return nullptr;
  memo.valid_ = true;
  memo.generation_ = generation;
  memo.key_.assign(key);
  memo.value_ = std::move(*found);
  return &memo.value_;
}

std::pair<Value, bool> Keyspace::find_or_create(std::string_view key,
                                                const std::function<Value()>& make) {
  Shard& shard = shard_of(key);
  const std::lock_guard lock(shard.mutex);
  const auto it = shard.map.find(key);
  if (it != shard.map.end()) return {it->second, false};
  Value value = make();
  shard.map.emplace(std::string(key), value);
  return {std::move(value), true};
}

void Keyspace::set(std::string_view key, Value value) {
  Shard& shard = shard_of(key);
  const std::lock_guard lock(shard.mutex);
  shard.map.insert_or_assign(std::string(key), std::move(value));
  generation_.fetch_add(1);
}

bool Keyspace::erase(std::string_view key) {
  Shard& shard = shard_of(key);
  const std::lock_guard lock(shard.mutex);
  const auto it = shard.map.find(key);
  if (it == shard.map.end()) return false;
  shard.map.erase(it);
  generation_.fetch_add(1);
  return true;
}

std::size_t Keyspace::size() const {
  std::size_t total = 0;
  for (const Shard& shard : shards_) {
    const std::lock_guard lock(shard.mutex);
    total += shard.map.size();
  }
  return total;
}

void Keyspace::clear() {
  for (Shard& shard : shards_) {
    decltype(shard.map) dropped;
    {
      const std::lock_guard lock(shard.mutex);
      dropped.swap(shard.map);
      generation_.fetch_add(1);
    }
    // Filters are freed here, outside the lock (or later, by the last command using them).
  }
}

std::vector<std::string> Keyspace::keys(std::string_view pattern) const {
  std::vector<std::string> found;
  for (const Shard& shard : shards_) {
    const std::lock_guard lock(shard.mutex);
    for (const auto& [key, value] : shard.map) {
      if (glob_match(pattern, key)) found.push_back(key);
    }
  }
  return found;
}

std::optional<Keyspace::ScanStep> Keyspace::scan(std::uint64_t cursor) const {
  if (cursor >= kShards) return std::nullopt;
  ScanStep step{cursor + 1 == kShards ? 0 : cursor + 1, {}};
  const Shard& shard = shards_[cursor];
  const std::lock_guard lock(shard.mutex);
  step.entries.assign(shard.map.begin(), shard.map.end());
  return step;
}

bool glob_match(std::string_view pattern, std::string_view text) {
  std::size_t p = 0, t = 0;
  // Backtracking point of the last '*': retry it one character further on a mismatch.
  std::size_t star = std::string_view::npos, star_text = 0;
  while (t < text.size()) {
    if (p < pattern.size()) {
      const char c = pattern[p];
      if (c == '*') {
        star = p++;
        star_text = t;
        continue;
      }
      if (c == '?') {
        ++p;
        ++t;
        continue;
      }
      if (c == '[') {
        std::size_t q = p + 1;
        const bool negate = q < pattern.size() && pattern[q] == '^';
        if (negate) ++q;
        bool matched = false;
        while (q < pattern.size() && pattern[q] != ']') {
          if (pattern[q] == '\\' && q + 1 < pattern.size()) {
            matched |= pattern[q + 1] == text[t];
            q += 2;
          } else if (q + 2 < pattern.size() && pattern[q + 1] == '-' && pattern[q + 2] != ']') {
            char low = pattern[q], high = pattern[q + 2];
            if (low > high) std::swap(low, high);
            matched |= text[t] >= low && text[t] <= high;
            q += 3;
          } else {
            matched |= pattern[q] == text[t];
            ++q;
          }
        }
        if (matched != negate) {
          p = q < pattern.size() ? q + 1 : q;  // past ']' (an unclosed set ends the pattern)
          ++t;
          continue;
        }
      } else {
        const bool escaped = c == '\\' && p + 1 < pattern.size();
        const char literal = escaped ? pattern[p + 1] : c;
        if (literal == text[t]) {
          p += escaped ? 2 : 1;
          ++t;
          continue;
        }
      }
    }
    if (star == std::string_view::npos) return false;
    p = star + 1;
    t = ++star_text;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

std::string_view type_name(const Value& value) {
  if (std::holds_alternative<std::shared_ptr<CfFilter>>(value)) return kCuckooTypeName;
  if (std::holds_alternative<std::shared_ptr<BfFilter>>(value)) return kBloomTypeName;
  return "string";
}

}  // namespace ccf::serve
