// eventually(pred): waits until pred() holds, polling every 100 us (a sleep, not a spin: the
// thread that makes pred true may need this core), for at most `limit`; returns whether it did.
// For handshakes between test threads: "the other thread has arrived", never a timing claim.
#pragma once

#include <chrono>
#include <thread>

namespace ccf::testing {

template <class Pred>
bool eventually(Pred pred, std::chrono::seconds limit = std::chrono::seconds(60)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return true;
}

}  // namespace ccf::testing
