// ccf-redis.so: the CF.* and BF.* commands inside Redis (7.0 or newer), so that Redis itself
// shards, replicates and persists the filters (docs/scale_out.md). The commands are `ccf
// serve`'s, the same code (server/cf/commands.hpp, server/bf/commands.hpp) over the same
// CfFilter and BfFilter; this file is only what Redis adds:
//
//   keys      a filter is the value of an ordinary Redis key, of the module data type
//             "ccfCuckoo" or "ccfBloom-" (names of its own, so that RedisBloom never reads its
//             data nor the reverse), so DEL, EXPIRE, RENAME, COPY, TYPE, OBJECT and SCAN work on
//             it
//   replies   through the module API, in the client's protocol (RESP2 or RESP3)
//   writes    replicated verbatim to replicas and the AOF. A filter's layout follows from its
//             parameters and the sequence of writes alone (one fixed hash seed, a breadth-first
//             path search without randomness, Bloom bits set by the item alone), so a replica
//             ends up with the same bytes as its master: DEBUG DIGEST agrees
//   RDB       encoding version 1 of each type: the filter's dump (its family's dump format: a
//             checksummed header, then one blob per sub-filter) as string buffers
//   AOF       a rewrite emits CF.LOADCHUNK or BF.LOADCHUNK commands that rebuild the filter
//             from its dump
//   configs   ccf.bf-error-rate, ccf.bf-initial-size and ccf.bf-expansion-factor: what
//             auto-created Bloom filters get (RedisBloom's bf-* configs, under the module's name
//             as Redis 7 requires)
//
// Redis runs commands on one thread; what the concurrent core still gives it is in
// docs/scale_out.md.
#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "redis_module_api.hpp"
#include "server/bf/commands.hpp"
#include "server/cf/commands.hpp"

namespace ccf::redis {
namespace {

using serve::BfCommand;
using serve::BfFilter;
using serve::CfCommand;
using serve::CfFilter;
using serve::Held;
using serve::Lookup;

constexpr char kModuleName[] = "ccf";
constexpr int kModuleVersion = 1;
constexpr int kEncodingVersion = 1;

// What differs between the two families' data types. Type names are exactly 9 characters, as
// Redis requires.
template <class Filter>
struct Family;
template <>
struct Family<CfFilter> {
  static constexpr char kTypeName[] = "ccfCuckoo";
  static constexpr char kLoadChunk[] = "CF.LOADCHUNK";
  // A dump has one blob per sub-filter: no RDB entry may announce more.
  static constexpr std::uint64_t kMaxBlobs = CfFilter::kMaxFilters;
  static inline Type* type = nullptr;
  static std::shared_ptr<const CfFilter::Dump> dump(const CfFilter& filter) {
    return filter.dump(CfFilter::DumpUse::kSnapshot);
  }
  static std::size_t memory(const CfFilter& filter) { return filter.info().size_bytes; }
};
template <>
struct Family<BfFilter> {
  static constexpr char kTypeName[] = "ccfBloom-";
  static constexpr char kLoadChunk[] = "BF.LOADCHUNK";
  // One blob per sub-filter, and a scaling filter's count is unbounded: each blob read is
  // allocated only as the RDB data is there, so no bound is needed for memory.
  static constexpr std::uint64_t kMaxBlobs = std::numeric_limits<std::uint64_t>::max();
  static inline Type* type = nullptr;
  static std::shared_ptr<const BfFilter::Dump> dump(const BfFilter& filter) {
    return filter.dump();
  }
  static std::size_t memory(const BfFilter& filter) { return filter.memory_bytes(); }
};

template <class Filter>
Type* type_of() {
  return Family<Filter>::type;
}

// ---- replies and keys: what the command layer needs of a front end -------------------------

class Reply {
 public:
  explicit Reply(Ctx* ctx)
      : ctx_(ctx), proto_((api.GetContextFlags(ctx) & kCtxFlagsResp3) != 0 ? 3 : 2) {}

  int proto() const noexcept { return proto_; }
  // Whether the command's reply is an error (its first element is one).
  bool failed() const noexcept { return first_ == First::kError; }
  bool started() const noexcept { return first_ != First::kNone; }

