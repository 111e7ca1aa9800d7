// The matching engine behind the gRPC service: what happens to validated
// requests, independent of gRPC so that it can be tested (and run under
// ThreadSanitizer) without a network.
//
// Two engines implement the interface:
//   - ShardedEngine (sharded_engine.h): the front stage is the caller's
//     thread; every event goes to each of P partition stages (each owning a
//     disjoint shard of the index and matching cohorts of events), then to
//     the reply stage (reply_stage.h), which merges the partial results and
//     delivers to listeners.
//   - ThreadedEngine (threaded_engine.h): the paper's thread-per-request
//     baseline; a pool of workers each matches a whole request against one
//     shared index under a readers/writer lock.
//
// Ordering guarantee (both engines): once a Subscribe's `done` has been
// called with its ids, every event passed to Publish afterwards is matched
// against those subscriptions; once an Unsubscribe's `done` has been called
// with OK, no event passed to Publish afterwards matches them.
//
// Memory crossing threads: a PublishJob is created by the front stage (the
// RPC handler), read and written by engine threads while in flight, and must
// be kept alive by its creator until `done` has been called. Engine threads
// write disjoint parts of it (partition p writes only partials[p]); the
// hand-off is ordered by atomics and queues.
//
// Expiry: a job whose deadline has passed, or whose caller has cancelled it,
// is expired. The stage that matches an event checks this once per cohort
// (per job in threaded mode) and skips the events of expired jobs: they are
// not matched, not delivered, and the job ends with DEADLINE_EXCEEDED or
// CANCELLED. Events already matched when the job expires are delivered.
//
// Thread safety: every Engine method may be called from any thread, at once.
// Callbacks (`done`) run on engine threads or on the calling thread and must
// not block.
#ifndef COHORT_SERVICE_STAGES_ENGINE_H_
#define COHORT_SERVICE_STAGES_ENGINE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "matcher/cohort_matches.h"
#include "matcher/types.h"
#include "proto/cohort/v1/pubsub.pb.h"
#include "service/api/validation.h"
#include "service/observability/stage_profile.h"
#include "service/stages/admission.h"
#include "service/stages/listeners.h"
#include "service/stages/subscription_directory.h"
#include "service/storage/durability.h"

