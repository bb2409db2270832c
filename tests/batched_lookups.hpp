// The batched lookup contract every filter shares (detail/key_api.hpp): contains_many agrees
// with contains key by key, counts its hits, finds every key listed as stored, and refuses an
// output span shorter than the keys.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

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

}  // namespace ccf::testing
