#include "server/commands.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <functional>
#include <new>
#include <optional>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "server/bf/commands.hpp"
#include "server/cf/commands.hpp"
#include "server/snapshot.hpp"

namespace ccf::serve {
namespace {

using Args = std::vector<std::string>;

// ---- shared pieces -----------------------------------------------------------------------

constexpr std::string_view kVersion = "7.4.0";  // what clients are told (HELLO, INFO)

// Command names and keywords are ASCII; no allocation, no locale.
bool equals_ignoring_case(std::string_view a, std::string_view b) {
  const auto fold = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [&](char x, char y) { return fold(x) == fold(y); });
}

// `ccf serve`'s side of the command families (command_support.hpp): the keyspace, through the
// client's memo. A value found is held by the memo (Keyspace::Memo) until the client's next
// look-up: one per command.
struct ServeKeys {
  Keyspace& keyspace;
  ClientState& client;

  template <class Filter>
  Lookup<Filter> look_up(std::string_view key, std::type_identity<Filter>) {
    const Value* value = keyspace.find(key, client.memo);
    if (value == nullptr) return {Held::kNothing, nullptr};
    if (const auto* filter = std::get_if<std::shared_ptr<Filter>>(value)) {
      return {Held::kFilter, filter->get()};
    }
    return {Held::kOther, nullptr};
  }