namespace cohort {
namespace service {

// How the staged engine lays the index out over its partition stages.
enum class IndexLayout {
  // The design and the default (PartitionedEngine): one predicate table for
  // the server, phase 1 once per cohort with its work split over the
  // partitions' cores; each partition owns a disjoint part of the clusters
  // (matcher::PartitionedIndex) and matches every cohort against it.
  kPartitioned,
  // The earlier partitioned layout (ShardedEngine), kept for comparison:
  // each partition owns a whole index of a disjoint shard (subscription n
  // goes to partition n % P), forms its own cohorts and runs phase 1 over
  // its own predicate table for every event.
  kShardedPhase1,
  // Each partition holds a replica of the whole index and matches every P-th
  // event: the paper's "staged server without partitioning", kept for the
  // locality experiment (bench/experiment.sh). P times the memory, and every
  // Subscribe is applied P times.
  kReplicated,
};

// "partitioned", "sharded_phase1" or "replicated" (--index).
absl::StatusOr<IndexLayout> ParseIndexLayout(absl::string_view name);
absl::string_view IndexLayoutName(IndexLayout layout);

// EngineOptions' defaults for phase 1's hand-out (PredicateStage). Below
// 8,192 positions a cohort's tasks take about as long as waking another
// core. A batch of 16,384 positions is about 20 us of work at 1.4 ns a
// position: fabret-1m's cohorts of 64 walk about 85,000 positions in 96
// tasks of about 900 (a microsecond each), and each hand-off costs two
// trips through the pipeline's lock, which every partition thread contends
// for (bench/reports/2026-11-27-xeon16-diagnosis).
inline constexpr uint64_t kPhase1InlinePositions = 8192;
inline constexpr uint64_t kPhase1BatchPositions = 16384;

struct EngineOptions {
  // Partition stages (staged mode). >= 1.
  uint32_t partitions = 1;
  IndexLayout index_layout = IndexLayout::kPartitioned;
  // Pin partition p to the p-th CPU this process may run on (only if there
  // are at least as many CPUs as partitions).
  bool pin_cores = false;
  // Allocate each pinned partition's memory on its CPU's NUMA node
  // (numa.h). No effect on unpinned partitions or in threaded mode.
  bool numa = false;
  // Cohort activation thresholds: run a cohort when `cohort_max` events wait
  // (0 = no limit) or the oldest has waited `cohort_wait_us` (0: run what is
  // queued as soon as a stage is free). The partitioned layout forms cohorts
  // of at most 64 events (one bit each in a mask), so there a cohort_max of
  // 0 or above 64 means 64.
  uint32_t cohort_max = 64;
  int64_t cohort_wait_us = 0;
  // Partitioned layout: cohorts in flight at once, each with its mask
  // buffer (1 to CohortPipeline::kMaxBuffers); 0: the pipeline's default
  // for the partition count (CohortPipeline::DefaultBuffers).
  uint32_t cohorts_in_flight = 0;
  // Partitioned layout, phase 1 of a cohort split over the partitions: the
  // forming thread runs it alone below `phase1_inline_positions` positions
  // (handing it out would cost about as much), else hands its tasks out in
  // batches of at least `phase1_batch_positions` (PredicateStage). Not
  // flags: tests lower them to hand out the small cohorts of small indexes.
  uint64_t phase1_inline_positions = kPhase1InlinePositions;
  uint64_t phase1_batch_positions = kPhase1BatchPositions;
  // Most events admitted and not yet answered (bounds every queue).
  uint64_t queue_limit = 4096;
  // 0, or a target for the time from admission to answer: the limit on
  // events in flight then adapts, up to queue_limit (admission.h).
  int64_t latency_target_us = 0;
  // Worker threads (threaded mode). >= 1.
  uint32_t threads = 1;
  // Size of the subscriber dictionary (bounds subscriber ids).
  uint32_t max_subscribers = 1u << 24;
  // Not owned; null: nothing is journaled. With it, every change is logged
  // (ids assigned and records appended under one lock, so the journal's
  // order is the ids' order) and applied and acknowledged only once
  // durable; Shutdown closes it after the last change is applied.
  Durability* durability = nullptr;
};

// The largest --latency_target_us.
inline constexpr int64_t kMaxLatencyTargetUs = 60'000'000;

// OK if `us` is a valid EngineOptions::latency_target_us (0 = off, at most
// kMaxLatencyTargetUs), else INVALID_ARGUMENT naming --latency_target_us.
absl::Status CheckLatencyTarget(int64_t us);

// One Publish request in flight.
struct PublishJob {
  // What one partition (or the one worker) found for one event.
  struct Partial {
    uint64_t count = 0;
    std::vector<uint64_t> ids;  // global ids, ascending; only if return_ids
    // (subscriber, global id) for matched subscribers that have listeners.
    std::vector<std::pair<uint32_t, uint64_t>> deliveries;
  };
  struct EventState {
    std::atomic<uint32_t> pending{0};  // partitions yet to report
    std::vector<Partial> partials;     // one per partition
    // Set by a partition that skipped the event because the job had
    // expired; read by the stage that finishes it.
    std::atomic<bool> skipped{false};
  };

  // Set by the creator. `request` and `response` must outlive `done`.
  const v1::PublishRequest* request = nullptr;
  v1::PublishResponse* response = nullptr;
  // Compact event records (validation.h BuildEvents), one per event.
  std::vector<std::vector<matcher::AttributeValue>> events;
  // Called once: OK after `response` holds one result per event, or
  // DEADLINE_EXCEEDED / CANCELLED if some events were skipped (Expired).
  std::function<void(absl::Status)> done;
  // Optional, set by the creator: when the answer stops being useful. The
  // deadline is on the MonotonicNanos clock; `cancelled` (owned by the
  // creator, which outlives the job) becomes true when the caller goes away.
  int64_t deadline_ns = std::numeric_limits<int64_t>::max();
  const std::atomic<bool>* cancelled = nullptr;

  // True if the job's events should no longer be matched at `now_ns`.
  bool Expired(int64_t now_ns) const {
    return now_ns >= deadline_ns ||
           (cancelled != nullptr && cancelled->load(std::memory_order_relaxed));
  }