  void simple(std::string_view text) {
    mark(First::kOther);
    api.ReplyWithSimpleString(ctx_, std::string(text).c_str());
  }
  // Sent as given, without a code added: "Bad capacity" goes out as -Bad capacity.
  void error(std::string_view text) {
    mark(First::kError);
    api.ReplyWithError(ctx_, std::string(text).c_str());
  }
  void integer(long long value) {
    mark(First::kOther);
    api.ReplyWithLongLong(ctx_, value);
  }
  void boolean(bool value) {  // RESP2: the integer 1 or 0
    mark(First::kOther);
    api.ReplyWithBool(ctx_, value ? 1 : 0);
  }
  void bulk(std::string_view data) {
    mark(First::kOther);
    api.ReplyWithStringBuffer(ctx_, data.data(), data.size());
  }
  void null() {
    mark(First::kOther);
    api.ReplyWithNull(ctx_);
  }
  void array(std::size_t length) {
    mark(First::kOther);
    api.ReplyWithArray(ctx_, static_cast<long>(length));
  }
  void map(std::size_t pairs) {  // RESP2: a flat array of 2 * pairs
    mark(First::kOther);
    api.ReplyWithMap(ctx_, static_cast<long>(pairs));
  }

 private:
  enum class First { kNone, kError, kOther };
  void mark(First kind) noexcept {
    if (first_ == First::kNone) first_ = kind;
  }

  Ctx* ctx_;
  int proto_;
  First first_ = First::kNone;
};

// The command's key (every CF.* command has exactly one, its first argument), opened for the
// whole command: for writing when the command is a write.
class Keys {
 public:
  Keys(Ctx* ctx, String* name, bool write)
      : key_(name == nullptr ? nullptr : api.OpenKey(ctx, name, write ? kRead | kWrite : kRead)) {}
  ~Keys() {
    if (key_ != nullptr) api.CloseKey(key_);
  }
  Keys(const Keys&) = delete;
  Keys& operator=(const Keys&) = delete;

  // Whether this command stored a new filter under the key.
  bool created() const noexcept { return created_; }

  template <class Filter>
  Lookup<Filter> look_up(std::string_view, std::type_identity<Filter>) const {
    // OpenKey for reading gives no handle for a missing key.
    if (key_ == nullptr || api.KeyType(key_) == kKeyTypeEmpty) return {Held::kNothing, nullptr};
    if (api.ModuleTypeGetType(key_) != type_of<Filter>()) return {Held::kOther, nullptr};
    return {Held::kFilter, static_cast<Filter*>(api.ModuleTypeGetValue(key_))};
  }

  template <class Make>
  Held create(std::string_view key, Make make) {
    using Filter = typename decltype(make())::element_type;
    const Lookup<Filter> found = look_up(key, std::type_identity<Filter>{});
    if (found.held != Held::kNothing) return found.held;
    std::unique_ptr<Filter> filter = make();
    if (key_ == nullptr || api.ModuleTypeSetValue(key_, type_of<Filter>(), filter.get()) != kOk) {
      throw std::logic_error("the key is not open for writing");
    }
    filter.release();  // Redis owns it now: free_filter() deletes it
    created_ = true;
    return Held::kNothing;
  }

