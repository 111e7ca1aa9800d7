// The journal stage (docs/DESIGN.md section 7): an append-only file of frames
// (journal_frame.h) written by one thread with group commit.
//
// Callers on any thread `Append` a record with a callback. The journal
// thread takes every record waiting (at most `group_max`; when fewer wait
// and `group_wait_us` > 0, it first waits that long for more), frames them
// into one buffer, writes it at the end of the file and, with `fsync`, calls
// fdatasync on the file, as one linked io_uring submission (liburing). Only
// then does it call each record's callback, in append order, with OK. So
// one write and one fdatasync serve every record that arrived while the
// previous group was being written: the busier the journal, the larger its
// groups (LevelDB's group commit, with a cap and an optional wait).
//
// If io_uring cannot be set up (an old kernel, a seccomp filter), the
// journal falls back to pwrite + fdatasync and says so in backend().
//
// Failure: if a write or fdatasync fails, the group's callbacks get
// DATA_LOSS naming the file and the error, and the journal refuses every
// later record with the same status: after a failed fdatasync the kernel
// may have dropped the dirty pages, so nothing written since the last
// success can be trusted (the server must restart and recover).
//
// Thread safety: Append, Close and the accessors may be called from any
// thread. Callbacks run on the journal thread (or, for a record refused at
// once, on the caller's) and must not block or call Append on this journal.
#ifndef COHORT_SERVICE_STORAGE_JOURNAL_H_
#define COHORT_SERVICE_STORAGE_JOURNAL_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "service/observability/stage_profile.h"

namespace cohort {
namespace service {

struct JournalOptions {
  std::string path;
  // fdatasync each group before acknowledging it. false acknowledges once
  // the bytes are handed to the kernel: a machine crash loses them.
  bool fsync = true;
  // Most records in one group (one write + one fdatasync). >= 1.
  uint32_t group_max = 1024;
  // When fewer than group_max records wait, wait this long (microseconds)
  // for more before writing; 0 writes at once.
  int64_t group_wait_us = 0;
  // Write through io_uring when the kernel allows it; false always uses
  // pwrite + fdatasync (the fallback, also for tests).
  bool use_io_uring = true;
};

class Journal {
 public:
  using Done = std::function<void(absl::Status)>;

  // Opens (creating if absent) the file at options.path for appending at
  // byte `offset`: the file is truncated there first (recovery passes the
  // length of its whole frames, dropping a torn tail). Errors name the path
  // and the system error: INVALID_ARGUMENT for bad options, else the errno's
  // closest status (PERMISSION_DENIED, NOT_FOUND, ...).
  static absl::StatusOr<std::unique_ptr<Journal>> Open(
      const JournalOptions& options, uint64_t offset);

  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Queues one record; `done` is called once: OK when the record's frame is
  // written (and synced, with fsync), else the error. After Close, or once
  // the journal has failed, `done` gets the error at once on this thread.
  void Append(uint8_t type, std::string payload, Done done);

  // Switches to a new file: records appended before this call go to the
  // current file, later ones to `path` (created empty, or truncated), which
  // is opened, and its directory synced, only after every earlier record is
  // durable, so the new file never holds a record whose predecessors are
  // not on disk. `done` gets the outcome; a failure fails the journal.
  void Rotate(std::string path, Done done);

  // Writes every record appended before the call, then stops the thread and
  // closes the file. Later appends get FAILED_PRECONDITION. Idempotent.
  void Close();

  // "io_uring" or "pwrite".
  const char* backend() const { return ring_ok_ ? "io_uring" : "pwrite"; }
  // Bytes in the file written and acknowledged so far (from the start).
  uint64_t durable_bytes() const;
  // Groups are the profile's batches (their sizes its histogram), records
  // its updates.
  const StageProfile& profile() const { return profile_; }
  // The time each group took to become durable: its write and the
  // fdatasync after it (the write alone with fsync off), for /metrics.
  // Groups that failed are not counted.
  DurationBuckets SyncDurations() const;

 private:
  struct Pending {
    uint8_t type;
    std::string payload;
    Done done;
    int64_t enqueue_ns;
    std::string rotate_to;  // non-empty: a Rotate marker, not a record
  };

  Journal(const JournalOptions& options, int fd, uint64_t offset);
  void Enqueue(Pending item);
  void Run();
  // Writes buffer_ at offset_ (and syncs); advances offset_ on success.
  absl::Status WriteGroup();
  absl::Status WriteWithRing();
  absl::Status WriteWithPwrite();
  absl::Status Failure(const char* what, int error) const;
  absl::Status SwitchFile(const std::string& path);

  const JournalOptions options_;
  std::string path_;  // the current file; journal thread (and Open) only
  int fd_;            // journal thread only, once it runs
  StageProfile profile_;
  SharedLatencyHistogram sync_durations_;
  bool ring_ok_ = false;
  struct RingHolder;
  std::unique_ptr<RingHolder> ring_;  // touched by the journal thread only

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> pending_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status failed_ ABSL_GUARDED_BY(mu_);
  uint64_t durable_bytes_ ABSL_GUARDED_BY(mu_) = 0;

  // Journal thread only.
  uint64_t offset_;
  std::string buffer_;
  std::vector<Pending> group_;
  std::vector<int64_t> waits_;

  std::thread thread_;
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STORAGE_JOURNAL_H_
