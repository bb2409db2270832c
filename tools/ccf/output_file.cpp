#include "output_file.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <streambuf>

#include "progress.hpp"

namespace ccf_tool {
namespace {

std::string describe_file_type(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string directory_of(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

}  // namespace

// A stream buffer over a file descriptor that keeps the errno of a failed write, which
// std::ofstream loses ("iostream error").
class OutputFile::FdBuffer : public std::streambuf {
 public:
  explicit FdBuffer(int fd) : fd_(fd) { setp(buffer_.data(), buffer_.data() + buffer_.size()); }
  int fd() const noexcept { return fd_; }
  int error() const noexcept { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    const char* at = pbase();
    while (at < pptr() && error_ == 0) {
      const ssize_t written = ::write(fd_, at, static_cast<std::size_t>(pptr() - at));
      if (written < 0 && errno == EINTR) continue;
      if (written <= 0) error_ = written < 0 ? errno : EIO;
      if (written > 0) at += written;
    }
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return error_ == 0;
  }

  int fd_;
  int error_ = 0;
  std::array<char, 1 << 16> buffer_;
};

void check_output_target(const std::string& option, const std::string& path) {
  struct stat status;
  if (::lstat(path.c_str(), &status) != 0) return;  // absent (or unreachable: open says why)
  if (!S_ISREG(status.st_mode)) {
    throw CLI::ValidationError(option, path + " exists and is " +
                                           describe_file_type(status.st_mode) +
                                           ": ccf writes only regular files" +
                                           (S_ISLNK(status.st_mode) ? " (name the file the link "
                                                                      "points to)"
                                                                    : ""));
  }
}

OutputFile::OutputFile(std::string target) : target_(std::move(target)), stream_(nullptr) {
  check_output_target("output", target_);
  std::random_device random;
  const std::string directory = directory_of(target_);
  int fd = -1;
  for (int attempt = 0; fd < 0; ++attempt) {
    const std::uint64_t name = (std::uint64_t{random()} << 32) | random();
    temporary_ = fmt::format("{}/.ccf-{:016x}.tmp", directory, name);
    fd = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && (errno != EEXIST || attempt == 16)) {
      const int error = errno;
      temporary_.clear();  // not ours: nothing to remove
      fail("cannot create a temporary file in " + directory, error);
    }
  }
  try {
    buffer_ = std::make_unique<FdBuffer>(fd);
  } catch (...) {
    ::close(fd);
    ::unlink(temporary_.c_str());
    throw;
  }
  stream_.rdbuf(buffer_.get());
}

OutputFile::~OutputFile() {
  if (buffer_) ::close(buffer_->fd());
  if (!committed_ && !temporary_.empty()) ::unlink(temporary_.c_str());
}

void OutputFile::fail(const std::string& what, int error) {
  stream_.rdbuf(nullptr);
  if (buffer_) {
    ::close(buffer_->fd());
    buffer_.reset();
  }
  if (!temporary_.empty()) ::unlink(temporary_.c_str());
  temporary_.clear();
  throw ToolError(
      fmt::format("{}: {}: {}; nothing was written", target_, what, std::strerror(error)));
}

// The old file's permissions, or for a new file what open(..., 0666) would give: 0666 less the
// umask (read by setting it and back: ccf writes its files from one thread).
mode_t OutputFile::target_mode() const {
  struct stat existing;
  if (::lstat(target_.c_str(), &existing) == 0 && S_ISREG(existing.st_mode)) {
    return existing.st_mode & 07777;
  }
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

bool OutputFile::write_failed() const noexcept {
  return buffer_ && buffer_->error() != 0;
}

void OutputFile::commit() {
  stream_.flush();
  if (buffer_->error() != 0 || !stream_) {
    fail("writing failed", buffer_->error() != 0 ? buffer_->error() : EIO);
  }
  const int fd = buffer_->fd();
  if (::fchmod(fd, target_mode()) != 0) fail("cannot set the new file's permissions", errno);
  if (::fsync(fd) != 0) fail("fsync failed", errno);
  stream_.rdbuf(nullptr);
  buffer_.reset();
  if (::close(fd) != 0) fail("close failed", errno);
  if (::rename(temporary_.c_str(), target_.c_str()) != 0) fail("rename failed", errno);
  committed_ = true;
  const int directory = ::open(directory_of(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (directory < 0 || ::fsync(directory) != 0) {
    const int error = errno;
    if (directory >= 0) ::close(directory);
    throw ToolError(fmt::format("{}: written, but the fsync of its directory failed: {}", target_,
                                std::strerror(error)));
  }
  ::close(directory);
}

}  // namespace ccf_tool
