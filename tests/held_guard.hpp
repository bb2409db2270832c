// Runs a test step while another thread holds a guard of an epoch domain: the stalled reader
// that holds back reclamation for everyone.
#pragma once

#include <latch>
#include <thread>

#include "ccf/lockfree/reclamation.hpp"

namespace ccf::testing {

template <class Body>
void while_a_guard_is_held(lockfree::EpochDomain& domain, Body&& body) {
  std::latch pinned(1);
  std::latch done(1);
  std::thread staller([&] {
    const auto guard = domain.pin();
    pinned.count_down();
    done.wait();
  });
  pinned.wait();
  body();
  done.count_down();
  staller.join();
}

}  // namespace ccf::testing
