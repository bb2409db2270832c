// Shared pieces of the libFuzzer targets in fuzz/targets (docs/fuzzing.md).
//
// A loader target hands every input to `fuzz_load`, which runs the target's check four ways:
// the bytes as given and, when they differ, the bytes with both checksums recomputed (without
// that, nearly every mutation dies at the header checksum and the fuzzer never reaches the
// checks behind it), each through a seekable stream and through one that cannot seek (a pipe:
// the loader cannot measure what is left before it allocates). Each check either returns the
// bytes the loaded filter saves or throws ccf::FormatError; anything else -- another
// exception, a crash, a sanitizer report, a failed `require` -- is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <istream>
#include <memory>
#include <optional>
#include <sstream>
#include <streambuf>
#include <string>
#include <string_view>

#include "ccf/detail/filter_format.hpp"
#include "ccf/hash.hpp"
#include "ccf/status.hpp"

namespace ccf::fuzz {

// Aborts (a finding) unless `condition` holds.
inline void require(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "fuzz property violated: %s\n", what);
    std::abort();
  }
}

// A read-only stream buffer over memory that cannot seek, as a pipe or socket.
class UnseekableBuffer : public std::streambuf {
 public:
  explicit UnseekableBuffer(std::string_view bytes) {
    // The get area is only read: std::streambuf has no const variant.
    char* begin = const_cast<char*>(bytes.data());
    setg(begin, begin, begin + bytes.size());
  }
};

// What a check reads: the bytes, through a stream that can seek (a file) or not (a pipe).
struct Input {
  std::string_view bytes;
  bool seekable;
};

// A stream over an Input: a std::istringstream's buffer, or an UnseekableBuffer.
class InputStream : public std::istream {
 public:
  explicit InputStream(const Input& input) : std::istream(nullptr), unseekable_(input.bytes) {
    if (input.seekable) seekable_.str(std::string(input.bytes));
    rdbuf(input.seekable ? static_cast<std::streambuf*>(&seekable_) : &unseekable_);
  }

 private:
  std::stringbuf seekable_{std::ios_base::in};
  UnseekableBuffer unseekable_;
};

// Saves `filter` to a string.
template <class Filter>
std::string saved(const Filter& filter) {
  std::ostringstream out;
  filter.save(out);
  return std::move(out).str();
}

// Recomputes the checksum of `payload` bytes at `at` into the 8 bytes after them, if all are
// present; false if not.
inline bool reseal_span(std::string& out, std::size_t at, std::uint64_t payload) {
  if (at > out.size() || payload > out.size() - at || out.size() - at - payload < 8) return false;
  const std::uint64_t sum = XXH3_64bits(out.data() + at, static_cast<std::size_t>(payload));
  std::memcpy(out.data() + at + payload, &sum, 8);
  return true;
}

// The bytes with the header checksum and, when the announced payload is present, the payload
// checksum recomputed (detail/filter_format.hpp); in a version-2 file, every level's record
// and payload checksum as far as they are present. Shorter inputs come back unchanged.
inline std::string resealed(std::string_view bytes) {
  std::string out(bytes);
  constexpr std::size_t kHeader = detail::FilterHeader::kEncodedSize;
  if (out.size() < kHeader) return out;
  const std::uint64_t header_sum = XXH3_64bits(out.data(), kHeader - 8);
  std::memcpy(out.data() + kHeader - 8, &header_sum, 8);
  std::uint32_t version = 0, levels = 0;
  std::memcpy(&version, out.data() + 8, 4);
  std::memcpy(&levels, out.data() + 60, 4);
  if (version != detail::kLevelsFormatVersion) {
    std::uint64_t payload = 0;
    std::memcpy(&payload, out.data() + kHeader - 16, 8);
    reseal_span(out, kHeader, payload);
    return out;
  }
  constexpr std::size_t kRecord = detail::LevelRecord::kEncodedSize;
  std::size_t at = kHeader;
  for (std::uint32_t k = 0; k < levels && k < detail::kMaxFileLevels; ++k) {
    if (!reseal_span(out, at, kRecord - 8)) break;
    std::uint64_t payload = 0;
    std::memcpy(&payload, out.data() + at + 24, 8);
    at += kRecord;
    if (!reseal_span(out, at, payload)) break;
    at += static_cast<std::size_t>(payload) + 8;
  }
  return out;
}

