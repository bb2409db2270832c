// LockFreeCuckooFilter::load, every fingerprint width (4, 8, 12 bits; 4 slots per bucket), of
// one level (format version 1) and of a grown filter's levels (version 2).
//
// Properties: at most one width loads a file; a loaded filter answers lookups, saves bytes
// that load and save again unchanged, and finds a key inserted into it. Version 1: the
// sequential filter of the same shape loads every file the lock-free filter loads; the
// lock-free filter loads every file without a victim entry that the sequential filter loads.
// What the lock-free filter saves holds the same fingerprints in the same buckets (its slot
// order may differ): the sequential filter loaded from it has the same size and answers every
// lookup as the one loaded from the input. Version 2: the sequential filter refuses every such
// file, naming the lock-free filter that loads it; what a loaded grown filter saves is version 2
// again, of as many levels.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <istream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "ccf/any_cuckoo_filter.hpp"
#include "ccf/lockfree/lock_free_cuckoo_filter.hpp"
#include "harness.hpp"

namespace {

using ccf::AnyCuckooFilter;
using ccf::LockFreeCuckooFilter;
using ccf::fuzz::require;
using ccf::fuzz::Result;
using ccf::fuzz::saved;

using Shapes =
    std::tuple<LockFreeCuckooFilter<4>, LockFreeCuckooFilter<8>, LockFreeCuckooFilter<12>>;

template <std::size_t... I>
Result load_every_shape(const ccf::fuzz::Input& input, std::index_sequence<I...>) {
  return ccf::fuzz::only_success(
      {ccf::fuzz::load_exercised<std::tuple_element_t<I, Shapes>>(input)...});
}

std::string check(const ccf::fuzz::Input& input) {
  Result result = load_every_shape(input, std::make_index_sequence<std::tuple_size_v<Shapes>>());
  if (!result) throw ccf::FormatError("no shape loads the file");
  return std::move(*result);
}

AnyCuckooFilter load_sequential(std::string_view bytes) {
  std::istringstream in{std::string(bytes)};
  return AnyCuckooFilter::load(in);
}

std::uint32_t u32_at(std::string_view bytes, std::size_t at) {
  std::uint32_t value = 0;
  if (bytes.size() >= at + sizeof value) std::memcpy(&value, bytes.data() + at, sizeof value);
  return value;
}

// A grown filter's file (version 2) that a lock-free filter loaded: its levels saved again.
void compare_grown(std::string_view bytes, const Result& lock_free, const std::string& refusal) {
  require(refusal.find("load it with LockFreeCuckooFilter<") != std::string::npos,
          "the sequential filter refuses a grown filter's file without naming its filter");
  require(u32_at(*lock_free, 8) == ccf::detail::kLevelsFormatVersion &&
              u32_at(*lock_free, 60) == u32_at(bytes, 60),
          "a loaded grown filter saves another version or level count");
}

void compare(std::string_view bytes, const Result& lock_free) {
  std::optional<AnyCuckooFilter> sequential;
  try {
    sequential = load_sequential(bytes);
  } catch (const ccf::FormatError& error) {
    if (lock_free && u32_at(bytes, 8) == ccf::detail::kLevelsFormatVersion) {
      compare_grown(bytes, lock_free, error.what());
      return;
    }
    require(!lock_free, "the lock-free filter loads a file the sequential filter refuses");
    return;
  }
  require(u32_at(bytes, 8) != ccf::detail::kLevelsFormatVersion,
          "the sequential filter loads a version-2 file");
  const unsigned bits = sequential->fp_bits();
  const bool lock_free_shape = sequential->shape().starts_with("packed") &&
                               sequential->slots_per_bucket() == 4 &&
                               (bits == 4 || bits == 8 || bits == 12);
  // With a victim entry the lock-free filter may lack room for it.
  require(lock_free || !lock_free_shape || sequential->victim_used(),
          "the lock-free filter refuses a file without a victim that the sequential filter loads");
  if (!lock_free) return;
  const AnyCuckooFilter reloaded = load_sequential(*lock_free);
  require(reloaded.size() == sequential->size(), "the lock-free filter's file has another size");
  for (const std::uint64_t key : ccf::fuzz::kProbeKeys) {
    require(reloaded.contains(key) == sequential->contains(key),
            "the lock-free filter's file answers a lookup differently");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ccf::fuzz::fuzz_load(data, size, check, compare);
  return 0;
}
