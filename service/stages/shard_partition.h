// A partition stage of the sharded_phase1 layout (sharded_engine.h; docs/DESIGN.md section 9): one thread that owns a whole
// matcher::Index and matches *cohorts* of events against it.
//
// Its inbound `ShardQueue` carries, in arrival order, published events and
// subscription changes routed to this partition. The thread takes a cohort
// of queued events by the activation rule (cohort_activation.h): when
// `cohort_max` events are waiting, the oldest has waited `cohort_wait_us`,
// or a subscription change queues behind them, since the change must wait
// for the events before it. A change is applied alone, between cohorts, in
// queue order: this is what makes "published after Subscribe returned"
// imply "matched against it".
//
// For each event of a cohort the partition writes its partial result into
// the job (PublishJob::partials[shard]) and, if it is the last partition
// to do so, hands the event to the reply stage. Partition p owns shard p
// and receives every event.
//
// Thread safety: Push* may be called from any thread; everything else about
// the index is confined to the partition thread. The shard (matcher::Index
// and the subscriber table) is allocated and touched only by that thread.
#ifndef COHORT_SERVICE_STAGES_SHARD_PARTITION_H_
#define COHORT_SERVICE_STAGES_SHARD_PARTITION_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "matcher/index.h"
#include "service/observability/stage_profile.h"
#include "service/stages/cohort_activation.h"
#include "service/stages/engine_options.h"
#include "service/stages/partials.h"
#include "service/stages/publish_job.h"
#include "service/stages/update_batch.h"
#include "service/stages/listeners.h"
#include "service/stages/subscription_directory.h"

namespace cohort {
namespace service {

// One item of a partition's inbound queue.
struct ShardItem {
  PublishJob* job = nullptr;      // an event: job->events[event]
  uint32_t event = 0;
  UpdateBatch* update = nullptr;  // or a subscription change
  int64_t enqueue_ns = 0;
  bool is_event() const { return job != nullptr; }
};

// Multi-producer, single-consumer queue with the cohort activation rule
// (cohort_activation.h).
// Its length is bounded by Admission (events) plus the number of pending
// Subscribe/Unsubscribe requests (changes).
class ShardQueue {
 public:
  ShardQueue(uint32_t cohort_max, int64_t cohort_wait_ns)
      : activation_(cohort_max, cohort_wait_ns) {}

  void PushEvents(PublishJob* job, int64_t now_ns);
  void PushUpdate(UpdateBatch* update, int64_t now_ns);
  // From now on cohorts run as soon as events are queued, without waiting
  // for the wait limit (shutdown: admitted work finishes promptly).
  void Flush();
  // After Close, Pop returns false once the queue is empty. Implies Flush.
  void Close();

  // Blocks until a batch is ready and moves it to *out: one change, or a
  // cohort of 1..cohort_max events. *queue_length is the queue's length
  // when the batch was taken. Returns false when closed and drained.
  bool Pop(std::vector<ShardItem>* out, size_t* queue_length);

 private:
  void WakeIfReady(bool was_empty) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const CohortActivation activation_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<ShardItem> items_ ABSL_GUARDED_BY(mu_);
  size_t updates_ ABSL_GUARDED_BY(mu_) = 0;  // non-event items in items_
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool flushing_ ABSL_GUARDED_BY(mu_) = false;
  bool sleeping_ ABSL_GUARDED_BY(mu_) = false;
};

class ShardPartition {
 public:
  // Hands an event whose partials are all written to the reply stage.
  using ReadyFn = std::function<void(PublishJob* job, uint32_t event)>;

  ShardPartition(uint32_t index, const EngineOptions& options,
            const SubscriptionDirectory* directory,
            const ListenerRegistry* listeners, ReadyFn ready);
  ~ShardPartition();

  // Starts the thread and waits until it has been pinned and placed (so
  // its profile's cpu and numa_node are set before Start returns).
  void Start();
  // Drains the queue, then joins the thread.
  void Stop();

  ShardQueue& queue() { return queue_; }
  const StageProfile& profile() const { return profile_; }

 private:
  void Run();
  // Matches a cohort taken at `start_ns` from a queue of `queue_length`,
  // fills each event's partial, records the cohort in the profile, then
  // hands each event whose partials are all written to the reply stage.
  void RunCohort(const std::vector<ShardItem>& cohort, int64_t start_ns,
                 size_t queue_length);
  void ApplyUpdate(UpdateBatch* update);

  const uint32_t index_;
  const uint32_t shard_id_;  // which partial it writes; see the file comment
  const EngineOptions options_;
  const SubscriptionDirectory* const directory_;
  const ListenerRegistry* const listeners_;
  const ReadyFn ready_;
  ShardQueue queue_;
  StageProfile profile_;
  std::thread thread_;

  // Owned by the partition thread.
  matcher::Index shard_;
  std::vector<uint32_t> subscriber_of_;  // by local id
  std::vector<matcher::EventView> views_;
  std::vector<size_t> live_;  // cohort positions of the events not expired
  matcher::CohortMatches matches_;
  std::vector<PartialOut> outs_;
  PartialsScratch partials_;
  std::vector<int64_t> waits_;
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STAGES_SHARD_PARTITION_H_
