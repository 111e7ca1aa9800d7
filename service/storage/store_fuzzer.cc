// Fuzz target: recovery of a --data_dir (store.h) from arbitrary file bytes.
//
// The input is a list of files, each [name byte][2-byte length][contents];
// the name byte picks snapshot-1..3, journal-1..3, a leftover .tmp file or
// an unrelated file (a later entry for the same name replaces the earlier).
// They are written to a fresh directory (on /dev/shm when it exists, so the
// fsyncs of a fold are cheap) and read back with Recover. Properties checked
// (a failure aborts):
//   - Recover never crashes, and fails only with DATA_LOSS (files that this
//     code did not write) — never with a half-applied record, since it
//     returns no state then;
//   - a recovered state is consistent: every live subscription's id is below
//     next_id and names interned attributes and subscribers, BETWEEN bounds
//     are ordered, the discarded tail fits in the newest journal;
//   - it survives a snapshot round trip (EncodeSnapshot, DecodeSnapshot);
//   - folding it into a snapshot (TakeSnapshot, as the server does every
//     --snapshot_every records, after its journal has cut the discarded
//     tail) and recovering again gives the same state.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "matcher/types.h"
#include "service/storage/store.h"
#include "tools/fuzz/byte_reader.h"
#include "tools/fuzz/fail.h"

namespace cohort {
namespace service {
namespace {

using fuzz::Fail;

// One directory per process, emptied before each input.
const std::string& Directory() {
  static const std::string* dir = [] {
    struct stat st;
    const char* base = stat("/dev/shm", &st) == 0 ? "/dev/shm" : "/tmp";
    std::string pattern = absl::StrCat(base, "/cohort_store_fuzzer_XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr) Fail("mkdtemp failed");
    return new std::string(pattern);
  }();
  return *dir;
}

void Empty(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) Fail("cannot open the scratch directory");
  while (dirent* entry = readdir(d)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") unlink((dir + "/" + name).c_str());
  }
  closedir(d);
}

void Write(const std::string& path, absl::string_view data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), data.size());
  if (!out) Fail(absl::StrCat("cannot write ", path));
}

void CheckConsistent(const Recovery& r, size_t newest_journal_bytes) {
  const StoreState& s = r.state;
  for (const auto& [id, sub] : s.live) {
    if (id == 0 || id >= s.next_id) Fail(absl::StrCat("live id ", id));
    if (sub.subscriber >= s.subscribers.size()) Fail("unknown subscriber");
    if (sub.predicates.empty()) Fail("subscription without predicates");
    for (const matcher::Predicate& p : sub.predicates) {
      if (p.attribute >= s.attributes.size()) Fail("unknown attribute");
      if (p.op < matcher::Op::kEq || p.op > matcher::Op::kNotExists ||
          static_cast<int>(p.op) == 10) {
        Fail("bad op");
      }
      const bool set = p.op == matcher::Op::kIn || p.op == matcher::Op::kNotIn;
      if (set == p.values.empty()) Fail("a set without values, or values");
      if (p.op == matcher::Op::kBetween && p.value > p.upper) {
        Fail("BETWEEN bounds out of order");
      }
    }
  }
  if (r.bytes_discarded > newest_journal_bytes) Fail("discarded too much");
  if (r.tail != "end" && r.tail != "torn" && r.tail != "corrupt") {
    Fail(absl::StrCat("tail \"", r.tail, "\""));
  }
}

void Run(fuzz::ByteReader& in) {
  static const char* const kNames[] = {
      "snapshot-1", "snapshot-2", "snapshot-3",     "journal-1",
      "journal-2",  "journal-3",  "snapshot-4.tmp", "notes.txt",
  };
  const std::string& dir = Directory();
  Empty(dir);
  size_t journal_bytes[4] = {0, 0, 0, 0};
  while (!in.empty()) {
    const uint32_t name = in.Below(std::size(kNames));
    const size_t length = in.Byte() | (size_t{in.Byte()} << 8);
    const absl::string_view contents = in.Bytes(length);
    Write(absl::StrCat(dir, "/", kNames[name]), contents);
    if (name >= 3 && name <= 5) journal_bytes[name - 2] = contents.size();
  }
  absl::StatusOr<Recovery> r = Recover(dir);
  if (!r.ok()) {
    if (r.status().code() != absl::StatusCode::kDataLoss) {
      Fail(absl::StrCat("Recover: ", r.status().ToString()));
    }
    return;
  }
  const uint64_t newest = r->journal_generation;
  CheckConsistent(*r, newest <= 3 ? journal_bytes[newest] : 0);

  const std::string encoded = EncodeSnapshot(r->state);
  StoreState decoded;
  if (absl::Status s = DecodeSnapshot(encoded, &decoded); !s.ok()) {
    Fail(absl::StrCat("DecodeSnapshot of EncodeSnapshot: ", s.ToString()));
  }
  if (EncodeSnapshot(decoded) != encoded) Fail("snapshot round trip differs");

  // The server's journal truncates a torn or corrupt tail before appending
  // (journal.cc), so a fold only ever sees whole journals.
  const std::string journal = absl::StrCat(dir, "/", JournalName(newest));
  if (truncate(journal.c_str(), static_cast<off_t>(r->journal_bytes)) != 0 &&
      errno != ENOENT) {
    Fail(absl::StrCat("cannot truncate ", journal));
  }
  absl::StatusOr<uint64_t> folded = TakeSnapshot(dir, newest + 1);
  if (!folded.ok()) {
    Fail(absl::StrCat("TakeSnapshot: ", folded.status().ToString()));
  }
  if (*folded != r->state.live.size()) Fail("TakeSnapshot count differs");
  absl::StatusOr<Recovery> again = Recover(dir);
  if (!again.ok()) {
    Fail(absl::StrCat("Recover after fold: ", again.status().ToString()));
  }
  if (EncodeSnapshot(again->state) != encoded) Fail("fold changed the state");
}

}  // namespace
}  // namespace service
}  // namespace cohort

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cohort::fuzz::ByteReader in(data, size);
  cohort::service::Run(in);
  return 0;
}
