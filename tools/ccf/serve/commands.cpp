#include "serve/commands.hpp"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <functional>
#include <new>
#include <optional>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <unordered_set>

#include "serve/snapshot.hpp"

namespace ccf::serve {
namespace {

using Args = std::vector<std::string>;

// ---- shared pieces -----------------------------------------------------------------------

constexpr std::string_view kVersion = "7.4.0";  // what clients are told (HELLO, INFO)
constexpr std::string_view kWrongType =
    "WRONGTYPE Operation against a key holding the wrong kind of value";
constexpr std::string_view kNotFound = "ERR not found";

// Redis's strict integer syntax: optional '-', digits, no '+', no spaces, no leading zeros.
std::optional<long long> parse_integer(std::string_view text) {
  if (text.empty() || text.size() > 20) return std::nullopt;
  const std::size_t digits = text[0] == '-' ? 1 : 0;
  if (digits == text.size()) return std::nullopt;
  if (text[digits] == '0' && text.size() > digits + 1) return std::nullopt;
  if (text == "-0") return std::nullopt;
  long long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  return lower(a) == lower(b);
}

void arity_error(ReplyWriter& reply, std::string_view command) {
  reply.error("ERR wrong number of arguments for '" + lower(command) + "' command");
}

// What a key holds, for commands that need a filter.
enum class Held { kNothing, kFilter, kOther };
// The filter is held by the client's memo (Keyspace::Memo) until its next look_up: one per
// command.
struct Lookup {
  Held held;
  CfFilter* filter;
};
Lookup look_up(const Keyspace& keyspace, ClientState& client, std::string_view key) {
  const Value* value = keyspace.find(key, client.memo);
  if (value == nullptr) return {Held::kNothing, nullptr};
  if (const auto* filter = std::get_if<std::shared_ptr<CfFilter>>(value)) {
    return {Held::kFilter, filter->get()};
  }
  return {Held::kOther, nullptr};
}

// ---- filter parameters ---------------------------------------------------------------------

constexpr long long kMaxCapacity = 1073741824;
constexpr long long kDefaultCapacity = 1024;
constexpr unsigned kDefaultBucketSize = 2;
constexpr unsigned kDefaultMaxIterations = 20;
constexpr unsigned kDefaultExpansion = 1;
constexpr std::string_view kBucketSizeRefused =
    "BUCKETSIZE: ccf supports 1, 2 or 4 slots per bucket (3 is rounded up to 4)";

// Buckets of the first sub-filter: the smallest power of two >= capacity / bucket size.
CfParams sized(long long capacity, unsigned bucket_size, unsigned max_iterations,
               unsigned expansion) {
  CfParams params;
  params.bucket_size = bucket_size == 3 ? 4 : bucket_size;
  params.buckets =
      std::bit_ceil(std::max<std::uint64_t>(1, static_cast<std::uint64_t>(capacity) / bucket_size));
  params.max_iterations = max_iterations;
  params.expansion = expansion == 0 ? 0 : std::bit_ceil(expansion);
  return params;
}

// The key's filter, created if the key does not exist, held by the client's memo like a
// look_up's. nullptr after replying with an error.
CfFilter* filter_for_write(ServerState& server, ClientState& client, ReplyWriter& reply,
                           std::string_view key, const CfParams& params) {
  try {
    // Another client may drop the key between the creation and the look-up: then again.
    for (;;) {
      const Lookup found = look_up(server.keyspace, client, key);
      if (found.held == Held::kFilter) return found.filter;
      if (found.held == Held::kOther) break;
      server.keyspace.find_or_create(key,
                                     [&] { return Value(std::make_shared<CfFilter>(params)); });
    }
    reply.error(kWrongType);
  } catch (const std::bad_alloc&) {
    reply.error("ERR Insufficient memory to create filter");
  }
  return nullptr;
}

// ---- CF.* ---------------------------------------------------------------------------------

void cf_reserve(ServerState& server, ClientState&, const Args& args, ReplyWriter& reply) {
  if (args.size() < 3 || args.size() % 2 == 0) return arity_error(reply, args[0]);
  const std::optional<long long> capacity = parse_integer(args[2]);
  if (!capacity) return reply.error("Bad capacity");
  // Each keyword's first occurrence wins; unknown pairs are ignored.
  std::optional<std::string_view> bucket_size_text, iterations_text, expansion_text;
  for (std::size_t i = 3; i + 1 < args.size(); i += 2) {
    const std::string keyword = lower(args[i]);
    auto* slot = keyword == "bucketsize"      ? &bucket_size_text
                 : keyword == "maxiterations" ? &iterations_text
                 : keyword == "expansion"     ? &expansion_text
                                              : nullptr;
    if (slot != nullptr && !*slot) *slot = args[i + 1];
  }
  // Checked in RedisBloom's order: iterations, bucket size, expansion, capacity.
  long long iterations = kDefaultMaxIterations, bucket_size = kDefaultBucketSize,
            expansion = kDefaultExpansion;
  const auto option = [&](const std::optional<std::string_view>& text, long long& value,
                          std::string_view name, long long low, long long high) {
    if (!text) return true;
    const std::optional<long long> parsed = parse_integer(*text);
    if (!parsed) {
      reply.error("Couldn't parse " + std::string(name));
      return false;
    }
    if (*parsed < low || *parsed > high) {
      reply.error(std::string(name) + ": value must be in the range [" + std::to_string(low) +
                  ", " + std::to_string(high) + "]");
      return false;
    }
    value = *parsed;
    return true;
  };
  if (!option(iterations_text, iterations, "MAXITERATIONS", 1, 65535) ||
      !option(bucket_size_text, bucket_size, "BUCKETSIZE", 1, 255) ||
      !option(expansion_text, expansion, "EXPANSION", 0, 32768)) {
    return;
  }
  if (*capacity < 2 * bucket_size || *capacity > kMaxCapacity) {
    return reply.error("Capacity must be in the range [2 * BUCKETSIZE, 1073741824]");
  }
  if (bucket_size > 4) return reply.error(kBucketSizeRefused);
  const CfParams params =
      sized(*capacity, static_cast<unsigned>(bucket_size), static_cast<unsigned>(iterations),
            static_cast<unsigned>(expansion));
  try {
    bool created = false;
    const auto [value, made] = server.keyspace.find_or_create(
        args[1], [&] { return Value(std::make_shared<CfFilter>(params)); });
    created = made;
    if (created) return reply.simple("OK");
    if (std::holds_alternative<std::shared_ptr<CfFilter>>(value)) {
      return reply.error("ERR item exists");
    }
    reply.error(kWrongType);
  } catch (const std::bad_alloc&) {
    reply.error("ERR Insufficient memory to create filter");
  }
}

const CfParams& default_params() {
  static const CfParams params =
      sized(kDefaultCapacity, kDefaultBucketSize, kDefaultMaxIterations, kDefaultExpansion);
  return params;
}

void cf_add(ServerState& server, ClientState& client, const Args& args, ReplyWriter& reply,
            bool only_if_absent) {
  if (args.size() != 3) return arity_error(reply, args[0]);
  CfFilter* const filter = filter_for_write(server, client, reply, args[1], default_params());
  if (filter == nullptr) return;
  if (filter->at_max_filters()) return reply.error("Maximum expansions reached");
  switch (filter->add(args[2], only_if_absent)) {
    case AddResult::kAdded:
      return reply.boolean(true);
    case AddResult::kPresent:
      return reply.boolean(false);
    case AddResult::kFull:
      return reply.error("Filter is full");
    case AddResult::kMaxExpansions:
      return reply.error("Maximum expansions reached");
    case AddResult::kNoMemory:
      return reply.error("ERR Insufficient memory");
  }
}

void cf_insert(ServerState& server, ClientState& client, const Args& args, ReplyWriter& reply,
               bool only_if_absent) {
  if (args.size() < 4) return arity_error(reply, args[0]);
  long long capacity = kDefaultCapacity;
  bool no_create = false;
  std::size_t items = 0;  // index of the first item; 0: no ITEMS yet
  for (std::size_t i = 2; i < args.size(); ++i) {
    // RedisBloom tells the options apart by their first letter.
    const char first = static_cast<char>(std::tolower(static_cast<unsigned char>(args[i][0])));
    if (args[i].empty()) return reply.error("Unknown argument received");
    if (first == 'c') {
      if (i + 1 >= args.size()) return arity_error(reply, args[0]);
      const std::optional<long long> parsed = parse_integer(args[++i]);
      if (!parsed) return reply.error("Bad capacity");
      if (*parsed < 2 * static_cast<long long>(kDefaultBucketSize) || *parsed > kMaxCapacity) {
        return reply.error("Capacity must be in the range [cf-bucket-size * 2, 1073741824]");
      }
      capacity = *parsed;
    } else if (first == 'n') {
      no_create = true;
    } else if (first == 'i') {
      items = i + 1;
      break;
    } else {
      return reply.error("Unknown argument received");
    }
  }
  if (items == 0 || items >= args.size()) return arity_error(reply, args[0]);
  CfFilter* filter = nullptr;
  if (no_create) {
    const Lookup found = look_up(server.keyspace, client, args[1]);
    if (found.held == Held::kOther) return reply.error(kWrongType);
    if (found.held == Held::kNothing) return reply.error(kNotFound);
    filter = found.filter;
  } else {
    filter = filter_for_write(
        server, client, reply, args[1],
        sized(capacity, kDefaultBucketSize, kDefaultMaxIterations, kDefaultExpansion));
    if (filter == nullptr) return;
  }
  if (filter->at_max_filters()) return reply.error("Maximum expansions reached");
  reply.array(args.size() - items);
  for (std::size_t i = items; i < args.size(); ++i) {
    const AddResult result = filter->add(args[i], only_if_absent);
    if (only_if_absent) {  // integers in both protocols
      reply.integer(result == AddResult::kAdded ? 1 : result == AddResult::kPresent ? 0 : -1);
    } else if (reply.proto() == 3) {
      reply.boolean(result == AddResult::kAdded);
    } else {
      reply.integer(result == AddResult::kAdded ? 1 : -1);
    }
  }
}

void cf_exists(ServerState& server, ClientState& client, const Args& args, ReplyWriter& reply) {
  if (args.size() != 3) return arity_error(reply, args[0]);
  const Lookup found = look_up(server.keyspace, client, args[1]);
  reply.boolean(found.filter && found.filter->contains(args[2]));
}

void cf_mexists(ServerState& server, ClientState& client, const Args& args, ReplyWriter& reply) {
  if (args.size() < 3) return arity_error(reply, args[0]);
  const Lookup found = look_up(server.keyspace, client, args[1]);
  reply.array(args.size() - 2);
  for (std::size_t i = 2; i < args.size(); ++i) {
    reply.boolean(found.filter && found.filter->contains(args[i]));
  }
}

void cf_count(ServerState& server, ClientState& client, const Args& args, ReplyWriter& reply) {
  if (args.size() != 3) return arity_error(reply, args[0]);
  const Lookup found = look_up(server.keyspace, client, args[1]);
  reply.integer(found.filter ? static_cast<long long>(found.filter->count(args[2])) : 0);
}

void cf_del(ServerState& server, ClientState& client, const Args& args, ReplyWriter& reply) {
  if (args.size() != 3) return arity_error(reply, args[0]);
  const Lookup found = look_up(server.keyspace, client, args[1]);
  if (!found.filter) return reply.error("Not found");
  reply.boolean(found.filter->erase(args[2]));
}

void cf_info(ServerState& server, ClientState& client, const Args& args, ReplyWriter& reply) {
  if (args.size() != 2) return arity_error(reply, args[0]);
  const Lookup found = look_up(server.keyspace, client, args[1]);
  if (found.held == Held::kNothing) return reply.error(kNotFound);
  if (found.held == Held::kOther) return reply.error(kWrongType);
  const CfFilter::Info info = found.filter->info();
  const std::pair<std::string_view, std::uint64_t> fields[] = {
      {"Size", info.size_bytes},
      {"Number of buckets", info.buckets},
      {"Number of filters", info.filters},
      {"Number of items inserted", info.items},
      {"Number of items deleted", info.deletes},
      {"Bucket size", info.bucket_size},
      {"Expansion rate", info.expansion},
      {"Max iterations", info.max_iterations}};
  reply.map(std::size(fields));
  for (const auto& [name, value] : fields) {
    reply.simple(name);
    reply.integer(static_cast<long long>(value));
  }
}

// CF.SCANDUMP's chunks never cross a blob boundary and hold at most this many bytes.
constexpr std::uint64_t kMaxChunkBytes = 16u << 20;

void cf_scandump(ServerState& server, ClientState& client, const Args& args, ReplyWriter& reply) {
  if (args.size() != 3) return arity_error(reply, args[0]);
  const std::optional<long long> iterator = parse_integer(args[2]);
  if (!iterator || *iterator < 0) return reply.error("Invalid position");
  const Lookup found = look_up(server.keyspace, client, args[1]);
  if (found.held == Held::kNothing) return reply.error(kNotFound);
  if (found.held == Held::kOther) return reply.error(kWrongType);
  const auto done = [&] {
    reply.array(2);
    reply.integer(0);
    reply.null();
  };
  if (found.filter->info().items == 0) return done();  // as RedisBloom: nothing to dump
  const std::shared_ptr<const CfFilter::Dump> dump = found.filter->dump();
  if (*iterator == 0) {
    reply.array(2);
    reply.integer(1);
    return reply.bulk(dump->header);
  }
  // Iterator i >= 1: the data from byte i - 1 on, within one blob.
  std::uint64_t offset = static_cast<std::uint64_t>(*iterator) - 1, start = 0;
  for (const std::string& blob : dump->blobs) {
    if (offset < start + blob.size()) {
      const std::uint64_t within = offset - start;
      const std::uint64_t length = std::min<std::uint64_t>(blob.size() - within, kMaxChunkBytes);
      reply.array(2);
      reply.integer(*iterator + static_cast<long long>(length));
      return reply.bulk(std::string_view(blob).substr(within, length));
    }
    start += blob.size();
  }
  done();
}

void cf_loadchunk(ServerState& server, ClientState& client, const Args& args, ReplyWriter& reply) {
  if (args.size() != 4) return arity_error(reply, args[0]);
  const std::optional<long long> iterator = parse_integer(args[2]);
  if (!iterator || *iterator == 0) return reply.error("Invalid position");
  const std::string_view data = args[3];
  if (*iterator == 1) {
    const Lookup found = look_up(server.keyspace, client, args[1]);
    if (found.held == Held::kFilter) return reply.error("ERR item exists");
    if (found.held == Held::kOther) return reply.error(kWrongType);
    if (!CfFilter::header_length_fits(data)) return reply.error("Invalid header");
    const std::optional<CfFilter::DumpHeader> header = CfFilter::parse_header(data);
    if (!header) return reply.error("Couldn't create filter!");
    try {
      std::unique_ptr<CfFilter> made = CfFilter::from_header(*header);
      if (!made) return reply.error("Couldn't create filter!");
      std::shared_ptr<CfFilter> filter = std::move(made);
      const auto [value, created] =
          server.keyspace.find_or_create(args[1], [&] { return Value(filter); });
      if (created) return reply.simple("OK");
      // Another client made the key meanwhile.
      return reply.error(std::holds_alternative<std::shared_ptr<CfFilter>>(value)
                             ? std::string_view("ERR item exists")
                             : kWrongType);
    } catch (const std::bad_alloc&) {
      return reply.error("Couldn't create filter!");
    }
  }
  const Lookup found = look_up(server.keyspace, client, args[1]);
  if (found.held == Held::kNothing) return reply.error(kNotFound);
  if (found.held == Held::kOther) return reply.error(kWrongType);
  // The chunk ends at byte iterator - 1 of the data.
  if (*iterator < 1 || data.empty() || data.size() > static_cast<std::uint64_t>(*iterator) - 1 ||
      !found.filter->load_chunk(static_cast<std::uint64_t>(*iterator) - 1 - data.size(), data)) {
    return reply.error("Couldn't load chunk!");
  }
  reply.simple("OK");
}

// Undocumented in RedisBloom, and flagged read-only there although it moves fingerprints.
void cf_compact(ServerState& server, ClientState& client, const Args& args, ReplyWriter& reply) {
  if (args.size() != 2) return arity_error(reply, args[0]);
  const Lookup found = look_up(server.keyspace, client, args[1]);
  if (!found.filter) return reply.error("Cuckoo filter was not found");
  found.filter->compact(true);
  reply.simple("OK");
}

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

void info(ServerState& server, ClientState&, const Args& args, ReplyWriter& reply) {
  if (args.size() > 2) return reply.error("ERR syntax error");
  std::string text = "# Server\r\nredis_version:" + std::string(kVersion) +
                     "\r\nredis_mode:standalone\r\nccf_server:ccf serve\r\n\r\n# Clients\r\n"
                     "connected_clients:" +
                     std::to_string(server.connected_clients.load()) + "\r\n";
  // Memory: the process's resident set (what redis-server's used_memory_rss also reports)
  // and the bytes of every filter (the sum of their CF.INFO sizes).
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
      }
    }
    if ((cursor = step->next) == 0) break;
  }
  text += "\r\n# Memory\r\nused_memory_rss:" +
          std::to_string(resident_pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE))) +
          "\r\nccf_filter_bytes:" + std::to_string(filter_bytes) + "\r\n";
  const std::size_t keys_count = server.keyspace.size();
  if (keys_count > 0) {
    text += "\r\n# Keyspace\r\ndb0:keys=" + std::to_string(keys_count) + ",expires=0,avg_ttl=0\r\n";
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
        save_now(server);
      } catch (const std::exception& error) {
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
      {"cf.reserve", cf_reserve},
      {"cf.add", [](auto& s, auto& c, auto& a, auto& r) { cf_add(s, c, a, r, false); }},
      {"cf.addnx", [](auto& s, auto& c, auto& a, auto& r) { cf_add(s, c, a, r, true); }},
      {"cf.insert", [](auto& s, auto& c, auto& a, auto& r) { cf_insert(s, c, a, r, false); }},
      {"cf.insertnx", [](auto& s, auto& c, auto& a, auto& r) { cf_insert(s, c, a, r, true); }},
      {"cf.exists", cf_exists},
      {"cf.mexists", cf_mexists},
      {"cf.count", cf_count},
      {"cf.del", cf_del},
      {"cf.info", cf_info},
      {"cf.scandump", cf_scandump},
      {"cf.loadchunk", cf_loadchunk},
      {"cf.compact", cf_compact},
      {"ping", ping},
      {"echo", echo},
      {"auth", auth},
      {"client", client_command},
      {"select", select},
      {"quit", quit},
      {"del", del},
      {"exists", exists},
      {"type", type},
      {"keys", keys},
      {"scan", scan},
      {"dbsize", dbsize},
      {"flushall", flushall},
      {"flushdb", flushall},
      {"info", info},
      {"command", command},
      {"save", save},
      {"bgsave", bgsave},
      {"lastsave", lastsave},
      {"set", set},
      {"get", get},
  };
  return table;
}

