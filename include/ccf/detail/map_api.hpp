// The vocabulary every ccf hash table shares, written once (CRTP): contains, insert and
// insert_or_assign over the table's own find(key) -> std::optional<Value> and
// put(key, value, assign) -> Status. A table derives from MapApi<Table, Key, Value>, declares
// it a friend, and provides those two (plus erase, size, ... of its own). A table with a cheaper
// membership test than find (no value to copy) declares its own contains, which hides this one.
#pragma once

#include "ccf/status.hpp"

namespace ccf::detail {

template <class Table, class Key, class Value>
class MapApi {
 public:
  bool contains(const Key& key) const { return self().find(key).has_value(); }
  // kOk; kExists (the key is present; nothing changed); kFull where the table says when.
  Status insert(const Key& key, const Value& value) { return self().put(key, value, false); }
  // kOk (inserted) or kExists (present: its value is now `value`); kFull as insert.
  Status insert_or_assign(const Key& key, const Value& value) {
    return self().put(key, value, true);
  }

 private:
  const Table& self() const noexcept { return static_cast<const Table&>(*this); }
  Table& self() noexcept { return static_cast<Table&>(*this); }
};

}  // namespace ccf::detail