  template <class Make>
  Held create(std::string_view key, Make make) {
    using Filter = typename decltype(make())::element_type;
    const auto [value, created] =
        keyspace.find_or_create(key, [&] { return Value(std::shared_ptr<Filter>(make())); });
    if (created) return Held::kNothing;
    return std::holds_alternative<std::shared_ptr<Filter>>(value) ? Held::kFilter : Held::kOther;
  }
};

// ---- generic commands ------------------------------------------------------------------------

void ping(ServerState&, ClientState&, const Args& args, ReplyWriter& reply) {
  if (args.size() > 2) return arity_error(reply, args[0]);
  if (args.size() == 2) return reply.bulk(args[1]);
  reply.simple("PONG");
}

void echo(ServerState&, ClientState&, const Args& args, ReplyWriter& reply) {
  if (args.size() != 2) return arity_error(reply, args[0]);
  reply.bulk(args[1]);
}

bool password_matches(const ServerState& server, std::string_view user, std::string_view pass) {
  return user == "default" && pass == server.password;
}

void auth(ServerState& server, ClientState& client, const Args& args, ReplyWriter& reply) {
  if (args.size() < 2) return arity_error(reply, args[0]);
  if (args.size() > 3) return reply.error("ERR syntax error");
  if (server.password.empty()) {
    return reply.error(
        "ERR AUTH <password> called without any password configured for the default user. Are "
        "you sure your configuration is correct?");
  }
  const std::string_view user = args.size() == 3 ? std::string_view(args[1]) : "default";
  if (!password_matches(server, user, args.back())) {
    return reply.error("WRONGPASS invalid username-password pair or user is disabled.");
  }
  client.authenticated = true;
  reply.simple("OK");
}

bool valid_client_name(std::string_view name) {
  return std::all_of(name.begin(), name.end(), [](char c) { return c >= '!' && c <= '~'; });
}

// HELLO answers in the protocol it switches to, so it writes `out` itself.
void hello(ServerState& server, ClientState& client, const Args& args, std::string& out) {
  ReplyWriter reply(out, client.proto);
  int proto = client.proto;
  if (args.size() >= 2) {
    const std::optional<long long> version = parse_integer(args[1]);
    if (!version) return reply.error("ERR Protocol version is not an integer or out of range");
    if (*version != 2 && *version != 3) return reply.error("NOPROTO unsupported protocol version");
    proto = static_cast<int>(*version);
  }
  // All options are parsed before any takes effect, as Redis does.
  std::optional<std::pair<std::string_view, std::string_view>> credentials;
  std::optional<std::string> name;
  for (std::size_t i = 2; i < args.size(); ++i) {
    const std::string option = lower(args[i]);
    if (option == "auth" && i + 2 < args.size()) {
      credentials.emplace(args[i + 1], args[i + 2]);
      i += 2;
    } else if (option == "setname" && i + 1 < args.size()) {
      name = args[++i];
    } else {
      return reply.error("ERR Syntax error in HELLO option '" + args[i] + "'");
    }
  }
  bool authenticated = client.authenticated;
  if (credentials) {
    if (!server.password.empty() &&
        !password_matches(server, credentials->first, credentials->second)) {
      return reply.error("WRONGPASS invalid username-password pair or user is disabled.");
    }
    authenticated = true;
  }
  if (name && !valid_client_name(*name)) {
    return reply.error("ERR Client names cannot contain spaces, newlines or special characters.");
  }
  if (!authenticated) {
    return reply.error(
        "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO "
        "<proto> AUTH <user> <pass> option can be used to authenticate the client and select "
        "the RESP protocol version at the same time");
  }
  client.authenticated = true;
  if (name) client.name = *name;
  client.proto = proto;
  ReplyWriter answer(out, proto);
  answer.map(7);
  answer.bulk("server");
  answer.bulk("redis");
  answer.bulk("version");
  answer.bulk(kVersion);
  answer.bulk("proto");
  answer.integer(proto);
  answer.bulk("id");
  answer.integer(static_cast<long long>(client.id));
  answer.bulk("mode");
  answer.bulk("standalone");
  answer.bulk("role");
  answer.bulk("master");
  answer.bulk("modules");
  answer.array(0);
}

void client_command(ServerState&, ClientState& client, const Args& args, ReplyWriter& reply) {
  if (args.size() < 2) return arity_error(reply, args[0]);
  const std::string sub = lower(args[1]);
  const auto sub_arity = [&] {
    reply.error("ERR wrong number of arguments for 'client|" + sub + "' command");
  };
  if (sub == "setname") {
    if (args.size() != 3) return sub_arity();
    if (!valid_client_name(args[2])) {
      return reply.error("ERR Client names cannot contain spaces, newlines or special characters.");
    }
    client.name = args[2];
    return reply.simple("OK");
  }
  if (sub == "getname") {
    if (args.size() != 2) return sub_arity();
    return client.name.empty() ? reply.null() : reply.bulk(client.name);
  }
  if (sub == "setinfo") {
    if (args.size() != 4) return sub_arity();
    return reply.simple("OK");
  }
  if (sub == "id") {
    if (args.size() != 2) return sub_arity();
    return reply.integer(static_cast<long long>(client.id));
  }
  reply.error("ERR unknown subcommand '" + args[1] + "'. Try CLIENT HELP.");
}

void select(ServerState&, ClientState&, const Args& args, ReplyWriter& reply) {
  if (args.size() != 2) return arity_error(reply, args[0]);
  const std::optional<long long> index = parse_integer(args[1]);
  if (!index) return reply.error("ERR value is not an integer or out of range");
  if (*index != 0) return reply.error("ERR DB index is out of range");
  reply.simple("OK");
}

void quit(ServerState&, ClientState& client, const Args&, ReplyWriter& reply) {
  client.close_after_reply = true;
  reply.simple("OK");
}

void del(ServerState& server, ClientState&, const Args& args, ReplyWriter& reply) {
  if (args.size() < 2) return arity_error(reply, args[0]);
  long long removed = 0;
  for (std::size_t i = 1; i < args.size(); ++i) removed += server.keyspace.erase(args[i]);
  reply.integer(removed);
}

void exists(ServerState& server, ClientState&, const Args& args, ReplyWriter& reply) {
  if (args.size() < 2) return arity_error(reply, args[0]);
  long long present = 0;
  for (std::size_t i = 1; i < args.size(); ++i) {
    present += server.keyspace.find(args[i]).has_value();
  }
  reply.integer(present);
}

void type(ServerState& server, ClientState&, const Args& args, ReplyWriter& reply) {
  if (args.size() != 2) return arity_error(reply, args[0]);
  const std::optional<Value> value = server.keyspace.find(args[1]);
  reply.simple(value ? type_name(*value) : "none");
}

void keys(ServerState& server, ClientState&, const Args& args, ReplyWriter& reply) {
  if (args.size() != 2) return arity_error(reply, args[0]);
  const std::vector<std::string> found = server.keyspace.keys(args[1]);
  reply.array(found.size());
  for (const std::string& key : found) reply.bulk(key);
}

void scan(ServerState& server, ClientState&, const Args& args, ReplyWriter& reply) {
  if (args.size() < 2) return arity_error(reply, args[0]);
  std::uint64_t cursor = 0;
  const auto [end, error] =
      std::from_chars(args[1].data(), args[1].data() + args[1].size(), cursor);
  if (args[1].empty() || error != std::errc() || end != args[1].data() + args[1].size()) {
    return reply.error("ERR invalid cursor");
  }
  std::string pattern = "*";
  std::optional<std::string> wanted_type;
  // As in Redis, a hint: keys looked at per call (whole shards here, so often more).
  long long count = 10;
  for (std::size_t i = 2; i < args.size(); i += 2) {
    if (i + 1 >= args.size()) return reply.error("ERR syntax error");
    const std::string option = lower(args[i]);
    if (option == "match") {
      pattern = args[i + 1];
    } else if (option == "count") {
      const std::optional<long long> parsed = parse_integer(args[i + 1]);
      if (!parsed) return reply.error("ERR value is not an integer or out of range");
      if (*parsed < 1) return reply.error("ERR syntax error");
      count = *parsed;
    } else if (option == "type") {
      wanted_type = args[i + 1];
    } else {
      return reply.error("ERR syntax error");
    }
  }
  std::vector<std::string> selected;
  long long looked_at = 0;
  do {  // shard by shard until COUNT keys were looked at or the last shard is done
    auto step = server.keyspace.scan(cursor);
    if (!step) return reply.error("ERR invalid cursor");  // only the client's cursor can be
    for (auto& [key, value] : step->entries) {
      if (!glob_match(pattern, key)) continue;
      if (wanted_type && !equals_ignoring_case(*wanted_type, type_name(value))) continue;
      selected.push_back(std::move(key));
    }
    looked_at += static_cast<long long>(step->entries.size());
    cursor = step->next;
  } while (cursor != 0 && looked_at < count);
  reply.array(2);
  reply.bulk(std::to_string(cursor));
  reply.array(selected.size());
  for (const std::string& key : selected) reply.bulk(key);
}

void dbsize(ServerState& server, ClientState&, const Args& args, ReplyWriter& reply) {
  if (args.size() != 1) return arity_error(reply, args[0]);
  reply.integer(static_cast<long long>(server.keyspace.size()));
}

void flushall(ServerState& server, ClientState&, const Args& args, ReplyWriter& reply) {
  if (args.size() > 2) return reply.error("ERR syntax error");
  if (args.size() == 2 && !equals_ignoring_case(args[1], "async") &&
      !equals_ignoring_case(args[1], "sync")) {
    return reply.error("ERR syntax error");
  }
  server.keyspace.clear();
  reply.simple("OK");
}

std::int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// INFO [SECTION ...]: every section, or those named ("all", "everything" and "default" name
// them all), each as Redis lays it out: "# Name", then "field:value" lines.
void info(ServerState& server, ClientState&, const Args& args, ReplyWriter& reply) {
  const auto wanted = [&](std::string_view section) {
    if (args.size() == 1) return true;
    return std::any_of(args.begin() + 1, args.end(), [&](const std::string& arg) {
      return equals_ignoring_case(arg, section) || equals_ignoring_case(arg, "all") ||
             equals_ignoring_case(arg, "everything") || equals_ignoring_case(arg, "default");
    });
  };
  std::string text;
  const auto section = [&](std::string_view name, const std::string& fields) {
    if (!wanted(name)) return;
    if (!text.empty()) text += "\r\n";
    text += "# " + std::string(name) + "\r\n" + fields;
  };
  const auto field = [](std::string_view name, const auto& value) {
    if constexpr (std::is_arithmetic_v<std::decay_t<decltype(value)>>) {
      return std::string(name) + ":" + std::to_string(value) + "\r\n";
    } else {
      return std::string(name) + ":" + std::string(value) + "\r\n";
    }
  };
  section("Server", field("redis_version", kVersion) + field("redis_mode", "standalone") +
                        field("ccf_server", "ccf serve"));
  section("Clients", field("connected_clients", server.connected_clients.load()));
  if (wanted("Memory")) {
    // The process's resident set (what redis-server's used_memory_rss also reports), the bytes
    // of every filter (the sum of their CF.INFO sizes), and clients' buffers with their bound.
    std::uint64_t resident_pages = 0, filter_bytes = 0;
    if (std::FILE* statm = std::fopen("/proc/self/statm", "r")) {
      unsigned long long total = 0, resident = 0;
      if (std::fscanf(statm, "%llu %llu", &total, &resident) == 2) resident_pages = resident;
      std::fclose(statm);
    }
    for (std::uint64_t cursor = 0;;) {
      const auto step = server.keyspace.scan(cursor);
      for (const auto& [key, value] : step->entries) {
        if (const auto* filter = std::get_if<std::shared_ptr<CfFilter>>(&value)) {
          filter_bytes += (*filter)->info().size_bytes;
        } else if (const auto* bloom = std::get_if<std::shared_ptr<BfFilter>>(&value)) {
          filter_bytes += (*bloom)->memory_bytes();
        }
      }
      if ((cursor = step->next) == 0) break;
    }
    section("Memory", field("used_memory_rss",
                            resident_pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE))) +
                          field("ccf_filter_bytes", filter_bytes) +
                          field("mem_clients_normal", server.client_buffer_bytes.load()) +
                          field("maxmemory_clients", server.max_client_memory));
  }
  if (wanted("Persistence")) {
    std::string error;
    {
      const std::lock_guard lock(server.last_save_error_mutex);
      error = server.last_save_error;
    }
    section("Persistence",
            field("loading", 0) + field("rdb_changes_since_last_save", server.changes.load()) +
                field("rdb_bgsave_in_progress", server.background_running.load() ? 1 : 0) +
                field("rdb_last_save_time", server.last_save_unix.load()) +
                field("rdb_last_bgsave_status", server.last_save_ok.load() ? "ok" : "err") +
                field("rdb_last_bgsave_time_sec", server.last_bgsave_seconds.load()) +
                field("ccf_snapshot_file", server.snapshot_file.string()) +
                field("ccf_last_save_error", error));
  }
  section("Stats", field("evicted_clients", server.evicted_clients.load()));
  const std::size_t keys_count = server.keyspace.size();
  if (keys_count > 0) {
    section("Keyspace", "db0:keys=" + std::to_string(keys_count) + ",expires=0,avg_ttl=0\r\n");
  }
  reply.verbatim(text);
}