// What COMMAND reports of each command: arity (negative: at least), flags, key positions.
struct CommandFacts {
  std::string_view name;
  int arity;
  std::initializer_list<std::string_view> flags;
  int first_key, last_key, step;
};
constexpr std::string_view kWrite = "write", kReadonly = "readonly", kFast = "fast",
                           kDenyOom = "deny-oom";
const std::initializer_list<CommandFacts>& command_facts() {
  static const std::initializer_list<CommandFacts> facts = {
      {"cf.reserve", -3, {kWrite, kDenyOom}, 1, 1, 1},
      {"cf.add", 3, {kWrite, kDenyOom}, 1, 1, 1},
      {"cf.addnx", 3, {kWrite, kDenyOom}, 1, 1, 1},
      {"cf.insert", -4, {kWrite, kDenyOom}, 1, 1, 1},
      {"cf.insertnx", -4, {kWrite, kDenyOom}, 1, 1, 1},
      {"cf.exists", 3, {kReadonly, kFast}, 1, 1, 1},
      {"cf.mexists", -3, {kReadonly, kFast}, 1, 1, 1},
      {"cf.count", 3, {kReadonly, kFast}, 1, 1, 1},
      {"cf.del", 3, {kWrite, kFast}, 1, 1, 1},
      {"cf.info", 2, {kReadonly, kFast}, 1, 1, 1},
      {"cf.scandump", 3, {kReadonly, kFast}, 1, 1, 1},
      {"cf.loadchunk", 4, {kWrite, kDenyOom}, 1, 1, 1},
      {"cf.compact", -1, {kReadonly, kFast}, 1, 1, 1},
      {"ping", -1, {kFast}, 0, 0, 0},
      {"echo", 2, {kFast}, 0, 0, 0},
      {"auth", -2, {kFast}, 0, 0, 0},
      {"hello", -1, {kFast}, 0, 0, 0},
      {"client", -2, {}, 0, 0, 0},
      {"select", 2, {kFast}, 0, 0, 0},
      {"quit", -1, {kFast}, 0, 0, 0},
      {"del", -2, {kWrite}, 1, -1, 1},
      {"exists", -2, {kReadonly, kFast}, 1, -1, 1},
      {"type", 2, {kReadonly, kFast}, 1, 1, 1},
      {"keys", 2, {kReadonly}, 0, 0, 0},
      {"scan", -2, {kReadonly}, 0, 0, 0},
      {"dbsize", 1, {kReadonly, kFast}, 0, 0, 0},
      {"flushall", -1, {kWrite}, 0, 0, 0},
      {"flushdb", -1, {kWrite}, 0, 0, 0},
      {"info", -1, {}, 0, 0, 0},
      {"command", -1, {}, 0, 0, 0},
      {"save", 1, {}, 0, 0, 0},
      {"bgsave", -1, {}, 0, 0, 0},
      {"lastsave", 1, {kFast}, 0, 0, 0},
      {"set", -3, {kWrite, kDenyOom}, 1, 1, 1},
      {"get", 2, {kReadonly, kFast}, 1, 1, 1},
  };
  return facts;
}

