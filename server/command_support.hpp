// What every command family of the server (CF.* in cf/commands.hpp, BF.* in bf/commands.hpp)
// shares: Redis's argument syntax, its common error texts, the facts a command table gives
// (COMMAND's reply, a Redis module's registration), and the one way a family finds or creates
// its key's value through a front end.
//
// A family's commands are function templates over what a front end (`ccf serve`'s
// commands.cpp, the Redis module) supplies:
//
//   Keys    Lookup<F> look_up(std::string_view key, std::type_identity<F>)
//                   what the key holds, seen as a value of type F: kFilter (an F, valid until
//                   the command returns), kNothing (no key) or kOther (another type)
//           Held create(std::string_view key, Make make)
//                   stores make()'s value (a std::unique_ptr<F>; make may throw std::bad_alloc)
//                   unless the key exists; returns what the key held: kNothing means stored,
//                   kFilter an F was there, kOther another type
//   Args    a random-access range of the command's words, each convertible to string_view
//   Reply   ReplyWriter's calls (resp.hpp): simple, error, integer, boolean, bulk, null,
//           array, map, proto
#pragma once

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

namespace ccf::serve {

// ---- text ----------------------------------------------------------------------------------

inline constexpr std::string_view kWrongType =
    "WRONGTYPE Operation against a key holding the wrong kind of value";
inline constexpr std::string_view kNotFound = "ERR not found";

// Redis's strict integer syntax: optional '-', digits, no '+', no spaces, no leading zeros.
inline std::optional<long long> parse_integer(std::string_view text) {
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

// Redis's double syntax (string2d): the whole word is a strtod number -- `0.01`, `1e-2`, `.01`,
// `+0.01`, `1` -- with no leading space; NaN, overflow and underflow to zero are refused.
inline std::optional<double> parse_double(std::string_view text) {
  if (text.empty() || text.size() > 64 || std::isspace(static_cast<unsigned char>(text[0]))) {
    return std::nullopt;
  }
  const std::string copy(text);  // strtod needs a terminated string
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size() || std::isnan(value) || errno == ERANGE) {
    return std::nullopt;
  }
  return value;
}

inline std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

template <class Reply>
void arity_error(Reply& reply, std::string_view command) {
  reply.error("ERR wrong number of arguments for '" + lower(command) + "' command");
}

// args[from], args[from + 1], ... as views.
template <class Args>
std::vector<std::string_view> words(const Args& args, std::size_t from) {
  std::vector<std::string_view> out;
  out.reserve(args.size() - from);
  for (std::size_t i = from; i < args.size(); ++i) out.emplace_back(args[i]);
  return out;
}

// ---- keys ----------------------------------------------------------------------------------

// What a key holds, seen by a command that needs a value of one family's type.
enum class Held { kNothing, kFilter, kOther };
template <class Filter>
struct Lookup {
  Held held;
  Filter* filter;  // when held == kFilter
};

template <class Filter, class Keys>
Lookup<Filter> look_up(Keys& keys, std::string_view key) {
  return keys.look_up(key, std::type_identity<Filter>{});
}

// The key's value, created by make() if the key does not exist. nullptr after replying with
// an error (another type; no memory for the new value).
template <class Filter, class Keys, class Reply, class Make>
Filter* filter_for_write(Keys& keys, Reply& reply, std::string_view key, Make make) {
  try {
    // Another client may drop the key between the creation and the look-up: then again.
    for (;;) {
      const Lookup<Filter> found = look_up<Filter>(keys, key);
      if (found.held == Held::kFilter) return found.filter;
      if (found.held == Held::kOther) break;
      keys.create(key, make);
    }
    reply.error(kWrongType);
  } catch (const std::bad_alloc&) {
    reply.error("ERR Insufficient memory to create filter");
  }
  return nullptr;
}

// The family's EXISTS and MEXISTS: `key item [item ...]` looked up in the key's Filter, every
// answer false for a missing key or one of another type (both families answer so); MEXISTS's
// items through the filter's prefetching contains_many.
template <class Filter, class Keys, class Args, class Reply>
void exists_command(Keys& keys, const Args& args, Reply& reply, bool many) {
  if (many ? args.size() < 3 : args.size() != 3) return arity_error(reply, args[0]);
  const Lookup<Filter> found = look_up<Filter>(keys, args[1]);
  if (!many) return reply.boolean(found.filter != nullptr && found.filter->contains(args[2]));
  const std::vector<std::string_view> items = words(args, 2);
  const std::unique_ptr<bool[]> hits = std::make_unique<bool[]>(items.size());  // false
  if (found.filter) found.filter->contains_many(items, {hits.get(), items.size()});
  reply.array(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) reply.boolean(hits[i]);
}

// SCANDUMP's chunks never cross a sub-filter's (or blob's) boundary and hold at most this many
// bytes.
inline constexpr std::uint64_t kMaxChunkBytes = 16u << 20;

// ---- command tables ------------------------------------------------------------------------

// What COMMAND reports of a command and what a Redis module registers: arity (negative: at
// least that many words), flags in Redis's spelling (space-separated), key positions.
struct CommandFacts {
  std::string_view name;
  int arity;
  std::string_view flags;
  int first_key, last_key, step;
};

inline std::vector<std::string_view> flag_words(const CommandFacts& facts) {
  std::vector<std::string_view> words;
  for (std::string_view rest = facts.flags; !rest.empty();) {
    const std::size_t space = std::min(rest.find(' '), rest.size());
    words.push_back(rest.substr(0, space));
    rest.remove_prefix(std::min(space + 1, rest.size()));
  }
  return words;
}

inline bool has_flag(const CommandFacts& facts, std::string_view flag) {
  const std::vector<std::string_view> words = flag_words(facts);
  return std::find(words.begin(), words.end(), flag) != words.end();
}

// A family's table: `command_table(Command{})`, which each family defines beside its enum of
// commands, in the table's order.

// The family's command of that lower-case name.
template <class Command>
std::optional<Command> find_command(std::string_view name) {
  const auto& table = command_table(Command{});
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (table[i].name == name) return static_cast<Command>(i);
  }
  return std::nullopt;
}

template <class Command>
const CommandFacts& facts_of(Command command) {
  return command_table(command)[static_cast<std::size_t>(command)];
}

}  // namespace ccf::serve
