// RESP, the Redis serialization protocol: the request parser and the reply writer of `ccf serve`.
//
// RequestParser reads what clients send: RESP arrays of bulk strings
// ("*2\r\n$4\r\nPING\r\n$2\r\nhi\r\n", what every client library sends) and inline commands
// ("PING hi\r\n", what a person types into telnet or nc). It follows Redis's own reader
// (networking.c: processMultibulkBuffer, processInlineBuffer, sdssplitargs) and answers a
// malformed request with the error text Redis sends, so a client sees the same protocol
// errors it would from Redis. Where Redis reads loosely, the parser is stricter: header
// integers are exactly Redis's string2ll (digits, an optional leading '-', no '+', no spaces,
// no leading zeros), a header line ends at its first '\r', which must be followed by '\n', and
// a bulk payload must be followed by "\r\n" (Redis skips those two bytes unread).
//
// Every input is bounded by RespLimits, so a hostile client cannot make the server allocate
// without bound: an argument's declared length, a command's declared argument count, the length
// of an inline line and of a header line ("*N" / "$N": Redis bounds both by the same
// constant, here max_inline_bytes). Nothing is allocated from a declared size: a command is
// first walked without copying anything (payloads are skipped, not scanned) and its arguments
// are copied out only once all of its bytes are buffered, so the memory a request costs is
// proportional to the bytes the client actually sent, and the caller bounds those with
// max_buffered_bytes().
//
// Between calls the parser keeps one thing: how far it walked an array command that was not
// yet complete, so that the next call goes on from there instead of walking every header line
// again (a command of a million small arguments arriving in small reads would otherwise cost
// time quadratic in its size). That is valid because a server erases the bytes a call consumed
// and only appends after them: the next call's input begins with the same partial command.
//
// Every verdict depends only on the bytes already seen: a prefix of a stream gives either
// kNeedMore or the verdict the whole stream gives, so splitting a stream into reads anywhere
// changes nothing (fuzz/targets/resp.cpp checks this).
//
// ReplyWriter appends replies in RESP2 or RESP3 (the protocol a client picks with HELLO).
#pragma once

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace ccf::serve {

// Bounds a client cannot exceed (a hostile client cannot make the server allocate without bound).
struct RespLimits {
  std::size_t max_bulk_bytes = 64u << 20;    // one argument
  std::size_t max_array_length = 1u << 20;   // arguments in one command
  std::size_t max_inline_bytes = 64u << 10;  // one inline command line; also one header line
};

enum class ParseStatus { kCommand, kNeedMore, kError };

namespace detail {

// Redis's string2ll: an optional '-', then digits without leading zeros ("0" itself aside; "-0"
// is rejected), within long long. Anything else, the empty string included, is rejected.
inline bool parse_resp_integer(std::string_view text, long long& value) noexcept {
  if (text.empty() || text.size() > 20) return false;
  if (text == "0") {
    value = 0;
    return true;
  }
  const bool negative = text.front() == '-';
  if (negative) text.remove_prefix(1);
  if (text.empty() || text.front() < '1' || text.front() > '9') return false;
  unsigned long long magnitude = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
    const auto digit = static_cast<unsigned long long>(c - '0');
    if (magnitude > (std::numeric_limits<unsigned long long>::max() - digit) / 10) return false;
    magnitude = magnitude * 10 + digit;
  }
  constexpr auto kMax = static_cast<unsigned long long>(std::numeric_limits<long long>::max());
  if (negative) {
    if (magnitude > kMax + 1) return false;
    value = magnitude == kMax + 1 ? std::numeric_limits<long long>::min()
                                  : -static_cast<long long>(magnitude);
  } else {
    if (magnitude > kMax) return false;
    value = static_cast<long long>(magnitude);
  }
  return true;
}

inline std::size_t saturating_add(std::size_t a, std::size_t b) noexcept {
  return a > std::numeric_limits<std::size_t>::max() - b ? std::numeric_limits<std::size_t>::max()
                                                         : a + b;
}

inline std::size_t saturating_mul(std::size_t a, std::size_t b) noexcept {
  return b != 0 && a > std::numeric_limits<std::size_t>::max() / b
             ? std::numeric_limits<std::size_t>::max()
             : a * b;
}

inline std::size_t decimal_digits(std::size_t value) noexcept {
  std::size_t digits = 1;
  for (; value >= 10; value /= 10) ++digits;
  return digits;
}

// isspace in the C locale: what sdssplitargs skips between words and accepts after a quote.
constexpr bool is_inline_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// What ends an unquoted word in sdssplitargs.
constexpr bool ends_inline_word(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

constexpr int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Redis's sdssplitargs on one line: words separated by whitespace; "double quotes" with the
// escapes \n \r \t \b \a \xHH and \<any other byte> for that byte; 'single quotes' where only \'
// is an escape. A quote may start inside a word (a"b c" is the one word "ab c"); a closing quote
// must be followed by whitespace or the end of the line. Unlike Redis, a NUL byte is an ordinary
// byte (Redis's C-string scan stops at it). Appends the words to `words`; false: unbalanced quotes.
inline bool split_inline_args(std::string_view line, std::vector<std::string>& words) {
  const std::size_t n = line.size();
  std::size_t i = 0;
  for (;;) {
    while (i < n && is_inline_space(line[i])) ++i;
    if (i == n) return true;
    std::string word;
    bool double_quoted = false;
    bool single_quoted = false;
    for (bool done = false; !done;) {
      if (double_quoted) {
        if (i == n) return false;
        const char c = line[i];
        if (c == '\\' && i + 3 < n && line[i + 1] == 'x' && hex_value(line[i + 2]) >= 0 &&
            hex_value(line[i + 3]) >= 0) {
          word.push_back(static_cast<char>(hex_value(line[i + 2]) * 16 + hex_value(line[i + 3])));
          i += 4;
        } else if (c == '\\' && i + 1 < n) {
          // Redis's escapes: \n \r \t \b \a; any other escaped character stands for itself.
          constexpr std::string_view kEscapes = "nrtba", kMeanings = "\n\r\t\b\a";
          const char escaped = line[i + 1];
          const std::size_t known = kEscapes.find(escaped);
          word.push_back(known == std::string_view::npos ? escaped : kMeanings[known]);
          i += 2;
        } else if (c == '"') {
          if (i + 1 < n && !is_inline_space(line[i + 1])) return false;
          ++i;
          done = true;
        } else {
          word.push_back(c);
          ++i;
        }
      } else if (single_quoted) {
        if (i == n) return false;
        const char c = line[i];
        if (c == '\\' && i + 1 < n && line[i + 1] == '\'') {
          word.push_back('\'');
          i += 2;
        } else if (c == '\'') {
          if (i + 1 < n && !is_inline_space(line[i + 1])) return false;
          ++i;
          done = true;
        } else {
          word.push_back(c);
          ++i;
        }
      } else if (i == n || ends_inline_word(line[i])) {
        done = true;
      } else if (line[i] == '"') {
        double_quoted = true;
        ++i;
      } else if (line[i] == '\'') {
        single_quoted = true;
        ++i;
      } else {
        word.push_back(line[i]);
        ++i;
      }
    }
    words.push_back(std::move(word));
  }
}

}  // namespace detail

// Parses client requests: RESP arrays of bulk strings ("*2\r\n$4\r\nPING\r\n$2\r\nhi\r\n") and
// inline commands ("PING hi\r\n", words split on whitespace as Redis's sdssplitargs does;
// "\n" alone also ends a line). A request is an array when its first byte is '*', else inline.
// Each call parses from the front of `input`. The caller must pass, on the next call, the input
// less the `consumed` bytes, with at most more bytes appended (what a server does); the walk of
// a partial array command goes on where it stopped (the header lines already checked are not
// read again). A call on any other input resets that (reset()).
//
// Empty commands -- a blank inline line (only whitespace, or just "\r\n" or "\n"), "*0", a
// negative count such as "*-1" -- are complete no-ops, as in Redis: parse skips them and goes
// on parsing in the same call. Their bytes count in `consumed`, with whatever status the call
// ends with:
//   kCommand   `args` holds the next command's arguments (cleared first, never empty);
//              `consumed` is the bytes of the empty commands before it and of the command.
//   kNeedMore  no complete command is buffered; `consumed` is the bytes of the empty commands
//              skipped (usually 0), which the caller drops like a command's bytes. The partial
//              command after them is not consumed. `args` is unspecified. Called again on the
//              rest, parse returns kNeedMore with `consumed` 0 until more bytes arrive, so blank
//              lines can make a server neither stall nor spin.
//   kError     the request is malformed; error() gives Redis's protocol error text (the server
//              replies "-ERR <text>" and closes). `consumed` is the bytes of the empty commands
//              before the malformed one; `args` is unspecified.
// So a server erases `consumed` bytes after every call and loops while the status is kCommand.
//
// Limits (RespLimits), each an error when exceeded:
//   an array's count above max_array_length            "Protocol error: invalid multibulk length"
//   a bulk length below 0 or above max_bulk_bytes      "Protocol error: invalid bulk length"
//   a header line ("*N", "$N") of more than max_inline_bytes bytes before its '\r'
//                          "Protocol error: too big mbulk count string" / "... bulk count string"
//   an inline line of more than max_inline_bytes bytes before its '\n' (a '\r' before the '\n'
//   counts), or with more than max_array_length words, or a word of more than max_bulk_bytes
//                                                      "Protocol error: too big inline request"
// The other errors: a header whose number is not an integer ("Protocol error: invalid multibulk
// length" / "invalid bulk length", also for a '\r' not followed by '\n'); an array element that
// does not start with '$' ("Protocol error: expected '$', got 'X'", X the byte found); a bulk
// payload not followed by "\r\n" ("Protocol error: expected CRLF after bulk"); unbalanced
// quotes in an inline line ("Protocol error: unbalanced quotes in request").
class RequestParser {
 public:
  explicit RequestParser(RespLimits limits = {}) : limits_(limits) {}

  ParseStatus parse(std::string_view input, std::vector<std::string>& args, std::size_t& consumed) {
    error_.clear();
    consumed = 0;
    // The last call's walk, if it stopped in the array command at the front of this input.
    const std::optional<Walk> resume = std::exchange(walk_, std::nullopt);
    while (consumed < input.size()) {
      args.clear();
      std::size_t used = 0;
      const std::string_view rest = input.substr(consumed);
      const Walk* walked =
          consumed == 0 && resume && input.size() >= resume->seen ? &*resume : nullptr;
      const Step step = rest.front() == '*' ? parse_multibulk(rest, walked, args, used)
                                            : parse_inline(rest, args, used);
      switch (step) {
        case Step::kCommand:
          consumed += used;
          return ParseStatus::kCommand;
        case Step::kEmpty:
          consumed += used;  // used > 0: the loop ends
          break;
        case Step::kOk:  // not returned for a whole command
        case Step::kNeedMore:
          return ParseStatus::kNeedMore;
        case Step::kError:
          return ParseStatus::kError;
      }
    }
    return ParseStatus::kNeedMore;
  }

  const std::string& error() const noexcept { return error_; }

  // Forgets the walk of a partial command: the next call parses its input from scratch.
  void reset() noexcept { walk_.reset(); }

  // Header lines ("*N", "$N") walked since construction: each line once, plus once per call
  // that stopped at it for want of bytes, however a command's bytes arrive (tests check that).
  std::size_t header_lines_walked() const noexcept { return header_lines_walked_; }

  // Bytes a client may have buffered before a command must be complete: the server closes a
  // client whose unparsed input exceeds this. Room for one command of max_array_length
  // arguments whose payloads add up to max_bulk_bytes (one maximum-size argument, say), with
  // max_inline_bytes to spare for the small arguments beside it; at least a whole inline line.
  // A command within the limits but larger than that (two maximum-size arguments) is refused.
  std::size_t max_buffered_bytes() const noexcept {
    using detail::saturating_add;
    using detail::saturating_mul;
    constexpr std::size_t kCountLine = 1 + 20 + 2;  // "*" count "\r\n"
    const std::size_t per_argument = 1 + detail::decimal_digits(limits_.max_bulk_bytes) + 2 + 2;
    std::size_t bytes = saturating_mul(limits_.max_array_length, per_argument);
    bytes = saturating_add(bytes, kCountLine);
    bytes = saturating_add(bytes, limits_.max_bulk_bytes);
    bytes = saturating_add(bytes, limits_.max_inline_bytes);
    return std::max(bytes, saturating_add(limits_.max_inline_bytes, 1));
  }

 private:
  // How far an array command was walked: its argument count, the offset of its first argument,
  // the arguments checked (all their bytes buffered and valid), where the next one starts, and
  // the bytes the input had (the next call's input must have at least those).
  struct Walk {
    std::size_t arguments = 0;
    std::size_t first = 0;
    std::size_t checked = 0;
    std::size_t next = 0;
    std::size_t seen = 0;
  };

  // kOk: a piece of a command was read (internal to a command's walk).
  enum class Step { kOk, kCommand, kEmpty, kNeedMore, kError };

  Step fail(std::string_view text) {
    error_.assign(text);
    return Step::kError;
  }

  // Reads the header line at the front of `in` ("*N\r\n" or "$N\r\n", the type byte checked by
  // the caller) into `value`, `next` the offset after its "\r\n".
  Step read_header(std::string_view in, std::string_view too_big, std::string_view invalid,
                   long long& value, std::size_t& next) {
    const std::size_t limit = limits_.max_inline_bytes;
    // A '\r' past `limit` is an error however it arrives: look no further.
    const std::size_t window = in.size() > limit ? limit + 1 : in.size();
    const std::size_t cr = in.substr(0, window).find('\r');
    if (cr == std::string_view::npos) return in.size() > limit ? fail(too_big) : Step::kNeedMore;
    if (cr + 1 == in.size()) return Step::kNeedMore;
    if (in[cr + 1] != '\n') return fail(invalid);
    if (!detail::parse_resp_integer(in.substr(1, cr - 1), value)) return fail(invalid);
    next = cr + 2;
    return Step::kOk;
  }

  // An array of bulk strings at the front of `in` (which starts with '*'). Walks it once to
  // find its end and validate it, copying nothing; only a complete command is then copied out.
  // `walked`: how far an earlier call walked this command (nullptr: from its start).
  Step parse_multibulk(std::string_view in, const Walk* walked, std::vector<std::string>& args,
                       std::size_t& used) {
    Walk walk;
    if (walked != nullptr) {
      walk = *walked;
    } else {
      ++header_lines_walked_;
      long long count = 0;
      const Step step = read_header(in, "Protocol error: too big mbulk count string",
                                    "Protocol error: invalid multibulk length", count, walk.next);
      if (step != Step::kOk) return step;
      if (count <= 0) {  // "*0", "*-1": an empty command, skipped (as Redis does)
        used = walk.next;
        return Step::kEmpty;
      }
      if (static_cast<unsigned long long>(count) > limits_.max_array_length) {
        return fail("Protocol error: invalid multibulk length");
      }
      walk.arguments = static_cast<std::size_t>(count);
      walk.first = walk.next;
    }
    for (; walk.checked < walk.arguments; ++walk.checked) {
      std::size_t payload = 0;
      std::size_t length = 0;
      ++header_lines_walked_;
      const Step step = read_bulk(in, walk.next, payload, length);
      if (step == Step::kNeedMore) {
        walk.seen = in.size();
        walk_ = walk;
      }
      if (step != Step::kOk) return step;
      walk.next = payload + length + 2;
    }
    const std::size_t arguments = walk.arguments;
    std::size_t pos = walk.first;
    used = walk.next;
    // Every argument is buffered (each takes at least "$0\r\n\r\n"): the input bounds this.
    args.reserve(arguments);
    for (std::size_t i = 0; i < arguments; ++i) {
      std::size_t payload = 0;
      std::size_t length = 0;
      read_bulk(in, pos, payload, length);
      args.emplace_back(in.substr(payload, length));
      pos = payload + length + 2;
    }
    return Step::kCommand;
  }

  // The bulk string at `pos`: its payload's offset and length; the "\r\n" after it is checked.
  Step read_bulk(std::string_view in, std::size_t pos, std::size_t& payload, std::size_t& length) {
    if (pos == in.size()) return Step::kNeedMore;
    if (in[pos] != '$') {
      std::string text = "Protocol error: expected '$', got ' '";
      text[text.size() - 2] = in[pos];
      return fail(text);
    }
    long long declared = 0;
    std::size_t header = 0;
    const Step step = read_header(in.substr(pos), "Protocol error: too big bulk count string",
                                  "Protocol error: invalid bulk length", declared, header);
    if (step != Step::kOk) return step;
    if (declared < 0 || static_cast<unsigned long long>(declared) > limits_.max_bulk_bytes) {
      return fail("Protocol error: invalid bulk length");
    }
    payload = pos + header;
    length = static_cast<std::size_t>(declared);
    const std::size_t available = in.size() - payload;
    if (available < length) return Step::kNeedMore;
    const std::size_t end = payload + length;  // no overflow: end <= in.size()
    if (end < in.size() && in[end] != '\r') return fail("Protocol error: expected CRLF after bulk");
    if (end + 1 < in.size() && in[end + 1] != '\n') {
      return fail("Protocol error: expected CRLF after bulk");
    }
    if (in.size() - end < 2) return Step::kNeedMore;
    return Step::kOk;
  }

  // An inline command: one line, ended by "\n" (a "\r" before it is dropped).
  Step parse_inline(std::string_view in, std::vector<std::string>& args, std::size_t& used) {
    const std::size_t limit = limits_.max_inline_bytes;
    const std::size_t window = in.size() > limit ? limit + 1 : in.size();
    const std::size_t lf = in.substr(0, window).find('\n');
    if (lf == std::string_view::npos) {
      return in.size() > limit ? fail("Protocol error: too big inline request") : Step::kNeedMore;
    }
    std::string_view line = in.substr(0, lf);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!detail::split_inline_args(line, args)) {
      return fail("Protocol error: unbalanced quotes in request");
    }
    used = lf + 1;
    if (args.empty()) return Step::kEmpty;
    // Inline commands keep the limits of arrays too (a server may set max_inline_bytes high).
    bool too_big = args.size() > limits_.max_array_length;
    for (const std::string& arg : args) too_big = too_big || arg.size() > limits_.max_bulk_bytes;
    if (too_big) return fail("Protocol error: too big inline request");
    return Step::kCommand;
  }

  RespLimits limits_;
  std::string error_;
  std::optional<Walk> walk_;  // set by a call that stopped inside an array command
  std::size_t header_lines_walked_ = 0;
};