void command(ServerState&, ClientState&, const Args& args, ReplyWriter& reply);

constexpr std::string_view kNoSnapshots =
    "ERR no snapshot file: start ccf serve with --dir (and --dbfilename) to save";

void save(ServerState& server, ClientState&, const Args& args, ReplyWriter& reply) {
  if (args.size() != 1) return arity_error(reply, args[0]);
  if (server.snapshot_file.empty()) return reply.error(kNoSnapshots);
  save_now(server);  // an exception becomes an error reply (execute)
  reply.simple("OK");
}

void bgsave(ServerState& server, ClientState&, const Args& args, ReplyWriter& reply) {
  if (args.size() > 2) return reply.error("ERR syntax error");
  if (server.snapshot_file.empty()) return reply.error(kNoSnapshots);
  const std::lock_guard lock(server.background_mutex);
  if (server.background_running.load()) {
    return reply.error("ERR Background save already in progress");
  }
  if (server.background.joinable()) server.background.join();
  server.background_running.store(true);
  try {
    server.background = std::thread([&server] {
      try {
        const auto started = std::chrono::steady_clock::now();
        save_now(server);
        server.last_bgsave_seconds.store(std::chrono::duration_cast<std::chrono::seconds>(
                                             std::chrono::steady_clock::now() - started)
                                             .count());
      } catch (const std::exception& error) {  // recorded by save_now for INFO and SAVE
        std::fprintf(stderr, "ccf serve: background save failed: %s\n", error.what());
      }
      server.background_running.store(false);
    });
  } catch (const std::system_error& error) {
    server.background_running.store(false);
    return reply.error(std::string("ERR cannot start the background save: ") + error.what());
  }
  reply.simple("Background saving started");
}

