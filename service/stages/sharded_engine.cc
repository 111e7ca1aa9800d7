#include "service/stages/sharded_engine.h"

#include <algorithm>
#include <future>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace cohort {
namespace service {

// A Subscribe or Unsubscribe in flight: one UpdateBatch per partition it
// touches; the last partition to apply its batch answers and deletes it.
struct ShardedEngine::UpdateJob {
  std::vector<SubscriptionInput> inputs;  // Subscribe only
  std::vector<uint64_t> ids;              // assigned or removed, input order
  std::vector<UpdateBatch> batches;       // by partition
  std::atomic<uint32_t> pending{0};
  std::mutex mu;
  absl::Status status ABSL_GUARDED_BY(mu);
  SubscribeCallback subscribed;  // exactly one of these two is set
  StatusCallback unsubscribed;
};

namespace {

// Index shards: P for sharded_phase1, one (replicated on every partition)
// for replicated.
uint32_t ShardCount(const EngineOptions& options) {
  return options.index_layout == IndexLayout::kReplicated ? 1
                                                          : options.partitions;
}

}  // namespace

ShardedEngine::ShardedEngine(const EngineOptions& options)
    : Engine(options, ShardCount(options), ShardCount(options)),
      reply_(options.queue_limit,
             [this](PublishJob* job, size_t event, StageProfile* profile) {
               FinishEvent(job, event, profile);
             },
             &admission_) {
  for (uint32_t p = 0; p < options.partitions; ++p) {
    partitions_list_.push_back(std::make_unique<ShardPartition>(
        p, options, &directory_, &listeners_,
        [this](PublishJob* job, uint32_t event) { reply_.Push(job, event); }));
  }
  reply_.Start();
  for (auto& partition : partitions_list_) partition->Start();
}

ShardedEngine::~ShardedEngine() { Shutdown(); }

void ShardedEngine::Dispatch(PublishJob* job) {
  const int64_t now = MonotonicNanos();
  if (options_.index_layout == IndexLayout::kShardedPhase1) {
    for (auto& partition : partitions_list_) {
      partition->queue().PushEvents(job, now);
    }
    return;
  }
  // Replicated: event k overall goes to partition k % P.
  const uint32_t p_count = static_cast<uint32_t>(partitions_list_.size());
  const uint32_t n = static_cast<uint32_t>(job->events.size());
  const uint64_t base = next_event_.fetch_add(n, std::memory_order_relaxed);
  std::vector<uint32_t> mine;
  mine.reserve(n / p_count + 1);
  for (uint32_t p = 0; p < p_count; ++p) {
    const uint32_t first = static_cast<uint32_t>(
        (p_count - (base % p_count) + p) % p_count);  // (base + first) % P == p
    mine.clear();
    for (uint32_t i = first; i < n; i += p_count) mine.push_back(i);
    partitions_list_[p]->queue().PushEvents(job, mine, now);
  }
}

void ShardedEngine::Route(UpdateJob* job) {
  // Collect the batches first: once the last one is queued, the job may be
  // applied and deleted by a partition thread at any moment.
  std::vector<std::pair<uint32_t, UpdateBatch*>> involved;
  for (uint32_t p = 0; p < job->batches.size(); ++p) {
    UpdateBatch& batch = job->batches[p];
    if (batch.adds.empty() && batch.removes.empty()) continue;
    batch.done = [this, job](absl::Status status) { OnApplied(job, status); };
    involved.emplace_back(p, &batch);
  }
  job->pending.store(static_cast<uint32_t>(involved.size()),
                     std::memory_order_relaxed);
  const int64_t now = MonotonicNanos();
  for (const auto& [p, batch] : involved) {
    partitions_list_[p]->queue().PushUpdate(batch, now);
  }
}

void ShardedEngine::OnApplied(UpdateJob* job, const absl::Status& status) {
  if (!status.ok()) {
    std::lock_guard<std::mutex> lock(job->mu);
    if (job->status.ok()) job->status = status;
  }
  if (job->pending.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  absl::Status final_status;
  {
    std::lock_guard<std::mutex> lock(job->mu);
    final_status = job->status;
  }
  if (job->subscribed) {
    if (final_status.ok()) {
      job->subscribed(std::move(job->ids));
    } else {
      // Validated input cannot fail to apply; if it does anyway, the ids are
      // not reported, so they must not stay live.
      for (uint64_t id : job->ids) directory_.Forget(id);
      job->subscribed(absl::InternalError(final_status.ToString()));
    }
  } else {
    job->unsubscribed(final_status);
  }
  delete job;
}

void ShardedEngine::QueueAdds(UpdateJob* job) {
  job->batches.resize(partitions_list_.size());
  const bool replicated = options_.index_layout == IndexLayout::kReplicated;
  for (size_t i = 0; i < job->inputs.size(); ++i) {
    const Placement place = directory_.Place(job->ids[i]);
    const UpdateBatch::Add add{place.local_id, &job->inputs[i]};
    if (replicated) {
      for (UpdateBatch& batch : job->batches) batch.adds.push_back(add);
    } else {
      job->batches[place.partition].adds.push_back(add);
    }
  }
}

void ShardedEngine::QueueRemoves(UpdateJob* job) {
  job->batches.resize(partitions_list_.size());
  const bool replicated = options_.index_layout == IndexLayout::kReplicated;
  for (uint64_t id : job->ids) {
    const Placement place = directory_.Place(id);
    if (replicated) {
      for (UpdateBatch& batch : job->batches) {
        batch.removes.push_back(place.local_id);
      }
    } else {
      job->batches[place.partition].removes.push_back(place.local_id);
    }
  }
}

void ShardedEngine::Subscribe(std::vector<SubscriptionInput> subscriptions,
                             SubscribeCallback done) {
  if (subscriptions.empty()) {
    done(std::vector<uint64_t>());
    return;
  }
  std::shared_lock<std::shared_mutex> gate(gate_);
  if (closing_) {
    done(ShuttingDownError());
    return;
  }
  std::unique_lock<std::mutex> order;
  absl::StatusOr<uint64_t> first = AssignIds(subscriptions.size(), &order);
  if (!first.ok()) {
    done(first.status());
    return;
  }
  auto job = std::make_unique<UpdateJob>();
  job->inputs = std::move(subscriptions);
  job->subscribed = std::move(done);
  for (size_t i = 0; i < job->inputs.size(); ++i) job->ids.push_back(*first + i);
  QueueAdds(job.get());
  UpdateJob* raw = job.release();
  JournalSubscribe(*first, raw->inputs, [this, raw](absl::Status s) {
    if (s.ok()) {
      Route(raw);
      return;
    }
    raw->subscribed(s);
    delete raw;
  });
}

void ShardedEngine::Unsubscribe(std::vector<uint64_t> ids, StatusCallback done) {
  if (ids.empty()) {
    done(absl::OkStatus());
    return;
  }
  std::shared_lock<std::shared_mutex> gate(gate_);
  if (closing_) {
    done(ShuttingDownError());
    return;
  }
  std::unique_lock<std::mutex> order;
  if (absl::Status status = KillIds(ids, &order); !status.ok()) {
    done(status);
    return;
  }
  auto job = std::make_unique<UpdateJob>();
  job->unsubscribed = std::move(done);
  job->ids = std::move(ids);
  QueueRemoves(job.get());
  UpdateJob* raw = job.release();
  JournalUnsubscribe(raw->ids, [this, raw](absl::Status s) {
    if (s.ok()) {
      Route(raw);
      return;
    }
    raw->unsubscribed(s);
    delete raw;
  });
}

absl::Status ShardedEngine::Restore(const StoreState& state) {
  auto job = std::make_unique<UpdateJob>();
  job->ids.reserve(state.live.size());
  job->inputs.reserve(state.live.size());
  for (const auto& [id, input] : state.live) {
    job->ids.push_back(id);
    job->inputs.push_back(input);
  }
  if (absl::Status s = directory_.Restore(state.next_id, job->ids); !s.ok()) {
    return s;
  }
  if (job->ids.empty()) return absl::OkStatus();
  std::promise<absl::Status> applied;
  job->subscribed = [&applied](absl::StatusOr<std::vector<uint64_t>> ids) {
    applied.set_value(ids.status());
  };
  QueueAdds(job.get());
  Route(job.release());
  return applied.get_future().get();
}

void ShardedEngine::Flush() {
  for (auto& partition : partitions_list_) partition->queue().Flush();
}

void ShardedEngine::StopStages() {
  if (stopped_) return;
  stopped_ = true;
  // Partitions drain their queues first; every event they finish reaches the
  // reply queue before the reply stage is told to stop.
  for (auto& partition : partitions_list_) partition->Stop();
  reply_.Stop();
}

void ShardedEngine::AddStageStats(
    v1::Stats* stats, std::vector<const StageProfile*>* profiles) const {
  stats->set_mode("staged");
  stats->set_index_layout(std::string(IndexLayoutName(options_.index_layout)));
  stats->set_partitions(static_cast<uint32_t>(partitions_list_.size()));
  for (const auto& partition : partitions_list_) {
    profiles->push_back(&partition->profile());
  }
  profiles->push_back(&reply_.profile());
}

}  // namespace service
}  // namespace cohort
