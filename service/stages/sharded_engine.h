// The staged engine of the sharded_phase1 layout (engine_options.h
// IndexLayout; docs/DESIGN.md sections 4 and 9), where each partition owns
// a whole matcher::Index of a shard: front stage -> P partition stages ->
// reply stage. (The replicated layout, which this engine also ran until
// issue 43, is the partitioned engine with one index copy per partition.)
//
//   - Front stage: the caller's thread (a gRPC handler). It admits a publish
//     (Admission), then pushes every event to every partition's queue. It
//     never waits for matching.
//   - Partition stages (shard_partition.h): one thread each, forming its
//     own cohorts and matching them against its own index, a disjoint
//     shard.
//   - Reply stage (reply_stage.h): one thread. Takes the events whose
//     partials are all written, merges them into the EventResult, delivers
//     to listeners, completes the request once its last event is merged, and
//     returns the events to Admission.
//
// A subscription change (Engine::RouteChange) is split into a batch per
// partition: each subscription to the partition owning its shard. The
// batches go through the same queues as the events, and the change is
// answered once every partition involved has applied its batch.
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

  void Flush() override;

 protected:
  void RouteChange(Change* change) override;
  void Dispatch(PublishJob* job) override;
  void StopStages() override;
  void AddStageStats(
      v1::Stats* stats,
      std::vector<const StageProfile*>* profiles) const override;

 private:
  std::vector<std::unique_ptr<ShardPartition>> partitions_list_;
  ReplyStage reply_;
  bool stopped_ = false;  // only touched by the thread calling Shutdown
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STAGES_SHARDED_ENGINE_H_
