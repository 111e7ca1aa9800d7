#include "service/stages/partitioned_engine.h"

#include <algorithm>
#include <future>
#include <string>
#include <utility>

#include "matcher/cohort_masks.h"
#include "service/stages/placement.h"

namespace cohort {
namespace service {
namespace {

// The partitioned layout's cohorts hold at most one mask bit per event.
uint32_t CohortLimit(uint32_t cohort_max) {
  constexpr uint32_t kMax = matcher::internal::kMaxCohortChunk;
  return cohort_max == 0 ? kMax : std::min(cohort_max, kMax);
}

}  // namespace

PartitionedEngine::PartitionedEngine(const EngineOptions& options)
    : Engine(options, /*id_shards=*/1, /*partials=*/options.partitions),
      index_(options.partitions),
      pipeline_(options.partitions, CohortLimit(options.cohort_max),
                options.cohort_wait_us * 1000,
                CohortPipeline::BuffersFor(options.partitions,
                                           options.cohorts_in_flight),
                [this] { return admission_.in_flight(); },
                CohortPipeline::SoloCohortsFor(options.partitions)),
      reply_(options.queue_limit,
             [this](PublishJob* job, size_t event, StageProfile* profile) {
               FinishEvent(job, event, profile);
             },
             &admission_),
      predicate_(&index_, &pipeline_, options.queue_limit,
                 [this](PublishJob* job, uint32_t event) {
                   reply_.Push(job, event);
                 },
                 options.phase1_inline_positions,
                 options.phase1_batch_positions) {
  for (uint32_t p = 0; p < options.partitions; ++p) {
    partitions_.push_back(std::make_unique<ClusterPartition>(
        p, options.queue_limit, &index_, &directory_, &listeners_,
        &subscriber_of_, [this](PublishJob* job, uint32_t event, bool now) {
          if (now) {
            reply_.FinishNow(job, event);
          } else {
            reply_.Push(job, event);
          }
        }));
  }
  planned_.rows.resize(options.partitions);
  planned_.removes.resize(options.partitions);
  planned_.removed.resize(options.partitions);
  reply_.Start();
  // Each thread is pinned and placed before Start returns, so its profile's
  // cpu and numa_node are set before the server reports them.
  for (uint32_t p = 0; p < options.partitions; ++p) {
    std::promise<void> placed;
    std::future<void> done = placed.get_future();
    threads_.emplace_back([this, p, &placed] {
      PlacePartitionThread(p, options_, &partitions_[p]->profile());
      placed.set_value();
      Run(p);
    });
    done.wait();
  }
}

PartitionedEngine::~PartitionedEngine() { Shutdown(); }

void PartitionedEngine::Run(uint32_t p) {
  CohortPipeline::Work work;
  ClusterPartition::Scratch scratch;
  while (pipeline_.Next(p, &work)) {
    switch (work.kind) {
      case CohortPipeline::Work::Kind::kForm:
        predicate_.Form(work);
        break;
      case CohortPipeline::Work::Kind::kTask:
        predicate_.RunTask(work);
        break;
      case CohortPipeline::Work::Kind::kMatch: {
        const PredicateStage::Cohort& cohort = predicate_.cohort(work.buffer);
        if (work.all_partitions) {
          for (const auto& partition : partitions_) {
            partition->Match(work, cohort, &scratch);
          }
        } else {
          partitions_[work.partition]->Match(work, cohort, &scratch);
        }
        pipeline_.MatchDone(work.buffer, work.partition);
        break;
      }
      case CohortPipeline::Work::Kind::kPlanUpdate:
        Plan(*work.update);
        break;
      case CohortPipeline::Work::Kind::kApplyUpdate:
        partitions_[p]->Apply(planned_.rows[p], planned_.removes[p],
                              &planned_.removed[p]);
        pipeline_.UpdateApplied(p);
        break;
      case CohortPipeline::Work::Kind::kFinishUpdate:
        Finish(work.update);
        break;
    }
  }
}

void PartitionedEngine::Plan(const UpdateBatch& update) {
  const uint32_t p_count = static_cast<uint32_t>(partitions_.size());
  // A batch of adds (a Subscribe request, recovery) is planned in bulk:
  // the predicate table's upkeep once, at its end.
  index_.BeginPlans();
  for (const UpdateBatch::Add& add : update.adds) {
    matcher::PartitionedIndex::PendingRow row;
    absl::Status s = index_.PlanAdd(add.local_id, add.input->predicates, &row);
    if (!s.ok()) {
      if (planned_.status.ok()) planned_.status = s;
      continue;
    }
    if (subscriber_of_.size() <= add.local_id) {
      subscriber_of_.resize(add.local_id + 1);
    }
    subscriber_of_[add.local_id] = add.input->subscriber;
    planned_.rows[row.partition].push_back(std::move(row));
  }
  index_.EndPlans();
  for (uint32_t id : update.removes) {
    absl::StatusOr<uint32_t> p = index_.PartitionOf(id);
    if (!p.ok()) {
      if (planned_.status.ok()) planned_.status = p.status();
      continue;
    }
    planned_.removes[*p].push_back(id);
  }
  std::vector<bool> involved(p_count);
  for (uint32_t p = 0; p < p_count; ++p) {
    involved[p] = !planned_.rows[p].empty() || !planned_.removes[p].empty();
  }
  pipeline_.UpdatePlanned(involved);
}

void PartitionedEngine::Finish(UpdateBatch* update) {
  for (matcher::PartitionedIndex::RemovedRows& removed : planned_.removed) {
    index_.FinishRemove(removed);
    removed = {};
  }
  for (auto& rows : planned_.rows) rows.clear();
  for (auto& removes : planned_.removes) removes.clear();
  const absl::Status status = std::exchange(planned_.status, absl::OkStatus());
  // The change is in the index: cohorts may form again, and every event
  // queued after it will be matched against it.
  pipeline_.UpdateFinished();
  update->done(status);  // may delete the change
}

void PartitionedEngine::RouteChange(Change* change) {
  // One batch for the whole index, planned and applied by the pipeline
  // between cohorts (Plan, each partition's Apply, Finish).
  change->batches.resize(1);
  UpdateBatch& batch = change->batches[0];
  if (change->adds()) {
    for (size_t i = 0; i < change->ids.size(); ++i) {
      batch.adds.push_back(
          {directory_.Place(change->ids[i]).local_id, &change->inputs[i]});
    }
  } else {
    for (uint64_t id : change->ids) {
      batch.removes.push_back(directory_.Place(id).local_id);
    }
  }
  QueueBatches(change, [this](uint32_t, UpdateBatch* update) {
    pipeline_.PushUpdate(update, MonotonicNanos());
  });
}

void PartitionedEngine::Dispatch(PublishJob* job) {
  pipeline_.PushEvents(job, MonotonicNanos());
}

void PartitionedEngine::Flush() { pipeline_.Flush(); }

void PartitionedEngine::StopStages() {
  if (stopped_) return;
  stopped_ = true;
  // The partition threads finish everything queued first; every event they
  // finish reaches the reply stage before it is told to stop.
  pipeline_.Close();
  for (std::thread& t : threads_) t.join();
  reply_.Stop();
}

void PartitionedEngine::AddStageStats(
    v1::Stats* stats, std::vector<const StageProfile*>* profiles) const {
  stats->set_mode("staged");
  stats->set_index_layout(std::string(IndexLayoutName(options_.index_layout)));
  stats->set_partitions(static_cast<uint32_t>(partitions_.size()));
  profiles->push_back(&predicate_.profile());
  for (const auto& partition : partitions_) {
    profiles->push_back(&partition->profile());
  }
  profiles->push_back(&reply_.profile());
}

}  // namespace service
}  // namespace cohort
