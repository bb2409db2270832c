#include "server/cf/filter.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>

#include "ccf/concurrent/striped_cuckoo_filter.hpp"
#include "ccf/detail/addressing.hpp"
#include "ccf/detail/nested_addressing.hpp"
#include "ccf/hash.hpp"

namespace ccf::serve {
namespace {

// One seed for every sub-filter of every key: items map alike in all of a key's sub-filters.
constexpr FilterOptions kSubOptions{.max_load = 1.0};

using Nested = detail::NestedAddressing<16>;

// Sub-filter k of a key: level k * log2(expansion) of the nested family over the first
// sub-filter's buckets (level 0 for every sub-filter when the expansion is 0 or 1).
unsigned level_of(const CfParams& params, unsigned k) {
  return params.expansion <= 1 ? 0 : k * static_cast<unsigned>(std::countr_zero(params.expansion));
}

// A read-only stream buffer over bytes held elsewhere: loads parse a blob without a copy.
class ViewBuffer : public std::streambuf {
 public:
  explicit ViewBuffer(std::string_view bytes) {
    char* begin = const_cast<char*>(bytes.data());  // the get area is only read
    setg(begin, begin, begin + bytes.size());
  }
};

template <unsigned Slots>
class SubOf final : public CfFilter::Sub {
 public:
  explicit SubOf(const Nested& addressing)
      : owned_(std::make_unique<Filter>(addressing, kSubOptions)),
        filter_(*owned_),
        addressing_(addressing) {}
  bool insert(std::string_view item) override { return filter_.insert(item) == Status::kOk; }
  bool insert_in_free_slot(std::string_view item) override {
    const detail::Location at = detail::locate(addressing_, hash_key(item, kSubOptions.seed));
    return filter_.insert_fingerprint(at.primary, at.fp, /*make_room=*/false) == Status::kOk;
  }
  bool contains(std::string_view item) const override { return filter_.contains(item); }
  void contains_many(std::span<const std::string_view> items, std::span<bool> out) const override {
    filter_.contains_many(items, out);
  }
  std::size_t insert_many(std::span<const std::string_view> items) override {
    return filter_.insert_many(items);
  }
  std::size_t count(std::string_view item) const override { return filter_.count(item); }
  bool erase(std::string_view item) override { return filter_.erase(item) == Status::kOk; }
  std::size_t memory_bytes() const override { return filter_.memory_bytes(); }
  std::uint64_t buckets() const override { return filter_.bucket_count(); }
  unsigned slots() const override { return Slots; }
  std::size_t size() const override { return filter_.size(); }
  std::uint32_t fingerprint_at(std::uint64_t bucket, unsigned slot) const override {
    return filter_.fingerprint_at(bucket, slot);
  }
  bool insert_fingerprint(std::uint64_t bucket, std::uint32_t fp) override {
    return filter_.insert_fingerprint(bucket, fp, /*make_room=*/false) == Status::kOk;
  }
  bool erase_fingerprint(std::uint64_t bucket, std::uint32_t fp) override {
    return filter_.erase_fingerprint(bucket, fp) == Status::kOk;
  }
  std::uint64_t saved_bytes() const override {
    // The library's filter file: header, the table's payload, the payload's checksum.
    return detail::FilterHeader::kEncodedSize +
           Filter::table_type::payload_bytes(filter_.bucket_count()) + 8;
  }
  std::string save() const override {
    std::ostringstream out;
    filter_.save(out);
    return std::move(out).str();
  }
  // The filter in blob, if it is one of this shape and bucket count (else nullptr).
  static std::unique_ptr<CfFilter::Sub> load(const Nested& addressing, std::string_view blob) {
    ViewBuffer buffer(blob);
    std::istream in(&buffer);
    std::unique_ptr<Filter> loaded;
    try {
      loaded = Filter::load(in, addressing);
    } catch (const std::exception&) {
      return nullptr;  // not a filter file of this shape and size, or damaged
    }
    if (loaded->seed() != kSubOptions.seed || in.peek() != std::char_traits<char>::eof()) {
      return nullptr;
    }
    return std::unique_ptr<CfFilter::Sub>(new SubOf(std::move(loaded), addressing));
  }

