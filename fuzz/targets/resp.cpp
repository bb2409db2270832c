// The RESP request parser and reply writer of `ccf serve` (server/resp.hpp) on
// arbitrary client byte streams, under small limits so that every limit is reached.
//
// Each input is parsed as a server parses its read buffer (parse while the status is kCommand,
// dropping `consumed` bytes after every call), three ways: in one piece, one byte at a time, and
// in reads whose sizes come from a generator seeded with the input's first bytes.
//
// Properties: every kCommand consumes at least one byte and no more than is buffered, and holds
// 1 to max_array_length arguments of at most max_bulk_bytes each; a kNeedMore consumes no more
// than is buffered, and parsing what is left again gives kNeedMore consuming nothing (blank lines
// cannot make a server spin); a kError has a "Protocol error: " text; the bytes left buffered
// never exceed what a partial command within the limits can take; the three ways give the same
// commands, the same final status, the same error text and the same bytes left over. The parsed
// commands then go through the reply writer in RESP2 and RESP3: every reply type, read back by a
// strict reader, gives what was written; an array of bulk strings parses back as the command.
#include "server/resp.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "harness.hpp"

namespace {

using ccf::fuzz::require;
using ccf::serve::ParseStatus;
using ccf::serve::ReplyWriter;
using ccf::serve::RequestParser;
using ccf::serve::RespLimits;
using Args = std::vector<std::string>;

constexpr RespLimits kLimits{.max_bulk_bytes = 16, .max_array_length = 6, .max_inline_bytes = 40};

// The most bytes a partial command within kLimits can leave buffered: a count line, all but one
// argument whole ("$", a long long's digits, CRLF, payload, CRLF), and the last one partial (a
// header line of up to max_inline_bytes, or a whole header with its payload and the CR).
constexpr std::size_t kMaxPartial =
    (kLimits.max_array_length + 1) * (kLimits.max_inline_bytes + 25 + kLimits.max_bulk_bytes);

struct Outcome {
  std::vector<Args> commands;
  ParseStatus last = ParseStatus::kNeedMore;
  std::string error;
  std::string rest;  // the bytes left buffered after a final kNeedMore

  bool operator==(const Outcome&) const = default;
};

// Parses `bytes` in reads of `next_read()` bytes (at least 1), checking every call.
template <class NextRead>
Outcome parse_stream(std::string_view bytes, const RespLimits& limits, std::size_t max_partial,
                     NextRead next_read) {
  RequestParser parser(limits);
  Outcome out;
  std::string buffer;
  Args args;
  for (std::size_t at = 0; at < bytes.size();) {
    const std::size_t read = std::min(next_read(), bytes.size() - at);
    buffer.append(bytes.substr(at, read));
    at += read;
    for (;;) {
      std::size_t consumed = std::numeric_limits<std::size_t>::max();
      out.last = parser.parse(buffer, args, consumed);
      if (out.last == ParseStatus::kError) {
        out.error = parser.error();
        require(out.error.starts_with("Protocol error: "), "an error without its text");
        return out;
      }
      require(consumed <= buffer.size(), "parse consumed more than is buffered");
      if (out.last == ParseStatus::kCommand) {
        require(consumed > 0, "a command consumed nothing");
        require(!args.empty(), "a command without arguments");
        require(args.size() <= limits.max_array_length, "more arguments than max_array_length");
        for (const std::string& arg : args) {
          require(arg.size() <= limits.max_bulk_bytes, "an argument over max_bulk_bytes");
        }
        out.commands.push_back(args);
      }
      buffer.erase(0, consumed);
      if (out.last == ParseStatus::kNeedMore) break;
    }
    std::size_t again = 1;
    require(parser.parse(buffer, args, again) == ParseStatus::kNeedMore && again == 0,
            "parsing the rest after kNeedMore again changed something");
    require(buffer.size() <= max_partial, "more buffered than a partial command can take");
  }
  out.rest = buffer;
  return out;
}

// splitmix64: read sizes from a seed.
struct Reads {
  std::uint64_t state;
  std::size_t operator()() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return 1 + static_cast<std::size_t>(z % ((z >> 32) % 2 == 0 ? 8 : 96));
  }
};

// ---------------------------------------------------------------------------------------------
// Replies

// One reply element as a strict reader sees it: its type byte and its text (a bulk's payload, an
// integer's digits, an aggregate's count); `null` for "$-1" and "*-1".
struct Token {
  char type;
  std::string text;
  bool null = false;

  bool operator==(const Token&) const = default;
};

