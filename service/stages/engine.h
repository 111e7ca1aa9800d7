// The matching engine behind the gRPC service: what happens to validated
// requests, independent of gRPC so that it can be tested (and run under
// ThreadSanitizer) without a network. CreateEngine (create_engine.h) makes
// one from the server's flags.
//
// Engine is the base of the three engines (docs/DESIGN.md sections 4 and
// 9); it owns what they share and the steps they share:
//   - PartitionedEngine (partitioned_engine.h), --index=partitioned, the
//     default, and --index=replicated (a copy of the index per partition):
//     phase 1 once per cohort for each index copy, each partition
//     matching its own part of its copy's clusters;
//   - ShardedEngine (sharded_engine.h), --index=sharded_phase1: each
//     partition owns a whole matcher::Index of a shard and forms its own
//     cohorts;
//   - ThreadedEngine (threaded_engine.h), --mode=threaded: the paper's
//     thread-per-request baseline over one shared index.
// The base admits publishes (Admission), merges and delivers what the
// stages found (FinishEvent), and runs every subscription change the same
// way: the shutdown gate, ids assigned or killed in the
// SubscriptionDirectory, the journal record when durable, then one hook,
// RouteChange, through which each engine's layout applies the change on its
// stages; the change is answered once applied (ChangeApplied).
//
// Ordering guarantee (every engine): once a Subscribe's `done` has been
// called with its ids, every event passed to Publish afterwards is matched
// against those subscriptions; once an Unsubscribe's `done` has been called
// with OK, no event passed to Publish afterwards matches them.
//
// Thread safety: every public method may be called from any thread, at
// once. Callbacks (`done`) run on engine threads or on the calling thread
// and must not block. PublishJob's memory rules are in publish_job.h.
#ifndef COHORT_SERVICE_STAGES_ENGINE_H_
#define COHORT_SERVICE_STAGES_ENGINE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "proto/cohort/v1/pubsub.pb.h"
#include "service/model/subscription_input.h"
#include "service/observability/stage_profile.h"
#include "service/stages/admission.h"
#include "service/stages/engine_options.h"
#include "service/stages/listeners.h"
#include "service/stages/publish_job.h"
#include "service/stages/subscription_directory.h"
#include "service/stages/update_batch.h"
#include "service/storage/store.h"

namespace cohort {
namespace service {

using SubscribeCallback =
    std::function<void(absl::StatusOr<std::vector<uint64_t>>)>;
using StatusCallback = std::function<void(absl::Status)>;

class Engine {
 public:
  // `id_shards`: the id directory's partitions (P for sharded_phase1, else
  // 1); `partials`: how many partial results each event gets (P for the
  // partitioned and sharded_phase1 layouts, else 1).
  Engine(const EngineOptions& options, uint32_t id_shards, uint32_t partials);
  virtual ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Adds validated subscriptions; `done` gets their ids in input order once
  // they are applied, or an error (RESOURCE_EXHAUSTED, UNAVAILABLE) with
  // nothing applied. None: `done` gets no ids at once.
  void Subscribe(std::vector<SubscriptionInput> subscriptions,
                 SubscribeCallback done);
  // Removes subscriptions (ids validated: no duplicates). NOT_FOUND with
  // nothing applied if one is not live. None: OK at once.
  void Unsubscribe(std::vector<uint64_t> ids, StatusCallback done);

  // Admits `job` now or fails fast (RESOURCE_EXHAUSTED when full,
  // UNAVAILABLE when shutting down, DEADLINE_EXCEEDED or CANCELLED if it has
  // already expired) without calling job->done.
  absl::Status Publish(PublishJob* job);
  // Refuses (RESOURCE_EXHAUSTED, counted as a rejection; UNAVAILABLE) a
  // unary publish of `n` events that Publish would refuse now, so that the
  // front stage can shed load before validating and building the request
  // (SEDA: under overload, rejecting must stay cheap). OK is no promise.
  absl::Status CheckRoom(uint64_t n);
  // Admits `job` when there is room (streams). `on_admission` is called once
  // with OK (then job->done follows later) or the error that prevents it.
  void PublishWhenAdmitted(PublishJob* job, StatusCallback on_admission);

