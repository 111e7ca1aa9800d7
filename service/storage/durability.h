// Durability under --data_dir (docs/DESIGN.md section 7): recovery at start,
// the journal of subscription changes while serving, snapshots every N records
// and at a clean close. The engine (Engine::Subscribe and Unsubscribe) logs
// each change here and applies it only when the journal says it is durable.
//
//   Recovery recovered;
//   auto durability = Durability::Open(options, &recovered);  // load state
//   durability->LogSubscribe(first_id, inputs, [](absl::Status s) {...});
//   durability->Close();  // drain, then fold everything into a snapshot
//
// Files and their crash safety: store.h. Every `snapshot_every` changes (a
// subscription subscribed or unsubscribed, or a new name; a batched
// request's record counts each subscription in it, so the bound on journal
// length holds whatever the batch size), and on one node not before the
// changes reach `snapshot_growth_percent` of the subscriptions the last
// snapshot held, the journal rotates to the next generation
// (Journal::Rotate, a barrier in the journal's own order), and a background
// thread folds the older generations into a snapshot and deletes them
// (TakeSnapshot). A fold writes every live subscription again (on one node
// copying the previous snapshot's frames as bytes where no change touched
// them), so the growth rule keeps the folds' work in proportion to the
// changes (loading N subscriptions folds about 3N at 50%, not
// N^2 / (2 snapshot_every)), at the price of a journal of up to that share
// of the live set for recovery to replay. A failed fold is counted and
// reported on stderr; the files stay and the next fold includes them.
//
// Thread safety: Log* may be called from any thread, concurrently; the order
// of the calls is the order of the records in the journal. Close and the
// destructor must not race with Log* calls (the engine stops logging
// first). Callbacks run on the journal thread (journal.h).
#ifndef COHORT_SERVICE_STORAGE_DURABILITY_H_
#define COHORT_SERVICE_STORAGE_DURABILITY_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "service/model/subscription_input.h"
#include "service/storage/journal.h"
#include "service/storage/journal_records.h"
#include "service/storage/store.h"

namespace cohort {
namespace service {

struct DurabilityOptions {
  std::string data_dir;  // created (one level) if absent
  bool fsync = true;     // --fsync=always (true) or none
  // Changes between snapshots (see the file comment); 0 = snapshot only at
  // Close.
  uint64_t snapshot_every = 0;
  // On one node (not with log_positions, whose nodes snapshot at the same
  // log positions): a rotation also waits until the changes reach this
  // percentage of the live subscriptions the last snapshot held (or
  // recovery found); 0 = every snapshot_every changes.
  uint32_t snapshot_growth_percent = 0;
  uint32_t group_max = 1024;   // JournalOptions
  int64_t group_wait_us = 0;   // JournalOptions
  bool use_io_uring = true;    // JournalOptions
  // Cluster mode (docs/DESIGN.md section 11.8): the caller logs a
  // kLogPosition record after each log record's changes; the journal
  // rotates only right after one, and recovery drops what follows the last
  // one (store.h Recover), so the files always hold the state at a log
  // position.
  bool log_positions = false;
  // Called on the folding thread with each snapshot a background fold
  // writes (not the one Close writes) and the log position it reflects
  // (cluster mode publishes it: service/cluster/snapshot_exchange.h). Must
  // not call back into this Durability.
  std::function<void(uint64_t log_position, std::string snapshot)>
      on_snapshot;
};

class Durability {
 public:
  // Recovers options.data_dir into *recovered (store.h Recover), deletes the
  // files it made obsolete, and opens the newest journal for appending at
  // the end of its whole frames (dropping a torn tail). Errors name the
  // directory or file: NOT_FOUND, PERMISSION_DENIED, DATA_LOSS, ...
  static absl::StatusOr<std::unique_ptr<Durability>> Open(
      const DurabilityOptions& options, Recovery* recovered);

  ~Durability();
  Durability(const Durability&) = delete;
  Durability& operator=(const Durability&) = delete;

  // A name the attribute or subscriber Interner added (type kAttributeName
  // or kSubscriberName). Needs no callback: a later change that uses the
  // name is acknowledged only after it, and a failure fails the journal.
  void LogName(RecordType type, uint32_t id, absl::string_view name);
  // A string TypedAttributes added (kStringValue); like a name, needs no
  // callback.
  void LogString(uint32_t attribute, int64_t code, absl::string_view bytes);
  // Subscriptions with ids first_id, first_id + 1, ...; `done` once durable.
  void LogSubscribe(uint64_t first_id,
                    absl::Span<const SubscriptionInput> subscriptions,
                    Journal::Done done);
  void LogUnsubscribe(absl::Span<const uint64_t> ids, Journal::Done done);
  // Replaces everything the directory holds by `snapshot` (a store.h
  // snapshot, e.g. a cluster's shared one): appends go to a new generation,
  // the snapshot is written as its snapshot, and older files are deleted. A
  // crash at any step leaves the old state or the new one. REQUIRES:
  // nothing logged since Open.
  absl::Status InstallSnapshot(absl::string_view snapshot);
  // With log_positions: every record logged so far belongs to the
  // subscription log up to `position` (increasing). Needs no callback.
  void LogPosition(uint64_t position);

  // Writes what was logged, stops the journal, waits for a fold in
  // progress, and folds every generation into one snapshot. Idempotent;
  // returns the first error.
  absl::Status Close();

  const StageProfile& journal_profile() const { return journal_->profile(); }
  // The journal's group write-and-sync times (Journal::SyncDurations).
  DurationBuckets journal_sync_durations() const {
    return journal_->SyncDurations();
  }
  const char* backend() const { return journal_->backend(); }
  uint64_t snapshots_taken() const { return snapshots_taken_.load(); }
  // The live subscriptions of the newest snapshot a fold wrote (or of the
  // state recovered at Open, before the first fold).
  uint64_t snapshot_live() const { return snapshot_live_.load(); }
  uint64_t snapshot_failures() const { return snapshot_failures_.load(); }

 private:
  Durability(const DurabilityOptions& options, uint64_t generation,
             uint64_t live, std::unique_ptr<Journal> journal);
  // Changes that rotate the journal now (see snapshot_growth_percent).
  uint64_t RotationThreshold() const;
  // Appends one record carrying `changes` changes (for snapshot_every).
  void Log(uint8_t type, std::string payload, uint64_t changes,
           Journal::Done done);
  void RunFolds();

  const DurabilityOptions options_;
  std::unique_ptr<Journal> journal_;
  std::atomic<uint64_t> snapshots_taken_{0};
  std::atomic<uint64_t> snapshot_failures_{0};
  std::atomic<uint64_t> snapshot_live_{0};

  // Serialises rotation decisions with appends, so that the generation a
  // record goes to is the one counted.
  std::mutex log_mu_;
  uint64_t generation_ ABSL_GUARDED_BY(log_mu_);
  uint64_t changes_since_rotation_ ABSL_GUARDED_BY(log_mu_) = 0;

  std::mutex fold_mu_;
  std::condition_variable fold_cv_;
  uint64_t fold_to_ ABSL_GUARDED_BY(fold_mu_) = 0;  // 0: nothing to fold
  bool stopping_ ABSL_GUARDED_BY(fold_mu_) = false;
  bool closed_ = false;  // Close's thread only
  absl::Status close_status_;
  std::thread folder_;
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STORAGE_DURABILITY_H_
