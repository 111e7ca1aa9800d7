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
// Index copies (--index_copies=G, docs/DESIGN.md section 4.9): the P
// threads form G groups of P / G; group c owns copy c of the subscription
// set (a PartitionedIndex of P / G partitions) with its own front
// dispatch, predicate stage and cluster partitions, and thread t is
// partition t % (P / G) of copy t / (P / G). A publish goes whole to the
// copy with the fewest events in it (ties: the next in turn), so a lone
// event wakes P / G cores, not P; every change goes to every copy and is
// answered once all have applied it. G = 1 is the partitioned layout of
// one index, G = P the replicated layout.
//
// A subscription change is applied between cohorts (the pipeline holds it
// until none is in flight): one thread plans it against the shared
// predicate table (PartitionedIndex::PlanAdd, or finds where removed ids
// live) and records the subscribers; each partition involved applies its
// rows on its own thread; one thread releases the removed rows' predicates
// and answers. So a publish admitted after a change was answered is matched
// against it, and predicate ids never move under a cohort in flight. With
// copies, each copy does this on its own threads.
//
// Matcher ids are global ids - 1 (the directory has one id shard): results
// of a copy's partitions merge by id like the sharded layout's.
//
// Thread safety: see engine.h. A copy's index table side and
// subscriber_of are written only in a change's plan and finish steps,
// which its pipeline runs with no cohort of that copy in flight and
// nothing else of the change running; planned belongs to the change being
// applied. `events` is atomic.
#ifndef COHORT_SERVICE_STAGES_PARTITIONED_ENGINE_H_
#define COHORT_SERVICE_STAGES_PARTITIONED_ENGINE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "matcher/partitioned_index.h"
#include "service/observability/stage_profile.h"
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
  // One copy of the subscription set and the stages that serve it.
  struct Copy {
    Copy(PartitionedEngine* engine, uint32_t first_thread,
         uint32_t partitions);
    matcher::PartitionedIndex index;
    std::vector<uint32_t> subscriber_of;  // by matcher id
    // Events dispatched to this copy and not yet handed to the reply stage
    // (its pipeline's InServerFn, and how Dispatch picks a copy).
    std::atomic<uint64_t> events{0};
    CohortPipeline pipeline;
    PredicateStage predicate;
    std::vector<std::unique_ptr<ClusterPartition>> partitions;
    Planned planned;
  };

  // A partition thread, once placed: does what its copy's pipeline hands
  // it (as partition p of the copy) until it closes.
  void Run(Copy* copy, uint32_t p);
  void Plan(Copy* copy, const UpdateBatch& update);
  void Finish(Copy* copy, UpdateBatch* update);
  // The copy with the fewest events in it.
  Copy* ChooseCopy();

  ReplyStage reply_;
  StageProfile predicate_profile_;  // shared by the copies
  std::vector<std::unique_ptr<Copy>> copies_;
  std::atomic<uint32_t> next_copy_{0};  // ChooseCopy's tie-break
  std::vector<std::thread> threads_;
  bool stopped_ = false;  // only touched by the thread calling Shutdown
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STAGES_PARTITIONED_ENGINE_H_