bool writes(std::string_view name) {
  static const std::unordered_set<std::string_view> write_commands = [] {
    std::unordered_set<std::string_view> names;
    for (const CommandFacts& f : command_facts()) {
      if (std::find(f.flags.begin(), f.flags.end(), kWrite) != f.flags.end()) names.insert(f.name);
    }
    return names;
  }();
  return write_commands.contains(name);
}

void describe(const CommandFacts& facts, ReplyWriter& reply) {
  reply.array(6);
  reply.bulk(facts.name);
  reply.integer(facts.arity);
  reply.array(facts.flags.size());
  for (const std::string_view flag : facts.flags) reply.simple(flag);
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
  const auto& table = handlers();
  const auto it = table.find(name);
  if (it == table.end()) return unknown_command(args, reply);
  const std::size_t reply_start = out.size();
  try {
    it->second(server, client, args, reply);
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

void save_now(ServerState& server) {
  const std::lock_guard lock(server.save_mutex);
  const std::uint64_t changes = server.changes.load();
  save_snapshot(server.keyspace, server.snapshot_file);
  server.changes.fetch_sub(changes);  // those made during the save count for the next one
  server.last_save_unix.store(std::chrono::duration_cast<std::chrono::seconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count());
}

void finish_background_save(ServerState& server) {
  const std::lock_guard lock(server.background_mutex);
  if (server.background.joinable()) server.background.join();
}

}  // namespace ccf::serve
