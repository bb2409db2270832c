// What is particular to ClhtLb (include/ccf/tables/clht_lb.hpp): its reserved key. The contract it
// shares with every table (model, churn through resizes, linearizability) is tested in
// hash_table_contract_test.cpp.
#include "ccf/tables/clht_lb.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace {

using ccf::ClhtLb;
using ccf::Status;

TEST(ClhtLb, ZeroKeyIsRefused) {
  ClhtLb table(4);
  EXPECT_THROW(static_cast<void>(table.insert(0, 1)), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(table.insert_or_assign(0, 1)), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(table.find(0)), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(table.contains(0)), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(table.erase(0)), std::invalid_argument);
  EXPECT_EQ(table.size(), 0u);
}

}  // namespace
