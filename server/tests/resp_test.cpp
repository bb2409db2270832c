// Tests of the RESP layer of `ccf serve` (serve/resp.hpp): the request parser on arrays of bulk
// strings and inline commands, split anywhere and pipelined; every protocol error text; every
// limit; that a declared size allocates nothing before its bytes arrive; the reply writer's
// bytes in RESP2 and RESP3.
//
// The largest single allocation is measured by replacing the global operator new.
#include "server/resp.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <limits>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

std::size_t largest_allocation = 0;

void* allocate(std::size_t size) {
  if (size > largest_allocation) largest_allocation = size;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}

}  // namespace

void* operator new(std::size_t size) {
  return allocate(size);
}
void* operator new[](std::size_t size) {
  return allocate(size);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}

namespace {

using namespace std::string_literals;
using ccf::serve::ParseStatus;
using ccf::serve::ReplyWriter;
using ccf::serve::RequestParser;
using ccf::serve::RespLimits;
using Args = std::vector<std::string>;

constexpr std::size_t k64KiB = 64u << 10;

// One parse call.
struct Parsed {
  ParseStatus status;
  Args args;
  std::size_t consumed;
  std::string error;
};

Parsed parse(std::string_view input, const RespLimits& limits = {}) {
  RequestParser parser(limits);
  Parsed out{ParseStatus::kError, {"junk from before"}, 12345, {}};
  out.status = parser.parse(input, out.args, out.consumed);
  out.error = parser.error();
  return out;
}

// What a server does with a buffer: parse while there are commands, dropping `consumed` bytes
// after every call.
struct Session {
  std::vector<Args> commands;
  ParseStatus last = ParseStatus::kNeedMore;
  std::string error;
  std::string rest;  // the unparsed bytes after the last call
};

Session parse_all(std::string_view input, const RespLimits& limits = {}) {
  RequestParser parser(limits);
  Session session;
  session.rest = std::string(input);
  Args args;
  for (;;) {
    std::size_t consumed = 0;
    session.last = parser.parse(session.rest, args, consumed);
    if (session.last == ParseStatus::kError) {
      session.error = parser.error();
      return session;
    }
    EXPECT_LE(consumed, session.rest.size());
    session.rest.erase(0, consumed);
    if (session.last == ParseStatus::kNeedMore) return session;
    EXPECT_GT(consumed, 0u);
    session.commands.push_back(args);
  }
}

// The error text a whole input gives (empty if it gives none).
std::string error_of(std::string_view input, const RespLimits& limits = {}) {
  return parse_all(input, limits).error;
}

// A binary-safe multibulk request.
std::string multibulk(const Args& args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const std::string& arg : args) {
    out += "$" + std::to_string(arg.size()) + "\r\n" + arg + "\r\n";
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Arrays of bulk strings

TEST(RespParser, ParsesAMultibulkCommand) {
  const Parsed p = parse("*2\r\n$4\r\nPING\r\n$2\r\nhi\r\n");
  EXPECT_EQ(p.status, ParseStatus::kCommand);
  EXPECT_EQ(p.args, (Args{"PING", "hi"}));
  EXPECT_EQ(p.consumed, 22u);
  EXPECT_EQ(p.error, "");
}

TEST(RespParser, EmptyBulkString) {
  const Parsed p = parse("*2\r\n$3\r\nGET\r\n$0\r\n\r\n");
  EXPECT_EQ(p.status, ParseStatus::kCommand);
  EXPECT_EQ(p.args, (Args{"GET", ""}));
}

TEST(RespParser, EveryPrefixNeedsMoreAndConsumesNothing) {
  const std::string binary = "a\r\nb\0c\r"s;  // CR LF and NUL inside a bulk
  ASSERT_EQ(binary.size(), 7u);
  const Args expected{"CF.ADD", "key", binary};
  const std::string command = multibulk(expected);
  for (std::size_t cut = 0; cut < command.size(); ++cut) {
    const Parsed p = parse(std::string_view(command).substr(0, cut));
    EXPECT_EQ(p.status, ParseStatus::kNeedMore) << "prefix of " << cut << " bytes";
    EXPECT_EQ(p.consumed, 0u) << "prefix of " << cut << " bytes";
  }
  const Parsed whole = parse(command);
  EXPECT_EQ(whole.status, ParseStatus::kCommand);
  EXPECT_EQ(whole.args, expected);
  EXPECT_EQ(whole.consumed, command.size());
  // With the start of another command behind it, the same.
  const Parsed more = parse(command + "*1\r\n$4\r\nPI");
  EXPECT_EQ(more.status, ParseStatus::kCommand);
  EXPECT_EQ(more.args, expected);
  EXPECT_EQ(more.consumed, command.size());
}

TEST(RespParser, TwoReadsSplitAnywhereGiveTheSameCommands) {
  const std::string stream = multibulk({"CF.ADD", "f", "x\r\ny"}) + "CF.EXISTS f 'a b'\r\n\r\n" +
                             "*0\r\n" + multibulk({"PING"});
  const std::vector<Args> expected{{"CF.ADD", "f", "x\r\ny"}, {"CF.EXISTS", "f", "a b"}, {"PING"}};
  ASSERT_EQ(parse_all(stream).commands, expected);
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    Session first = parse_all(std::string_view(stream).substr(0, cut));
    ASSERT_EQ(first.last, ParseStatus::kNeedMore);
    const Session second = parse_all(first.rest + stream.substr(cut));
    std::vector<Args> commands = first.commands;
    commands.insert(commands.end(), second.commands.begin(), second.commands.end());
    EXPECT_EQ(commands, expected) << "split after " << cut << " bytes";
    EXPECT_EQ(second.last, ParseStatus::kNeedMore);
    EXPECT_EQ(second.rest, "");
  }
}

// A command of many small arguments arriving a few bytes at a time, as a server feeds it (the
// bytes consumed erased, new ones appended): each header line is walked once, plus once per read
// that stopped at it -- not again on every read, which would cost time quadratic in its size.
TEST(RespParser, APartialCommandIsNotWalkedAgainOnEveryRead) {
  Args big(20000, "x");
  big[0] = "CF.MEXISTS";
  const std::string command = multibulk(big) + multibulk({"PING"});
  RequestParser parser;
  std::string buffer;
  Args args;
  std::vector<Args> commands;
  std::size_t reads = 0;
  for (std::size_t at = 0; at < command.size(); at += 7, ++reads) {
    buffer.append(command.substr(at, 7));
    for (;;) {
      std::size_t consumed = 0;
      const ParseStatus status = parser.parse(buffer, args, consumed);
      buffer.erase(0, consumed);
      if (status != ParseStatus::kCommand) break;
      commands.push_back(args);
    }
  }
  ASSERT_EQ(commands.size(), 2u);
  EXPECT_EQ(commands[0], big);
  EXPECT_EQ(commands[1], Args{"PING"});
  EXPECT_TRUE(buffer.empty());
  EXPECT_LE(parser.header_lines_walked(), big.size() + 1 + 2 + reads);
}

// reset() forgets a partial command's walk: a parser can be handed unrelated input.
TEST(RespParser, ResetForgetsAPartialCommand) {
  RequestParser parser;
  Args args;
  std::size_t consumed = 0;
  const std::string first = multibulk({"CF.ADD", "f", "abc"});
  ASSERT_EQ(parser.parse(std::string_view(first).substr(0, first.size() - 4), args, consumed),
            ParseStatus::kNeedMore);
  parser.reset();
  const std::string other = multibulk({"GET", "key-of-another-length"});
  ASSERT_EQ(parser.parse(other, args, consumed), ParseStatus::kCommand);
  EXPECT_EQ(args, (Args{"GET", "key-of-another-length"}));
  EXPECT_EQ(consumed, other.size());
}

TEST(RespParser, PipelinedCommandsOneAfterAnother) {
  const std::string a = multibulk({"CF.ADD", "f", "item1"});
  const std::string b = "CF.EXISTS f item1\r\n";
  const std::string c = multibulk({"CF.MEXISTS", "f", "item1", "item2"});
  const std::string stream = a + b + c;
  RequestParser parser;
  Args args;
  std::size_t consumed = 0;
  std::string_view rest = stream;
  ASSERT_EQ(parser.parse(rest, args, consumed), ParseStatus::kCommand);
  EXPECT_EQ(args, (Args{"CF.ADD", "f", "item1"}));
  EXPECT_EQ(consumed, a.size());
  rest.remove_prefix(consumed);
  ASSERT_EQ(parser.parse(rest, args, consumed), ParseStatus::kCommand);
  EXPECT_EQ(args, (Args{"CF.EXISTS", "f", "item1"}));
  EXPECT_EQ(consumed, b.size());
  rest.remove_prefix(consumed);
  ASSERT_EQ(parser.parse(rest, args, consumed), ParseStatus::kCommand);
  EXPECT_EQ(args, (Args{"CF.MEXISTS", "f", "item1", "item2"}));
  EXPECT_EQ(consumed, c.size());
  rest.remove_prefix(consumed);
  EXPECT_EQ(parser.parse(rest, args, consumed), ParseStatus::kNeedMore);
  EXPECT_EQ(consumed, 0u);
}

TEST(RespParser, EmptyArraysAreSkipped) {
  Parsed p = parse("*0\r\n*-1\r\n*-5\r\n*1\r\n$4\r\nPING\r\n");
  EXPECT_EQ(p.status, ParseStatus::kCommand);
  EXPECT_EQ(p.args, Args{"PING"});
  EXPECT_EQ(p.consumed, 28u);

  p = parse("*0\r\n");
  EXPECT_EQ(p.status, ParseStatus::kNeedMore);
  EXPECT_EQ(p.consumed, 4u);  // dropped by the caller

  p = parse("*-1\r\n*1\r\n$4\r\nPI");
  EXPECT_EQ(p.status, ParseStatus::kNeedMore);
  EXPECT_EQ(p.consumed, 5u);  // the empty command, not the partial one behind it

  p = parse("*0\r");
  EXPECT_EQ(p.status, ParseStatus::kNeedMore);
  EXPECT_EQ(p.consumed, 0u);

  const Session s = parse_all("*0\r\n*-1\r\n");
  EXPECT_TRUE(s.commands.empty());
  EXPECT_EQ(s.rest, "");
}

// ---------------------------------------------------------------------------------------------
// Inline commands

TEST(RespParser, InlineCommands) {
  Parsed p = parse("PING hi\r\n");
  EXPECT_EQ(p.status, ParseStatus::kCommand);
  EXPECT_EQ(p.args, (Args{"PING", "hi"}));
  EXPECT_EQ(p.consumed, 9u);

  p = parse("PING hi\n");  // LF alone ends a line
  EXPECT_EQ(p.args, (Args{"PING", "hi"}));
  EXPECT_EQ(p.consumed, 8u);

  p = parse("  CF.ADD \t f\t\titem  \r\n");
  EXPECT_EQ(p.args, (Args{"CF.ADD", "f", "item"}));

  p = parse("PING hi");  // no line end yet
  EXPECT_EQ(p.status, ParseStatus::kNeedMore);
  EXPECT_EQ(p.consumed, 0u);

  p = parse("PING hi\r");
  EXPECT_EQ(p.status, ParseStatus::kNeedMore);
  EXPECT_EQ(p.consumed, 0u);

  p = parse("a\rb\n");  // a CR inside a line separates words
  EXPECT_EQ(p.args, (Args{"a", "b"}));

  p = parse("key\0x y\n"s);  // NUL is an ordinary byte
  EXPECT_EQ(p.args, (Args{"key\0x"s, "y"}));
}

TEST(RespParser, InlineQuotesAndEscapes) {
  EXPECT_EQ(parse("SET \"a b\" 'c d'\r\n").args, (Args{"SET", "a b", "c d"}));
  EXPECT_EQ(parse(R"(X "\x41\x7a\n\r\t\b\a\\\"\q")"
                  "\n")
                .args,
            (Args{"X", "Az\n\r\t\b\a\\\"q"}));
  EXPECT_EQ(parse(R"(X "\xZZ" "\x4" "\x00")"
                  "\n")
                .args,
            (Args{"X", "xZZ", "x4", "\0"s}));
  EXPECT_EQ(parse(R"(X 'it\'s' 'a\nb' 'a\\b')"
                  "\n")
                .args,
            (Args{"X", "it's", R"(a\nb)", R"(a\\b)"}));
  // As in Redis: \' escapes the quote even after a backslash, so this one is never closed.
  EXPECT_EQ(parse(R"(X 'back\\')"
                  "\n")
                .error,
            "Protocol error: unbalanced quotes in request");
  EXPECT_EQ(parse("X \"\" ''\n").args, (Args{"X", "", ""}));
  EXPECT_EQ(parse("X a\"b c\"d e\n").status, ParseStatus::kError);  // quote closed mid-word
  EXPECT_EQ(parse("X a\"b c\" e\n").args, (Args{"X", "ab c", "e"}));
  EXPECT_EQ(parse("X \"a\"\t'b'\r\n").args, (Args{"X", "a", "b"}));
  EXPECT_EQ(parse("X \"a\r\nb\"\r\n").status, ParseStatus::kError);  // the line ends at LF
}

