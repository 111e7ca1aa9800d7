// What --data_dir holds (docs/DESIGN.md section 7), and how it is read back.
//
// Files, for generations g = 1, 2, ...:
//   snapshot-<g>   the state after every record of journals < g, as frames:
//                  a header (format version, next subscription id), the
//                  attribute and subscriber names in id order, the
//                  string values (journal_records.h), the live
//                  subscriptions in chunks, and an end frame with the count.
//                  Written as snapshot-<g>.tmp, fsynced, renamed, and the
//                  directory fsynced, so it is whole or absent.
//   journal-<g>    the records (journal_records.h) appended since.
// Taking a snapshot: appends switch to journal-<g+1>; snapshot-<g> (if any)
// and journal-<g> are folded into snapshot-<g+1>; then the older files are
// deleted. A crash at any step leaves either the new snapshot (recovery
// replays journal-<g+1>) or only the old one (recovery replays journal-<g>
// and journal-<g+1>): recovery loads the newest whole snapshot and replays
// every journal of that generation or later, in order.
//
// A journal's torn or corrupt tail (journal_frame.h) is where recovery
// stops reading that journal; it reports the bytes discarded, and the
// writer truncates the file there before appending. A tail can only be torn
// in the newest journal; garbage in an older one, or a record that does not
// decode or contradicts the state (a name out of id order, an unknown id),
// is DATA_LOSS: the files are not what this code wrote, and guessing would
// lose acknowledged subscriptions.
//
// Pure state and file functions; no threads. Thread safety: none (one
// thread at a time per StoreState).
#ifndef COHORT_SERVICE_STORAGE_STORE_H_
#define COHORT_SERVICE_STORAGE_STORE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "service/model/subscription_input.h"
#include "service/storage/journal_frame.h"
#include "service/storage/journal_records.h"

namespace cohort {
namespace service {

// Record types of snapshot files (journal record types are below 10).
enum SnapshotRecordType : uint8_t {
  kSnapshotHeader = 10,
  kSnapshotSubscriptions = 11,
  kSnapshotEnd = 12,
  // Cluster mode: uint64, the subscription log position the snapshot
  // reflects; right after the header, absent when 0.
  kSnapshotLogPosition = 13,
  // Version 3: a run of subscriptions in kSubscribeOr's form.
  kSnapshotOrSubscriptions = 14,
};

struct StoreState {
  std::vector<std::string> attributes;   // by id
  std::vector<std::string> subscribers;  // by id
  // Strings TypedAttributes added, in the order it added them.
  std::vector<StringRecord> strings;
  uint64_t next_id = 1;                  // the next subscription id to assign
  std::map<uint64_t, SubscriptionInput> live;  // by subscription id
  // Cluster mode: the subscription log position this state reflects (0:
  // none; single-node directories never have one).
  uint64_t log_position = 0;

  // Applies one journal record (a frame of journal-<g>). DATA_LOSS naming
  // the record kind if it does not decode or does not fit the state.
  absl::Status Apply(const Frame& frame);
};

// Serialises `state` as a snapshot file's contents.
std::string EncodeSnapshot(const StoreState& state);
// Parses a snapshot file's contents into *state (replacing it). DATA_LOSS
// naming what is wrong (not a snapshot, truncated, a count mismatch).
absl::Status DecodeSnapshot(absl::string_view data, StoreState* state);

// One subscriptions frame of a snapshot, kept as its bytes (TakeSnapshot
// copies those no change touched).
struct SnapshotRun {
  uint64_t first = 0;       // ids first .. first + count - 1
  uint64_t count = 0;
  uint8_t type = 0;         // kSnapshotSubscriptions or ...OrSubscriptions
  absl::string_view frame;  // the whole frame, header included, in `data`
};
// As above, but with `runs` the subscriptions frames are not decoded: they
// go to *runs in order (their checksums checked) and state->live holds
// none of them.
absl::Status DecodeSnapshot(absl::string_view data, StoreState* state,
                            std::vector<SnapshotRun>* runs);

// Writes `data` to `dir`/`name` atomically: `name`.tmp, fsync, rename,
// fsync of the directory. Errors name the file and the system error.
absl::Status WriteFileAtomically(const std::string& dir,
                                 const std::string& name,
                                 absl::string_view data);

// The same for contents produced a piece at a time, so that a large file
// (a snapshot) is never whole in memory: Append pieces (buffered, written
// 1 MiB at a time), then Commit. Without a successful Commit the .tmp
// file is removed when the writer goes. The first error sticks: Append
// then does nothing, and Commit returns it. Thread safety: none.
class AtomicFileWriter {
 public:
  AtomicFileWriter(const std::string& dir, const std::string& name);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void Append(absl::string_view data);
  absl::Status Commit();

