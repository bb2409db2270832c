// StripedCuckooFilter::load and CopCuckooFilter::load (the filter core's load without a victim
// slot), every shape their table supports (F * b <= 64 bits per bucket); the two must agree on
// every file.
//
// Properties: at most one shape loads a file; a loaded filter answers lookups, saves bytes
// that load and save again unchanged, and finds a key inserted into it. The sequential filter
// of the same shape loads every file the striped filter loads; the striped filter loads every
// file without a victim entry that the sequential filter loads, and both save the same bytes.
#include <algorithm>
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
#include "ccf/concurrent/cop_cuckoo_filter.hpp"
#include "ccf/concurrent/striped_cuckoo_filter.hpp"
#include "harness.hpp"

namespace {

using ccf::StripedCuckooFilter;
using ccf::fuzz::require;
using ccf::fuzz::Result;
using ccf::fuzz::saved;

using Shapes =
    std::tuple<StripedCuckooFilter<4, 2>, StripedCuckooFilter<4, 4>, StripedCuckooFilter<4, 8>,
               StripedCuckooFilter<8, 2>, StripedCuckooFilter<8, 4>, StripedCuckooFilter<8, 8>,
               StripedCuckooFilter<12, 2>, StripedCuckooFilter<12, 4>, StripedCuckooFilter<16, 2>,
               StripedCuckooFilter<16, 4>, StripedCuckooFilter<32, 2>>;

template <class Striped>
Result load_as(const ccf::fuzz::Input& input) {
  Result striped = ccf::fuzz::load_exercised<Striped>(input);
  const Result cop =
      ccf::fuzz::load_exercised<ccf::CopCuckooFilter<Striped::kFpBits, Striped::kSlots>>(input);
  require(striped == cop, "the striped and the COP filter load a file differently");
  return striped;
}

template <std::size_t... I>
Result load_every_shape(const ccf::fuzz::Input& input, std::index_sequence<I...>) {
  return ccf::fuzz::only_success({load_as<std::tuple_element_t<I, Shapes>>(input)...});
}

std::string check(const ccf::fuzz::Input& input) {
  Result result = load_every_shape(input, std::make_index_sequence<std::tuple_size_v<Shapes>>());
  if (!result) throw ccf::FormatError("no shape loads the file");
  return std::move(*result);
}

// A sequential filter keeps the victim bucket and fingerprint fields of a file whose victim
// flag is 0 (an erase that puts the victim back into the table leaves them, too) and saves
// them; a striped filter has no victim and saves zeros there.
std::string without_victim_fields(std::string bytes) {
  constexpr std::size_t kVictimBucket = 64;
  constexpr std::size_t kReserved = 76;
  std::fill(bytes.begin() + kVictimBucket, bytes.begin() + kReserved, '\0');
  return ccf::fuzz::resealed(bytes);
}

void compare(std::string_view bytes, const Result& striped) {
  std::istringstream in{std::string(bytes)};
  std::optional<ccf::AnyCuckooFilter> sequential;
  try {
    sequential = ccf::AnyCuckooFilter::load(in);
  } catch (const ccf::FormatError&) {
    require(!striped, "the striped filter loads a file the sequential filter refuses");
    return;
  }
  const unsigned bucket_bits = sequential->fp_bits() * sequential->slots_per_bucket();
  const bool striped_shape =
      sequential->shape().starts_with("packed") && bucket_bits <= 64 && bucket_bits % 8 == 0;
  // With a victim entry the striped filter may lack room for it.
  if (!striped_shape || sequential->victim_used()) return;
  require(striped == without_victim_fields(saved(*sequential)),
          "the striped and the sequential filter load a file without a victim differently");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ccf::fuzz::fuzz_load(data, size, check, compare);
  return 0;
}