 private:
  Key* key_;
  bool created_ = false;
};

template <auto kCommand>
int run_command(Ctx* ctx, String** argv, int argc) {
  static const bool writes = serve::has_flag(serve::facts_of(kCommand), "write");
  std::vector<std::string_view> args(static_cast<std::size_t>(argc));
  for (int i = 0; i < argc; ++i) args[static_cast<std::size_t>(i)] = view(argv[i]);
  Reply reply(ctx);
  Keys keys(ctx, argc >= 2 ? argv[1] : nullptr, writes);
  try {
    serve::run(kCommand, keys, args, reply);
  } catch (const std::exception& error) {
    // The command layer replies only after its last step that can throw.
    if (!reply.started()) reply.error(std::string("ERR ") + error.what());
  }
  // A write answered with an error changed nothing, unless it created its key.
  if (writes && (keys.created() || !reply.failed())) api.ReplicateVerbatim(ctx);
  return kOk;
}

// run_command of every command of a family, in its table's order.
template <class Command, std::size_t... kIndex>
constexpr std::array<CommandFunction, sizeof...(kIndex)> command_functions(
    std::index_sequence<kIndex...>) {
  return {&run_command<static_cast<Command>(kIndex)>...};
}
constexpr auto kCfFunctions =
    command_functions<CfCommand>(std::make_index_sequence<serve::kCfCommands.size()>());
constexpr auto kBfFunctions =
    command_functions<BfCommand>(std::make_index_sequence<serve::kBfCommands.size()>());

// ---- the data types: one set of methods, instantiated per family -------------------------

template <class Filter>
const Filter& filter_of(const void* value) {
  return *static_cast<const Filter*>(value);
}

template <class Filter>
auto dump_of(const void* value) {
  return Family<Filter>::dump(filter_of<Filter>(value));
}

std::string joined(const std::vector<std::string>& blobs) {
  std::size_t size = 0;
  for (const std::string& blob : blobs) size += blob.size();
  std::string data;
  data.reserve(size);
  for (const std::string& blob : blobs) data += blob;
  return data;
}

template <class Filter>
void save_filter(IO* rdb, void* value) {
  const auto dump = dump_of<Filter>(value);
  api.SaveStringBuffer(rdb, dump->header.data(), dump->header.size());
  api.SaveUnsigned(rdb, dump->blobs.size());
  for (const std::string& blob : dump->blobs) api.SaveStringBuffer(rdb, blob.data(), blob.size());
}

// One string buffer of the RDB data, appended to `out`. False on an I/O error.
bool load_buffer(IO* rdb, std::string& out) {
  std::size_t length = 0;
  char* data = api.LoadStringBuffer(rdb, &length);
  if (data == nullptr || api.IsIOError(rdb) != 0) return false;
  try {
    out.append(data, length);
  } catch (...) {
    api.Free(data);
    throw;
  }
  api.Free(data);
  return true;
}

template <class Filter>
void* load_filter(IO* rdb, int encoding_version) {
  if (encoding_version != kEncodingVersion) {
    api.LogIOError(rdb, "warning",
                   "ccf: a filter stored with encoding version %d; this module reads version %d",
                   encoding_version, kEncodingVersion);
    return nullptr;
  }
  try {
    std::string header, data;
    if (!load_buffer(rdb, header)) return nullptr;
    const std::uint64_t blobs = api.LoadUnsigned(rdb);
    if (api.IsIOError(rdb) != 0) return nullptr;
    if (blobs > Family<Filter>::kMaxBlobs) {
      api.LogIOError(rdb, "warning", "ccf: a filter of %llu sub-filters (at most %llu)",
                     static_cast<unsigned long long>(blobs),
                     static_cast<unsigned long long>(Family<Filter>::kMaxBlobs));
      return nullptr;
    }
    for (std::uint64_t i = 0; i < blobs; ++i) {
      if (!load_buffer(rdb, data)) return nullptr;
    }
    std::unique_ptr<Filter> filter = Filter::restore(header, data);
    if (!filter) {
      api.LogIOError(rdb, "warning",
                     "ccf: a filter's data is damaged (a checksum or its shape does not match)");
      return nullptr;
    }
    return filter.release();
  } catch (const std::bad_alloc&) {
    api.LogIOError(rdb, "warning", "ccf: no memory to load a filter");
    return nullptr;
  }
}

// LOADCHUNK commands that rebuild the filter: the header at iterator 1, then the data in chunks
// of at most serve::kMaxChunkBytes, each at the iterator that SCANDUMP gives it (one past the
// chunk's last byte in the data).
template <class Filter>
void rewrite_filter(IO* aof, String* key, void* value) {
  const auto dump = dump_of<Filter>(value);
  const char* const command = Family<Filter>::kLoadChunk;
  api.EmitAOF(aof, command, "slb", key, 1LL, dump->header.data(), dump->header.size());
  long long iterator = 1;
  for (const std::string& blob : dump->blobs) {
    for (std::size_t offset = 0; offset < blob.size();) {
      const std::size_t length = std::min<std::size_t>(blob.size() - offset, serve::kMaxChunkBytes);
      iterator += static_cast<long long>(length);
      api.EmitAOF(aof, command, "slb", key, iterator, blob.data() + offset, length);
      offset += length;
    }
  }
}

template <class Filter>
std::size_t filter_memory(const void* value) {
  return Family<Filter>::memory(filter_of<Filter>(value));
}

template <class Filter>
void digest_filter(Digest* digest, void* value) {
  const auto dump = dump_of<Filter>(value);
  api.DigestAddStringBuffer(digest, dump->header.data(), dump->header.size());
  for (const std::string& blob : dump->blobs) {
    api.DigestAddStringBuffer(digest, blob.data(), blob.size());
  }
  api.DigestEndSequence(digest);
}

template <class Filter>
void free_filter(void* value) {
  delete static_cast<Filter*>(value);
}

// Redis frees a value in the background when this exceeds its lazy-free threshold (64): here
// one unit per 4 KiB page.
template <class Filter>
std::size_t free_effort(String*, const void* value) {
  return filter_memory<Filter>(value) / 4096;
}

template <class Filter>
void* copy_filter(String*, String*, const void* value) {
  try {
    const auto dump = dump_of<Filter>(value);
    return Filter::restore(dump->header, joined(dump->blobs)).release();
  } catch (const std::bad_alloc&) {
    return nullptr;  // COPY fails
  }
}

// Registers the family's data type; false if Redis refuses it.
template <class Filter>
bool register_type(Ctx* ctx) {
  TypeMethods methods{};
  methods.version = kTypeMethodsVersion;
  methods.rdb_load = load_filter<Filter>;
  methods.rdb_save = save_filter<Filter>;
  methods.aof_rewrite = rewrite_filter<Filter>;
  methods.mem_usage = filter_memory<Filter>;
  methods.digest = digest_filter<Filter>;
  methods.free = free_filter<Filter>;
  methods.free_effort = free_effort<Filter>;
  methods.copy = copy_filter<Filter>;
  Family<Filter>::type =
      api.CreateDataType(ctx, Family<Filter>::kTypeName, kEncodingVersion, &methods);
  return Family<Filter>::type != nullptr;
}

// Registers the family's commands (`table`, run through `functions`); the name of one Redis
// refused, or an empty string.
template <std::size_t N>
std::string register_commands(Ctx* ctx, const std::array<serve::CommandFacts, N>& table,
                              const std::array<CommandFunction, N>& functions) {
  for (std::size_t i = 0; i < N; ++i) {
    const serve::CommandFacts& facts = table[i];
    const std::string name(facts.name), flags(facts.flags);
    if (api.CreateCommand(ctx, name.c_str(), functions[i], flags.c_str(), facts.first_key,
                          facts.last_key, facts.step) != kOk) {
      return name;
    }
  }
  return {};
}

// ---- configs --------------------------------------------------------------------------------

// RedisBloom's bf-* configs (BF-COMMANDS.md §2), which Redis names ccf.bf-*: they set what
// auto-created Bloom filters get (serve::bf_defaults()). Validated here, with RedisBloom's
// texts, so the numeric ones are registered without a range of Redis's own.

String* error_string(const std::string& text) {
  return api.CreateString(nullptr, text.data(), text.size());
}

String* shown_error_rate = nullptr;  // CONFIG GET's last answer: a getter's string stays ours

String* get_error_rate(const char*, void*) {
  std::array<char, 32> text;
  const int length =
      std::snprintf(text.data(), text.size(), "%g", serve::bf_defaults().error_rate.load());
  if (shown_error_rate != nullptr) api.FreeString(nullptr, shown_error_rate);
  shown_error_rate = api.CreateString(nullptr, text.data(), static_cast<std::size_t>(length));
  return shown_error_rate;
}

int set_error_rate(const char*, String* value, void*, String** error) {
  const std::optional<double> rate = serve::parse_double(view(value));
  if (!rate) {
    *error = error_string("Invalid value for `bf-error-rate`");
    return kErr;
  }
  if (!(*rate > 0.0 && *rate < 1.0)) {
    *error = error_string("Value for `bf-error-rate` must be in the range (0.000000, 1.000000)");
    return kErr;
  }
  serve::bf_defaults().error_rate.store(std::min(*rate, serve::kBfMaxErrorRate));
  return kOk;
}

struct NumericConfig {
  const char* name;
  std::atomic<long long>* value;
  long long low, high;
};

long long get_numeric(const char*, void* data) {
  return static_cast<const NumericConfig*>(data)->value->load();
}

int set_numeric(const char*, long long value, void* data, String** error) {
  const NumericConfig& config = *static_cast<const NumericConfig*>(data);
  if (value < config.low || value > config.high) {
    *error = error_string("Value for `" + std::string(config.name) + "` must be in the range [" +
                          std::to_string(config.low) + ", " + std::to_string(config.high) + "]");
    return kErr;
  }
  config.value->store(value);
  return kOk;
}

// Registers the three configs and takes their values from Redis's configuration; false if
// Redis refuses.
bool register_configs(Ctx* ctx) {
  serve::BfDefaults& defaults = serve::bf_defaults();
  static NumericConfig capacity{"bf-initial-size", &defaults.capacity, 1, serve::kBfMaxCapacity};
  static NumericConfig expansion{"bf-expansion-factor", &defaults.expansion, 0,
                                 serve::kBfMaxExpansion};
  constexpr long long kAny = std::numeric_limits<long long>::max();
  return api.RegisterStringConfig(ctx, "bf-error-rate", "0.01", kConfigDefault, get_error_rate,
                                  set_error_rate, nullptr, nullptr) == kOk &&
         api.RegisterNumericConfig(ctx, capacity.name, 100, kConfigDefault, -kAny, kAny,
                                   get_numeric, set_numeric, nullptr, &capacity) == kOk &&
         api.RegisterNumericConfig(ctx, expansion.name, 2, kConfigDefault, -kAny, kAny, get_numeric,
                                   set_numeric, nullptr, &expansion) == kOk &&
         api.LoadConfigs(ctx) == kOk;
}

// ---- loading ---------------------------------------------------------------------------------

std::string upper(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}

int refuse(Ctx* ctx, const std::string& why) {
  if (api.Log != nullptr) api.Log(ctx, "warning", "ccf: not loaded: %s", why.c_str());
  return kErr;
}

int load(Ctx* ctx) {
  const std::string_view missing = resolve(ctx);
  if (!missing.empty()) {
    return refuse(ctx, "this server's module API has no " + std::string(missing) +
                           " (ccf-redis needs Redis 7.0 or newer)");
  }
  if (api.GetServerVersion() < kVersion7_0) {
    return refuse(ctx, "ccf-redis needs Redis 7.0 or newer");
  }
  if (api.IsModuleNameBusy(kModuleName) != 0) {
    return refuse(ctx, "a module named \"ccf\" is loaded already");
  }
  api.SetModuleAttribs(ctx, kModuleName, kModuleVersion, kApiVersion1);

  if (!register_type<CfFilter>(ctx)) {
    return refuse(ctx, std::string("the data type ") + Family<CfFilter>::kTypeName +
                           " could not be registered");
  }
  if (!register_type<BfFilter>(ctx)) {
    return refuse(ctx, std::string("the data type ") + Family<BfFilter>::kTypeName +
                           " could not be registered");
  }
  if (!register_configs(ctx)) return refuse(ctx, "the ccf.bf-* configs could not be registered");
  std::string refused = register_commands(ctx, serve::kCfCommands, kCfFunctions);
  if (refused.empty()) refused = register_commands(ctx, serve::kBfCommands, kBfFunctions);
  if (!refused.empty()) {
    return refuse(ctx, "the command " + upper(refused) +
                           " exists already (another module of the same commands, such as "
                           "RedisBloom, is loaded)");
  }
  return kOk;
}

}  // namespace
}  // namespace ccf::redis

// Redis calls this when it loads the module (--loadmodule or MODULE LOAD).
extern "C" __attribute__((visibility("default"))) int RedisModule_OnLoad(ccf::redis::Ctx* ctx,
                                                                         ccf::redis::String**,
                                                                         int) {
  try {
    return ccf::redis::load(ctx);
  } catch (const std::exception& error) {
    return ccf::redis::refuse(ctx, error.what());
  }
}