 private:
  static constexpr size_t kBuffer = size_t{1} << 20;
  void Write(absl::string_view data);

  const std::string dir_, tmp_, path_;
  int fd_ = -1;
  std::string buffer_;
  absl::Status status_;
  bool committed_ = false;
};

std::string SnapshotName(uint64_t generation);  // "snapshot-<g>"
std::string JournalName(uint64_t generation);   // "journal-<g>"

struct Recovery {
  StoreState state;
  // The generation of the snapshot loaded (0: none) and of the newest
  // journal replayed (0: none). New appends go to journal-<journal_generation>
  // (1 in an empty directory) at byte `journal_bytes`.
  uint64_t snapshot_generation = 0;
  uint64_t journal_generation = 1;
  uint64_t journal_bytes = 0;
  uint64_t records_replayed = 0;
  uint64_t bytes_discarded = 0;  // a torn or corrupt tail of the newest
  std::string tail;              // "end", "torn" or "corrupt" (newest)
  // With log positions: the newest journal's whole records after its last
  // kLogPosition record, not applied (the change they began was not
  // finished; the log has it), and cut off like a torn tail.
  uint64_t unmarked_records = 0;
  uint64_t unmarked_bytes = 0;
  // Files of older generations, safe to delete.
  std::vector<std::string> obsolete;
};

// Reads `dir` (which must exist): the newest snapshot, then the journals
// from its generation on, up to but excluding generation `below` (for
// folding journals that are no longer appended to while a newer one is).
// With `log_positions` (cluster mode), the records after the last
// kLogPosition record are not applied (Recovery::unmarked_*): a node's state
// is always exactly the log up to a position. NOT_FOUND if `dir` is
// missing, PERMISSION_DENIED if unreadable, DATA_LOSS as described above.
absl::StatusOr<Recovery> Recover(const std::string& dir,
                                 uint64_t below = UINT64_MAX,
                                 bool log_positions = false);

// Folds the newest snapshot and the journals before `generation` into
// snapshot-<generation> (written atomically), then deletes the snapshots
// and journals of older generations. Without `log_positions` and
// `written`, the snapshot's subscription frames that no unsubscribe
// touched are copied as bytes (DecodeSnapshot with runs) rather than
// decoded and encoded again; either way the state written is the one
// Recover would return. REQUIRES: nothing appends to a journal
// older than `generation` any more (Journal::Rotate has completed).
// Returns the number of live subscriptions written.
// With `written`, also returns the snapshot written (empty if the newest
// snapshot already was snapshot-<generation>) and in *log_position the log
// position it reflects.
absl::StatusOr<uint64_t> TakeSnapshot(const std::string& dir,
                                      uint64_t generation,
                                      bool log_positions = false,
                                      std::string* written = nullptr,
                                      uint64_t* log_position = nullptr);

// Whether `dir` holds a snapshot or a non-empty journal (false if it is
// missing or unreadable: Recover reports those).
bool HoldsState(const std::string& dir);

// Deletes the snapshots and journals of generations below `generation`
// (and leftover .tmp files). Best effort: a file that cannot be deleted is
// deleted by a later recovery.
void RemoveGenerationsBefore(const std::string& dir, uint64_t generation);

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STORAGE_STORE_H_