void lastsave(ServerState& server, ClientState&, const Args& args, ReplyWriter& reply) {
  if (args.size() != 1) return arity_error(reply, args[0]);
  reply.integer(server.last_save_unix.load());
}

void set(ServerState& server, ClientState&, const Args& args, ReplyWriter& reply) {
  if (args.size() < 3) return arity_error(reply, args[0]);
  if (args.size() > 3) return reply.error("ERR syntax error");
  server.keyspace.set(args[1], std::make_shared<const std::string>(args[2]));
  reply.simple("OK");
}

void get(ServerState& server, ClientState&, const Args& args, ReplyWriter& reply) {
  if (args.size() != 2) return arity_error(reply, args[0]);
  const std::optional<Value> value = server.keyspace.find(args[1]);
  if (!value) return reply.null();
  if (const auto* text = std::get_if<std::shared_ptr<const std::string>>(&*value)) {
    return reply.bulk(**text);
  }
  reply.error(kWrongType);
}

using Handler = std::function<void(ServerState&, ClientState&, const Args&, ReplyWriter&)>;

const std::unordered_map<std::string, Handler>& handlers() {
  static const std::unordered_map<std::string, Handler> table = {
      {"ping", ping},         {"echo", echo},
      {"auth", auth},         {"client", client_command},
      {"select", select},     {"quit", quit},
      {"del", del},           {"exists", exists},
      {"type", type},         {"keys", keys},
      {"scan", scan},         {"dbsize", dbsize},
      {"flushall", flushall}, {"flushdb", flushall},
      {"info", info},         {"command", command},
      {"save", save},         {"bgsave", bgsave},
      {"lastsave", lastsave}, {"set", set},
      {"get", get},
  };
  return table;
}

