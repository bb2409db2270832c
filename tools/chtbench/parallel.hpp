// The one way chtbench runs threads: each pinned per the placement policy, registered with
// the structure, and started together behind a barrier.
#pragma once

#include <algorithm>
#include <barrier>
#include <chrono>
#include <thread>
#include <vector>

#include "structure.hpp"
#include "topology.hpp"

namespace chtbench {

// Runs body(i) on `count` threads. `main_part` runs on the caller once the barrier opens (e.g.
// sleep, then raise a stop flag); the threads are joined after it returns. Returns the seconds
// from the first thread's start of body to the last one's end, as the threads themselves
// measured it: on a busy machine the caller may be descheduled at the barrier, so its own
// clock readings could miss part of the work.
template <class Body, class Main>
double parallel_phase(Structure& s, Pin pin, unsigned count, Body body, Main main_part) {
  using Clock = std::chrono::steady_clock;
  std::barrier start(static_cast<std::ptrdiff_t>(count) + 1);
  std::vector<Clock::time_point> begin(count), end(count);
  std::vector<std::jthread> threads;
  for (unsigned i = 0; i < count; ++i) {
    threads.emplace_back([&, i] {
      Topology::get().pin_current_thread(pin, i);
      ThreadScope scope(s);
      start.arrive_and_wait();
      begin[i] = Clock::now();
      body(i);
      end[i] = Clock::now();
    });
  }
  start.arrive_and_wait();
  main_part();
  threads.clear();  // joins: the stamps are visible from here on
  return std::chrono::duration<double>(std::ranges::max(end) - std::ranges::min(begin)).count();
}

template <class Body>
double parallel_phase(Structure& s, Pin pin, unsigned count, Body body) {
  return parallel_phase(s, pin, count, body, [] {});
}

}  // namespace chtbench
