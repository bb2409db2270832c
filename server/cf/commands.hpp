// The CF.* commands of the contract (docs/server.md), written once for both front ends: `ccf
// serve` (commands.cpp) and the Redis module (tools/redis_module/), as templates over the Keys,
// Args and Reply that command_support.hpp describes; a key's value here is a CfFilter.
//
// run() dispatches one command by its facts (kCfCommands), which also give what COMMAND
// reports and the flags a Redis module registers.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "server/cf/filter.hpp"
#include "server/command_support.hpp"

namespace ccf::serve {

// ---- filter parameters ---------------------------------------------------------------------

inline constexpr long long kMaxCapacity = 1073741824;
inline constexpr long long kDefaultCapacity = 1024;
inline constexpr unsigned kDefaultBucketSize = 2;
inline constexpr unsigned kDefaultMaxIterations = 20;
inline constexpr unsigned kDefaultExpansion = 1;
inline constexpr std::string_view kBucketSizeRefused =
    "BUCKETSIZE: ccf supports 1, 2 or 4 slots per bucket (3 is rounded up to 4)";

// Buckets of the first sub-filter: the smallest power of two >= capacity / bucket size.
inline CfParams sized(long long capacity, unsigned bucket_size, unsigned max_iterations,
                      unsigned expansion) {
  CfParams params;
  params.bucket_size = bucket_size == 3 ? 4 : bucket_size;
  params.buckets =
      std::bit_ceil(std::max<std::uint64_t>(1, static_cast<std::uint64_t>(capacity) / bucket_size));
  params.max_iterations = max_iterations;
  params.expansion = expansion == 0 ? 0 : std::bit_ceil(expansion);
  return params;
}

// The key's filter, created with `params` if the key does not exist. nullptr after replying
// with an error.
template <class Keys, class Reply>
CfFilter* cf_for_write(Keys& keys, Reply& reply, std::string_view key, const CfParams& params) {
  return filter_for_write<CfFilter>(keys, reply, key,
                                    [&] { return std::make_unique<CfFilter>(params); });
}

// ---- CF.* ---------------------------------------------------------------------------------

template <class Keys, class Args, class Reply>
void cf_reserve(Keys& keys, const Args& args, Reply& reply) {
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
    const Held held = keys.create(args[1], [&] { return std::make_unique<CfFilter>(params); });
    if (held == Held::kNothing) return reply.simple("OK");
    reply.error(held == Held::kFilter ? std::string_view("ERR item exists") : kWrongType);
  } catch (const std::bad_alloc&) {
    reply.error("ERR Insufficient memory to create filter");
  }
}

inline const CfParams& default_params() {
  static const CfParams params =
      sized(kDefaultCapacity, kDefaultBucketSize, kDefaultMaxIterations, kDefaultExpansion);
  return params;
}

template <class Keys, class Args, class Reply>
void cf_add(Keys& keys, const Args& args, Reply& reply, bool only_if_absent) {
  if (args.size() != 3) return arity_error(reply, args[0]);
  CfFilter* const filter = cf_for_write(keys, reply, args[1], default_params());
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

template <class Keys, class Args, class Reply>
void cf_insert(Keys& keys, const Args& args, Reply& reply, bool only_if_absent) {
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
    const Lookup<CfFilter> found = look_up<CfFilter>(keys, args[1]);
    if (found.held == Held::kOther) return reply.error(kWrongType);
    if (found.held == Held::kNothing) return reply.error(kNotFound);
    filter = found.filter;
  } else {
    filter =
        cf_for_write(keys, reply, args[1],
                     sized(capacity, kDefaultBucketSize, kDefaultMaxIterations, kDefaultExpansion));
    if (filter == nullptr) return;
  }
  if (filter->at_max_filters()) return reply.error("Maximum expansions reached");
  // Plain adds go through the batch pipeline until the newest sub-filter is full.
  const std::size_t batched = only_if_absent ? 0 : filter->add_many(words(args, items));
  reply.array(args.size() - items);
  for (std::size_t i = items; i < args.size(); ++i) {
    const AddResult result =
        i - items < batched ? AddResult::kAdded : filter->add(args[i], only_if_absent);
    if (only_if_absent) {  // integers in both protocols
      reply.integer(result == AddResult::kAdded ? 1 : result == AddResult::kPresent ? 0 : -1);
    } else if (reply.proto() == 3) {
      reply.boolean(result == AddResult::kAdded);
    } else {
      reply.integer(result == AddResult::kAdded ? 1 : -1);
    }
  }
}