// COMMAND's facts of every command: the CF.* and BF.* families' (cf/commands.hpp,
// bf/commands.hpp), then these.
const std::vector<CommandFacts>& command_facts() {
  static const std::vector<CommandFacts> facts = [] {
    std::vector<CommandFacts> all(kCfCommands.begin(), kCfCommands.end());
    all.insert(all.end(), kBfCommands.begin(), kBfCommands.end());
    all.insert(all.end(), {
                              {"ping", -1, "fast", 0, 0, 0},
                              {"echo", 2, "fast", 0, 0, 0},
                              {"auth", -2, "fast", 0, 0, 0},
                              {"hello", -1, "fast", 0, 0, 0},
                              {"client", -2, "", 0, 0, 0},
                              {"select", 2, "fast", 0, 0, 0},
                              {"quit", -1, "fast", 0, 0, 0},
                              {"del", -2, "write", 1, -1, 1},
                              {"exists", -2, "readonly fast", 1, -1, 1},
                              {"type", 2, "readonly fast", 1, 1, 1},
                              {"keys", 2, "readonly", 0, 0, 0},
                              {"scan", -2, "readonly", 0, 0, 0},
                              {"dbsize", 1, "readonly fast", 0, 0, 0},
                              {"flushall", -1, "write", 0, 0, 0},
                              {"flushdb", -1, "write", 0, 0, 0},
                              {"info", -1, "", 0, 0, 0},
                              {"command", -1, "", 0, 0, 0},
                              {"save", 1, "", 0, 0, 0},
                              {"bgsave", -1, "", 0, 0, 0},
                              {"lastsave", 1, "fast", 0, 0, 0},
                              {"set", -3, "write deny-oom", 1, 1, 1},
                              {"get", 2, "readonly fast", 1, 1, 1},
                          });
    return all;
  }();
  return facts;
}

