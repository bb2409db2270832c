// What is particular to ClhtLb (include/ccf/tables/clht_lb.hpp): its table limit and its
// reserved key. The contract it shares with every table (model, churn through resizes,
// linearizability) is tested in hash_table_contract_test.cpp.
#include "ccf/tables/clht_lb.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace {

using ccf::ClhtLb;
using ccf::Status;

TEST(ClhtLb, AbsurdCapacityIsRefusedAndChangesNothing) {
  for (const std::size_t capacity : {std::size_t{1} << 63, ~std::size_t{0}}) {
    EXPECT_THROW(ClhtLb{capacity}, std::invalid_argument) << capacity;
  }
  ClhtLb table(100);
  ASSERT_EQ(table.insert(7, 70), Status::kOk);
  const std::size_t buckets = table.bucket_count();
  try {
    table.reserve(~std::size_t{0});
    ADD_FAILURE() << "reserve accepted an impossible capacity";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("64 TiB"), std::string::npos) << error.what();
  }
  EXPECT_EQ(table.bucket_count(), buckets);
  EXPECT_EQ(table.find(7), 70u);
  EXPECT_EQ(table.size(), 1u);
}

TEST(ClhtLb, ZeroKeyIsRefused) {
  ClhtLb table(4);
  EXPECT_THROW(static_cast<void>(table.insert(0, 1)), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(table.insert_or_assign(0, 1)), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(table.find(0)), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(table.erase(0)), std::invalid_argument);
  EXPECT_EQ(table.size(), 0u);
}

}  // namespace
