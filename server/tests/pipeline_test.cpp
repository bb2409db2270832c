// serve::Pipeline answers every pipelined command exactly as execute() does one at a time,
// although it looks up runs of CF.EXISTS as batches: random command streams (CF.EXISTS runs on
// one key and across keys, broken by writes to the same filter, other commands, wrong arity,
// another key type, RESP3, AUTH) are run on two servers' states, one through execute() and
// one through a Pipeline flushed at random points, and the replies must be the same bytes.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "server/commands.hpp"

namespace ccf::serve {
namespace {

using Command = std::vector<std::string>;

// Small filters (CF.RESERVE 64, growth on) and few items, so that items collide, filters grow,
// deletes find copies and EXISTS answers both ways.
class CommandStream {
 public:
  explicit CommandStream(std::uint64_t seed) : random_(seed) {}

  Command next() {
    const std::string key = pick({"f", "g", "s", "missing"});
    switch (below(20)) {
      case 0:
        return {"CF.ADD", key, item()};
      case 1:
        return {"CF.DEL", key, item()};
      case 2:
        return {"CF.RESERVE", key, "64"};
      case 3:
        return {"SET", "s", item()};
      case 4:
        return {pick({"DEL", "del"}), key};
      case 5:
        return {"CF.EXISTS", key};  // wrong arity: not part of a run
      case 6:
        return {"CF.EXISTS", key, item(), item()};
      case 7:
        return {"HELLO", pick({"2", "3"})};
      case 8:
        return {"CF.MEXISTS", key, item(), item()};
      case 9:
        return {"PING"};
      default:  // runs: mostly the same key as the last CF.EXISTS
        if (below(4) != 0) return {pick({"CF.EXISTS", "cf.exists", "Cf.Exists"}), last_, item()};
        last_ = key;
        return {"CF.EXISTS", key, item()};
    }
  }
  bool flip() { return below(8) == 0; }

 private:
  std::size_t below(std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(random_);
  }
  std::string pick(std::initializer_list<const char*> choices) {
    return choices.begin()[below(choices.size())];
  }
  std::string item() { return "item" + std::to_string(below(300)); }

  std::mt19937_64 random_;
  std::string last_ = "f";
};

void expect_same_replies(const std::string& password, bool authenticate, std::uint64_t seed) {
  ServerState one_at_a_time, pipelined;
  one_at_a_time.password = pipelined.password = password;
  ClientState client_one, client_pipelined;
  Pipeline pipeline;
  std::string expected, got;
  CommandStream stream(seed);
  if (authenticate) {
    execute(one_at_a_time, client_one, {"AUTH", password}, expected);
    Command auth{"AUTH", password};
    pipeline.run(pipelined, client_pipelined, auth, got);
  }
  for (int i = 0; i < 4000; ++i) {
    const Command command = stream.next();
    execute(one_at_a_time, client_one, command, expected);
    Command copy = command;  // run() may take its strings
    pipeline.run(pipelined, client_pipelined, copy, got);
    if (stream.flip()) {
      pipeline.flush(pipelined, client_pipelined, got);
      ASSERT_EQ(got, expected) << "after command " << i << " (" << command[0] << ")";
    }
  }
  pipeline.flush(pipelined, client_pipelined, got);
  EXPECT_EQ(got, expected);
  EXPECT_GT(expected.size(), 4000u);
}

TEST(Pipeline, AnswersEveryCommandAsExecuteDoesOneAtATime) {
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE(seed);
    expect_same_replies("", false, seed);
  }
}

TEST(Pipeline, AClientThatMustAuthenticateGetsNoauthForEveryExists) {
  expect_same_replies("secret", false, 11);
  expect_same_replies("secret", true, 12);
}

TEST(Pipeline, HoldsARunUntilFlushedAndAnswersItInOrder) {
  ServerState state;
  ClientState client;
  Pipeline pipeline;
  std::string out;
  execute(state, client, {"CF.ADD", "f", "x"}, out);
  ASSERT_EQ(out, ":1\r\n");
  out.clear();
  for (const char* item : {"x", "y", "x"}) {
    Command exists{"CF.EXISTS", "f", item};
    pipeline.run(state, client, exists, out);
  }
  EXPECT_EQ(out, "");  // held back
  pipeline.flush(state, client, out);
  EXPECT_EQ(out, ":1\r\n:0\r\n:1\r\n");
  out.clear();
  pipeline.flush(state, client, out);  // nothing held
  EXPECT_EQ(out, "");
  for (std::size_t i = 0; i < Pipeline::kMaxRun; ++i) {
    Command exists{"CF.EXISTS", "f", "x"};
    pipeline.run(state, client, exists, out);
  }
  EXPECT_EQ(out.size(), Pipeline::kMaxRun * 4);  // a full run is answered at once
}

}  // namespace
}  // namespace ccf::serve