TEST(RespParser, BlankLinesAreSkipped) {
  Parsed p = parse("\r\n");
  EXPECT_EQ(p.status, ParseStatus::kNeedMore);
  EXPECT_EQ(p.consumed, 2u);

  p = parse("\r\n\n   \t\r\nPING\r\n");
  EXPECT_EQ(p.status, ParseStatus::kCommand);
  EXPECT_EQ(p.args, Args{"PING"});
  EXPECT_EQ(p.consumed, 15u);

  p = parse("\n\nPI");
  EXPECT_EQ(p.status, ParseStatus::kNeedMore);
  EXPECT_EQ(p.consumed, 2u);

  p = parse("\r");
  EXPECT_EQ(p.status, ParseStatus::kNeedMore);
  EXPECT_EQ(p.consumed, 0u);

  // What is left after a kNeedMore gives kNeedMore and consumes nothing: no spin.
  RequestParser parser;
  std::string buffer = "\r\n\r\n\nPI";
  Args args;
  std::size_t consumed = 0;
  ASSERT_EQ(parser.parse(buffer, args, consumed), ParseStatus::kNeedMore);
  buffer.erase(0, consumed);
  EXPECT_EQ(buffer, "PI");
  ASSERT_EQ(parser.parse(buffer, args, consumed), ParseStatus::kNeedMore);
  EXPECT_EQ(consumed, 0u);

  // Many blank lines are dropped as they come: the buffer does not grow.
  const Session s = parse_all(std::string(1'000'000, '\n'));
  EXPECT_TRUE(s.commands.empty());
  EXPECT_EQ(s.rest, "");
}