bool writes(std::string_view name) {
  static const std::unordered_set<std::string_view> write_commands = [] {
    std::unordered_set<std::string_view> names;
    for (const CommandFacts& f : command_facts()) {
      if (has_flag(f, "write")) names.insert(f.name);
    }
    return names;
  }();
  return write_commands.contains(name);
}

void describe(const CommandFacts& facts, ReplyWriter& reply) {
  reply.array(6);
  reply.bulk(facts.name);
  reply.integer(facts.arity);
  const std::vector<std::string_view> flags = flag_words(facts);
  reply.array(flags.size());
  for (const std::string_view flag : flags) reply.simple(flag);
  reply.integer(facts.first_key);
  reply.integer(facts.last_key);
  reply.integer(facts.step);
}

void command(ServerState&, ClientState&, const Args& args, ReplyWriter& reply) {
  const auto& facts = command_facts();
  if (args.size() == 1) {
    reply.array(facts.size());
    for (const CommandFacts& command_fact : facts) describe(command_fact, reply);
    return;
  }
  const std::string sub = lower(args[1]);
  if (sub == "count") return reply.integer(static_cast<long long>(facts.size()));
  if (sub == "docs") return reply.map(0);
  if (sub == "info") {
    reply.array(args.size() - 2);
    for (std::size_t i = 2; i < args.size(); ++i) {
      const std::string name = lower(args[i]);
      const auto it = std::find_if(facts.begin(), facts.end(),
                                   [&](const CommandFacts& f) { return f.name == name; });
      if (it == facts.end()) {
        reply.null();
      } else {
        describe(*it, reply);
      }
    }
    return;
  }
  reply.error("ERR unknown subcommand '" + args[1] + "'. Try COMMAND HELP.");
}

void unknown_command(const Args& args, ReplyWriter& reply) {
  // Appended piece by piece: GCC 12 warns (-Wrestrict) wrongly on a chain of operator+.
  std::string text = "ERR unknown command '";
  text.append(args[0], 0, 128).append("', with args beginning with: ");
  const std::size_t quoted_from = text.size();
  for (std::size_t i = 1; i < args.size() && text.size() - quoted_from < 128; ++i) {
    text.append("'").append(args[i], 0, 128 - (text.size() - quoted_from)).append("' ");
  }
  reply.error(text);
}

}  // namespace

