#include "service/stages/sharded_engine.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace cohort {
namespace service {

ShardedEngine::ShardedEngine(const EngineOptions& options)
    : Engine(options, /*id_shards=*/options.partitions,
             /*partials=*/options.partitions),
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
  for (auto& partition : partitions_list_) {
    partition->queue().PushEvents(job, now);
  }
}

void ShardedEngine::RouteChange(Change* change) {
  // A batch per partition: each subscription to the partition that owns
  // its shard.
  change->batches.resize(partitions_list_.size());
  for (size_t i = 0; i < change->ids.size(); ++i) {
    const Placement place = directory_.Place(change->ids[i]);
    UpdateBatch& batch = change->batches[place.partition];
    if (change->adds()) {
      AddRows(*change, i, place.local_id, &batch.adds);
    } else {
      RemoveRows(*change, i, place.local_id, &batch.removes);
    }
  }
  const int64_t now = MonotonicNanos();
  QueueBatches(change, [this, now](uint32_t p, UpdateBatch* batch) {
    partitions_list_[p]->queue().PushUpdate(batch, now);
  });
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