// ---------------------------------------------------------------------------------------------
// Errors

TEST(RespParser, InvalidMultibulkLength) {
  const std::string text = "Protocol error: invalid multibulk length";
  for (const std::string input :
       {"*abc\r\n", "*\r\n", "*+1\r\n", "* 1\r\n", "*1 \r\n", "*01\r\n", "*-0\r\n", "*1x\r\n",
        "*-\r\n", "*1\rX", "*99999999999999999999\r\n", "*1048577\r\n"}) {
    const Parsed p = parse(input);
    EXPECT_EQ(p.status, ParseStatus::kError) << input;
    EXPECT_EQ(p.error, text) << input;
  }
  EXPECT_EQ(parse("*1048576\r\n").status, ParseStatus::kNeedMore);  // the limit itself
}

TEST(RespParser, InvalidBulkLength) {
  const std::string text = "Protocol error: invalid bulk length";
  for (const std::string input :
       {"*1\r\n$-1\r\n", "*1\r\n$abc\r\n", "*1\r\n$\r\n", "*1\r\n$+3\r\nabc\r\n",
        "*1\r\n$ 3\r\nabc\r\n", "*1\r\n$03\r\nabc\r\n", "*1\r\n$3x\r\n", "*1\r\n$3\rX",
        "*1\r\n$67108865\r\n", "*1\r\n$1000000000\r\n", "*1\r\n$99999999999999999999\r\n"}) {
    const Parsed p = parse(input);
    EXPECT_EQ(p.status, ParseStatus::kError) << input;
    EXPECT_EQ(p.error, text) << input;
  }
  EXPECT_EQ(parse("*1\r\n$67108864\r\n").status, ParseStatus::kNeedMore);  // the limit itself
}