template <class Keys, class Args, class Reply>
void cf_count(Keys& keys, const Args& args, Reply& reply) {
  if (args.size() != 3) return arity_error(reply, args[0]);
  const Lookup<CfFilter> found = look_up<CfFilter>(keys, args[1]);
  reply.integer(found.filter ? static_cast<long long>(found.filter->count(args[2])) : 0);
}

template <class Keys, class Args, class Reply>
void cf_del(Keys& keys, const Args& args, Reply& reply) {
  if (args.size() != 3) return arity_error(reply, args[0]);
  const Lookup<CfFilter> found = look_up<CfFilter>(keys, args[1]);
  if (!found.filter) return reply.error("Not found");
  reply.boolean(found.filter->erase(args[2]));
}

template <class Keys, class Args, class Reply>
void cf_info(Keys& keys, const Args& args, Reply& reply) {
  if (args.size() != 2) return arity_error(reply, args[0]);
  const Lookup<CfFilter> found = look_up<CfFilter>(keys, args[1]);
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

template <class Keys, class Args, class Reply>
void cf_scandump(Keys& keys, const Args& args, Reply& reply) {
  if (args.size() != 3) return arity_error(reply, args[0]);
  const std::optional<long long> iterator = parse_integer(args[2]);
  if (!iterator || *iterator < 0) return reply.error("Invalid position");
  const Lookup<CfFilter> found = look_up<CfFilter>(keys, args[1]);
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

template <class Keys, class Args, class Reply>
void cf_loadchunk(Keys& keys, const Args& args, Reply& reply) {
  if (args.size() != 4) return arity_error(reply, args[0]);
  const std::optional<long long> iterator = parse_integer(args[2]);
  if (!iterator || *iterator == 0) return reply.error("Invalid position");
  const std::string_view data = args[3];
  if (*iterator == 1) {
    const Lookup<CfFilter> found = look_up<CfFilter>(keys, args[1]);
    if (found.held == Held::kFilter) return reply.error("ERR item exists");
    if (found.held == Held::kOther) return reply.error(kWrongType);
    if (!CfFilter::header_length_fits(data)) return reply.error("Invalid header");
    const std::optional<CfFilter::DumpHeader> header = CfFilter::parse_header(data);
    if (!header) return reply.error("Couldn't create filter!");
    try {
      std::unique_ptr<CfFilter> made = CfFilter::from_header(*header);
      if (!made) return reply.error("Couldn't create filter!");
      const Held held = keys.create(args[1], [&] { return std::move(made); });
      if (held == Held::kNothing) return reply.simple("OK");
      // Another client made the key meanwhile.
      return reply.error(held == Held::kFilter ? std::string_view("ERR item exists") : kWrongType);
    } catch (const std::bad_alloc&) {
      return reply.error("Couldn't create filter!");
    }
  }
  const Lookup<CfFilter> found = look_up<CfFilter>(keys, args[1]);
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
template <class Keys, class Args, class Reply>
void cf_compact(Keys& keys, const Args& args, Reply& reply) {
  if (args.size() != 2) return arity_error(reply, args[0]);
  const Lookup<CfFilter> found = look_up<CfFilter>(keys, args[1]);
  if (!found.filter) return reply.error("Cuckoo filter was not found");
  found.filter->compact(true);
  reply.simple("OK");
}

// The filter's parameters and counters in one line.
template <class Keys, class Args, class Reply>
void cf_debug(Keys& keys, const Args& args, Reply& reply) {
  if (args.size() != 2) return arity_error(reply, args[0]);
  const Lookup<CfFilter> found = look_up<CfFilter>(keys, args[1]);
  if (found.held == Held::kNothing) return reply.error(kNotFound);
  if (found.held == Held::kOther) return reply.error(kWrongType);
  const CfFilter::Info info = found.filter->info();
  std::string line = "bktsize:";
  line.append(std::to_string(info.bucket_size)).append(" buckets:");
  line.append(std::to_string(info.buckets)).append(" items:");
  line.append(std::to_string(info.items)).append(" deletes:");
  line.append(std::to_string(info.deletes)).append(" filters:");
  line.append(std::to_string(info.filters)).append(" max_iterations:");
  line.append(std::to_string(info.max_iterations)).append(" expansion:");
  line.append(std::to_string(info.expansion));
  reply.bulk(line);
}

// ---- the command table ---------------------------------------------------------------------

enum class CfCommand : std::uint8_t {
  kReserve,
  kAdd,
  kAddNx,
  kInsert,
  kInsertNx,
  kExists,
  kMExists,
  kCount,
  kDel,
  kInfo,
  kScanDump,
  kLoadChunk,
  kCompact,
  kDebug,
};

// In CfCommand's order. CF.COMPACT moves fingerprints, so it is a write here (RedisBloom flags
// it read-only): a replica then gets the same layout from its master.
inline constexpr std::array<CommandFacts, 14> kCfCommands = {{
    {"cf.reserve", -3, "write deny-oom", 1, 1, 1},
    {"cf.add", 3, "write deny-oom", 1, 1, 1},
    {"cf.addnx", 3, "write deny-oom", 1, 1, 1},
    {"cf.insert", -4, "write deny-oom", 1, 1, 1},
    {"cf.insertnx", -4, "write deny-oom", 1, 1, 1},
    {"cf.exists", 3, "readonly fast", 1, 1, 1},
    {"cf.mexists", -3, "readonly fast", 1, 1, 1},
    {"cf.count", 3, "readonly fast", 1, 1, 1},
    {"cf.del", 3, "write fast", 1, 1, 1},
    {"cf.info", 2, "readonly fast", 1, 1, 1},
    {"cf.scandump", 3, "readonly fast", 1, 1, 1},
    {"cf.loadchunk", 4, "write deny-oom", 1, 1, 1},
    {"cf.compact", -1, "write", 1, 1, 1},
    {"cf.debug", 2, "readonly fast", 1, 1, 1},
}};

constexpr const auto& command_table(CfCommand) {
  return kCfCommands;
}

template <class Keys, class Args, class Reply>
void run(CfCommand command, Keys& keys, const Args& args, Reply& reply) {
  switch (command) {
    case CfCommand::kReserve:
      return cf_reserve(keys, args, reply);
    case CfCommand::kAdd:
      return cf_add(keys, args, reply, false);
    case CfCommand::kAddNx:
      return cf_add(keys, args, reply, true);
    case CfCommand::kInsert:
      return cf_insert(keys, args, reply, false);
    case CfCommand::kInsertNx:
      return cf_insert(keys, args, reply, true);
    case CfCommand::kExists:
      return exists_command<CfFilter>(keys, args, reply, false);
    case CfCommand::kMExists:
      return exists_command<CfFilter>(keys, args, reply, true);
    case CfCommand::kCount:
      return cf_count(keys, args, reply);
    case CfCommand::kDel:
      return cf_del(keys, args, reply);
    case CfCommand::kInfo:
      return cf_info(keys, args, reply);
    case CfCommand::kScanDump:
      return cf_scandump(keys, args, reply);
    case CfCommand::kLoadChunk:
      return cf_loadchunk(keys, args, reply);
    case CfCommand::kCompact:
      return cf_compact(keys, args, reply);
    case CfCommand::kDebug:
      return cf_debug(keys, args, reply);
  }
}

}  // namespace ccf::serve
