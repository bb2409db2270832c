// ccf-redis.so: the CF.* commands inside Redis (7.0 or newer), so that Redis itself shards,
// replicates and persists the filters (docs/scale_out.md). The commands are `ccf serve`'s, the
// same code (serve/cf_commands.hpp) over the same CfFilter; this file is only what Redis adds:
//
//   keys      a filter is the value of an ordinary Redis key, of the module data type
//             "ccfCuckoo" (its own name, so that RedisBloom never reads its data nor the
//             reverse), so DEL, EXPIRE, RENAME, COPY, TYPE, OBJECT and SCAN work on it
//   replies   through the module API, in the client's protocol (RESP2 or RESP3)
//   writes    replicated verbatim to replicas and the AOF. A filter's layout follows from its
//             parameters and the sequence of writes alone (one fixed hash seed, a breadth-first
//             path search without randomness), so a replica ends up with the same bytes as its
//             master: DEBUG DIGEST agrees
//   RDB       encoding version 1: the filter's dump (CfFilter's dump format: an XXH3-checked
//             header, then one checksummed filter file per sub-filter) as string buffers
//   AOF       a rewrite emits CF.LOADCHUNK commands that rebuild the filter from its dump
//
// Redis runs commands on one thread; what the concurrent core still gives it is in
// docs/scale_out.md.
#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "redis_module_api.hpp"
#include "server/cf/commands.hpp"
#include "server/cf/filter.hpp"

namespace ccf::redis {
namespace {

using serve::CfCommand;
using serve::CfFilter;
using serve::Held;
using serve::Lookup;

constexpr char kModuleName[] = "ccf";
constexpr int kModuleVersion = 1;
// Exactly 9 characters, as Redis requires of a data type's name.
constexpr char kTypeName[] = "ccfCuckoo";
constexpr int kEncodingVersion = 1;
// A dump has one blob per sub-filter: no RDB entry may announce more.
constexpr std::uint64_t kMaxBlobs = CfFilter::kMaxFilters;

Type* cuckoo_type = nullptr;

// The data type of a family's values.
template <class Filter>
Type* type_of();
template <>
Type* type_of<CfFilter>() {
  return cuckoo_type;
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

template <CfCommand kCommand>
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

template <std::size_t... kIndex>
constexpr std::array<CommandFunction, sizeof...(kIndex)> command_functions(
    std::index_sequence<kIndex...>) {
  return {&run_command<static_cast<CfCommand>(kIndex)>...};
}
constexpr auto kCommandFunctions =
    command_functions(std::make_index_sequence<serve::kCfCommands.size()>());

// ---- the data type -------------------------------------------------------------------------

const CfFilter& filter_of(const void* value) {
  return *static_cast<const CfFilter*>(value);
}

std::shared_ptr<const CfFilter::Dump> dump_of(const void* value) {
  return filter_of(value).dump(CfFilter::DumpUse::kSnapshot);
}

std::string joined(const std::vector<std::string>& blobs) {
  std::size_t size = 0;
  for (const std::string& blob : blobs) size += blob.size();
  std::string data;
  data.reserve(size);
  for (const std::string& blob : blobs) data += blob;
  return data;
}

void save_filter(IO* rdb, void* value) {
  const std::shared_ptr<const CfFilter::Dump> dump = dump_of(value);
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
    if (blobs > kMaxBlobs) {
      api.LogIOError(rdb, "warning", "ccf: a filter of %llu sub-filters (at most %llu)",
                     static_cast<unsigned long long>(blobs),
                     static_cast<unsigned long long>(kMaxBlobs));
      return nullptr;
    }
    for (std::uint64_t i = 0; i < blobs; ++i) {
      if (!load_buffer(rdb, data)) return nullptr;
    }
    std::unique_ptr<CfFilter> filter = CfFilter::restore(header, data);
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

// CF.LOADCHUNK commands that rebuild the filter: the header at iterator 1, then the data in
// chunks of at most serve::kMaxChunkBytes, each at the iterator that CF.SCANDUMP gives it (one
// past the chunk's last byte in the data).
void rewrite_filter(IO* aof, String* key, void* value) {
  const std::shared_ptr<const CfFilter::Dump> dump = dump_of(value);
  api.EmitAOF(aof, "CF.LOADCHUNK", "slb", key, 1LL, dump->header.data(), dump->header.size());
  long long iterator = 1;
  for (const std::string& blob : dump->blobs) {
    for (std::size_t offset = 0; offset < blob.size();) {
      const std::size_t length = std::min<std::size_t>(blob.size() - offset, serve::kMaxChunkBytes);
      iterator += static_cast<long long>(length);
      api.EmitAOF(aof, "CF.LOADCHUNK", "slb", key, iterator, blob.data() + offset, length);
      offset += length;
    }
  }
}

std::size_t filter_memory(const void* value) {
  return filter_of(value).info().size_bytes;
}

void digest_filter(Digest* digest, void* value) {
  const std::shared_ptr<const CfFilter::Dump> dump = dump_of(value);
  api.DigestAddStringBuffer(digest, dump->header.data(), dump->header.size());
  for (const std::string& blob : dump->blobs) {
    api.DigestAddStringBuffer(digest, blob.data(), blob.size());
  }
  api.DigestEndSequence(digest);
}

void free_filter(void* value) {
  delete static_cast<CfFilter*>(value);
}

// Redis frees a value in the background when this exceeds its lazy-free threshold (64): here
// one unit per 4 KiB page.
std::size_t free_effort(String*, const void* value) {
  return filter_memory(value) / 4096;
}

void* copy_filter(String*, String*, const void* value) {
  try {
    const std::shared_ptr<const CfFilter::Dump> dump = dump_of(value);
    return CfFilter::restore(dump->header, joined(dump->blobs)).release();
  } catch (const std::bad_alloc&) {
    return nullptr;  // COPY fails
  }
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

  TypeMethods methods{};
  methods.version = kTypeMethodsVersion;
  methods.rdb_load = load_filter;
  methods.rdb_save = save_filter;
  methods.aof_rewrite = rewrite_filter;
  methods.mem_usage = filter_memory;
  methods.digest = digest_filter;
  methods.free = free_filter;
  methods.free_effort = free_effort;
  methods.copy = copy_filter;
  cuckoo_type = api.CreateDataType(ctx, kTypeName, kEncodingVersion, &methods);
  if (cuckoo_type == nullptr) {
    return refuse(ctx, std::string("the data type ") + kTypeName + " could not be registered");
  }
  for (std::size_t i = 0; i < serve::kCfCommands.size(); ++i) {
    const serve::CommandFacts& facts = serve::kCfCommands[i];
    const std::string name(facts.name), flags(facts.flags);
    if (api.CreateCommand(ctx, name.c_str(), kCommandFunctions[i], flags.c_str(), facts.first_key,
                          facts.last_key, facts.step) != kOk) {
      return refuse(ctx, "the command " + upper(facts.name) +
                             " exists already (another module of CF.* commands, such as "
                             "RedisBloom, is loaded)");
    }
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
