// ccf-redis.so's RedisModule_OnLoad against a fake server (the module is dlopen()ed and handed
// a context whose RedisModule_GetApi is this file's): on a Redis 7 API it registers its two data
// types, its three bf-* configs and every CF.* and BF.* command with the flags and key positions
// of server/cf/commands.hpp and server/bf/commands.hpp; it refuses to load, with a log line that
// says why, where the API lacks a call it needs, where the server is older than 7.0, beside a
// second copy of itself, and where a CF.* or BF.* command exists already (another module of
// those commands, such as RedisBloom). Debian's 7.0 server cannot show the first two cases;
// module_test.py shows the last two on a real one.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdarg>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "redis_module_api.hpp"
#include "server/bf/commands.hpp"
#include "server/cf/commands.hpp"

namespace {

namespace redis = ccf::redis;

struct Registered {
  std::string name, flags;
  int first_key, last_key, step;
};

// What the fake server offers, and what the module did with it.
struct FakeServer {
  std::set<std::string> missing;  // names GetApi does not know
  int version = 0x00070000;       // 7.0.0
  bool name_busy = false;
  std::set<std::string> taken;  // command names that exist already
  std::vector<std::string> log;
  std::vector<Registered> commands;
  std::vector<std::pair<std::string, redis::TypeMethods>> types;  // name, methods
  std::vector<std::string> configs;
  bool configs_loaded = false;
  int type_tag = 0;
};
FakeServer* fake = nullptr;

void log(redis::Ctx*, const char* level, const char* format, ...) {
  char line[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof line, format, args);
  va_end(args);
  fake->log.push_back(std::string(level) + ": " + line);
}
int server_version() {
  return fake->version;
}
int module_name_busy(const char*) {
  return fake->name_busy ? 1 : 0;
}
void set_module_attribs(redis::Ctx*, const char*, int, int) {}
redis::Type* create_data_type(redis::Ctx*, const char* name, int, redis::TypeMethods* methods) {
  fake->types.emplace_back(name, *methods);
  return reinterpret_cast<redis::Type*>(&fake->type_tag);
}
int register_string_config(redis::Ctx*, const char* name, const char*, unsigned,
                           redis::StringConfigGet, redis::StringConfigSet, redis::ConfigApply,
                           void*) {
  fake->configs.emplace_back(name);
  return redis::kOk;
}
int register_numeric_config(redis::Ctx*, const char* name, long long, unsigned, long long,
                            long long, redis::NumericConfigGet, redis::NumericConfigSet,
                            redis::ConfigApply, void*) {
  fake->configs.emplace_back(name);
  return redis::kOk;
}
int load_configs(redis::Ctx*) {
  fake->configs_loaded = true;
  return redis::kOk;
}
int create_command(redis::Ctx*, const char* name, redis::CommandFunction, const char* flags,
                   int first_key, int last_key, int step) {
  if (fake->taken.contains(name)) return redis::kErr;
  fake->commands.push_back({name, flags, first_key, last_key, step});
  return redis::kOk;
}
// Every other call: loading must not make it.
void not_while_loading() {
  ADD_FAILURE() << "the module made a call it should not make at load";
}

int get_api(const char* name, void* slot) {
  if (fake->missing.contains(name)) return redis::kErr;
  static const std::map<std::string, void*> calls = {
      {"RedisModule_Log", reinterpret_cast<void*>(&log)},
      {"RedisModule_GetServerVersion", reinterpret_cast<void*>(&server_version)},
      {"RedisModule_IsModuleNameBusy", reinterpret_cast<void*>(&module_name_busy)},
      {"RedisModule_SetModuleAttribs", reinterpret_cast<void*>(&set_module_attribs)},
      {"RedisModule_CreateDataType", reinterpret_cast<void*>(&create_data_type)},
      {"RedisModule_CreateCommand", reinterpret_cast<void*>(&create_command)},
      {"RedisModule_RegisterStringConfig", reinterpret_cast<void*>(&register_string_config)},
      {"RedisModule_RegisterNumericConfig", reinterpret_cast<void*>(&register_numeric_config)},
      {"RedisModule_LoadConfigs", reinterpret_cast<void*>(&load_configs)},
  };
  const auto it = calls.find(name);
  *static_cast<void**>(slot) =
      it != calls.end() ? it->second : reinterpret_cast<void*>(&not_while_loading);
  return redis::kOk;
}

// The context's first word is RedisModule_GetApi, as in Redis's module.c.
struct FakeContext {
  void* first_word = reinterpret_cast<void*>(&get_api);
};

using OnLoad = int (*)(redis::Ctx*, redis::String**, int);

class ModuleLoad : public ::testing::Test {
 protected:
  void SetUp() override {
    handle_ = dlopen(CCF_REDIS_MODULE_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    on_load_ = reinterpret_cast<OnLoad>(dlsym(handle_, "RedisModule_OnLoad"));
    ASSERT_NE(on_load_, nullptr) << dlerror();
    fake = &server_;
  }
  void TearDown() override {
    fake = nullptr;
    if (handle_ != nullptr) dlclose(handle_);
  }
  int load() {
    FakeContext context;
    return on_load_(reinterpret_cast<redis::Ctx*>(&context), nullptr, 0);
  }
  // The one log line, which must contain `why`.
  void expect_refusal(const std::string& why) {
    EXPECT_EQ(load(), redis::kErr);
    ASSERT_EQ(server_.log.size(), 1u);
    EXPECT_NE(server_.log[0].find("warning: ccf: not loaded: " + why), std::string::npos)
        << server_.log[0];
  }

  FakeServer server_;
  void* handle_ = nullptr;
  OnLoad on_load_ = nullptr;
};

TEST_F(ModuleLoad, RegistersItsTypesConfigsAndEveryCommandOnRedis7) {
  ASSERT_EQ(load(), redis::kOk);
  EXPECT_TRUE(server_.log.empty());
  ASSERT_EQ(server_.types.size(), 2u);
  EXPECT_EQ(server_.types[0].first, "ccfCuckoo");
  EXPECT_EQ(server_.types[1].first, "ccfBloom-");
  for (const auto& [name, methods] : server_.types) {
    EXPECT_EQ(methods.version, redis::kTypeMethodsVersion) << name;
    EXPECT_NE(methods.rdb_load, nullptr) << name;
    EXPECT_NE(methods.rdb_save, nullptr) << name;
    EXPECT_NE(methods.aof_rewrite, nullptr) << name;
    EXPECT_NE(methods.mem_usage, nullptr) << name;
    EXPECT_NE(methods.digest, nullptr) << name;
    EXPECT_NE(methods.free, nullptr) << name;
    EXPECT_NE(methods.copy, nullptr) << name;
  }
  EXPECT_EQ(server_.configs,
            (std::vector<std::string>{"bf-error-rate", "bf-initial-size", "bf-expansion-factor"}));
  EXPECT_TRUE(server_.configs_loaded);
  std::vector<ccf::serve::CommandFacts> expected(ccf::serve::kCfCommands.begin(),
                                                 ccf::serve::kCfCommands.end());
  expected.insert(expected.end(), ccf::serve::kBfCommands.begin(), ccf::serve::kBfCommands.end());
  ASSERT_EQ(server_.commands.size(), expected.size());
  for (std::size_t i = 0; i < server_.commands.size(); ++i) {
    const Registered& got = server_.commands[i];
    EXPECT_EQ(got.name, expected[i].name);
    EXPECT_EQ(got.flags, expected[i].flags) << got.name;
    EXPECT_EQ(got.first_key, 1) << got.name;
    EXPECT_EQ(got.last_key, 1) << got.name;
    EXPECT_EQ(got.step, 1) << got.name;
  }
}

TEST_F(ModuleLoad, RefusesAnApiWithoutACallItNeeds) {
  server_.missing = {"RedisModule_ReplyWithBool"};  // Redis 6.2 has no ReplyWithBool
  expect_refusal(
      "this server's module API has no RedisModule_ReplyWithBool (ccf-redis needs Redis 7.0 or "
      "newer)");
  EXPECT_TRUE(server_.commands.empty());
}

TEST_F(ModuleLoad, RefusesAServerOlderThan7) {
  server_.version = 0x00060209;  // 6.2.9
  expect_refusal("ccf-redis needs Redis 7.0 or newer");
  EXPECT_TRUE(server_.commands.empty());
}

TEST_F(ModuleLoad, RefusesASecondCopyOfItself) {
  server_.name_busy = true;
  expect_refusal("a module named \"ccf\" is loaded already");
}

TEST_F(ModuleLoad, RefusesBesideAnotherModuleOfCfCommands) {
  server_.taken = {"cf.exists"};
  expect_refusal("the command CF.EXISTS exists already");
}

TEST_F(ModuleLoad, RefusesBesideAnotherModuleOfBfCommands) {
  server_.taken = {"bf.add"};
  expect_refusal("the command BF.ADD exists already");
}

TEST_F(ModuleLoad, RefusesQuietlyWhenEvenLoggingIsMissing) {
  server_.missing = {"RedisModule_Log"};
  EXPECT_EQ(load(), redis::kErr);
  EXPECT_TRUE(server_.log.empty());
}

}  // namespace
