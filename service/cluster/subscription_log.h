// Cluster mode's subscription log (docs/DESIGN.md section 11): a replicated
// NATS JetStream stream that every cohortd of a cluster appends its
// Subscribe and Unsubscribe requests to, and applies in log order, so that
// all nodes hold the same subscriptions under the same ids with no
// coordinator of ours. The replication, ordering and failover are
// JetStream's (Raft inside nats-server); this class only appends, reads in
// order and watches that the log stays reachable.
//
// What it does:
//   - Append: publishes a record with a message id (JetStream drops a
//     second record with the same id within the stream's duplicate window)
//     and, once JetStream has acknowledged it, waits until this node has
//     applied the log that far; then answers with the position and the
//     outcome the applier reported for it (the original's, for a
//     duplicate).
//   - One reader thread: an ordered consumer of the whole stream from the
//     first position not yet applied; hands every record to the applier in
//     order and waits until it is applied before reading the next, so the
//     applied position is exact.
//   - WhenApplied: calls back once the node has applied a position (read
//     your writes), or with DEADLINE_EXCEEDED.
//   - ReadBarrier (--cluster_read=latest): learns the log's last position
//     (one stream-info round trip shared by every request waiting for one)
//     and then waits for it, so a publish sees every change acknowledged
//     before it arrived.
//   - Serving: false until the node has applied everything the stream held
//     when it started (catch-up); false again when the stream has not
//     answered this node for longer than lost_timeout_ms (a NATS outage, a
//     node cut off, a stream without quorum), and true once it answers again
//     and the node has caught up with the last position it reports. A
//     watchdog thread probes the stream every lost_timeout_ms / 4. False
//     for good if the log was trimmed past what the node has applied
//     (snapshot_exchange.h; it was not reading at the time): restarted, the
//     node starts from the shared snapshot.
//
// Thread safety: every public method may be called from any thread. The
// applier is called on the reader thread only, one record at a time; its
// `done` may be called from any thread. Callbacks (Append's, WhenApplied's,
// ReadBarrier's, the serving observer) run on this class's threads or on the
// caller's, with no lock of this class held, and must not block.
#ifndef COHORT_SERVICE_CLUSTER_SUBSCRIPTION_LOG_H_
#define COHORT_SERVICE_CLUSTER_SUBSCRIPTION_LOG_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/cohort/v1/pubsub.pb.h"

namespace cohort {
namespace service {

struct ClusterOptions {
  // NATS server URLs, comma separated (nats://host:port,...). Empty: not in
  // cluster mode.
  std::string nats;
  // This node's name: message ids of requests without a request_id, stats.
  std::string node;
  // The JetStream stream holding the log, and its subject.
  std::string stream = "COHORT_LOG";
  // Replicas of the stream when this node creates it (1 to 5; JetStream's
  // R). An existing stream is used as it is.
  int replicas = 3;
  // How long the stream may stay unreachable before the node stops serving.
  int64_t lost_timeout_ms = 5000;
  // The stream's duplicate window when this node creates it.
  int64_t dedupe_window_ms = 120000;
  // Trimming keeps the records younger than this (snapshot_exchange.h).
  int64_t trim_grace_ms = 600000;
  // How long an append waits for JetStream's acknowledgement.
  int64_t append_timeout_ms = 5000;
  // true: ReadBarrier is in use (--cluster_read=latest).
  bool read_latest = false;
};

// What applying one record did, as the applier reports it: the status the
// change is answered with and, for a Subscribe, its ids first_id, first_id
// + 1, ..., first_id + count - 1 (the directory assigns them consecutively).
struct LogOutcome {
  absl::Status status;
  uint64_t first_id = 0;
  uint32_t count = 0;
};

class SubscriptionLog {
 public:
  // Applies the record at `position` (1, 2, ...) and calls `done` once it is
  // applied, from any thread. Called on the reader thread, in log order.
  using Applier = std::function<void(uint64_t position, absl::string_view
                                     record, std::function<void(LogOutcome)>
                                     done)>;
  using AppendCallback = std::function<void(absl::StatusOr<LogOutcome>,
                                            uint64_t position)>;
  using StatusCallback = std::function<void(absl::Status)>;