  // Recovery, before serving: makes the directory and the index hold
  // exactly `state`'s live subscriptions under their ids, and returns once
  // they are applied. Moves each live subscription's predicates and
  // branches out of *state (its subscriber stays): the state is recovery's
  // and not copied again (fabret-10m: 10M inputs). INVALID_ARGUMENT if the
  // state is impossible (see SubscriptionDirectory::Restore). REQUIRES:
  // nothing subscribed yet.
  absl::Status Restore(StoreState* state);

  // The status of closing options().durability in Shutdown (OK if none).
  absl::Status durability_status() const { return durability_status_; }

  // Lets admitted work finish without waiting for cohorts to fill (the
  // first step of shutdown, while the RPC layer still waits for calls in
  // progress). Admission goes on.
  virtual void Flush() {}

  // Stops admitting (UNAVAILABLE), closes listeners, finishes admitted work
  // and joins engine threads. Idempotent.
  void Shutdown();

  // Counters and the stage profile. With `histograms`, also each stage's
  // duration histograms for /metrics (one per stats->stages() entry, in
  // the same order, from the same snapshot).
  void FillStats(v1::Stats* stats,
                 std::vector<StageHistograms>* histograms = nullptr) const;

  // The time from admission to answer of every Publish request (and every
  // request of a PublishStream) answered so far, whatever its status, as
  // /metrics exports it.
  DurationBuckets PublishDurations() const;

  ListenerRegistry& listeners() { return listeners_; }
  // Cluster mode: matches of subscribers listened to on other nodes go to
  // `remote` too (not owned; null: none). REQUIRES: set before serving and
  // left set until Shutdown.
  void set_remote_deliveries(RemoteDeliveries* remote) { remote_ = remote; }
  const EngineOptions& options() const { return options_; }
  uint64_t subscriptions() const { return directory_.live(); }

 protected:
  // A Subscribe, Unsubscribe or recovery whose ids are assigned (or
  // killed) and, when durable, journaled: what RouteChange gets.
  struct Change {
    std::vector<SubscriptionInput> inputs;  // the adds; none for removes
    std::vector<uint64_t> ids;  // assigned or removed, in input order
    // The branch ids of ids[i] ("or" subscriptions; none for a plain one),
    // or empty when no id of the change has any.
    std::vector<std::vector<uint32_t>> branches;
    // The layout's batches (by partition, or one for the whole index),
    // filled by RouteChange and handed over with QueueBatches.
    std::vector<UpdateBatch> batches;
    std::atomic<uint32_t> pending{0};  // batches not yet applied
    std::mutex mu;
    absl::Status status ABSL_GUARDED_BY(mu);  // the first batch error
    SubscribeCallback subscribed;  // exactly one of these two is set
    StatusCallback unsubscribed;

    bool adds() const { return static_cast<bool>(subscribed); }
  };

  // The matcher rows of change.ids[i], whose plain local id in its
  // partition is `local_id`: appended to `adds` (an add: its one row, or a
  // row per branch) or `removes`.
  static void AddRows(const Change& change, size_t i, uint32_t local_id,
                      std::vector<UpdateBatch::Add>* adds);
  static void RemoveRows(const Change& change, size_t i, uint32_t local_id,
                         std::vector<uint32_t>* removes);

  // The layout's hook: applies `change` (adds `inputs` under `ids`, or
  // removes `ids`) on its stages, then calls ChangeApplied once, from any
  // thread. A staged layout fills change->batches and hands them over
  // with QueueBatches. Called with the shutdown gate held shared (or during
  // recovery), once per change, in the order the journal holds them.
  virtual void RouteChange(Change* change) = 0;
  // Hands every non-empty batch of `change` to `push` (its index in
  // change->batches, the batch); the change is answered once every one of
  // them is applied.
  void QueueBatches(Change* change,
                    const std::function<void(uint32_t, UpdateBatch*)>& push);
  // Answers `change` and deletes it. A failed Subscribe (validated input
  // cannot fail to apply; if it does anyway) forgets its ids, so they do
  // not stay live unreported, and answers INTERNAL.
  void ChangeApplied(Change* change, const absl::Status& status);

