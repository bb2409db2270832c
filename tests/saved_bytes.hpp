// A filter's saved file as a string, for the persistence tests.
#pragma once

#include <sstream>
#include <string>

namespace ccf::testing {

template <class Filter>
std::string saved(const Filter& filter) {
  std::ostringstream out;
  filter.save(out);
  return out.str();
}

}  // namespace ccf::testing
