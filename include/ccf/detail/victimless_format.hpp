// Saving and loading the concurrent filters whose table is an AtomicPackedTable and that have
// no victim slot (StripedCuckooFilter, CopCuckooFilter), in the sequential filter's format
// (filter_format.hpp): files move freely between them and CuckooFilter<PackedTable<F, b>>.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <ostream>
#include <string>
#include <utility>

#include "ccf/detail/addressing.hpp"
#include "ccf/detail/filter_format.hpp"

namespace ccf::detail {

// What the file said that the filter keeps, besides its table.
struct VictimlessFields {
  std::size_t capacity = 0;  // as asked by the user that built the filter
  std::uint64_t seed = 0;
  unsigned max_kicks = 0;
};

// Not concurrent with writers (the caller quiesces the filter).
template <class Table>
void write_victimless(std::ostream& out, const Table& table, std::size_t items,
                      const VictimlessFields& fields) {
  FilterHeader h = shape_of<Table>();
  h.buckets = table.bucket_count();
  h.capacity = fields.capacity;
  h.items = items;
  h.seed = fields.seed;
  h.max_kicks = fields.max_kicks;
  h.payload_bytes = table.payload().size();
  write_filter(out, h, table.payload());
}

template <class Table>
struct VictimlessFile {
  Table table;
  VictimlessFields fields;
};

// Reads a file saved by any filter of Table's shape. A sequential filter's victim entry is put
// into its bucket, else its alternate; if neither has room the file cannot be held without a
// victim slot: FormatError naming `filter` (as is every other defect of the file).
template <class Table>
VictimlessFile<Table> read_victimless(std::istream& in, const std::string& filter) {
  const FilterHeader h = HeaderCodec::read(in);
  Table table = read_table<Table>(h, in);
  if (h.victim_used) {
    const Addressing<Table::kFpBits> addressing(h.buckets);
    if (!table.try_insert(h.victim_bucket, h.victim_fp) &&
        !table.try_insert(addressing.alternate(h.victim_bucket, h.victim_fp), h.victim_fp)) {
      throw FormatError("the file's victim entry has no room in its buckets, and a " + filter +
                        " has no victim slot; load it into a sequential CuckooFilter");
    }
  }
  return {std::move(table), {h.capacity, h.seed, h.max_kicks}};
}

}  // namespace ccf::detail
