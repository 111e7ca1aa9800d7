// The staged engine of the partitioned layout, the default (docs/DESIGN.md
// section 4): front dispatch -> predicate stage -> P cluster partitions ->
// reply stage, over one matcher::PartitionedIndex.
//
//   - Front stage: the caller's thread (a gRPC handler). It admits a publish
//     (Admission) and queues its events on the front dispatch
//     (CohortPipeline); Subscribe and Unsubscribe assign or kill ids
//     (SubscriptionDirectory), journal the change when durable, and queue
//     it behind the events before it. It never waits for matching.
//   - P partition threads, thread p pinned to the p-th CPU with its memory
//     on that CPU's node (placement.h). Each does whatever the pipeline
//     hands it: forming cohorts and running phase-1 tasks (PredicateStage:
//     phase 1 once per cohort for the whole server), matching cohorts
//     against partition p's clusters (ClusterPartition), and the steps of a
//     subscription change (below).
//   - Reply stage (reply_stage.h): merges each event's P partials, delivers
//     to listeners, finishes requests, gives events back to admission.
//
// A subscription change is applied between cohorts (the pipeline holds it
// until none is in flight): one thread plans it against the shared
// predicate table (PartitionedIndex::PlanAdd, or finds where removed ids
// live) and records the subscribers; each partition involved applies its
// rows on its own thread; one thread releases the removed rows' predicates
// and answers. So a publish admitted after a change was answered is matched
// against it, and predicate ids never move under a cohort in flight.
//
// Matcher ids are global ids - 1 (the directory has one id shard): results
// of the P partitions merge by id like the sharded layout's.
//
// Thread safety: see engine.h. index_'s table side and subscriber_of_ are
// written only in a change's plan and finish steps, which the pipeline runs
// with no cohort in flight and nothing else of the change running; planned_
// belongs to the change being applied.
#ifndef COHORT_SERVICE_STAGES_PARTITIONED_ENGINE_H_
#define COHORT_SERVICE_STAGES_PARTITIONED_ENGINE_H_

#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "matcher/partitioned_index.h"
#include "service/stages/cluster_partition.h"
#include "service/stages/cohort_pipeline.h"
#include "service/stages/engine.h"
#include "service/stages/predicate_stage.h"
#include "service/stages/reply_stage.h"

namespace cohort {
namespace service {

class PartitionedEngine : public Engine {
 public:
  explicit PartitionedEngine(const EngineOptions& options);
  ~PartitionedEngine() override;

  void Flush() override;

 protected:
  void RouteChange(Change* change) override;
  void Dispatch(PublishJob* job) override;
  void StopStages() override;
  void AddStageStats(
      v1::Stats* stats,
      std::vector<const StageProfile*>* profiles) const override;

 private:
  // The change being applied, between its plan and finish steps.
  struct Planned {
    std::vector<std::vector<matcher::PartitionedIndex::PendingRow>> rows;
    std::vector<std::vector<uint32_t>> removes;
    std::vector<matcher::PartitionedIndex::RemovedRows> removed;
    absl::Status status;
  };

  // Partition thread p: places itself, then does what the pipeline hands
  // it until the pipeline closes.
  void Run(uint32_t p);
  void Plan(const UpdateBatch& update);
  void Finish(UpdateBatch* update);

  matcher::PartitionedIndex index_;
  std::vector<uint32_t> subscriber_of_;  // by matcher id
  CohortPipeline pipeline_;
  ReplyStage reply_;
  PredicateStage predicate_;
  std::vector<std::unique_ptr<ClusterPartition>> partitions_;
  std::vector<std::thread> threads_;
  Planned planned_;
  bool stopped_ = false;  // only touched by the thread calling Shutdown
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STAGES_PARTITIONED_ENGINE_H_