TEST(RespParser, ExpectedDollar) {
  Parsed p = parse("*1\r\nPING\r\n");
  EXPECT_EQ(p.status, ParseStatus::kError);
  EXPECT_EQ(p.error, "Protocol error: expected '$', got 'P'");
  p = parse("*2\r\n$4\r\nPING\r\n:1\r\n");
  EXPECT_EQ(p.error, "Protocol error: expected '$', got ':'");
  p = parse("*1\r\n\r\n");
  EXPECT_EQ(p.error, "Protocol error: expected '$', got '\r'");
  p = parse("*1\r\n\0"s);
  EXPECT_EQ(p.error, "Protocol error: expected '$', got '\0'"s);
}

TEST(RespParser, ExpectedCrlfAfterBulk) {
  const std::string text = "Protocol error: expected CRLF after bulk";
  EXPECT_EQ(error_of("*1\r\n$4\r\nPINGxx"), text);
  EXPECT_EQ(error_of("*1\r\n$4\r\nPINGx"), text);  // known at the first wrong byte
  EXPECT_EQ(error_of("*1\r\n$4\r\nPING\rx"), text);
  EXPECT_EQ(error_of("*1\r\n$4\r\nPING\n\r"), text);
  EXPECT_EQ(parse("*1\r\n$4\r\nPING\r").status, ParseStatus::kNeedMore);
}

