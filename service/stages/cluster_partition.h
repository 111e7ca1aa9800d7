// A partition stage of the partitioned layout (docs/DESIGN.md section 4): phase
// 2 of every cohort over the clusters this partition owns (partition p of
// matcher::PartitionedIndex), and its part of each subscription change.
//
// Match reads the cohort's masks (the predicate stage computed them once
// for the whole server), checks the cluster lists the cohort's access
// predicates lead to in this partition (or one steal unit's run of them),
// writes each event's partial result (PublishJob::partials[p * units +
// unit]) and hands every event whose partials are all written to the reply
// stage. Apply adds this partition's rows of a planned
// Subscribe, or takes out the rows of an Unsubscribe, on this partition's
// thread, so the clusters' memory comes from that thread's NUMA node.
//
// Its profile row ("partition/<t>", t the owning thread, the same as p
// with one index copy): queue length is the events of cohorts
// whose phase 1 is done and that this partition has yet to match, wait is
// from the end of a cohort's phase 1 to the start of its match here (its
// first unit's), a batch is a cohort's match here, or one unit of it with
// steal units (--steal_units > 1).
//
// Thread safety: Apply runs on the partition's own thread (the engine's
// thread p): it writes partition p's clusters, at once with the other
// partitions' Apply and nothing else (the pipeline's update steps). Match
// only reads the index (const) and writes the partials of its cohort's
// events for this partition, so it may run on any thread of its copy — the
// partition's own, the thread running a solo cohort, or one stealing the
// share (CohortPipeline) — and the P partitions match at once; one thread
// at a time matches one partition against one cohort.
#ifndef COHORT_SERVICE_STAGES_CLUSTER_PARTITION_H_
#define COHORT_SERVICE_STAGES_CLUSTER_PARTITION_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/types/span.h"
#include "matcher/partitioned_index.h"
#include "matcher/types.h"
#include "service/observability/stage_profile.h"
#include "service/stages/cohort_pipeline.h"
#include "service/stages/partials.h"
#include "service/stages/publish_job.h"
#include "service/stages/listeners.h"
#include "service/stages/predicate_stage.h"
#include "service/stages/subscription_directory.h"

namespace cohort {
namespace service {

class ClusterPartition {
 public:
  // What Match needs for one cohort, owned by the thread that calls it.
  struct Scratch {
    matcher::CohortMatches matches;
    std::vector<PartialOut> outs;
    PartialsScratch partials;
    std::vector<int64_t> waits;
  };
  // Hands an event whose partials are all written to the reply stage, or,
  // `now` (kMatch's finish_now), has it finished on the calling thread.
  using ReadyFn =
      std::function<void(PublishJob* job, uint32_t event, bool now)>;

  // Nothing here is owned. `subscriber_of` maps a matcher id (global id -
  // 1) to its subscriber; the engine writes it only while no cohort is in
  // flight.
  // `partition` is the partition of `index` (its copy's), which indexes
  // the events' partials; `stage` numbers its profile row, the engine's
  // thread that owns it; `units` is its steal units
  // (CohortPipeline::units()), unit u of which writes partial
  // partition * units + u of an event.
  ClusterPartition(uint32_t partition, uint32_t stage, uint32_t units,
                   uint64_t queue_limit,
                   matcher::PartitionedIndex* index,
                   const SubscriptionDirectory* directory,
                   const ListenerRegistry* listeners,
                   const std::vector<uint32_t>* subscriber_of, ReadyFn ready);
  ClusterPartition(const ClusterPartition&) = delete;
  ClusterPartition& operator=(const ClusterPartition&) = delete;

  // The pipeline's kMatch for `cohort` (its unit Work::unit; all units
  // for Work::all_partitions), with the calling thread's scratch.
  void Match(const CohortPipeline::Work& work,
             const PredicateStage::Cohort& cohort, Scratch* scratch);
  // The pipeline's kApplyUpdate: adds `rows` (planned for this partition)
  // and removes the rows of `removes`, appending them to *removed.
  void Apply(absl::Span<const matcher::PartitionedIndex::PendingRow> rows,
             absl::Span<const uint32_t> removes,
             matcher::PartitionedIndex::RemovedRows* removed);

  StageProfile& profile() { return profile_; }
  const StageProfile& profile() const { return profile_; }

 private:
  const uint32_t partition_;
  const uint32_t units_;
  matcher::PartitionedIndex* const index_;
  const SubscriptionDirectory* const directory_;
  const ListenerRegistry* const listeners_;
  const std::vector<uint32_t>* const subscriber_of_;
  const ReadyFn ready_;
  StageProfile profile_;
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STAGES_CLUSTER_PARTITION_H_
