// Result codes and error types shared by every ccf structure.
//
// Hot-path operations (insert / erase) return a Status: a filter that is full, or a key a hash
// table already holds, is an expected outcome, not an exceptional one. Construction with bad
// parameters throws std::invalid_argument; reading a malformed serialized filter throws
// ccf::FormatError. In both cases the object being built or loaded into is left unchanged.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string_view>

namespace ccf {

enum class Status : std::uint8_t {
  kOk = 0,    // the operation took effect
  kFull,      // insert: no room; nothing was changed
  kNotFound,  // erase: no copy of the item's fingerprint in its buckets; nothing was changed
  kExists,    // a hash table's insert: the key is already present (insert_or_assign: and its
              // value was replaced); filters never return it
};

constexpr std::string_view to_string(Status status) noexcept {
  switch (status) {
    case Status::kOk:
      return "ok";
    case Status::kFull:
      return "full";
    case Status::kNotFound:
      return "not found";
    case Status::kExists:
      return "exists";
  }
  return "unknown";
}

// A serialized filter could not be read: truncated, corrupted, of another format or version,
// or with parameters that do not match the filter it is loaded into.
class FormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace ccf
