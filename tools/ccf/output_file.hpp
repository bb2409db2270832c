// How `ccf` writes a file, so that neither a failure nor another user of a shared directory can
// make it write the wrong file (docs/cli.md, "Files ccf writes"):
//   1. The target, if it exists, must be a regular file. A symbolic link, directory, device or
//      FIFO is refused before any work (check_output_target, a usage error: exit 2).
//   2. Bytes go to a new temporary in the target's directory, created with O_CREAT | O_EXCL |
//      O_NOFOLLOW under an unpredictable name, readable by its owner only while it is written:
//      no planted file or link is ever opened, and no one else reads a half-written file.
//   3. commit() flushes, fsyncs, gives the temporary the target's permissions (a new file: 0666
//      less the umask), renames it over the target and fsyncs the directory. rename() replaces
//      the name itself and never follows a link, so a link swapped in after the check of 1 is
//      replaced, not written through.
//   4. Any failure removes the temporary and throws ToolError naming the target and the
//      system's reason ("No space left on device").
#pragma once

#include <sys/stat.h>

#include <memory>
#include <ostream>
#include <string>

namespace ccf_tool {

// Throws CLI::ValidationError (exit 2) when `path` exists and is not a regular file.
void check_output_target(const std::string& option, const std::string& path);

class OutputFile {
 public:
  explicit OutputFile(std::string target);
  ~OutputFile();  // removes the temporary unless committed
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::ostream& stream() noexcept { return stream_; }
  // True once a write has failed; commit() then reports the system's reason.
  bool write_failed() const noexcept;
  void commit();

 private:
  class FdBuffer;
  [[noreturn]] void fail(const std::string& what, int error);
  mode_t target_mode() const;

  std::string target_;
  std::string temporary_;
  std::unique_ptr<FdBuffer> buffer_;
  std::ostream stream_;
  bool committed_ = false;
};

}  // namespace ccf_tool