// Appends replies to `out` in RESP2 or RESP3 (proto 3 is RESP3, any other value RESP2). RESP2
// renderings of the RESP3 types: map -> flat array of 2n, boolean -> integer 0/1, null ->
// "$-1\r\n" (null_array -> "*-1\r\n"), verbatim -> bulk string. RESP3: map "%n", boolean
// "#t"/"#f", null (and null_array) "_", verbatim "=len\r\ntxt:...".
class ReplyWriter {
 public:
  ReplyWriter(std::string& out, int proto) : out_(&out), proto_(proto) {}

  int proto() const noexcept { return proto_; }

  // "+s"; a CR or LF in s becomes a space (a simple string cannot hold them).
  void simple(std::string_view s) { line('+', s); }
  // "-s", s with its code ("ERR ...", "WRONGTYPE ..."); a CR or LF becomes a space.
  void error(std::string_view s) { line('-', s); }
  void integer(long long v) { header(':', v); }
  // "$len\r\n" s "\r\n": any bytes.
  void bulk(std::string_view s) {
    header('$', s.size());
    out_->append(s);
    out_->append("\r\n");
  }
  void null() { out_->append(resp3() ? "_\r\n" : "$-1\r\n"); }
  // A null array (RESP2 "*-1"; RESP3 has one null).
  void null_array() { out_->append(resp3() ? "_\r\n" : "*-1\r\n"); }
  void boolean(bool b) {
    if (resp3()) {
      out_->append(b ? "#t\r\n" : "#f\r\n");
    } else {
      out_->append(b ? ":1\r\n" : ":0\r\n");
    }
  }
  // The header of an array of n replies, which follow.
  void array(std::size_t n) { header('*', n); }
  // The header of a map of `pairs` key/value pairs, which follow as 2 * pairs replies.
  void map(std::size_t pairs) {
    if (resp3()) {
      header('%', pairs);
    } else {
      header('*', detail::saturating_mul(pairs, 2));
    }
  }
  // Text for people (INFO and the like): RESP3 "=N\r\ntxt:<txt>\r\n", RESP2 a bulk string.
  void verbatim(std::string_view txt) {
    if (!resp3()) return bulk(txt);
    header('=', txt.size() + 4);
    out_->append("txt:");
    out_->append(txt);
    out_->append("\r\n");
  }

 private:
  bool resp3() const noexcept { return proto_ == 3; }

  template <class Integer>
  void header(char type, Integer value) {
    char digits[24];
    const auto result = std::to_chars(digits, digits + sizeof digits, value);
    out_->push_back(type);
    out_->append(digits, result.ptr);
    out_->append("\r\n");
  }

  void line(char type, std::string_view s) {
    out_->push_back(type);
    const std::size_t start = out_->size();
    out_->append(s);
    std::replace_if(
        out_->begin() + static_cast<std::ptrdiff_t>(start), out_->end(),
        [](char c) { return c == '\r' || c == '\n'; }, ' ');
    out_->append("\r\n");
  }

  std::string* out_;
  int proto_;
};

}  // namespace ccf::serve