TEST(RespParser, TooBigInlineRequest) {
  const std::string text = "Protocol error: too big inline request";
  const std::string line(k64KiB, 'a');
  EXPECT_EQ(parse(line).status, ParseStatus::kNeedMore);
  EXPECT_EQ(parse(line + "\n").status, ParseStatus::kCommand);
  EXPECT_EQ(error_of(line + "a"), text);
  EXPECT_EQ(error_of(line + "a\n"), text);
  EXPECT_EQ(error_of(line + "\r\n"), text);  // the CR counts: 64 KiB + 1 bytes before the LF
}

TEST(RespParser, TooBigCountStrings) {
  const std::string digits(k64KiB, '1');
  EXPECT_EQ(parse("*" + digits.substr(1)).status, ParseStatus::kNeedMore);
  EXPECT_EQ(error_of("*" + digits), "Protocol error: too big mbulk count string");
  EXPECT_EQ(error_of("*" + digits + "\r\n"), "Protocol error: too big mbulk count string");
  EXPECT_EQ(parse("*1\r\n$" + digits.substr(1)).status, ParseStatus::kNeedMore);
  EXPECT_EQ(error_of("*1\r\n$" + digits), "Protocol error: too big bulk count string");
  // Within the bound, an over-long number is merely invalid.
  EXPECT_EQ(error_of("*" + digits.substr(1) + "\r\n"), "Protocol error: invalid multibulk length");
}

TEST(RespParser, UnbalancedQuotes) {
  const std::string text = "Protocol error: unbalanced quotes in request";
  for (const std::string input : {"SET \"a b\r\n", "SET 'a b\r\n", "SET \"a\"b\r\n", "SET 'a'b\n",
                                  "SET \"a\\\"\n", "SET 'a\\'\n", "\"\n", "X \"a\\\n"}) {
    const Parsed p = parse(input);
    EXPECT_EQ(p.status, ParseStatus::kError) << input;
    EXPECT_EQ(p.error, text) << input;
  }
}

TEST(RespParser, ErrorAfterACommand) {
  const std::string good = multibulk({"PING"});
  const Session s = parse_all(good + "*x\r\n" + good);
  EXPECT_EQ(s.commands, std::vector<Args>{{"PING"}});
  EXPECT_EQ(s.last, ParseStatus::kError);
  EXPECT_EQ(s.error, "Protocol error: invalid multibulk length");
  // A later call starts afresh: no error left over.
  RequestParser parser;
  Args args;
  std::size_t consumed = 0;
  ASSERT_EQ(parser.parse("*x\r\n", args, consumed), ParseStatus::kError);
  ASSERT_EQ(parser.parse(good, args, consumed), ParseStatus::kCommand);
  EXPECT_EQ(parser.error(), "");
}