  // Called on the reader thread after each record is applied (its
  // `done` called), before the next is read.
  using AppliedHook = std::function<void(uint64_t position)>;

  // Starting takes two steps, so that the caller can learn where the log
  // starts (FirstPosition) before it chooses the state to start from.
  // Connect: connects to NATS and creates the stream if it is absent.
  // UNAVAILABLE naming the URLs if NATS or JetStream cannot be reached;
  // INVALID_ARGUMENT for a bad option.
  static absl::StatusOr<std::unique_ptr<SubscriptionLog>> Connect(
      const ClusterOptions& options);
  // The stream's first position now (what a node must have applied up to,
  // less one, to read on from the log): 1 for a stream never trimmed.
  // UNAVAILABLE if the stream does not answer.
  absl::StatusOr<uint64_t> FirstPosition();
  // Run: starts the reader after start_position (the node's state already
  // reflects the log up to it) and the watchdog. FAILED_PRECONDITION
  // if the stream does not continue start_position (it ends before it, or
  // no longer holds the records after it). Once only.
  absl::Status Run(Applier applier, uint64_t start_position,
                   AppliedHook applied_hook = nullptr);
  ~SubscriptionLog();
  SubscriptionLog(const SubscriptionLog&) = delete;
  SubscriptionLog& operator=(const SubscriptionLog&) = delete;

  // Appends `record` under the message id `message_id` (empty: a fresh one
  // of this node), then waits (until `deadline_ns`, CLOCK_MONOTONIC, 0:
  // none) for this node to apply it. `done` gets the outcome and the
  // position, or UNAVAILABLE (not serving, the append failed: the change may
  // still be in the log, retry with the same message id) or
  // DEADLINE_EXCEEDED (appended at the position given, not yet applied
  // here).
  void Append(std::string message_id, std::string record, int64_t deadline_ns,
              AppendCallback done);

  // Calls `ready` with OK once this node has applied `position`, or with
  // DEADLINE_EXCEEDED at `deadline_ns` (0: none), or UNAVAILABLE at
  // shutdown. At once if already applied.
  void WhenApplied(uint64_t position, int64_t deadline_ns,
                   StatusCallback ready);
  // Learns the log's last position now and then WhenApplied(it): a change
  // acknowledged to anyone before this call is applied when `ready` gets
  // OK. UNAVAILABLE if the stream does not answer.
  void ReadBarrier(int64_t deadline_ns, StatusCallback ready);

  // OK while serving; else UNAVAILABLE saying why (catching up: applied X
  // of Y; the log unreachable for N ms).
  absl::Status Serving() const;
  // Told (on the watchdog or reader thread) each time serving changes.
  // REQUIRES: set before Run's threads could change it, i.e. right after
  // Run; it is called once with the state at that moment.
  void SetServingObserver(std::function<void(bool)> observer);

  uint64_t applied() const;
  // The highest position this node has applied whose record the stream
  // stored at or before `time_ns` (system clock, ns since the epoch), to
  // within 100 ms; 0 if none (kept for twice trim_grace_ms).
  uint64_t AppliedBefore(int64_t time_ns) const;
  const ClusterOptions& options() const { return options_; }
  void FillStats(v1::ClusterStats* stats) const;

  // Stops the threads and fails waiting callbacks with UNAVAILABLE.
  // Idempotent.
  void Shutdown();

  // The connection, for cross-node deliveries (a natsConnection*).
  void* connection() const { return connection_; }

 private:
  explicit SubscriptionLog(const ClusterOptions& options);

  struct Waiter {
    int64_t deadline_ns;
    StatusCallback ready;
  };
  struct PendingAppend {
    std::string message_id;
    std::string record;
    int64_t deadline_ns;
    AppendCallback done;
  };

