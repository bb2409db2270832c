// The sequential filters' loaders: AnyCuckooFilter::load (every shape) and
// CuckooFilter<Table>::load of each shape.
//
// Properties: a loaded filter answers lookups, saves bytes that load and save again unchanged,
// and finds a key inserted into it; the typed filter of the file's shape loads exactly the
// files AnyCuckooFilter loads, and saves the same bytes, while the typed filters of every
// other shape refuse them.
#include "ccf/cuckoo_filter.hpp"

#include <cstddef>
#include <cstdint>
#include <istream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "ccf/any_cuckoo_filter.hpp"
#include "harness.hpp"

namespace {

using ccf::AnyCuckooFilter;
using ccf::detail::AnyFilterVariant;
using ccf::fuzz::require;
using ccf::fuzz::Result;
using ccf::fuzz::saved;

// Loads `bytes` with the typed filter's static load and returns what the filter then saves.
template <class Filter>
Result load_typed(std::string_view bytes) {
  std::istringstream in{std::string(bytes)};
  try {
    return saved(*Filter::load(in));
  } catch (const ccf::FormatError&) {
    return std::nullopt;
  }
}

// Loads `bytes` into the typed filter of every shape: at most one may succeed.
template <std::size_t... I>
Result load_typed_every_shape(std::string_view bytes, std::index_sequence<I...>) {
  return ccf::fuzz::only_success(
      {load_typed<std::variant_alternative_t<I, AnyFilterVariant>>(bytes)...});
}

std::string check(const ccf::fuzz::Input& input) {
  ccf::fuzz::InputStream in(input);
  AnyCuckooFilter filter = AnyCuckooFilter::load(in);
  ccf::fuzz::probe(filter);
  std::string bytes = ccf::fuzz::round_trip(
      filter, [](std::istream& again) { return saved(AnyCuckooFilter::load(again)); });
  ccf::fuzz::insert_then_erase(filter);
  return bytes;
}

void compare(std::string_view bytes, const Result& any) {
  const Result typed = load_typed_every_shape(
      bytes, std::make_index_sequence<std::variant_size_v<AnyFilterVariant>>());
  require(typed == any, "AnyCuckooFilter and the typed filter load a file differently");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ccf::fuzz::fuzz_load(data, size, check, compare);
  return 0;
}
