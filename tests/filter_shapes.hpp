// Every supported sequential filter shape, for typed test suites.
#pragma once

#include <gtest/gtest.h>

#include "ccf/cuckoo_filter.hpp"

namespace ccf::testing {

using AllFilterShapes =
    ::testing::Types<CuckooFilter<PackedTable<4, 2>>, CuckooFilter<PackedTable<4, 4>>,
                     CuckooFilter<PackedTable<4, 8>>, CuckooFilter<PackedTable<8, 2>>,
                     CuckooFilter<PackedTable<8, 4>>, CuckooFilter<PackedTable<8, 8>>,
                     CuckooFilter<PackedTable<12, 2>>, CuckooFilter<PackedTable<12, 4>>,
                     CuckooFilter<PackedTable<12, 8>>, CuckooFilter<PackedTable<16, 2>>,
                     CuckooFilter<PackedTable<16, 4>>, CuckooFilter<PackedTable<16, 8>>,
                     CuckooFilter<PackedTable<32, 2>>, CuckooFilter<PackedTable<32, 4>>,
                     CuckooFilter<PackedTable<32, 8>>, CuckooFilter<SemiSortedTable<8>>,
                     CuckooFilter<SemiSortedTable<12>>, CuckooFilter<SemiSortedTable<16>>>;

}  // namespace ccf::testing
