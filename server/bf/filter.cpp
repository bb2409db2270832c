#include "server/bf/filter.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "server/command_support.hpp"

namespace ccf::serve {

BfFilter::BfFilter(const ScalableBloomOptions& options)
    : filter_(std::make_unique<ScalableBloomFilter>(options)) {}

BfFilter::BfFilter(std::unique_ptr<ScalableBloomFilter> filter) : filter_(std::move(filter)) {}

BloomAddResult BfFilter::add(std::string_view item) {
  const std::lock_guard lock(writers_);
  return filter_->add(item);
}

std::vector<BloomAddResult> BfFilter::add_in_order(std::span<const std::string_view> items) {
  std::vector<BloomAddResult> results;
  results.reserve(items.size());
  const std::lock_guard lock(writers_);
  for (const std::string_view item : items) {
    results.push_back(filter_->add(item));
    if (results.back() == BloomAddResult::kFull) break;
  }
  return results;
}

BfFilter::Info BfFilter::info() const {
  const std::lock_guard lock(writers_);
  return {filter_->capacity(), filter_->memory_bytes(), filter_->filter_count(), filter_->size(),
          filter_->options().expansion};
}

std::vector<ScalableBloomFilter::SubFilterInfo> BfFilter::sub_filters() const {
  const std::lock_guard lock(writers_);
  return filter_->sub_filters();
}

std::string BfFilter::header() const {
  const std::lock_guard lock(writers_);
  return filter_->header();
}

namespace {

// Copies [offset, offset + size) of the data out as a string.
std::string read(const ScalableBloomFilter& filter, std::uint64_t offset, std::uint64_t size) {
  std::string out(size, '\0');
  if (!filter.read_data(offset, std::as_writable_bytes(std::span(out.data(), out.size())))) {
    throw std::logic_error("a chunk left its sub-filter");  // the callers' ranges never do
  }
  return out;
}

// Where sub-filter k's bytes end in the data.
std::uint64_t end_of(const ScalableBloomFilter& filter, std::size_t k) {
  return k + 1 < filter.filter_count() ? filter.sub_filter_offset(k + 1) : filter.data_bytes();
}

}  // namespace

std::optional<std::string> BfFilter::chunk(std::uint64_t iterator) const {
  const std::lock_guard lock(writers_);
  const std::uint64_t offset = iterator - 1;
  if (iterator == 0 || offset >= filter_->data_bytes()) return std::nullopt;
  // The sub-filter holding `offset`: the last one starting at or before it.
  std::size_t k = filter_->filter_count() - 1;
  while (filter_->sub_filter_offset(k) > offset) --k;
  return read(*filter_, offset, std::min(end_of(*filter_, k) - offset, kMaxChunkBytes));
}

std::shared_ptr<const BfFilter::Dump> BfFilter::dump() const {
  auto dump = std::make_shared<Dump>();
  const std::lock_guard lock(writers_);
  dump->header = filter_->header();
  for (std::size_t k = 0; k < filter_->filter_count(); ++k) {
    const std::uint64_t begin = filter_->sub_filter_offset(k);
    dump->blobs.push_back(read(*filter_, begin, end_of(*filter_, k) - begin));
  }
  return dump;
}

BfFilter::LoadResult BfFilter::load_chunk(long long iterator, std::string_view data) {
  // The chunk ends at byte iterator - 1 of the data.
  if (iterator <= 0 || static_cast<std::uint64_t>(iterator) < data.size()) {
    return LoadResult::kBadData;
  }
  const std::uint64_t end = static_cast<std::uint64_t>(iterator) - 1;
  if (end < data.size()) return LoadResult::kNoLink;  // it would start before byte 0
  const std::uint64_t offset = end - data.size();
  const std::lock_guard lock(writers_);
  if (offset >= filter_->data_bytes()) return LoadResult::kNoLink;
  if (!filter_->write_data(offset, std::as_bytes(std::span(data.data(), data.size())))) {
    return LoadResult::kTooBig;  // the offset lies in a sub-filter, the end past it
  }
  return LoadResult::kOk;
}

std::unique_ptr<BfFilter> BfFilter::from_header(std::string_view header) {
  std::unique_ptr<ScalableBloomFilter> filter = ScalableBloomFilter::from_header(header);
  if (!filter) return nullptr;
  return std::unique_ptr<BfFilter>(new BfFilter(std::move(filter)));
}

std::unique_ptr<BfFilter> BfFilter::restore(std::string_view header, std::string_view data) {
  std::unique_ptr<BfFilter> filter = from_header(header);
  if (!filter || filter->filter_->data_bytes() != data.size()) return nullptr;
  if (!data.empty()) {
    const ScalableBloomFilter& made = *filter->filter_;
    for (std::size_t k = 0; k < made.filter_count(); ++k) {
      const std::uint64_t begin = made.sub_filter_offset(k);
      const std::string_view part = data.substr(begin, end_of(made, k) - begin);
      if (!filter->filter_->write_data(begin, std::as_bytes(std::span(part.data(), part.size())))) {
        return nullptr;
      }
    }
  }
  return filter;
}

}  // namespace ccf::serve
