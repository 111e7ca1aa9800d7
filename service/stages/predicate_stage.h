// The predicate stage of the partitioned layout (docs/DESIGN.md section 4):
// phase 1 of the Fabret index, once per cohort for the whole server.
//
// It owns the cohorts in flight — their events and mask buffers
// (the pipeline's slots() of them: its mask buffers and, with solo cohorts,
// one slot per partition thread) — and does two kinds of work, both on
// whichever partition thread the pipeline gives them to:
//   - Form: one clock reading decides which of the cohort's events have
//     expired (their requests' deadlines passed or their callers went away):
//     those go straight to the reply stage, unmatched. The rest are the
//     cohort: PartitionedIndex::BeginCohort gathers their values, does the
//     equality lookups and lists the range groups' tasks, each preferring
//     the partition whose part of the table it walks (task_part). A cohort
//     whose tasks are few runs them at once rather than hand them out
//     (waking another core costs more than it would save).
//   - RunTask: one phase-1 task of a cohort.
// When a cohort's last task has run, its masks are complete and every
// partition may match it (the pipeline's kMatch).
//
// Its profile row ("predicate", one for all index copies): queue length
// and wait are the front dispatch queue's (events waiting for a cohort to form, and how long they
// waited), a batch is a cohort, its service time runs from formation to the
// last task, `expired` counts events skipped at formation.
//
// Thread safety: Form and RunTask may run on different threads at once for
// different cohorts or tasks, as the pipeline hands them out; cohort(b) may
// be read by any thread between the pipeline's Formed and the buffer's last
// MatchDone. The index's table side must not change meanwhile (the
// pipeline applies changes only with no cohort in flight).
#ifndef COHORT_SERVICE_STAGES_PREDICATE_STAGE_H_
#define COHORT_SERVICE_STAGES_PREDICATE_STAGE_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "matcher/cohort_masks.h"
#include "matcher/partitioned_index.h"
#include "matcher/types.h"
#include "service/observability/stage_profile.h"
#include "service/stages/cohort_pipeline.h"
#include "service/stages/engine_options.h"
#include "service/stages/publish_job.h"

namespace cohort {
namespace service {

class PredicateStage {
 public:
  struct Cohort {
    std::vector<QueuedEvent> events;  // not expired, in queue order
    std::vector<matcher::EventView> views;
    matcher::internal::CohortMasks masks;
    int64_t formed_ns = 0;
    size_t queue_length = 0;
    // When phase 1 is handed out: the tasks' batches (CohortMasks::
    // BatchTasks bounds; the pipeline's tasks are these), each handed out
    // as a piece, and each batch's batch_part of P: the pipeline offers it
    // to that partition first.
    std::vector<uint32_t> batch_bounds;
    std::vector<uint32_t> preferred;
  };

  // Hands an event that will not be matched to the reply stage.
  using ExpiredFn = std::function<void(PublishJob* job, uint32_t event)>;

  // `index`, `pipeline` and `profile` are not owned; with index copies the
  // copies' predicate stages share one profile (StageProfile is
  // thread-safe).
  PredicateStage(const matcher::PartitionedIndex* index,
                 CohortPipeline* pipeline, StageProfile* profile,
                 ExpiredFn expired,
                 uint64_t inline_positions = kPhase1InlinePositions,
                 uint64_t batch_positions = kPhase1BatchPositions);
  PredicateStage(const PredicateStage&) = delete;
  PredicateStage& operator=(const PredicateStage&) = delete;

  // The pipeline's kForm and kTask work; both report back to the pipeline.
  void Form(const CohortPipeline::Work& work);
  void RunTask(const CohortPipeline::Work& work);

  const Cohort& cohort(uint32_t buffer) const { return cohorts_[buffer]; }
  const StageProfile& profile() const { return *profile_; }

 private:
  // What the profile records of a cohort, read before the cohort is handed
  // on: once the pipeline knows its phase 1 is done, the partitions may
  // match it and its buffer may hold the next cohort.
  struct Batch {
    size_t queue_length;
    size_t events;
    int64_t formed_ns;
  };
  // Records a cohort whose phase 1 just finished.
  void PhaseOneDone(const Batch& batch);

  const matcher::PartitionedIndex* const index_;
  CohortPipeline* const pipeline_;
  const ExpiredFn expired_;
  const uint64_t inline_positions_;
  const uint64_t batch_positions_;
  StageProfile* const profile_;
  std::vector<Cohort> cohorts_;  // by buffer
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STAGES_PREDICATE_STAGE_H_
