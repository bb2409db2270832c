// The batched operations' contract every filter shares (detail/key_api.hpp):
// - contains_many agrees with contains key by key, counts its hits, finds every key listed as
//   stored, and refuses an output span shorter than the keys;
// - insert_many stores keys in order up to the first kFull, as full as single inserts fill
//   (>= 95% of the slots at b = 4), and reports how many it stored.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

#include "ccf/status.hpp"

namespace ccf::testing {

// `stored`: how many leading keys are in the filter; the rest are probes of any kind.
template <class Filter>
void expect_batched_lookups_agree(const Filter& filter, const std::vector<std::uint64_t>& keys,
                                  std::size_t stored) {
  const auto out = std::make_unique<bool[]>(keys.size());
  const std::size_t hits =
      filter.contains_many(std::span<const std::uint64_t>(keys), std::span(out.get(), keys.size()));
  std::size_t expected = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ(out[i], filter.contains(keys[i])) << "key " << i;
    if (i < stored) {
      ASSERT_TRUE(out[i]) << "stored key " << i;
    }
    expected += out[i];
  }
  EXPECT_EQ(hits, expected);
  EXPECT_THROW(filter.contains_many(std::span<const std::uint64_t>(keys),
                                    std::span(out.get(), keys.size() - 1)),
               std::invalid_argument);
}

// `keys` are more than the empty, fixed-size `filter` can hold.
template <class Filter>
void expect_batched_inserts_fill(Filter& filter, const std::vector<std::uint64_t>& keys) {
  const std::size_t stored = filter.insert_many(std::span<const std::uint64_t>(keys));
  ASSERT_LT(stored, keys.size()) << "the filter never filled up";
  EXPECT_EQ(filter.size(), stored);
  EXPECT_GE(filter.load_factor(), 0.95);
  EXPECT_EQ(filter.insert(keys[stored]), Status::kFull);  // the key it stopped at has no room
  std::size_t missing = 0;
  for (std::size_t i = 0; i < stored; ++i) missing += !filter.contains(keys[i]);
  EXPECT_EQ(missing, 0u);
  EXPECT_EQ(filter.insert_many(std::span<const std::uint64_t>(keys).first(0)), 0u);
}

}  // namespace ccf::testing
