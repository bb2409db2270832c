// The BF.* commands of the contract (../shared/BF-COMMANDS.md, docs/server.md), written once for
// both front ends -- `ccf serve` (commands.cpp) and the Redis module (tools/redis_module/) -- as
// templates over the Keys, Args and Reply that command_support.hpp describes; a key's value
// here is a BfFilter.
//
// Where the contract leaves RedisBloom's hash and byte layout to the implementation, ccf's
// sub-filters are its blocked Bloom filters: BF.INFO's Size is the library filter's
// memory_bytes(), BF.DEBUG shows each sub-filter's own bytes and hash count, and BF.SCANDUMP's
// header is the library's (docs/server.md says what each returns).
//
// run() dispatches one command by its facts (kBfCommands).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/bf/filter.hpp"
#include "server/command_support.hpp"

namespace ccf::serve {

// ---- parameters ----------------------------------------------------------------------------

inline constexpr long long kBfMaxCapacity = 1073741824;
inline constexpr long long kBfMaxExpansion = 32768;
// Error rates above this are lowered to it, silently (RedisBloom's cap).
inline constexpr double kBfMaxErrorRate = 0.25;

// What an auto-created filter gets (BF.ADD, BF.MADD, BF.INSERT without options) and what decides
// whether BF.RESERVE's filter scales: RedisBloom's bf-error-rate, bf-initial-size and
// bf-expansion-factor. The Redis module's configs change them (the values are validated there);
// `ccf serve` keeps RedisBloom's defaults.
struct BfDefaults {
  std::atomic<double> error_rate{0.01};
  std::atomic<long long> capacity{100};
  std::atomic<long long> expansion{2};
};
inline BfDefaults& bf_defaults() {
  static BfDefaults defaults;
  return defaults;
}

inline ScalableBloomOptions bf_default_options() {
  const BfDefaults& defaults = bf_defaults();
  ScalableBloomOptions options;
  options.error_rate = std::min(defaults.error_rate.load(), kBfMaxErrorRate);
  options.capacity = static_cast<std::uint64_t>(defaults.capacity.load());
  options.expansion = static_cast<std::uint32_t>(defaults.expansion.load());
  return options;
}

template <class Keys, class Reply>
BfFilter* bf_for_write(Keys& keys, Reply& reply, std::string_view key,
                       const ScalableBloomOptions& options) {
  return filter_for_write<BfFilter>(keys, reply, key,
                                    [&] { return std::make_unique<BfFilter>(options); });
}

// ---- BF.* ----------------------------------------------------------------------------------

// The first argument from `from` on that is `word` (case-insensitive), or 0.
template <class Args>
std::size_t find_word(const Args& args, std::size_t from, std::string_view word) {
  for (std::size_t i = from; i < args.size(); ++i) {
    if (lower(args[i]) == word) return i;
  }
  return 0;
}

template <class Keys, class Args, class Reply>
void bf_reserve(Keys& keys, const Args& args, Reply& reply) {
  if (args.size() < 4 || args.size() > 7) return arity_error(reply, args[0]);
  const std::optional<double> rate = parse_double(args[2]);
  if (!rate) return reply.error("ERR bad error rate");
  if (!(*rate > 0.0 && *rate < 1.0)) {
    return reply.error("ERR error rate must be in the range (0.000000, 1.000000)");
  }
  const std::optional<long long> capacity = parse_integer(args[3]);
  if (!capacity) return reply.error("ERR bad capacity");
  if (*capacity < 1 || *capacity > kBfMaxCapacity) {
    return reply.error("ERR capacity must be in the range [1, 1073741824]");
  }
  const long long configured = bf_defaults().expansion.load();
  bool scaling = configured != 0 && find_word(args, 4, "nonscaling") == 0;
  long long expansion = configured;
  if (const std::size_t at = find_word(args, 4, "expansion"); at != 0) {
    if (at + 1 >= args.size()) return reply.error("ERR no expansion");
    const std::optional<long long> value = parse_integer(args[at + 1]);
    if (!value) return reply.error("ERR bad expansion");
    if (*value == 0) {
      scaling = false;
    } else {
      if (!scaling) return reply.error("Nonscaling filters cannot expand");
      if (*value < 0 || *value > kBfMaxExpansion) {
        return reply.error("ERR expansion must be in the range [0, 32768]");
      }
      expansion = *value;
    }
  }
  ScalableBloomOptions options;
  options.error_rate = std::min(*rate, kBfMaxErrorRate);
  options.capacity = static_cast<std::uint64_t>(*capacity);
  options.expansion = scaling ? static_cast<std::uint32_t>(expansion) : 0;
  try {
    const Held held = keys.create(args[1], [&] { return std::make_unique<BfFilter>(options); });
    if (held == Held::kNothing) return reply.simple("OK");
    reply.error(held == Held::kFilter ? std::string_view("ERR item exists") : kWrongType);
  } catch (const std::bad_alloc&) {
    reply.error("ERR Insufficient memory to create filter");
  }
}

// One add's answer: a boolean, or the error RedisBloom gives it.
template <class Reply>
void add_reply(Reply& reply, BloomAddResult result) {
  switch (result) {
    case BloomAddResult::kAdded:
      return reply.boolean(true);
    case BloomAddResult::kPresent:
      return reply.boolean(false);
    case BloomAddResult::kFull:
      return reply.error("ERR non scaling filter is full");
    case BloomAddResult::kNoMemory:
      return reply.error("ERR problem inserting into filter");
  }
}

template <class Keys, class Args, class Reply>
void bf_add(Keys& keys, const Args& args, Reply& reply) {
  if (args.size() != 3) return arity_error(reply, args[0]);
  BfFilter* const filter = bf_for_write(keys, reply, args[1], bf_default_options());
  if (filter != nullptr) add_reply(reply, filter->add(args[2]));
}

// BF.MADD's and BF.INSERT's reply: one element per item tried (a full non-scaling filter ends
// the array early).
template <class Reply, class Args>
void add_in_order(BfFilter& filter, const Args& args, std::size_t first_item, Reply& reply) {
  const std::vector<BloomAddResult> results = filter.add_in_order(words(args, first_item));
  reply.array(results.size());
  for (const BloomAddResult result : results) add_reply(reply, result);
}

template <class Keys, class Args, class Reply>
void bf_madd(Keys& keys, const Args& args, Reply& reply) {
  if (args.size() < 3) return arity_error(reply, args[0]);
  BfFilter* const filter = bf_for_write(keys, reply, args[1], bf_default_options());
  if (filter != nullptr) add_in_order(*filter, args, 2, reply);
}

template <class Keys, class Args, class Reply>
void bf_insert(Keys& keys, const Args& args, Reply& reply) {
  if (args.size() < 4) return arity_error(reply, args[0]);
  ScalableBloomOptions options = bf_default_options();
  long long capacity = static_cast<long long>(options.capacity);
  long long expansion = options.expansion;
  double rate = options.error_rate;
  bool no_create = false, non_scaling = false;
  std::size_t items = 0;  // index of the first item; 0: no ITEMS yet
  for (std::size_t i = 2; i < args.size() && items == 0; ++i) {
    // RedisBloom tells the options apart by their letters.
    const std::string word = lower(args[i]);
    const auto letter = [&](std::size_t at) { return at < word.size() ? word[at] : '\0'; };
    // The value after an option word, parsed by `parse` and kept if `valid`; false after
    // replying (no value: the arity error; a bad one: `refusal`).
    const auto option = [&](auto parse, auto valid, std::string_view refusal, auto& into) {
      if (i + 1 >= args.size()) {
        arity_error(reply, args[0]);
        return false;
      }
      const auto parsed = parse(std::string_view(args[++i]));
      if (!parsed || !valid(*parsed)) {
        reply.error(refusal);
        return false;
      }
      into = *parsed;
      return true;
    };
    const auto in = [](long long low, long long high) {
      return [=](long long value) { return value >= low && value <= high; };
    };
    if (letter(0) == 'i') {
      items = i + 1;
    } else if (letter(0) == 'c') {
      if (!option(parse_integer, in(1, kBfMaxCapacity), "Bad capacity", capacity)) return;
    } else if (letter(0) == 'e' && letter(1) == 'r') {
      const auto below_one = [](double value) { return value > 0.0 && value < 1.0; };
      if (!option(parse_double, below_one, "Bad error rate", rate)) return;
    } else if (letter(0) == 'e') {
      if (!option(parse_integer, in(0, kBfMaxExpansion), "Bad expansion", expansion)) return;
    } else if (letter(0) == 'n' && letter(2) == 'c') {
      no_create = true;
    } else if (letter(0) == 'n') {
      non_scaling = true;
    } else {
      return reply.error("Unknown argument received");
    }
  }
  if (items == 0 || items >= args.size()) return arity_error(reply, args[0]);
  options.capacity = static_cast<std::uint64_t>(capacity);
  options.error_rate = std::min(rate, kBfMaxErrorRate);
  // EXPANSION 0 makes the filter non-scaling, and NONSCALING wins over an EXPANSION.
  options.expansion = non_scaling ? 0 : static_cast<std::uint32_t>(expansion);
  BfFilter* filter = nullptr;
  if (no_create) {
    const Lookup<BfFilter> found = look_up<BfFilter>(keys, args[1]);
    if (found.held == Held::kOther) return reply.error(kWrongType);
    if (found.held == Held::kNothing) return reply.error(kNotFound);
    filter = found.filter;
  } else {
    filter = bf_for_write(keys, reply, args[1], options);
    if (filter == nullptr) return;
  }
  add_in_order(*filter, args, items, reply);
}

template <class Keys, class Args, class Reply>
void bf_card(Keys& keys, const Args& args, Reply& reply) {
  if (args.size() != 2) return arity_error(reply, args[0]);
  const Lookup<BfFilter> found = look_up<BfFilter>(keys, args[1]);
  if (found.held == Held::kOther) return reply.error(kWrongType);
  reply.integer(found.filter ? static_cast<long long>(found.filter->info().items) : 0);
}

// The filter under args[1]; nullptr after replying "not found" or WRONGTYPE.
template <class Keys, class Args, class Reply>
BfFilter* existing_filter(Keys& keys, const Args& args, Reply& reply) {
  const Lookup<BfFilter> found = look_up<BfFilter>(keys, args[1]);
  if (found.held == Held::kNothing) reply.error(kNotFound);
  if (found.held == Held::kOther) reply.error(kWrongType);
  return found.filter;
}

template <class Keys, class Args, class Reply>
void bf_info(Keys& keys, const Args& args, Reply& reply) {
  if (args.size() != 2 && args.size() != 3) return arity_error(reply, args[0]);
  BfFilter* const filter = existing_filter(keys, args, reply);
  if (filter == nullptr) return;
  const BfFilter::Info info = filter->info();
  struct Field {
    std::string_view word, name;
    std::optional<std::uint64_t> value;  // nullopt: nil
  };
  const std::array<Field, 5> fields = {{
      {"capacity", "Capacity", info.capacity},
      {"size", "Size", info.size_bytes},
      {"filters", "Number of filters", info.filters},
      {"items", "Number of items inserted", info.items},
      {"expansion", "Expansion rate",
       info.expansion == 0 ? std::nullopt : std::optional<std::uint64_t>(info.expansion)},
  }};
  const auto value = [&](const Field& field) {
    if (field.value) return reply.integer(static_cast<long long>(*field.value));
    reply.null();
  };
  if (args.size() == 2) {
    reply.map(fields.size());
    for (const Field& field : fields) {
      reply.simple(field.name);
      value(field);
    }
    return;
  }
  const std::string wanted = lower(args[2]);
  for (const Field& field : fields) {
    if (field.word != wanted) continue;
    if (reply.proto() == 3) {
      reply.map(1);
      reply.simple(field.name);
    } else {
      reply.array(1);
    }
    return value(field);
  }
  reply.error("Invalid information value");
}

template <class Keys, class Args, class Reply>
void bf_scandump(Keys& keys, const Args& args, Reply& reply) {
  if (args.size() != 3) return arity_error(reply, args[0]);
  BfFilter* const filter = existing_filter(keys, args, reply);
  if (filter == nullptr) return;
  const std::optional<long long> iterator = parse_integer(args[2]);
  if (!iterator) return reply.error("Second argument must be numeric");
  reply.array(2);
  if (*iterator == 0) {
    reply.integer(1);
    return reply.bulk(filter->header());
  }
  const std::optional<std::string> chunk =
      *iterator < 0 ? std::nullopt : filter->chunk(static_cast<std::uint64_t>(*iterator));
  if (!chunk) {
    reply.integer(0);
    return reply.bulk("");
  }
  reply.integer(*iterator + static_cast<long long>(chunk->size()));
  reply.bulk(*chunk);
}

template <class Keys, class Args, class Reply>
void bf_loadchunk(Keys& keys, const Args& args, Reply& reply) {
  if (args.size() != 4) return arity_error(reply, args[0]);
  const std::optional<long long> iterator = parse_integer(args[2]);
  if (!iterator) return reply.error("ERR Second argument must be numeric");
  const std::string_view data = args[3];
  const Lookup<BfFilter> found = look_up<BfFilter>(keys, args[1]);
  if (found.held == Held::kOther) return reply.error(kWrongType);
  if (found.held == Held::kNothing) {
    if (*iterator != 1) return reply.error(kNotFound);
    try {
      std::unique_ptr<BfFilter> made = BfFilter::from_header(data);
      if (!made) return reply.error("ERR received bad data");
      const Held held = keys.create(args[1], [&] { return std::move(made); });
      if (held == Held::kNothing) return reply.simple("OK");
      // Another client made the key meanwhile: a header never overwrites a filter.
      return reply.error(held == Held::kFilter ? std::string_view("ERR received bad data")
                                               : kWrongType);
    } catch (const std::bad_alloc&) {
      return reply.error("ERR received bad data");
    }
  }
  switch (found.filter->load_chunk(*iterator, data)) {
    case BfFilter::LoadResult::kOk:
      return reply.simple("OK");
    case BfFilter::LoadResult::kBadData:
      return reply.error("ERR received bad data");
    case BfFilter::LoadResult::kNoLink:
      return reply.error("ERR invalid offset - no link found");
    case BfFilter::LoadResult::kTooBig:
      return reply.error("ERR invalid chunk - Too big for current filter");
  }
}

// Undocumented in RedisBloom: the items, then one line per sub-filter.
template <class Keys, class Args, class Reply>
void bf_debug(Keys& keys, const Args& args, Reply& reply) {
  if (args.size() != 2) return arity_error(reply, args[0]);
  BfFilter* const filter = existing_filter(keys, args, reply);
  if (filter == nullptr) return;
  const std::vector<ScalableBloomFilter::SubFilterInfo> subs = filter->sub_filters();
  std::uint64_t items = 0;
  for (const auto& sub : subs) items += sub.items;
  reply.array(1 + subs.size());
  reply.bulk("size:" + std::to_string(items));
  for (const auto& sub : subs) {
    std::array<char, 32> ratio;
    std::snprintf(ratio.data(), ratio.size(), "%g", sub.error_rate);
    reply.bulk("bytes:" + std::to_string(sub.bytes) + " bits:" + std::to_string(sub.bits) +
               " hashes:" + std::to_string(sub.hashes) +
               " hashwidth:64 capacity:" + std::to_string(sub.capacity) +
               " size:" + std::to_string(sub.items) + " ratio:" + ratio.data());
  }
}

// ---- the command table ---------------------------------------------------------------------

enum class BfCommand : std::uint8_t {
  kReserve,
  kAdd,
  kMAdd,
  kInsert,
  kExists,
  kMExists,
  kInfo,
  kCard,
  kScanDump,
  kLoadChunk,
  kDebug,
};

// In BfCommand's order.
inline constexpr std::array<CommandFacts, 11> kBfCommands = {{
    {"bf.reserve", -4, "write deny-oom", 1, 1, 1},
    {"bf.add", 3, "write deny-oom", 1, 1, 1},
    {"bf.madd", -3, "write deny-oom", 1, 1, 1},
    {"bf.insert", -4, "write deny-oom", 1, 1, 1},
    {"bf.exists", 3, "readonly fast", 1, 1, 1},
    {"bf.mexists", -3, "readonly fast", 1, 1, 1},
    {"bf.info", -2, "readonly fast", 1, 1, 1},
    {"bf.card", 2, "readonly fast", 1, 1, 1},
    {"bf.scandump", 3, "readonly fast", 1, 1, 1},
    {"bf.loadchunk", 4, "write deny-oom", 1, 1, 1},
    {"bf.debug", 2, "readonly fast", 1, 1, 1},
}};

constexpr const auto& command_table(BfCommand) {
  return kBfCommands;
}

template <class Keys, class Args, class Reply>
void run(BfCommand command, Keys& keys, const Args& args, Reply& reply) {
  switch (command) {
    case BfCommand::kReserve:
      return bf_reserve(keys, args, reply);
    case BfCommand::kAdd:
      return bf_add(keys, args, reply);
    case BfCommand::kMAdd:
      return bf_madd(keys, args, reply);
    case BfCommand::kInsert:
      return bf_insert(keys, args, reply);
    case BfCommand::kExists:
      return exists_command<BfFilter>(keys, args, reply, false);
    case BfCommand::kMExists:
      return exists_command<BfFilter>(keys, args, reply, true);
    case BfCommand::kInfo:
      return bf_info(keys, args, reply);
    case BfCommand::kCard:
      return bf_card(keys, args, reply);
    case BfCommand::kScanDump:
      return bf_scandump(keys, args, reply);
    case BfCommand::kLoadChunk:
      return bf_loadchunk(keys, args, reply);
    case BfCommand::kDebug:
      return bf_debug(keys, args, reply);
  }
}

}  // namespace ccf::serve