// What a check gives: the bytes the loaded filter saves, or nothing for a FormatError.
using Result = std::optional<std::string>;

// `check(input)` through a seekable and an unseekable stream: both must accept the bytes,
// with the same result, or both throw FormatError. Returns the result.
template <class Check>
Result check_both_streams(std::string_view bytes, Check& check) {
  const auto attempt = [&](bool seekable) -> Result {
    try {
      return check(Input{bytes, seekable});
    } catch (const FormatError&) {
      return std::nullopt;
    }
  };
  Result result = attempt(true);
  require(attempt(false) == result,
          "a seekable and an unseekable stream of the same bytes load differently");
  return result;
}

// The entry point of a loader target: `check(const Input&)` loads from an InputStream,
// exercises the filter and returns what it saves, or throws FormatError. `compare(bytes, result)`
// then gets each input checked and its result, to hold it against other loaders.
template <class Check, class Compare>
void fuzz_load(const std::uint8_t* data, std::size_t size, Check check, Compare compare) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  compare(bytes, check_both_streams(bytes, check));
  const std::string sealed = resealed(bytes);
  if (sealed != bytes) compare(sealed, check_both_streams(sealed, check));
}

// Keys that a check looks up and inserts: a few integers and byte strings.
inline constexpr std::uint64_t kProbeKeys[] = {0, 1, 2, 42, 0x9e3779b97f4a7c15ULL, ~0ULL};
inline constexpr std::string_view kProbeStrings[] = {"", "a", "ccf", "fuzz key"};

// Looks up every probe key (only that nothing goes wrong: any answer is possible).
template <class Filter>
void probe(const Filter& filter) {
  for (const std::uint64_t key : kProbeKeys) static_cast<void>(filter.contains(key));
  for (const std::string_view key : kProbeStrings) static_cast<void>(filter.contains(key));
}

// Saving `filter`, loading the result and saving again (`reload_and_save`) gives the same
// bytes; returns them.
template <class Filter, class ReloadAndSave>
std::string round_trip(const Filter& filter, ReloadAndSave reload_and_save) {
  std::string first = saved(filter);
  std::istringstream in(first);
  require(reload_and_save(in) == first, "save -> load -> save changed the bytes");
  return first;
}

// Inserting a key into a loaded filter keeps it findable (no false negatives), and it can
// then be erased.
template <class Filter>
void insert_then_erase(Filter& filter) {
  for (const std::uint64_t key : kProbeKeys) {
    if (filter.insert(key) != Status::kOk) return;  // full: a valid outcome that changes nothing
    require(filter.contains(key), "an inserted key is not found");
    require(filter.erase(key) == Status::kOk, "an inserted key cannot be erased");
  }
}

// Loads the input with Filter's static load and exercises what
// loaded: lookups, save -> load -> save, insert then erase. nullopt: FormatError.
template <class Filter>
Result load_exercised(const Input& input) {
  InputStream in(input);
  std::unique_ptr<Filter> filter;
  try {
    filter = Filter::load(in);
  } catch (const FormatError&) {
    return std::nullopt;
  }
  probe(*filter);
  std::string bytes =
      round_trip(*filter, [](std::istream& again) { return saved(*Filter::load(again)); });
  insert_then_erase(*filter);
  return bytes;
}

// The result of the one load that succeeded, among loads of one file into filters of every
// shape: a file has one shape, so two successes are a finding. nullopt if none succeeded.
inline Result only_success(std::initializer_list<Result> results) {
  Result found;
  int successes = 0;
  for (const Result& result : results) {
    if (!result) continue;
    ++successes;
    found = result;
  }
  require(successes <= 1, "filters of two shapes loaded the same file");
  return found;
}

}  // namespace ccf::fuzz