  absl::Status ConnectToStream();
  void ReadLoop();
  void WatchLoop();
  void AppendLoop();
  struct Bounds {
    uint64_t first;  // the first position the stream holds
    uint64_t last;
  };
  // The stream's positions now (wait_ms > 0: the answer's timeout).
  absl::StatusOr<Bounds> StreamBounds(int64_t wait_ms);
  // Asks the stream for its last position; records the answer.
  absl::StatusOr<uint64_t> Probe();
  // Recomputes serving_ and tells the observer on a change.
  void UpdateServing();
  // The waiters that are due (position applied, deadline passed or
  // shutting down), removed, to be called without the lock.
  std::vector<std::pair<StatusCallback, absl::Status>> TakeDueWaiters(
      int64_t now_ns) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RunDue(std::vector<std::pair<StatusCallback, absl::Status>> due);
  void PruneOutcomes(int64_t now_ns) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ClusterOptions options_;
  // Set by Run before its threads start.
  Applier applier_;
  AppliedHook applied_hook_;
  const std::string subject_;

  // libnats objects (natsConnection*, jsCtx*, natsOptions*), opaque here so
  // that including this header does not include nats.h.
  void* connection_ = nullptr;
  void* js_ = nullptr;
  void* nats_options_ = nullptr;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t applied_ ABSL_GUARDED_BY(mu_) = 0;
  // The last position the stream reported, or this node appended or read.
  uint64_t known_ ABSL_GUARDED_BY(mu_) = 0;
  // Serving needs applied_ >= catch_up_target_ since the last time the
  // stream answered after an outage (or since start).
  uint64_t catch_up_target_ ABSL_GUARDED_BY(mu_) = 0;
  bool caught_up_ ABSL_GUARDED_BY(mu_) = false;
  // CLOCK_MONOTONIC of the stream's last answer (a probe, an append's
  // acknowledgement, a record read).
  int64_t last_contact_ns_ ABSL_GUARDED_BY(mu_) = 0;
  bool lost_ ABSL_GUARDED_BY(mu_) = false;
  // Non-zero: the log was trimmed to start here, past what this node has
  // applied; it never serves again (until restarted).
  uint64_t fell_behind_ ABSL_GUARDED_BY(mu_) = 0;
  bool serving_ ABSL_GUARDED_BY(mu_) = false;
  std::function<void(bool)> serving_observer_ ABSL_GUARDED_BY(mu_);
  std::multimap<uint64_t, Waiter> waiters_ ABSL_GUARDED_BY(mu_);
  // Outcomes by position, kept for the duplicate window (by the record's
  // log timestamp) so that a duplicate append finds its original's.
  struct KeptOutcome {
    LogOutcome outcome;
    int64_t log_time_ns;
  };
  std::map<uint64_t, KeptOutcome> outcomes_ ABSL_GUARDED_BY(mu_);
  std::deque<PendingAppend> appends_ ABSL_GUARDED_BY(mu_);
  // ReadBarrier requests waiting for the next probe.
  std::vector<Waiter> barrier_waiters_ ABSL_GUARDED_BY(mu_);
  uint64_t message_counter_ ABSL_GUARDED_BY(mu_) = 0;
  std::string incarnation_;  // random, per process: fresh message ids

  uint64_t started_from_ ABSL_GUARDED_BY(mu_) = 0;
  // (position, the stream's timestamp of its record), at most one per
  // 100 ms, for AppliedBefore.
  std::deque<std::pair<uint64_t, int64_t>> applied_times_
      ABSL_GUARDED_BY(mu_);
  // The stream's first position as the last probe saw it.
  uint64_t first_position_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t appended_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t applied_records_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t duplicates_ ABSL_GUARDED_BY(mu_) = 0;

  std::thread reader_;
  std::thread watchdog_;
  std::thread barrier_;
  std::vector<std::thread> appenders_;
  bool shut_down_ = false;  // Shutdown's, on the controlling thread
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_CLUSTER_SUBSCRIPTION_LOG_H_