  // Queues an admitted job for matching.
  virtual void Dispatch(PublishJob* job) = 0;
  // Finishes admitted work and joins threads (after admission is shut).
  virtual void StopStages() = 0;
  // Sets the mode, layout and partition count of `stats` and appends the
  // engine's stage profiles (all but the front's and the journal's) in the
  // order GetStats lists them.
  virtual void AddStageStats(
      v1::Stats* stats, std::vector<const StageProfile*>* profiles) const = 0;

  // Merges the partials of event `i` into its EventResult, delivers it to
  // listeners, counts it in `profile`, and completes the job if it was the
  // last event. Called by the stage that finishes events.
  void FinishEvent(PublishJob* job, size_t i, StageProfile* profile);

  const EngineOptions options_;
  SubscriptionDirectory directory_;
  ListenerRegistry listeners_;
  RemoteDeliveries* remote_ = nullptr;
  Admission admission_;

 private:
  void Prepare(PublishJob* job);
  // FinishEvent's work for request event `i`, whose records [first, last)
  // every partition matched: the result (a subscription counted once),
  // and the deliveries to listeners.
  void MergeAndDeliver(PublishJob* job, size_t i, size_t first, size_t last,
                       StageProfile* profile);
  // Prepares and dispatches an admitted job. REQUIRES: gate_ held shared.
  void Admit(PublishJob* job, int64_t start_ns);
  // One of `change`'s batches is applied with `status`.
  void BatchApplied(Change* change, const absl::Status& status);
  // Assigns the branch ids of `change`'s "or" subscriptions (or RESOURCE_
  // EXHAUSTED with none assigned), and releases them again with its ids.
  absl::Status AssignBranches(Change* change);
  void ForgetAdds(const Change& change);

  // Subscribe and Unsubscribe, when journaled, hold order_mu_ from
  // assigning (or killing) ids until the record is appended, so the
  // journal's order is the directory's. AssignIds assigns `count` ids (the
  // first is returned) and KillIds kills `ids` with that lock taken into
  // *order (left empty without durability). On error the lock is already
  // released, so the caller answers without holding it.
  absl::StatusOr<uint64_t> AssignIds(size_t count,
                                     std::unique_lock<std::mutex>* order);
  absl::Status KillIds(absl::Span<const uint64_t> ids,
                       std::unique_lock<std::mutex>* order);
  // Journals `change` (its ids just assigned, or killed) and then hands it
  // to RouteChange; without durability, at once. If the journal fails, a
  // Subscribe's ids are forgotten and the change is answered UNAVAILABLE;
  // an Unsubscribe's ids stay dead in the directory but are still matched
  // until a restart recovers the durable state (the journal has failed, so
  // every later change fails too). REQUIRES: the lock from AssignIds or
  // KillIds is held.
  void JournalAndRoute(Change* change);

  // Held shared by every call that may queue work, exclusively by Shutdown
  // while it sets closing_, so no work is queued after the stages stop.
  mutable std::shared_mutex gate_;
  bool closing_ ABSL_GUARDED_BY(gate_) = false;

  const uint32_t partials_;
  // Held while assigning ids (or killing them) and appending the record,
  // when durable: the journal's order is then the directory's.
  std::mutex order_mu_;
  absl::Status durability_status_;
  StageProfile front_;
  const int64_t start_ns_;
  // Admission-to-answer times of answered Publish requests; recorded by
  // the stage that answers (FinishEvent), read by /metrics.
  SharedLatencyHistogram publish_durations_;
  std::atomic<uint64_t> events_published_{0};
  std::atomic<bool> shut_down_{false};
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STAGES_ENGINE_H_
