// The `ccf serve` network layer: Boost.Asio (docs/server.md says why), one io_context run by
// `threads` threads, one session per client. A session reads, parses every complete command in
// what it has (pipelining), runs them in order on its I/O thread, writes all their replies in
// one write, and only then reads again: a client that does not read its replies stops being
// read (back-pressure), so no client can make the server buffer without bound. Each session's
// handlers run on its own strand; different clients' commands run in parallel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "serve/resp.hpp"

namespace ccf::serve {

struct ServerOptions {
  std::string bind = "127.0.0.1";
  std::uint16_t port = 6379;  // 0: any free port (printed)
  unsigned threads = 2;
  std::string password;               // empty: no AUTH
  std::size_t max_clients = 10000;    // more are told so and closed
  unsigned idle_timeout_seconds = 0;  // 0: never close an idle client
  RespLimits limits;
};

// Serves until SIGINT or SIGTERM. Prints "listening ADDRESS:PORT" on stdout once the socket
// accepts. Throws std::system_error when the address cannot be bound.
void run_server(const ServerOptions& options);

}  // namespace ccf::serve
