#include "service/stages/predicate_stage.h"

#include <utility>

namespace cohort {
namespace service {
PredicateStage::PredicateStage(const matcher::PartitionedIndex* index,
                               CohortPipeline* pipeline, StageProfile* profile,
                               ExpiredFn expired, uint64_t inline_positions,
                               uint64_t batch_positions)
    : index_(index),
      pipeline_(pipeline),
      expired_(std::move(expired)),
      inline_positions_(inline_positions),
      batch_positions_(batch_positions),
      profile_(profile),
      cohorts_(pipeline->slots()) {}

void PredicateStage::Form(const CohortPipeline::Work& work) {
  Cohort& c = cohorts_[work.buffer];
  const int64_t start = MonotonicNanos();
  c.formed_ns = start;
  c.queue_length = work.queue_length;
  c.events.clear();
  c.views.clear();
  std::vector<int64_t> waits;
  waits.reserve(work.events.size());
  std::vector<QueuedEvent> expired;
  for (const QueuedEvent& e : work.events) {
    waits.push_back(start - e.enqueue_ns);
    // One clock reading for the whole cohort: an event that expires while
    // the cohort runs is still matched.
    if (e.job->Expired(start)) {
      e.job->state[e.event].skipped.store(true, std::memory_order_relaxed);
      expired.push_back(e);
      continue;
    }
    c.events.push_back(e);
    c.views.push_back(e.job->events[e.event]);
  }
  profile_->RecordWaits(waits);
  profile_->AddEvents(c.events.size());
  profile_->AddExpired(expired.size());
  c.preferred.clear();
  if (!c.events.empty()) {
    index_->BeginCohort(c.views, &c.masks);
    // A solo cohort is this thread's alone; a cohort of few positions (a
    // cohort of one event at light load, say), or of one batch, is not
    // worth handing over.
    const bool hand_out =
        !work.solo && (c.masks.per_event() ||
                       c.masks.total_positions() >= inline_positions_);
    if (hand_out) c.masks.BatchTasks(batch_positions_, &c.batch_bounds);
    if (!hand_out || c.batch_bounds.size() <= 2) {
      for (size_t t = 0; t < c.masks.tasks(); ++t) {
        index_->RunTask(t, &c.masks);
      }
    } else {
      for (size_t b = 0; b + 1 < c.batch_bounds.size(); ++b) {
        c.preferred.push_back(c.masks.batch_part(
            c.batch_bounds[b], c.batch_bounds[b + 1], index_->partitions()));
      }
    }
  }
  const Batch batch{c.queue_length, c.events.size(), c.formed_ns};
  // Recorded before the pipeline hands out phase 2: once it has, the
  // cohort's events may be answered.
  pipeline_->Formed(work.buffer, c.preferred, c.events.size(),
                    [this, &batch] { PhaseOneDone(batch); });
  // Last: the reply stage may finish (and free) a job as soon as it has
  // its events.
  for (const QueuedEvent& e : expired) expired_(e.job, e.event);
}

void PredicateStage::RunTask(const CohortPipeline::Work& work) {
  Cohort& c = cohorts_[work.buffer];
  for (uint32_t t = c.batch_bounds[work.task];
       t < c.batch_bounds[work.task + 1]; ++t) {
    index_->RunTask(t, &c.masks);
  }
  const Batch batch{c.queue_length, c.events.size(), c.formed_ns};
  pipeline_->TaskDone(work.buffer, [this, &batch] { PhaseOneDone(batch); });
}

void PredicateStage::PhaseOneDone(const Batch& batch) {
  profile_->RecordBatch(batch.queue_length, batch.events,
                       MonotonicNanos() - batch.formed_ns);
}

}  // namespace service
}  // namespace cohort
