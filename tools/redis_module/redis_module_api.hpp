// The part of Redis's module API that ccf-redis.so uses, declared here (Debian ships no
// redismodule.h). Redis hands a module one function, RedisModule_GetApi, in the first word of
// the context it passes to RedisModule_OnLoad; every other call is looked up through it by name
// at load time (resolve()). A name this server does not export leaves the module unloaded,
// with a log line naming it.
//
// Calls and the Redis version that brought each (all are in 7.0, the oldest version ccf-redis
// loads into; docs/scale_out.md):
//   2.8/4.0  SetModuleAttribs, CreateCommand, OpenKey, CloseKey, KeyType, StringPtrLen,
//            ReplyWithError, ReplyWithSimpleString, ReplyWithLongLong, ReplyWithStringBuffer,
//            ReplyWithNull, ReplyWithArray, ReplicateVerbatim, CreateDataType,
//            ModuleTypeSetValue, ModuleTypeGetType, ModuleTypeGetValue, SaveUnsigned,
//            LoadUnsigned, SaveStringBuffer, LoadStringBuffer, EmitAOF, Log, LogIOError,
//            DigestAddStringBuffer, DigestEndSequence, Free, GetContextFlags
//   6.0      IsIOError, GetServerVersion, IsModuleNameBusy (6.0.9)
//   7.0      ReplyWithMap, ReplyWithBool, RegisterStringConfig, RegisterNumericConfig,
//            LoadConfigs (with CreateString and FreeString of 4.0 for their values)
// The data type's methods use the layout of method version 3 (Redis 6.0: free_effort, unlink,
// copy, defrag after the version-1 and -2 fields); Redis reads no field past the version given.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ccf::redis {

// Opaque handles (RedisModuleCtx, RedisModuleKey, RedisModuleString, RedisModuleIO,
// RedisModuleDigest, RedisModuleType).
struct Ctx;
struct Key;
struct String;
struct IO;
struct Digest;
struct Type;

inline constexpr int kOk = 0;
inline constexpr int kErr = 1;
inline constexpr int kApiVersion1 = 1;
inline constexpr int kRead = 1 << 0;
inline constexpr int kWrite = 1 << 1;
inline constexpr int kKeyTypeEmpty = 0;
inline constexpr int kCtxFlagsResp3 = 1 << 22;
// GetServerVersion(): 0x00MMmmpp.
inline constexpr int kVersion7_0 = 0x00070000;

using CommandFunction = int (*)(Ctx*, String**, int);

// Module configs (Redis 7.0): CONFIG GET and SET of "<module>.<name>". A setter answers kOk, or
// kErr with *error set to a string Redis frees; a string getter's value stays the module's.
using StringConfigGet = String* (*)(const char* name, void* data);
using StringConfigSet = int (*)(const char* name, String* value, void* data, String** error);
using NumericConfigGet = long long (*)(const char* name, void* data);
using NumericConfigSet = int (*)(const char* name, long long value, void* data, String** error);
using ConfigApply = int (*)(Ctx*, void* data, String** error);
inline constexpr unsigned kConfigDefault = 0;

struct TypeMethods {
  std::uint64_t version;
  void* (*rdb_load)(IO* rdb, int encoding_version);
  void (*rdb_save)(IO* rdb, void* value);
  void (*aof_rewrite)(IO* aof, String* key, void* value);
  std::size_t (*mem_usage)(const void* value);
  void (*digest)(Digest* digest, void* value);
  void (*free)(void* value);
  int (*aux_load)(IO* rdb, int encoding_version, int when);
  void (*aux_save)(IO* rdb, int when);
  int aux_save_triggers;
  std::size_t (*free_effort)(String* key, const void* value);
  void (*unlink)(String* key, const void* value);
  void* (*copy)(String* from_key, String* to_key, const void* value);
  int (*defrag)(void* defrag_ctx, String* key, void** value);
};
inline constexpr std::uint64_t kTypeMethodsVersion = 3;