  // Engine state. `state[i].partials` has one entry per partition that
  // reports on the event: P for the partitioned and sharded_phase1 layouts,
  // 1 for the replicated one and the threaded engine.
  std::unique_ptr<EventState[]> state;
  std::atomic<size_t> events_left{0};
  std::atomic<size_t> events_skipped{0};
  // When admission let the job in (MonotonicNanos): its sojourn, for the
  // latency target, ends when its events are released.
  int64_t admitted_ns = 0;
};

// The deadline of a gRPC call (system clock; time_point::max() for none) on
// the MonotonicNanos clock, for PublishJob::deadline_ns.
int64_t DeadlineNanos(std::chrono::system_clock::time_point deadline);

// Turns the local ids one partition (or the threaded worker) matched for one
// event into its partial result: the count, the global ids ascending if
// `return_ids`, and (subscriber, global id) for matched subscribers that have
// listeners. Sorts *local. `subscriber_of` maps local id -> subscriber id.
void FillPartial(const SubscriptionDirectory& directory,
                 const ListenerRegistry& listeners, uint32_t partition,
                 bool return_ids, const std::vector<uint32_t>& subscriber_of,
                 std::vector<matcher::SubscriptionId>* local,
                 PublishJob::Partial* partial);

// Where one event of a cohort's flat matches goes: its partial, and whether
// its request returns ids.
struct PartialOut {
  PublishJob::Partial* partial;
  bool return_ids;
};
// Scratch for FillPartials, reused from cohort to cohort by one thread.
struct PartialsScratch {
  std::vector<std::vector<matcher::SubscriptionId>> lists;
  std::vector<uint64_t> counts;
};
// The partials of a cohort's events from its flat matches (event i of
// `matches` goes to outs[i]). Where no event returns ids and nobody
// listens, a partial needs only its count, and the counts come from one
// pass over the pairs (CohortMatches::CountPerEvent); else every event's
// ids are listed (CohortMatches::ToLists) and go through FillPartial.
// REQUIRES: outs.size() == matches.events().
void FillPartials(const SubscriptionDirectory& directory,
                  const ListenerRegistry& listeners, uint32_t partition,
                  const std::vector<uint32_t>& subscriber_of,
                  const matcher::CohortMatches& matches,
                  absl::Span<const PartialOut> outs,
                  PartialsScratch* scratch);

// Subscription changes from one Subscribe or Unsubscribe, for one partition
// (the sharded layouts) or for the whole index (the partitioned layout).
struct UpdateBatch {
  struct Add {
    uint32_t local_id;
    const SubscriptionInput* input;  // owned by the update's creator
  };
  std::vector<Add> adds;
  std::vector<uint32_t> removes;  // local ids
  // Called on an engine thread once the batch is applied; the status is the
  // first error (should never happen for validated input).
  std::function<void(absl::Status)> done;
};

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
  // nothing applied.
  virtual void Subscribe(std::vector<SubscriptionInput> subscriptions,
                         SubscribeCallback done) = 0;
  // Removes subscriptions (ids validated: no duplicates). NOT_FOUND with
  // nothing applied if one is not live.
  virtual void Unsubscribe(std::vector<uint64_t> ids, StatusCallback done) = 0;

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
  // they are applied. INVALID_ARGUMENT if the state is impossible (see
  // SubscriptionDirectory::Restore). REQUIRES: nothing subscribed yet.
  virtual absl::Status Restore(const StoreState& state) = 0;

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
  const EngineOptions& options() const { return options_; }
  uint64_t subscriptions() const { return directory_.live(); }

 protected:
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
  // Journals the subscriptions just assigned ids first, first + 1, ... and
  // calls `durable` once the record is durable: OK, or UNAVAILABLE after
  // forgetting the ids. Without durability, calls durable(OK) at once.
  // REQUIRES: the lock from AssignIds is held.
  void JournalSubscribe(uint64_t first,
                        absl::Span<const SubscriptionInput> subscriptions,
                        std::function<void(absl::Status)> durable);
  // The same for ids just killed (REQUIRES: the lock from KillIds is
  // held). On failure they stay dead in the
  // directory but are still matched until a restart recovers the durable
  // state; the journal has failed, so every later change fails too.
  void JournalUnsubscribe(absl::Span<const uint64_t> ids,
                          std::function<void(absl::Status)> durable);

  // Held shared by every call that may queue work, exclusively by Shutdown
  // while it sets closing_, so no work is queued after the stages stop.
  mutable std::shared_mutex gate_;
  bool closing_ ABSL_GUARDED_BY(gate_) = false;

  const EngineOptions options_;
  const uint32_t partials_;
  // Held while assigning ids (or killing them) and appending the record,
  // when durable: the journal's order is then the directory's.
  std::mutex order_mu_;
  absl::Status durability_status_;
  SubscriptionDirectory directory_;
  ListenerRegistry listeners_;
  Admission admission_;
  StageProfile front_;

 private:
  void Prepare(PublishJob* job);
  // FinishEvent's work for an event every partition matched: the result,
  // and the deliveries to listeners.
  void MergeAndDeliver(PublishJob* job, size_t i, StageProfile* profile);
  // Prepares and dispatches an admitted job. REQUIRES: gate_ held shared.
  void Admit(PublishJob* job, int64_t start_ns);

  const int64_t start_ns_;
  // Admission-to-answer times of answered Publish requests; recorded by
  // the stage that answers (FinishEvent), read by /metrics.
  SharedLatencyHistogram publish_durations_;
  std::atomic<uint64_t> events_published_{0};
  std::atomic<bool> shut_down_{false};
};

// Which engine --mode names.
absl::StatusOr<std::unique_ptr<Engine>> CreateEngine(
    const std::string& mode, const EngineOptions& options);

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STAGES_ENGINE_H_