// Reads `in` as a sequence of RESP2/RESP3 reply elements, every one well formed; false if not.
bool read_tokens(std::string_view in, std::vector<Token>& tokens) {
  std::size_t pos = 0;
  while (pos < in.size()) {
    const char type = in[pos];
    const std::size_t crlf = in.find("\r\n", pos + 1);
    if (crlf == std::string_view::npos) return false;
    const std::string_view line = in.substr(pos + 1, crlf - pos - 1);
    pos = crlf + 2;
    long long number = 0;
    switch (type) {
      case '+':
      case '-':
        if (line.find_first_of("\r\n") != std::string_view::npos) return false;
        tokens.push_back({type, std::string(line)});
        break;
      case ':':
        if (!ccf::serve::detail::parse_resp_integer(line, number)) return false;
        tokens.push_back({type, std::string(line)});
        break;
      case '#':
        if (line != "t" && line != "f") return false;
        tokens.push_back({type, std::string(line)});
        break;
      case '_':
        if (!line.empty()) return false;
        tokens.push_back({type, ""});
        break;
      case '*':
      case '%':
        if (!ccf::serve::detail::parse_resp_integer(line, number)) return false;
        if (number == -1 && type == '*') {
          tokens.push_back({type, "", true});
        } else if (number >= 0) {
          tokens.push_back({type, std::string(line)});
        } else {
          return false;
        }
        break;
      case '$':
      case '=':
        if (!ccf::serve::detail::parse_resp_integer(line, number)) return false;
        if (number == -1 && type == '$') {
          tokens.push_back({type, "", true});
          break;
        }
        if (number < 0 || static_cast<std::size_t>(number) > in.size() - pos ||
            in.size() - pos - static_cast<std::size_t>(number) < 2 ||
            in.substr(pos + static_cast<std::size_t>(number), 2) != "\r\n") {
          return false;
        }
        tokens.push_back({type, std::string(in.substr(pos, static_cast<std::size_t>(number)))});
        pos += static_cast<std::size_t>(number) + 2;
        break;
      default:
        return false;
    }
  }
  return true;
}

// s with CR and LF replaced by spaces, as a simple string or error carries it.
std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\r' || c == '\n') c = ' ';
  }
  return s;
}

// Writes every reply type from `args` in protocol `proto`, reads the bytes back and compares them
// with what was written; the array of bulk strings also parses back as the command.
void check_replies(const Args& args, int proto) {
  const bool resp3 = proto == 3;
  std::string out;
  ReplyWriter writer(out, proto);
  require(writer.proto() == proto, "the writer forgot its protocol");
  std::vector<Token> expected;

  writer.array(args.size());
  expected.push_back({'*', std::to_string(args.size())});
  for (const std::string& arg : args) {
    writer.bulk(arg);
    expected.push_back({'$', arg});
  }
  {
    RequestParser parser(kLimits);
    Args again;
    std::size_t consumed = 0;
    require(parser.parse(out, again, consumed) == ParseStatus::kCommand && consumed == out.size() &&
                again == args,
            "an array of bulk strings does not parse back as the command");
  }
  writer.simple(args.front());
  expected.push_back({'+', one_line(args.front())});
  writer.error(args.back());
  expected.push_back({'-', one_line(args.back())});
  for (const long long v :
       {static_cast<long long>(args.front().size()), -static_cast<long long>(args.size()),
        std::numeric_limits<long long>::min()}) {
    writer.integer(v);
    expected.push_back({':', std::to_string(v)});
  }
  writer.null();
  expected.push_back(resp3 ? Token{'_', ""} : Token{'$', "", true});
  writer.null_array();
  expected.push_back(resp3 ? Token{'_', ""} : Token{'*', "", true});
  const bool flag = args.size() % 2 == 1;
  writer.boolean(flag);
  expected.push_back(resp3 ? Token{'#', flag ? "t" : "f"} : Token{':', flag ? "1" : "0"});
  const std::size_t pairs = args.size() / 2;
  writer.map(pairs);
  expected.push_back(resp3 ? Token{'%', std::to_string(pairs)}
                           : Token{'*', std::to_string(2 * pairs)});
  for (std::size_t i = 0; i < pairs; ++i) {
    writer.bulk(args[2 * i]);
    expected.push_back({'$', args[2 * i]});
    writer.simple(args[2 * i + 1]);
    expected.push_back({'+', one_line(args[2 * i + 1])});
  }
  writer.verbatim(args.back());
  expected.push_back(resp3 ? Token{'=', "txt:" + args.back()} : Token{'$', args.back()});

  std::vector<Token> tokens;
  require(read_tokens(out, tokens), "the writer wrote a malformed reply");
  require(tokens == expected, "the replies read back differ from those written");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);

  const Outcome whole = parse_stream(bytes, kLimits, kMaxPartial,
                                     [] { return std::numeric_limits<std::size_t>::max(); });
  const Outcome bytewise = parse_stream(bytes, kLimits, kMaxPartial, [] { return std::size_t{1}; });
  require(bytewise == whole, "byte-at-a-time reads parse differently from one read");
  std::uint64_t seed = 0;
  if (size > 0) std::memcpy(&seed, data, std::min<std::size_t>(size, sizeof seed));
  const Outcome chunked = parse_stream(bytes, kLimits, kMaxPartial, Reads{seed});
  require(chunked == whole, "reads of random sizes parse differently from one read");

  // The default limits: the same checks on every call, nothing to compare.
  static_cast<void>(
      parse_stream(bytes, RespLimits{}, std::numeric_limits<std::size_t>::max(), Reads{~seed}));

  for (const Args& args : whole.commands) {
    check_replies(args, 2);
    check_replies(args, 3);
  }
  return 0;
}
