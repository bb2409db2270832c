// `null`: a structure that stores nothing and answers every operation from the key itself (its
// lowest bit, as unpredictable as a real structure's answer for random keys). Running the
// harness over it measures what the harness alone costs per operation -- key and operation
// draws, ownership bookkeeping, counting -- which every run reports beside its result
// (RunResult::harness_ns_per_op).
#pragma once

#include <cstddef>
#include <cstdint>

#include "structure.hpp"

namespace chtbench {

class NullStructure final : public StructureBase<NullStructure> {
 public:
  bool insert(std::uint64_t key) override { return answer(key); }
  bool contains(std::uint64_t key) const override { return answer(key); }
  bool erase(std::uint64_t key) override { return answer(key); }
  std::size_t size() const override { return 0; }
  std::size_t capacity() const override { return 0; }
  std::size_t memory_bytes() const override { return sizeof(*this); }

 private:
  static bool answer(std::uint64_t key) noexcept { return (key & 1) != 0; }
};

}  // namespace chtbench