// Every prefix of an input gives kNeedMore or exactly what the whole input gives.
TEST(RespParser, VerdictsDependOnlyOnBytesSeen) {
  const RespLimits small{.max_bulk_bytes = 8, .max_array_length = 3, .max_inline_bytes = 12};
  for (const std::string input :
       {"*2\r\n$4\r\nPING\r\n$2\r\nhi\r\n", "*1\r\n$4\r\nPINGxx", "*4\r\n", "*1\r\n$9\r\n",
        "*1\r\nX", "PING \"a\r\n", "PING 'a'b c\n", "a b c d\n", "aaaaaaaaaaaaaaaaaa\n",
        "*1111111111111111\r\n", "*1\r\n$11111111111111\r\n", "\r\n\r\nX\n", "*0\r\n*1\r\n$1\r\n",
        "*1\r\n$3\r\nabc\r\n*1\r\n$3\r\nabd"}) {
    const Parsed whole = parse(input, small);
    for (std::size_t cut = 0; cut < input.size(); ++cut) {
      const Parsed part = parse(std::string_view(input).substr(0, cut), small);
      if (part.status == ParseStatus::kNeedMore) continue;
      EXPECT_EQ(part.status, whole.status) << input << " cut at " << cut;
      EXPECT_EQ(part.error, whole.error) << input << " cut at " << cut;
      if (part.status == ParseStatus::kCommand) {
        EXPECT_EQ(part.args, whole.args) << input << " cut at " << cut;
        EXPECT_EQ(part.consumed, whole.consumed) << input << " cut at " << cut;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Limits

TEST(RespParser, ArrayLengthLimit) {
  const RespLimits limits{.max_array_length = 2};
  EXPECT_EQ(parse(multibulk({"a", "b"}), limits).args, (Args{"a", "b"}));
  EXPECT_EQ(error_of(multibulk({"a", "b", "c"}), limits),
            "Protocol error: invalid multibulk length");
  EXPECT_EQ(parse("a b\n", limits).args, (Args{"a", "b"}));
  EXPECT_EQ(error_of("a b c\n", limits), "Protocol error: too big inline request");
}

TEST(RespParser, BulkLengthLimit) {
  const RespLimits limits{.max_bulk_bytes = 4};
  EXPECT_EQ(parse(multibulk({"abcd"}), limits).args, Args{"abcd"});
  EXPECT_EQ(error_of(multibulk({"abcde"}), limits), "Protocol error: invalid bulk length");
  EXPECT_EQ(error_of("*1\r\n$5\r\n", limits), "Protocol error: invalid bulk length");
  EXPECT_EQ(parse("abcd\n", limits).args, Args{"abcd"});
  EXPECT_EQ(error_of("abcde\n", limits), "Protocol error: too big inline request");
}

TEST(RespParser, InlineLengthLimit) {
  const RespLimits limits{.max_inline_bytes = 8};
  EXPECT_EQ(parse("PING abc\n", limits).args, (Args{"PING", "abc"}));  // 8 bytes before LF
  EXPECT_EQ(error_of("PING abcd\n", limits), "Protocol error: too big inline request");
  EXPECT_EQ(error_of("PING abc\r\n", limits), "Protocol error: too big inline request");
  EXPECT_EQ(parse("PING abc", limits).status, ParseStatus::kNeedMore);
  EXPECT_EQ(error_of("PING abcd", limits), "Protocol error: too big inline request");
}

TEST(RespParser, HeaderLengthLimit) {
  const RespLimits limits{.max_inline_bytes = 8};
  EXPECT_EQ(parse("*1\r\n$1234567\r\n", limits).status, ParseStatus::kNeedMore);  // 8 bytes
  EXPECT_EQ(error_of("*1\r\n$12345678\r\n", limits), "Protocol error: too big bulk count string");
  EXPECT_EQ(error_of("*1\r\n$12345678", limits), "Protocol error: too big bulk count string");
  EXPECT_EQ(error_of("*12345678", limits), "Protocol error: too big mbulk count string");
  EXPECT_EQ(error_of("*-000000\r\n", limits), "Protocol error: invalid multibulk length");
}

// A declared size allocates nothing until the bytes are there.
TEST(RespParser, DeclaredSizesAllocateNothing) {
  constexpr std::size_t kSmall = 64u << 10;
  RespLimits huge;
  huge.max_bulk_bytes = std::size_t{4} << 30;
  huge.max_array_length = std::size_t{1} << 30;
  RequestParser parser(huge);
  RequestParser defaults;
  Args args;
  args.reserve(4);  // before the measurement
  std::size_t consumed = 0;
  {  // the measurement sees a large allocation
    largest_allocation = 0;
    const std::string big(kSmall, 'x');
    EXPECT_EQ(big[kSmall / 2], 'x');
    EXPECT_GE(largest_allocation, kSmall);
  }
  for (const std::string input :
       {"*1\r\n$1000000000\r\nabc", "*1\r\n$3000000000\r\n", "*1000000000\r\n$3\r\nabc\r\n",
        "*1073741824\r\n$1\r\nx\r\n$1\r\ny\r\n"}) {
    largest_allocation = 0;
    parser.reset();  // each input is a stream of its own
    EXPECT_EQ(parser.parse(input, args, consumed), ParseStatus::kNeedMore) << input;
    EXPECT_EQ(consumed, 0u);
    EXPECT_LT(largest_allocation, kSmall) << input;
    EXPECT_LE(args.capacity(), 4u) << input;
  }
  largest_allocation = 0;
  EXPECT_EQ(defaults.parse("*1\r\n$1000000000\r\nabc", args, consumed), ParseStatus::kError);
  EXPECT_EQ(defaults.error(), "Protocol error: invalid bulk length");
  EXPECT_EQ(defaults.parse("*1048576\r\n$3\r\nabc\r\n", args, consumed), ParseStatus::kNeedMore);
  EXPECT_LT(largest_allocation, kSmall);
}

TEST(RespParser, MaxBufferedBytes) {
  const RespLimits small{.max_bulk_bytes = 10, .max_array_length = 3, .max_inline_bytes = 16};
  const RequestParser parser(small);
  // A command of the most arguments, one of the largest size, fits.
  const std::string fits = multibulk({"LOAD", std::string(10, 'x'), "filter"});
  EXPECT_EQ(parse(fits, small).status, ParseStatus::kCommand);
  EXPECT_LE(fits.size(), parser.max_buffered_bytes());
  EXPECT_GT(parser.max_buffered_bytes(), small.max_inline_bytes);

  const RequestParser defaults;
  EXPECT_GT(defaults.max_buffered_bytes(), RespLimits{}.max_bulk_bytes + (1u << 20) * 4);
  EXPECT_LT(defaults.max_buffered_bytes(), std::size_t{128} << 20);

  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
  const RequestParser unbounded(
      {.max_bulk_bytes = kMax, .max_array_length = kMax, .max_inline_bytes = kMax});
  EXPECT_EQ(unbounded.max_buffered_bytes(), kMax);  // saturates
  EXPECT_EQ(parse(multibulk({"PING", "x"}),
                  {.max_bulk_bytes = kMax, .max_array_length = kMax, .max_inline_bytes = kMax})
                .args,
            (Args{"PING", "x"}));
  EXPECT_EQ(
      parse("PING\n", {.max_bulk_bytes = 0, .max_array_length = 0, .max_inline_bytes = kMax}).error,
      "Protocol error: too big inline request");
}

// ---------------------------------------------------------------------------------------------
// Reply writer

// What `write` appends in protocol `proto`.
template <class Write>
std::string written(int proto, Write write) {
  std::string out = "before|";
  ReplyWriter writer(out, proto);
  EXPECT_EQ(writer.proto(), proto);
  write(writer);
  EXPECT_EQ(out.substr(0, 7), "before|");  // appends
  return out.substr(7);
}

TEST(RespWriter, Resp2) {
  auto w = [](auto write) { return written(2, write); };
  EXPECT_EQ(w([](ReplyWriter& r) { r.simple("OK"); }), "+OK\r\n");
  EXPECT_EQ(w([](ReplyWriter& r) { r.simple("a\r\nb\nc\rd"); }), "+a  b c d\r\n");
  EXPECT_EQ(w([](ReplyWriter& r) { r.error("ERR bad\r\nthing"); }), "-ERR bad  thing\r\n");
  EXPECT_EQ(w([](ReplyWriter& r) { r.error("WRONGTYPE x"); }), "-WRONGTYPE x\r\n");
  EXPECT_EQ(w([](ReplyWriter& r) { r.integer(0); }), ":0\r\n");
  EXPECT_EQ(w([](ReplyWriter& r) { r.integer(-42); }), ":-42\r\n");
  EXPECT_EQ(w([](ReplyWriter& r) { r.integer(std::numeric_limits<long long>::min()); }),
            ":-9223372036854775808\r\n");
  EXPECT_EQ(w([](ReplyWriter& r) { r.integer(std::numeric_limits<long long>::max()); }),
            ":9223372036854775807\r\n");
  EXPECT_EQ(w([](ReplyWriter& r) { r.bulk("a\r\n\0b"s); }), "$5\r\na\r\n\0b\r\n"s);
  EXPECT_EQ(w([](ReplyWriter& r) { r.bulk(""); }), "$0\r\n\r\n");
  EXPECT_EQ(w([](ReplyWriter& r) { r.null(); }), "$-1\r\n");
  EXPECT_EQ(w([](ReplyWriter& r) { r.null_array(); }), "*-1\r\n");
  EXPECT_EQ(w([](ReplyWriter& r) { r.boolean(true); }), ":1\r\n");
  EXPECT_EQ(w([](ReplyWriter& r) { r.boolean(false); }), ":0\r\n");
  EXPECT_EQ(w([](ReplyWriter& r) { r.array(0); }), "*0\r\n");
  EXPECT_EQ(w([](ReplyWriter& r) {
              r.array(2);
              r.integer(1);
              r.bulk("x");
            }),
            "*2\r\n:1\r\n$1\r\nx\r\n");
  EXPECT_EQ(w([](ReplyWriter& r) {
              r.map(2);
              r.bulk("k");
              r.integer(1);
              r.simple("j");
              r.boolean(true);
            }),
            "*4\r\n$1\r\nk\r\n:1\r\n+j\r\n:1\r\n");
  EXPECT_EQ(w([](ReplyWriter& r) { r.map(0); }), "*0\r\n");
  EXPECT_EQ(w([](ReplyWriter& r) { r.verbatim("line 1\r\nline 2"); }),
            "$14\r\nline 1\r\nline 2\r\n");
}

TEST(RespWriter, Resp3) {
  auto w = [](auto write) { return written(3, write); };
  EXPECT_EQ(w([](ReplyWriter& r) { r.simple("OK"); }), "+OK\r\n");
  EXPECT_EQ(w([](ReplyWriter& r) { r.simple("a\r\nb"); }), "+a  b\r\n");
  EXPECT_EQ(w([](ReplyWriter& r) { r.error("ERR x\ny"); }), "-ERR x y\r\n");
  EXPECT_EQ(w([](ReplyWriter& r) { r.integer(-7); }), ":-7\r\n");
  EXPECT_EQ(w([](ReplyWriter& r) { r.bulk("a\0\r\n"s); }), "$4\r\na\0\r\n\r\n"s);
  EXPECT_EQ(w([](ReplyWriter& r) { r.null(); }), "_\r\n");
  EXPECT_EQ(w([](ReplyWriter& r) { r.null_array(); }), "_\r\n");
  EXPECT_EQ(w([](ReplyWriter& r) { r.boolean(true); }), "#t\r\n");
  EXPECT_EQ(w([](ReplyWriter& r) { r.boolean(false); }), "#f\r\n");
  EXPECT_EQ(w([](ReplyWriter& r) { r.array(3); }), "*3\r\n");
  EXPECT_EQ(w([](ReplyWriter& r) {
              r.map(1);
              r.bulk("size");
              r.integer(1024);
            }),
            "%1\r\n$4\r\nsize\r\n:1024\r\n");
  EXPECT_EQ(w([](ReplyWriter& r) { r.verbatim("a\r\nb"); }), "=8\r\ntxt:a\r\nb\r\n");
  EXPECT_EQ(w([](ReplyWriter& r) { r.verbatim(""); }), "=4\r\ntxt:\r\n");
}

TEST(RespWriter, OtherProtoValuesAreResp2) {
  EXPECT_EQ(written(0, [](ReplyWriter& r) { r.null(); }), "$-1\r\n");
  EXPECT_EQ(written(4, [](ReplyWriter& r) { r.boolean(true); }), ":1\r\n");
}

// An array of bulk strings is also a request: what the writer writes, the parser reads back.
TEST(RespWriter, ArrayOfBulksParsesBack) {
  const Args args{"CF.ADD", "f", "\r\n\0x"s, ""};
  for (const int proto : {2, 3}) {
    std::string out;
    ReplyWriter writer(out, proto);
    writer.array(args.size());
    for (const std::string& arg : args) writer.bulk(arg);
    EXPECT_EQ(out, multibulk(args));
    const Parsed p = parse(out);
    EXPECT_EQ(p.status, ParseStatus::kCommand);
    EXPECT_EQ(p.args, args);
    EXPECT_EQ(p.consumed, out.size());
  }
}

}  // namespace