void execute(ServerState& server, ClientState& client, const std::vector<std::string>& args,
             std::string& out) {
  if (args.empty()) return;
  const std::string name = lower(args[0]);
  if (name == "hello") return hello(server, client, args, out);
  ReplyWriter reply(out, client.proto);
  if (!server.password.empty() && !client.authenticated && name != "auth" && name != "quit") {
    return reply.error("NOAUTH Authentication required.");
  }
  const std::optional<CfCommand> cf_command = find_command<CfCommand>(name);
  const std::optional<BfCommand> bf_command =
      cf_command ? std::nullopt : find_command<BfCommand>(name);
  const bool in_family = cf_command || bf_command;
  const auto& table = handlers();
  const auto it = in_family ? table.end() : table.find(name);
  if (!in_family && it == table.end()) return unknown_command(args, reply);
  const std::size_t reply_start = out.size();
  try {
    ServeKeys keys{server.keyspace, client};
    if (cf_command) {
      run(*cf_command, keys, args, reply);
    } else if (bf_command) {
      run(*bf_command, keys, args, reply);
    } else {
      it->second(server, client, args, reply);
    }
  } catch (const std::exception& error) {
    // Out of memory in a dump, a failed stream, ...: this command fails, the server goes on.
    out.resize(reply_start);
    reply.error(std::string("ERR ") + error.what());
    return;
  }
  // A write answered with an error changed nothing: it does not count toward `--save`.
  const bool failed = out.size() > reply_start && out[reply_start] == '-';
  if (!failed && writes(name)) server.changes.fetch_add(1, std::memory_order_relaxed);  // a count
}

void Pipeline::run(ServerState& server, ClientState& client, std::vector<std::string>& args,
                   std::string& out) {
  // A CF.EXISTS or BF.EXISTS joins the run when execute() would answer it from the key's
  // filter: three arguments, from a client that needs no AUTH (execute() answers the others'
  // NOAUTH).
  const bool may_join = args.size() == 3 && (server.password.empty() || client.authenticated);
  const bool bloom = may_join && equals_ignoring_case(args[0], "bf.exists");
  const bool joins = bloom || (may_join && equals_ignoring_case(args[0], "cf.exists"));
  if (!joins || (held_ != 0 && (args[1] != key_ || bloom != bloom_))) flush(server, client, out);
  if (!joins) return execute(server, client, args, out);
  if (held_ == 0) {
    key_ = args[1];
    bloom_ = bloom;
  }
  if (items_.size() == held_) items_.emplace_back();
  items_[held_++].swap(args[2]);
  if (held_ == kMaxRun) flush(server, client, out);
}

void Pipeline::flush(ServerState& server, ClientState& client, std::string& out) {
  if (held_ == 0) return;
  const std::size_t count = std::exchange(held_, 0);
  const std::size_t reply_start = out.size();
  ReplyWriter reply(out, client.proto);
  try {
    std::array<std::string_view, kMaxRun> items;
    std::array<bool, kMaxRun> found{};
    std::copy_n(items_.begin(), count, items.begin());
    ServeKeys keys{server.keyspace, client};
    const auto look_up_run = [&](auto held) {
      if (held.filter != nullptr) {
        held.filter->contains_many({items.data(), count}, {found.data(), count});
      }
    };
    if (bloom_) {
      look_up_run(look_up<BfFilter>(keys, key_));
    } else {
      look_up_run(look_up<CfFilter>(keys, key_));
    }
    for (std::size_t i = 0; i < count; ++i) reply.boolean(found[i]);
  } catch (const std::exception& error) {  // as execute(): each command of the run fails
    out.resize(reply_start);
    for (std::size_t i = 0; i < count; ++i) reply.error(std::string("ERR ") + error.what());
  }
}

void save_now(ServerState& server) {
  const std::lock_guard lock(server.save_mutex);
  const std::uint64_t changes = server.changes.load();
  const auto record = [&](std::string error) {
    const std::lock_guard error_lock(server.last_save_error_mutex);
    server.last_save_error = std::move(error);
    server.last_save_ok.store(server.last_save_error.empty());
  };
  try {
    save_snapshot(server.keyspace, server.snapshot_file);
  } catch (const std::exception& error) {
    record(error.what());
    throw;
  }
  record({});
  server.changes.fetch_sub(changes);  // those made during the save count for the next one
  server.last_save_unix.store(unix_seconds());
}

void finish_background_save(ServerState& server) {
  const std::lock_guard lock(server.background_mutex);
  if (server.background.joinable()) server.background.join();
}

}  // namespace ccf::serve