// The functions, filled in by resolve().
struct Api {
  void (*SetModuleAttribs)(Ctx*, const char* name, int version, int api_version);
  int (*IsModuleNameBusy)(const char* name);
  int (*GetServerVersion)();
  int (*CreateCommand)(Ctx*, const char* name, CommandFunction, const char* flags, int first_key,
                       int last_key, int key_step);
  void (*Log)(Ctx*, const char* level, const char* format, ...);
  void (*LogIOError)(IO*, const char* level, const char* format, ...);
  Type* (*CreateDataType)(Ctx*, const char* name, int encoding_version, TypeMethods*);
  Key* (*OpenKey)(Ctx*, String* name, int mode);
  void (*CloseKey)(Key*);
  int (*KeyType)(Key*);
  Type* (*ModuleTypeGetType)(Key*);
  void* (*ModuleTypeGetValue)(Key*);
  int (*ModuleTypeSetValue)(Key*, Type*, void* value);
  const char* (*StringPtrLen)(const String*, std::size_t* length);
  int (*ReplyWithError)(Ctx*, const char* text);
  int (*ReplyWithSimpleString)(Ctx*, const char* text);
  int (*ReplyWithLongLong)(Ctx*, long long value);
  int (*ReplyWithBool)(Ctx*, int value);
  int (*ReplyWithStringBuffer)(Ctx*, const char* data, std::size_t length);
  int (*ReplyWithNull)(Ctx*);
  int (*ReplyWithArray)(Ctx*, long length);
  int (*ReplyWithMap)(Ctx*, long pairs);
  int (*GetContextFlags)(Ctx*);
  int (*ReplicateVerbatim)(Ctx*);
  void (*SaveUnsigned)(IO*, std::uint64_t value);
  std::uint64_t (*LoadUnsigned)(IO*);
  void (*SaveStringBuffer)(IO*, const char* data, std::size_t length);
  char* (*LoadStringBuffer)(IO*, std::size_t* length);
  int (*IsIOError)(IO*);
  void (*EmitAOF)(IO*, const char* command, const char* format, ...);
  void (*DigestAddStringBuffer)(Digest*, const char* data, std::size_t length);
  void (*DigestEndSequence)(Digest*);
  void (*Free)(void* pointer);
  String* (*CreateString)(Ctx*, const char* data, std::size_t length);
  void (*FreeString)(Ctx*, String*);
  int (*RegisterStringConfig)(Ctx*, const char* name, const char* default_value, unsigned flags,
                              StringConfigGet, StringConfigSet, ConfigApply, void* data);
  int (*RegisterNumericConfig)(Ctx*, const char* name, long long default_value, unsigned flags,
                               long long min, long long max, NumericConfigGet, NumericConfigSet,
                               ConfigApply, void* data);
  int (*LoadConfigs)(Ctx*);
};
inline Api api{};

// Looks every function of Api up through the context's RedisModule_GetApi. Returns the name of
// the first one this server lacks (that one and the ones after it are left null), or an empty
// view when all were found.
inline std::string_view resolve(Ctx* ctx) {
  api = Api{};  // nothing left from an earlier load of this library
  using GetApi = int (*)(const char* name, void* slot);
  // The first word of the context OnLoad receives is RedisModule_GetApi (module.c).
  const auto get = reinterpret_cast<GetApi>(*reinterpret_cast<void**>(ctx));
  struct Entry {
    std::string_view name;
    void* slot;
  };
  const Entry entries[] = {
      {"RedisModule_SetModuleAttribs", &api.SetModuleAttribs},
      {"RedisModule_IsModuleNameBusy", &api.IsModuleNameBusy},
      {"RedisModule_GetServerVersion", &api.GetServerVersion},
      {"RedisModule_CreateCommand", &api.CreateCommand},
      {"RedisModule_Log", &api.Log},
      {"RedisModule_LogIOError", &api.LogIOError},
      {"RedisModule_CreateDataType", &api.CreateDataType},
      {"RedisModule_OpenKey", &api.OpenKey},
      {"RedisModule_CloseKey", &api.CloseKey},
      {"RedisModule_KeyType", &api.KeyType},
      {"RedisModule_ModuleTypeGetType", &api.ModuleTypeGetType},
      {"RedisModule_ModuleTypeGetValue", &api.ModuleTypeGetValue},
      {"RedisModule_ModuleTypeSetValue", &api.ModuleTypeSetValue},
      {"RedisModule_StringPtrLen", &api.StringPtrLen},
      {"RedisModule_ReplyWithError", &api.ReplyWithError},
      {"RedisModule_ReplyWithSimpleString", &api.ReplyWithSimpleString},
      {"RedisModule_ReplyWithLongLong", &api.ReplyWithLongLong},
      {"RedisModule_ReplyWithBool", &api.ReplyWithBool},
      {"RedisModule_ReplyWithStringBuffer", &api.ReplyWithStringBuffer},
      {"RedisModule_ReplyWithNull", &api.ReplyWithNull},
      {"RedisModule_ReplyWithArray", &api.ReplyWithArray},
      {"RedisModule_ReplyWithMap", &api.ReplyWithMap},
      {"RedisModule_GetContextFlags", &api.GetContextFlags},
      {"RedisModule_ReplicateVerbatim", &api.ReplicateVerbatim},
      {"RedisModule_SaveUnsigned", &api.SaveUnsigned},
      {"RedisModule_LoadUnsigned", &api.LoadUnsigned},
      {"RedisModule_SaveStringBuffer", &api.SaveStringBuffer},
      {"RedisModule_LoadStringBuffer", &api.LoadStringBuffer},
      {"RedisModule_IsIOError", &api.IsIOError},
      {"RedisModule_EmitAOF", &api.EmitAOF},
      {"RedisModule_DigestAddStringBuffer", &api.DigestAddStringBuffer},
      {"RedisModule_DigestEndSequence", &api.DigestEndSequence},
      {"RedisModule_Free", &api.Free},
      {"RedisModule_CreateString", &api.CreateString},
      {"RedisModule_FreeString", &api.FreeString},
      {"RedisModule_RegisterStringConfig", &api.RegisterStringConfig},
      {"RedisModule_RegisterNumericConfig", &api.RegisterNumericConfig},
      {"RedisModule_LoadConfigs", &api.LoadConfigs},
  };
  // GetApi needs NUL-terminated names: every literal above is one.
  for (const Entry& entry : entries) {
    if (get(entry.name.data(), entry.slot) != kOk) return entry.name;
  }
  return {};
}

inline std::string_view view(const String* text) {
  std::size_t length = 0;
  const char* data = api.StringPtrLen(text, &length);
  return {data, length};
}

}  // namespace ccf::redis
