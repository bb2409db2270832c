// The commands of `ccf serve`: RedisBloom's CF.* commands and the generic commands clients
// send (the contract, with ccf's differences, is docs/server.md). execute() runs one command
// for one client on the calling I/O thread and appends its reply to `out`; it touches shared state
// only through the Keyspace and the filters, so commands of many clients run in parallel.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "serve/keyspace.hpp"
#include "serve/resp.hpp"

namespace ccf::serve {

struct ServerState {
  Keyspace keyspace;
  std::string password;  // empty: no AUTH needed
  std::atomic<std::uint64_t> next_client_id{1};
  std::atomic<std::uint64_t> connected_clients{0};
};

struct ClientState {
  std::uint64_t id = 0;
  int proto = 2;
  bool authenticated = false;
  std::string name;
  bool close_after_reply = false;  // QUIT
};

void execute(ServerState& server, ClientState& client, const std::vector<std::string>& args,
             std::string& out);

}  // namespace ccf::serve
