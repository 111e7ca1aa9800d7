// The staged engine with an index per partition (DESIGN.md section 4):
// front stage -> P partition stages -> reply stage.
//
//   - Front stage: the caller's thread (a gRPC handler). It admits a publish
//     (Admission), then pushes every event to every partition's queue (with
//     the replicated layout, engine.h IndexLayout: to one partition, round
//     robin, and every change to every partition), and
//     routes subscription changes to their owning partitions through the
//     same queues. It never waits for matching.
//   - Partition stages (shard_partition.h): one thread each, matching
//     cohorts against its own index.
//   - Reply stage (reply_stage.h): one thread. Takes the events whose P
//     partials are all written, merges them into the EventResult, delivers
//     to listeners, completes the request once its last event is merged, and
//     returns the events to Admission.
//
// Subscribe assigns ids at the front (SubscriptionDirectory), splits the
// batch by owning partition, and answers when every partition involved has
// applied its part. Unsubscribe checks and kills the ids at the front (all or
// nothing), then likewise.
//
// Thread safety: see engine.h. The reply queue is multi-producer (partition
// threads), single-consumer (the reply thread); its length is bounded by
// Admission.
#ifndef COHORT_SERVICE_STAGES_SHARDED_ENGINE_H_
#define COHORT_SERVICE_STAGES_SHARDED_ENGINE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "service/stages/engine.h"
#include "service/stages/reply_stage.h"
#include "service/stages/shard_partition.h"

namespace cohort {
namespace service {

class ShardedEngine : public Engine {
 public:
  explicit ShardedEngine(const EngineOptions& options);
  ~ShardedEngine() override;

  void Subscribe(std::vector<SubscriptionInput> subscriptions,
                 SubscribeCallback done) override;
  void Unsubscribe(std::vector<uint64_t> ids, StatusCallback done) override;
  absl::Status Restore(const StoreState& state) override;
  void Flush() override;

 protected:
  void Dispatch(PublishJob* job) override;
  void StopStages() override;
  void AddStageStats(
      v1::Stats* stats,
      std::vector<const StageProfile*>* profiles) const override;

 private:
  struct UpdateJob;

  // Fill job->batches from job->ids (and job->inputs): by owning partition,
  // or every partition when replicated.
  void QueueAdds(UpdateJob* job);
  void QueueRemoves(UpdateJob* job);
  // Queues `job`'s batches to their partitions.
  void Route(UpdateJob* job);
  // Called by each partition that applied its batch of `job`; the last one
  // answers and deletes the job.
  void OnApplied(UpdateJob* job, const absl::Status& status);

  std::vector<std::unique_ptr<ShardPartition>> partitions_list_;
  ReplyStage reply_;
  bool stopped_ = false;  // only touched by the thread calling Shutdown
  std::atomic<uint64_t> next_event_{0};  // replicated layout: round robin
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STAGES_SHARDED_ENGINE_H_