 private:
  using Filter =
      BasicCuckooFilter<AtomicPackedTable<16, Slots>, StripedSync<ReadMode::kOptimistic>, Nested>;
  SubOf(std::unique_ptr<Filter> filter, const Nested& addressing)
      : owned_(std::move(filter)), filter_(*owned_), addressing_(addressing) {}

  // A sub-filter made here owns its filter inline; a loaded one owns what load() returned.
  std::unique_ptr<Filter> owned_;
  Filter& filter_;
  Nested addressing_;  // the filter's: where an item's pair lies (insert_in_free_slot)
};

// Throws std::bad_alloc, or std::invalid_argument for a level beyond the addressing's.
std::unique_ptr<CfFilter::Sub> make_sub(const CfParams& params, unsigned k) {
  const unsigned level = level_of(params, k);
  if (level > Nested::kMaxLevel) {
    throw std::invalid_argument("sub-filter " + std::to_string(k) + " would need " +
                                std::to_string(level) + " doublings");
  }
  const Nested addressing(params.buckets, level);
  switch (params.bucket_size) {
    case 1:
      return std::make_unique<SubOf<1>>(addressing);
    case 2:
      return std::make_unique<SubOf<2>>(addressing);
    case 4:
      return std::make_unique<SubOf<4>>(addressing);
    default:
      throw std::invalid_argument("CfFilter: bucket size " + std::to_string(params.bucket_size) +
                                  " has no layout");
  }
}

std::unique_ptr<CfFilter::Sub> load_sub(const CfParams& params, unsigned k, std::string_view blob) {
  const unsigned level = level_of(params, k);
  if (level > Nested::kMaxLevel) return nullptr;
  const Nested addressing(params.buckets, level);
  switch (params.bucket_size) {
    case 1:
      return SubOf<1>::load(addressing, blob);
    case 2:
      return SubOf<2>::load(addressing, blob);
    case 4:
      return SubOf<4>::load(addressing, blob);
    default:
      return nullptr;
  }
}

}  // namespace

CfFilter::CfFilter(const CfParams& params, std::vector<std::unique_ptr<Sub>> loaded)
    : params_(params), items_(params.items), deletes_(params.deletes) {
  for (std::size_t k = 0; k < loaded.size(); ++k) {
    install(static_cast<unsigned>(k), std::move(loaded[k]));
  }
  filters_.store(static_cast<unsigned>(loaded.size()), std::memory_order_release);
}

CfFilter::CfFilter(const CfParams& params)
    : params_(params), items_(params.items), deletes_(params.deletes) {
  install(0, make_sub(params_, 0));
  filters_.store(1, std::memory_order_release);
}

CfFilter::~CfFilter() = default;

std::mutex& CfFilter::nx_lock(std::string_view item) const {
  return nx_locks_[std::hash<std::string_view>{}(item) % nx_locks_.size()];
}

std::atomic<std::uint64_t>& CfFilter::removals(std::string_view item) const {
  // Every sub-filter fingerprints with the same hash and seed (kSubOptions): the item's
  // fingerprint, and so its stripe, is the same in all of them.
  return removals(detail::Addressing<16>::fingerprint(hash_key(item, kSubOptions.seed)));
}

std::atomic<std::uint64_t>& CfFilter::removals(std::uint32_t fp) const {
  return removals_[fp % kRemovalStripes].count;
}

AddResult CfFilter::add(std::string_view item, bool only_if_absent) {
  AddResult result;
  {
    const std::shared_lock writing(writers_);  // (5)
    version_.fetch_add(1);
    if (!only_if_absent) {
      result = add_unchecked(item);
    } else {
      const std::lock_guard lock(nx_lock(item));  // (4)
      result = contains(item) ? AddResult::kPresent : add_unchecked(item);
    }
  }
  drop_stale_dump();
  return result;
}

std::size_t CfFilter::add_many(std::span<const std::string_view> items) {
  std::size_t added = 0;
  {
    const std::shared_lock writing(writers_);  // (5)
    version_.fetch_add(1);
    // (2) With one sub-filter the batch's order (a free slot, then the path search) is the
    // contract's; with more, an older sub-filter's free slot comes before the newest's path
    // search, which insert_many would run first: add() places those items one by one.
    if (filters() == 1) added = sub(0).insert_many(items);
    items_.fetch_add(added);
  }
  drop_stale_dump();
  return added;
}

void CfFilter::drop_stale_dump() {
  if (!dump_cached_.load(std::memory_order_relaxed)) return;  // the common case: no dump
  const std::lock_guard dumping(dump_mutex_);
  if (last_dump_ && last_dump_version_ != version_.load()) {
    last_dump_.reset();
    dump_cached_.store(false, std::memory_order_relaxed);
  }
}

AddResult CfFilter::add_unchecked(std::string_view item) {
  for (;;) {
    const unsigned seen = filters();
    if (place(item, seen)) {
      items_.fetch_add(1);
      return AddResult::kAdded;
    }
    if (params_.expansion == 0) return AddResult::kFull;
    if (seen >= kMaxFilters) return AddResult::kMaxExpansions;
    if (!grow(seen)) return AddResult::kNoMemory;
  }
}

bool CfFilter::place(std::string_view item, unsigned seen) {  // (2)
  if (seen == 1) return sub(0).insert(item);                  // a free slot, then the path search
  for (unsigned k = seen; k-- > 0;) {
    if (sub(k).insert_in_free_slot(item)) return true;
  }
  return sub(seen - 1).insert(item);
}

bool CfFilter::grow(unsigned seen) {
  const std::lock_guard lock(grow_mutex_);
  if (filters_.load(std::memory_order_relaxed) != seen) return true;  // another insert grew it
  if (subs_[seen].load(std::memory_order_relaxed) != nullptr) {       // emptied by a compaction
    filters_.store(seen + 1, std::memory_order_release);              // (1)
    return true;
  }
  try {
    install(seen, make_sub(params_, seen));
  } catch (const std::bad_alloc&) {
    return false;
  } catch (const std::invalid_argument&) {
    return false;  // beyond the addressing's levels, or a table too large to have
  }
  filters_.store(seen + 1, std::memory_order_release);  // (1)
  return true;
}

bool CfFilter::contains(std::string_view item) const {
  const std::atomic<std::uint64_t>& removed = removals(item);
  for (;;) {
    const std::uint64_t before = removed.load();  // (3)
    for (unsigned k = filters(); k-- > 0;) {
      if (sub(k).contains(item)) return true;
    }
    if (removed.load() == before) return false;
  }
}

void CfFilter::contains_many(std::span<const std::string_view> items, std::span<bool> out) const {
  // (3) for each item: its stripe's counter is read before the scan and again after it; an
  // item not found whose counter moved is looked up again alone.
  std::vector<std::uint64_t> before(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) before[i] = removals(items[i]).load();
  std::fill_n(out.begin(), items.size(), false);
  std::vector<std::size_t> pending(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) pending[i] = i;
  std::vector<std::string_view> probe;
  const std::unique_ptr<bool[]> found = std::make_unique<bool[]>(items.size());
  for (unsigned k = filters(); k-- > 0 && !pending.empty();) {
    probe.clear();
    for (const std::size_t i : pending) probe.push_back(items[i]);
    sub(k).contains_many(probe, std::span<bool>(found.get(), probe.size()));
    std::size_t left = 0;
    for (std::size_t j = 0; j < pending.size(); ++j) {
      if (found[j]) {
        out[pending[j]] = true;
      } else {
        pending[left++] = pending[j];
      }
    }
    pending.resize(left);
  }
  for (const std::size_t i : pending) {
    if (removals(items[i]).load() != before[i]) out[i] = contains(items[i]);
  }
}

std::uint64_t CfFilter::count(std::string_view item) const {
  const std::atomic<std::uint64_t>& removed = removals(item);
  for (;;) {
    const std::uint64_t before = removed.load();  // (3)
    std::uint64_t copies = 0;
    for (unsigned k = filters(); k-- > 0;) copies += sub(k).count(item);
    if (removed.load() == before) return copies;
  }
}

bool CfFilter::erase(std::string_view item) {
  bool erased = false;
  {
    const std::shared_lock writing(writers_);  // (5)
    version_.fetch_add(1);
    erased = erase_locked(item);
  }
  if (erased) compact(false);
  drop_stale_dump();  // (a compaction drops it too; a cheap test when there is none)
  return erased;
}

void CfFilter::compact(bool all) {
  if (!all && (filters() < 2 || deletes_.load() * 10 <= items_.load())) return;  // cheap test
  compact_locked(all);
  drop_stale_dump();
}

void CfFilter::compact_locked(bool all) {
  const std::unique_lock no_writers(writers_);  // (6)
  const unsigned n = filters();
  if (!all && (n < 2 || deletes_.load() * 10 <= items_.load())) return;
  if (restore_) {  // a CF.LOADCHUNK restore still under way: its sub-filters are not all in
    const std::lock_guard restoring(restore_->mutex);
    for (const bool loaded : restore_->loaded) {
      if (!loaded) return;
    }
  }
  version_.fetch_add(1);
  for (unsigned k = n; k-- > 1;) {
    Sub& newer = sub(k);
    const unsigned newer_level = level_of(params_, k);
    for (std::uint64_t bucket = 0; bucket < newer.buckets(); ++bucket) {
      for (unsigned slot = 0; slot < newer.slots(); ++slot) {
        const std::uint32_t fp = newer.fingerprint_at(bucket, slot);
        if (fp == 0) continue;
        for (unsigned j = 0; j < k; ++j) {  // the oldest that takes it
          // The pair's parent in level j: nesting keeps every item of this class in it.
          if (!sub(j).insert_fingerprint(bucket >> (newer_level - level_of(params_, j)), fp)) {
            continue;
          }
          removals(fp).fetch_add(1);            // (6) after the copy is in, before the removal
          newer.erase_fingerprint(bucket, fp);  // no writer runs: it is there
          break;
        }
      }
    }
    if (newer.size() == 0 && k + 1 == filters()) {
      filters_.store(k, std::memory_order_release);  // (6) it stays allocated, for regrowth
    } else if (!all) {
      break;
    }
  }
  deletes_.store(0);
}

bool CfFilter::erase_locked(std::string_view item) {
  std::atomic<std::uint64_t>& removed = removals(item);
  for (;;) {
    const std::uint64_t before = removed.load();  // (3)
    bool raced = false;
    for (unsigned k = filters(); k-- > 0;) {
      if (!sub(k).contains(item)) continue;
      removed.fetch_add(1);  // (3) before the removal
      if (sub(k).erase(item)) {
        items_.fetch_sub(1);
        deletes_.fetch_add(1);
        return true;
      }
      raced = true;  // another delete took that copy first
      break;
    }
    if (!raced && removed.load() == before) return false;
  }
}

CfFilter::Info CfFilter::info() const {
  const unsigned n = filters();
  std::uint64_t bytes = sizeof(*this);
  // Every sub-filter the key holds, also those a compaction took out of the chain.
  for (const auto& held : subs_) {
    if (const Sub* s = held.load(std::memory_order_acquire)) bytes += s->memory_bytes();
  }
  return {bytes,
          params_.buckets,
          n,
          items_.load(),
          deletes_.load(),
          params_.bucket_size,
          params_.expansion,
          params_.max_iterations};
}

// ---- dumps ---------------------------------------------------------------------------------

namespace {

constexpr std::string_view kMagic = "CCFCF001";
constexpr std::size_t kFixedHeaderBytes = 8 + 8 + 4 + 4 + 4 + 4 + 8 + 8;

template <class T>
void put(std::string& out, T value) {
  static_assert(std::endian::native == std::endian::little, "dumps are little-endian");
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

template <class T>
T take(std::string_view bytes, std::size_t& at) {
  T value;
  std::memcpy(&value, bytes.data() + at, sizeof value);
  at += sizeof value;
  return value;
}

std::uint64_t checksum(std::string_view bytes) {
  return XXH3_64bits(bytes.data(), bytes.size());
}

}  // namespace

bool CfFilter::valid(const CfParams& params, std::uint64_t filters) {
  return (params.bucket_size == 1 || params.bucket_size == 2 || params.bucket_size == 4) &&
         params.buckets > 0 && std::has_single_bit(params.buckets) &&
         params.buckets <= kMaxSlots / params.bucket_size && params.max_iterations >= 1 &&
         params.max_iterations <= 65535 && params.expansion <= 32768 &&
         (params.expansion == 0 || std::has_single_bit(params.expansion)) && filters >= 1 &&
         filters <= kMaxFilters && (params.expansion != 0 || filters == 1);
}

std::shared_ptr<const CfFilter::Dump> CfFilter::dump(DumpUse use) const {
  const std::lock_guard dumping(dump_mutex_);
  const std::unique_lock no_writers(writers_);  // (5)
  if (last_dump_ && last_dump_version_ == version_.load()) return last_dump_;
  auto made = std::make_shared<Dump>();
  const unsigned n = filters();
  for (unsigned k = 0; k < n; ++k) made->blobs.push_back(sub(k).save());
  std::string& header = made->header;
  header.append(kMagic);
  put<std::uint64_t>(header, params_.buckets);
  put<std::uint32_t>(header, params_.bucket_size);
  put<std::uint32_t>(header, params_.max_iterations);
  put<std::uint32_t>(header, params_.expansion);
  put<std::uint32_t>(header, n);
  put<std::uint64_t>(header, items_.load());
  put<std::uint64_t>(header, deletes_.load());
  for (const std::string& blob : made->blobs) put<std::uint64_t>(header, blob.size());
  put<std::uint64_t>(header, checksum(header));
  if (use == DumpUse::kSnapshot) return made;  // written once: not worth its memory later
  last_dump_ = std::move(made);
  last_dump_version_ = version_.load();
  dump_cached_.store(true, std::memory_order_relaxed);
  return last_dump_;
}

bool CfFilter::header_length_fits(std::string_view bytes) {
  return bytes.size() >= kFixedHeaderBytes + 16 && bytes.size() % 8 == 0 &&
         bytes.size() <= kFixedHeaderBytes + 8 * std::size_t{kMaxFilters} + 8;
}

std::optional<CfFilter::DumpHeader> CfFilter::parse_header(std::string_view bytes) {
  if (!header_length_fits(bytes) || bytes.substr(0, kMagic.size()) != kMagic) return std::nullopt;
  std::size_t at = kMagic.size();
  DumpHeader header;
  CfParams& params = header.params;
  params.buckets = take<std::uint64_t>(bytes, at);
  params.bucket_size = take<std::uint32_t>(bytes, at);
  params.max_iterations = take<std::uint32_t>(bytes, at);
  params.expansion = take<std::uint32_t>(bytes, at);
  const std::uint32_t filters = take<std::uint32_t>(bytes, at);
  params.items = take<std::uint64_t>(bytes, at);
  params.deletes = take<std::uint64_t>(bytes, at);
  if (filters == 0 || filters > kMaxFilters ||
      bytes.size() != kFixedHeaderBytes + 8 * std::size_t{filters} + 8) {
    return std::nullopt;
  }
  for (std::uint32_t k = 0; k < filters; ++k) {
    header.blob_sizes.push_back(take<std::uint64_t>(bytes, at));
  }
  if (take<std::uint64_t>(bytes, at) != checksum(bytes.substr(0, bytes.size() - 8))) {
    return std::nullopt;
  }
  if (!valid(params, filters)) return std::nullopt;
  return header;
}

std::unique_ptr<CfFilter> CfFilter::from_header(const DumpHeader& header) {
  auto filter = std::make_unique<CfFilter>(header.params);
  for (std::size_t k = 1; k < header.blob_sizes.size(); ++k) {
    if (!filter->grow(static_cast<unsigned>(k))) throw std::bad_alloc();
  }
  // Every blob is its empty sub-filter's size: the staging memory is bounded by the filter's.
  for (unsigned k = 0; k < header.blob_sizes.size(); ++k) {
    if (header.blob_sizes[k] != filter->sub(k).saved_bytes()) return nullptr;
  }
  filter->restore_ = std::make_unique<Restore>();
  filter->restore_->sizes = header.blob_sizes;
  filter->restore_->staged.resize(header.blob_sizes.size());
  filter->restore_->loaded.resize(header.blob_sizes.size());
  return filter;
}

bool CfFilter::load_chunk(std::uint64_t offset, std::string_view data) {
  if (!restore_ || data.empty()) return false;
  const std::lock_guard lock(restore_->mutex);
  std::uint64_t start = 0;
  for (unsigned k = 0; k < restore_->sizes.size(); ++k) {
    const std::uint64_t size = restore_->sizes[k];
    if (offset < start + size) {
      std::string& staged = restore_->staged[k];
      // In order and once: the staging holds only bytes that arrived, and a loaded
      // sub-filter is never replaced again (its memory would stay: see install).
      if (restore_->loaded[k] || offset - start != staged.size() ||
          data.size() > size - staged.size()) {
        return false;
      }
      staged.append(data);
      if (staged.size() < size) return true;  // more of this blob to come
      const bool loaded = load_blob(k, staged);
      std::string().swap(staged);  // loaded, or bad: then the blob is sent again from its start
      restore_->loaded[k] = loaded;
      return loaded;
    }
    start += size;
  }
  return false;
}

bool CfFilter::load_blob(unsigned k, std::string_view blob) {
  if (k >= filters()) return false;
  std::unique_ptr<Sub> loaded = load_sub(params_, k, blob);
  if (!loaded) return false;
  const std::unique_lock no_writers(writers_);  // (5)
  const std::lock_guard lock(grow_mutex_);
  version_.fetch_add(1);
  install(k, std::move(loaded));
  return true;
}

void CfFilter::install(unsigned k, std::unique_ptr<Sub> made) {
  owned_.reserve(owned_.size() + 1);                      // may throw: before anything changes
  subs_[k].store(made.get(), std::memory_order_release);  // (1)
  owned_.push_back(std::move(made));
}

std::unique_ptr<CfFilter> CfFilter::restore(std::string_view header_bytes, std::string_view data) {
  const std::optional<DumpHeader> header = parse_header(header_bytes);
  if (!header) return nullptr;
  std::vector<std::unique_ptr<Sub>> loaded;
  std::size_t at = 0;
  for (const std::uint64_t size : header->blob_sizes) {
    if (size > data.size() - at) return nullptr;
    const auto k = static_cast<unsigned>(loaded.size());
    loaded.push_back(load_sub(header->params, k, data.substr(at, size)));
    if (!loaded.back()) return nullptr;
    at += size;
  }
  if (at != data.size()) return nullptr;
  return std::unique_ptr<CfFilter>(new CfFilter(header->params, std::move(loaded)));
}

}  // namespace ccf::serve
