// LockFreeCuckooFilter::load, every fingerprint width (4, 8, 12 bits; 4 slots per bucket).
//
// Properties: at most one width loads a file; a loaded filter answers lookups, saves bytes
// that load and save again unchanged, and finds a key inserted into it. The sequential filter
// of the same shape loads every file the lock-free filter loads; the lock-free filter loads
// every file without a victim entry that the sequential filter loads. What the lock-free
// filter saves holds the same fingerprints in the same buckets (its slot order may differ):
// the sequential filter loaded from it has the same size and answers every lookup as the one
// loaded from the input.
#include <cstddef>
#include <cstdint>
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

void compare(std::string_view bytes, const Result& lock_free) {
  std::optional<AnyCuckooFilter> sequential;
  try {
    sequential = load_sequential(bytes);
  } catch (const ccf::FormatError&) {
    require(!lock_free, "the lock-free filter loads a file the sequential filter refuses");
    return;
  }
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
