// A stand-in, in module_test.py, for another module of CF.* commands such as RedisBloom: it
// registers CF.RESERVE under the module name "cfdecoy", so that ccf-redis.so, loaded after it,
// must refuse to load.
#include "redis_module_api.hpp"

namespace {

int reserve(ccf::redis::Ctx* ctx, ccf::redis::String**, int) {
  return ccf::redis::api.ReplyWithSimpleString(ctx, "decoy");
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int RedisModule_OnLoad(ccf::redis::Ctx* ctx,
                                                                         ccf::redis::String**,
                                                                         int) {
  using namespace ccf::redis;
  if (!resolve(ctx).empty()) return kErr;
  api.SetModuleAttribs(ctx, "cfdecoy", 1, kApiVersion1);
  return api.CreateCommand(ctx, "cf.reserve", reserve, "readonly", 1, 1, 1);
}
