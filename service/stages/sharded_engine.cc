#include "service/stages/sharded_engine.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace cohort {
namespace service {

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

void ShardedEngine::RouteChange(Change* change) {
  // A batch per partition: each subscription to the partition that owns
  // its shard, or to every replica.
  const bool replicated = options_.index_layout == IndexLayout::kReplicated;
  change->batches.resize(partitions_list_.size());
  const uint32_t p_count = static_cast<uint32_t>(change->batches.size());
  for (size_t i = 0; i < change->ids.size(); ++i) {
    const Placement place = directory_.Place(change->ids[i]);
    const uint32_t first = replicated ? 0 : place.partition;
    const uint32_t end = replicated ? p_count : place.partition + 1;
    for (uint32_t p = first; p < end; ++p) {
      UpdateBatch& batch = change->batches[p];
      if (change->adds()) {
        batch.adds.push_back({place.local_id, &change->inputs[i]});
      } else {
        batch.removes.push_back(place.local_id);
      }
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
