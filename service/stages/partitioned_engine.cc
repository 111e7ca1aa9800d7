#include "service/stages/partitioned_engine.h"

#include <algorithm>
#include <future>
#include <optional>
#include <string>
#include <utility>

#include "matcher/cohort_masks.h"
#include "service/stages/placement.h"

namespace cohort {
namespace service {
namespace {

// Planned rows a partition keeps room for between batches; a larger
// batch's room is freed once applied.
constexpr size_t kKeptPlannedRows = size_t{1} << 16;

// The partitioned layout's cohorts hold at most one mask bit per event.
uint32_t CohortLimit(uint32_t cohort_max) {
  constexpr uint32_t kMax = matcher::internal::kMaxCohortChunk;
  return cohort_max == 0 ? kMax : std::min(cohort_max, kMax);
}

// Each copy's partitions: CreateEngine checks that the copies divide the
// partitions.
uint32_t PartitionsPerCopy(const EngineOptions& options) {
  return options.partitions / std::max<uint32_t>(options.index_copies, 1);
}

// Each partition's steal units (CohortPipeline::UnitsFor).
uint32_t StealUnits(const EngineOptions& options) {
  return CohortPipeline::UnitsFor(PartitionsPerCopy(options),
                                  options.steal_units);
}

}  // namespace

PartitionedEngine::Copy::Copy(PartitionedEngine* engine,
                              uint32_t first_thread, uint32_t partitions)
    : index(partitions),
      pipeline(partitions, CohortLimit(engine->options_.cohort_max),
               engine->options_.cohort_wait_us * 1000,
               CohortPipeline::BuffersFor(partitions,
                                          engine->options_.cohorts_in_flight),
               // One copy: the server's events (as before copies); with
               // several, this copy's.
               [this, engine] {
                 return engine->copies_.size() == 1
                            ? engine->admission_.in_flight()
                            : events.load(std::memory_order_relaxed);
               },
               CohortPipeline::SoloCohortsFor(partitions),
               engine->options_.phase2_stealing
                   ? CohortPipeline::kStealAfterNs
                   : CohortPipeline::kNoStealing,
               StealUnits(engine->options_),
               // Wake no more threads than the CPUs can run: this copy's
               // share of the usable ones.
               UsableCpusPerCopy(engine->options_.index_copies)),
      predicate(&index, &pipeline, &engine->predicate_profile_,
                [this, engine](PublishJob* job, uint32_t event) {
                  events.fetch_sub(1, std::memory_order_relaxed);
                  engine->reply_.Push(job, event);
                },
                engine->options_.phase1_inline_positions,
                engine->options_.phase1_batch_positions) {
  for (uint32_t p = 0; p < partitions; ++p) {
    this->partitions.push_back(std::make_unique<ClusterPartition>(
        p, first_thread + p, pipeline.units(), engine->options_.queue_limit,
        &index,
        &engine->directory_, &engine->listeners_, &subscriber_of,
        [this, engine](PublishJob* job, uint32_t event, bool now) {
          events.fetch_sub(1, std::memory_order_relaxed);
          if (now) {
            engine->reply_.FinishNow(job, event);
          } else {
            engine->reply_.Push(job, event);
          }
        }));
  }
  planned.rows.resize(partitions);
  planned.removes.resize(partitions);
  planned.removed.resize(partitions);
}

PartitionedEngine::PartitionedEngine(const EngineOptions& options)
    : Engine(options, /*id_shards=*/1,
             /*partials=*/PartitionsPerCopy(options) * StealUnits(options)),
      reply_(options.queue_limit,
             [this](PublishJob* job, size_t event, StageProfile* profile) {
               FinishEvent(job, event, profile);
             },
             &admission_),
      predicate_profile_("predicate", "predicate", std::nullopt,
                         options.queue_limit) {
  const uint32_t per_copy = PartitionsPerCopy(options);
  const uint32_t copies = options.partitions / per_copy;
  for (uint32_t c = 0; c < copies; ++c) {
    copies_.push_back(std::make_unique<Copy>(this, c * per_copy, per_copy));
  }
  reply_.Start();
  // Each thread is pinned and placed before Start returns, so its profile's
  // cpu and numa_node are set before the server reports them.
  for (uint32_t t = 0; t < options.partitions; ++t) {
    Copy* copy = copies_[t / per_copy].get();
    const uint32_t p = t % per_copy;
    std::promise<void> placed;
    std::future<void> done = placed.get_future();
    threads_.emplace_back([this, t, copy, p, &placed] {
      PlacePartitionThread(t, options_, &copy->partitions[p]->profile());
      placed.set_value();
      Run(copy, p);
    });
    done.wait();
  }
}

PartitionedEngine::~PartitionedEngine() { Shutdown(); }

void PartitionedEngine::Run(Copy* copy, uint32_t p) {
  CohortPipeline::Work work;
  ClusterPartition::Scratch scratch;
  while (copy->pipeline.Next(p, &work)) {
    switch (work.kind) {
      case CohortPipeline::Work::Kind::kForm:
        copy->predicate.Form(work);
        break;
      case CohortPipeline::Work::Kind::kTask:
        copy->predicate.RunTask(work);
        break;
      case CohortPipeline::Work::Kind::kMatch: {
        const PredicateStage::Cohort& cohort =
            copy->predicate.cohort(work.buffer);
        if (work.all_partitions) {
          for (const auto& partition : copy->partitions) {
            partition->Match(work, cohort, &scratch);
          }
        } else {
          copy->partitions[work.partition]->Match(work, cohort, &scratch);
        }
        copy->pipeline.MatchDone(work.buffer, work.partition);
        break;
      }
      case CohortPipeline::Work::Kind::kPlanUpdate:
        Plan(copy, *work.update);
        break;
      case CohortPipeline::Work::Kind::kApplyUpdate:
        copy->partitions[p]->Apply(copy->planned.rows[p],
                                   copy->planned.removes[p],
                                   &copy->planned.removed[p]);
        copy->pipeline.UpdateApplied(p);
        break;
      case CohortPipeline::Work::Kind::kFinishUpdate:
        Finish(copy, work.update);
        break;
    }
  }
}

void PartitionedEngine::Plan(Copy* copy, const UpdateBatch& update) {
  const uint32_t p_count = static_cast<uint32_t>(copy->partitions.size());
  Planned& planned = copy->planned;
  // A batch of adds (a Subscribe request, recovery) is planned in bulk:
  // the predicate table's upkeep once, at its end.
  for (auto& rows : planned.rows) {
    rows.reserve(update.adds.size() / p_count + update.adds.size() / 8 + 1);
  }
  copy->index.BeginPlans();
  for (const UpdateBatch::Add& add : update.adds) {
    matcher::PartitionedIndex::PendingRow row;
    absl::Status s = copy->index.PlanAdd(add.local_id, add.predicates, &row);
    if (!s.ok()) {
      if (planned.status.ok()) planned.status = s;
      continue;
    }
    // A branch's subscriber is the directory's (BranchSubscriber).
    if (!SubscriptionDirectory::IsBranch(add.local_id)) {
      if (copy->subscriber_of.size() <= add.local_id) {
        copy->subscriber_of.resize(add.local_id + 1);
      }
      copy->subscriber_of[add.local_id] = add.subscriber;
    }
    planned.rows[row.partition].push_back(std::move(row));
  }
  copy->index.EndPlans();
  for (uint32_t id : update.removes) {
    absl::StatusOr<uint32_t> p = copy->index.PartitionOf(id);
    if (!p.ok()) {
      if (planned.status.ok()) planned.status = p.status();
      continue;
    }
    planned.removes[*p].push_back(id);
  }
  std::vector<bool> involved(p_count);
  for (uint32_t p = 0; p < p_count; ++p) {
    involved[p] = !planned.rows[p].empty() || !planned.removes[p].empty();
  }
  copy->pipeline.UpdatePlanned(involved);
}

void PartitionedEngine::Finish(Copy* copy, UpdateBatch* update) {
  Planned& planned = copy->planned;
  for (matcher::PartitionedIndex::RemovedRows& removed : planned.removed) {
    copy->index.FinishRemove(removed);
    removed = {};
  }
  for (auto& rows : planned.rows) {
    // A large batch's room (recovery's: every row) is given back, not
    // held for the small ones that follow.
    if (rows.capacity() > kKeptPlannedRows) {
      std::vector<matcher::PartitionedIndex::PendingRow>().swap(rows);
    } else {
      rows.clear();
    }
  }
  for (auto& removes : planned.removes) removes.clear();
  const absl::Status status = std::exchange(planned.status, absl::OkStatus());
  // The change is in this copy: cohorts may form again, and every event
  // queued here after it will be matched against it.
  copy->pipeline.UpdateFinished();
  update->done(status);  // may delete the change
}

void PartitionedEngine::RouteChange(Change* change) {
  // One batch per copy, each for the whole of its index, planned and
  // applied by that copy's pipeline between its cohorts (Plan, each
  // partition's Apply, Finish); the change is answered once every copy
  // has it.
  UpdateBatch batch;
  if (change->adds()) {
    batch.adds.reserve(change->ids.size());  // more for "or" subscriptions
    for (size_t i = 0; i < change->ids.size(); ++i) {
      AddRows(*change, i, directory_.Place(change->ids[i]).local_id,
              &batch.adds);
    }
  } else {
    for (size_t i = 0; i < change->ids.size(); ++i) {
      RemoveRows(*change, i, directory_.Place(change->ids[i]).local_id,
                 &batch.removes);
    }
  }
  // A copy each, the last one moved (recovery's batch is every row).
  change->batches.resize(copies_.size());
  for (size_t c = 0; c + 1 < copies_.size(); ++c) change->batches[c] = batch;
  change->batches.back() = std::move(batch);
  QueueBatches(change, [this](uint32_t c, UpdateBatch* update) {
    copies_[c]->pipeline.PushUpdate(update, MonotonicNanos());
  });
}

PartitionedEngine::Copy* PartitionedEngine::ChooseCopy() {
  const uint32_t n = static_cast<uint32_t>(copies_.size());
  // The fewest events in it, starting from the next in turn so that ties
  // (an idle server's lone events) go round.
  const uint32_t start = next_copy_.fetch_add(1, std::memory_order_relaxed);
  Copy* best = nullptr;
  uint64_t fewest = 0;
  for (uint32_t i = 0; i < n; ++i) {
    Copy* c = copies_[(start + i) % n].get();
    const uint64_t e = c->events.load(std::memory_order_relaxed);
    if (best == nullptr || e < fewest) {
      best = c;
      fewest = e;
    }
  }
  return best;
}

void PartitionedEngine::Dispatch(PublishJob* job) {
  const int64_t now = MonotonicNanos();
  const uint32_t n = static_cast<uint32_t>(job->events.size());
  if (copies_.size() == 1) {
    copies_[0]->events.fetch_add(n, std::memory_order_relaxed);
    copies_[0]->pipeline.PushEvents(job, now);
    return;
  }
  // A request of several events is dealt out in even runs, one per copy at
  // most, each to the copy with the fewest events then: an idle server
  // matches a batch on every core, a busy one fills its cohorts from
  // several requests either way.
  const uint32_t runs = std::min<uint32_t>(n, copies_.size());
  uint32_t first = 0;
  for (uint32_t r = 0; r < runs; ++r) {
    const uint32_t count = (n - first) / (runs - r);
    Copy* copy = ChooseCopy();
    copy->events.fetch_add(count, std::memory_order_relaxed);
    copy->pipeline.PushEvents(job, now, first, count);
    first += count;
  }
}

void PartitionedEngine::Flush() {
  for (auto& copy : copies_) copy->pipeline.Flush();
}

void PartitionedEngine::StopStages() {
  if (stopped_) return;
  stopped_ = true;
  // The partition threads finish everything queued first; every event they
  // finish reaches the reply stage before it is told to stop.
  for (auto& copy : copies_) copy->pipeline.Close();
  for (std::thread& t : threads_) t.join();
  reply_.Stop();
}

void PartitionedEngine::AddStageStats(
    v1::Stats* stats, std::vector<const StageProfile*>* profiles) const {
  stats->set_mode("staged");
  stats->set_index_layout(std::string(IndexLayoutName(options_.index_layout)));
  stats->set_partitions(static_cast<uint32_t>(threads_.size()));
  stats->set_index_copies(static_cast<uint32_t>(copies_.size()));
  CohortPipeline::Counts counts;
  for (const auto& copy : copies_) counts += copy->pipeline.counts();
  stats->set_stolen_matches(counts.steals);
  stats->set_pipeline_sleeps(counts.sleeps);
  stats->set_pipeline_wakeups(counts.wakeups);
  profiles->push_back(&predicate_profile_);
  for (const auto& copy : copies_) {
    for (const auto& partition : copy->partitions) {
      profiles->push_back(&partition->profile());
    }
  }
  profiles->push_back(&reply_.profile());
}

}  // namespace service
}  // namespace cohort
