// Snapshots of the whole keyspace (SAVE, BGSAVE, `--save`, and the load at start-up).
//
// File format, little-endian, one file per server (docs/server.md):
//   "CCFSNAP1", entries u64, then per entry:
//     type u8 (1: cuckoo filter, 2: string, 3: Bloom filter), key length u64, key,
//     filter: header length u64, header, data length u64, data   (CfFilter's or BfFilter's
//             dump format)
//     string: length u64, bytes
//   then the XXH3 checksum (u64) of every byte before it.
// A snapshot is written to NAME.tmp (created exclusively, never through a link), fsynced, renamed
// over NAME and the directory fsynced, so a crash at any point leaves the previous complete
// snapshot or the new one, never a torn file. Loading verifies the checksum before it parses
// anything; a bad file is refused whole.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string_view>

#include "server/keyspace.hpp"

namespace ccf::serve {

struct SnapshotError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Writes every key; each filter is copied under its own dump lock (writers of that filter wait
// while it is copied; lookups do not). Throws SnapshotError naming the file on any I/O error.
void save_snapshot(const Keyspace& keyspace, const std::filesystem::path& file);

// Replaces the keyspace's contents with the file's. No file: nothing happens (false). Throws
// SnapshotError naming the file and what is wrong; the keyspace is then unchanged.
bool load_snapshot(Keyspace& keyspace, const std::filesystem::path& file);
// The same for a snapshot's bytes; `name` is what errors call it.
void load_snapshot_bytes(Keyspace& keyspace, std::string_view bytes,
                         const std::filesystem::path& name);

}  // namespace ccf::serve
