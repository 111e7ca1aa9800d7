#include "service/stages/shard_partition.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "service/stages/placement.h"

namespace cohort {
namespace service {
void ShardQueue::PushEvents(PublishJob* job, int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  const bool was_empty = items_.empty();
  for (uint32_t i = 0; i < job->events.size(); ++i) {
    items_.push_back(ShardItem{job, i, nullptr, now_ns});
  }
  WakeIfReady(was_empty);
}

void ShardQueue::PushUpdate(UpdateBatch* update, int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  items_.push_back(ShardItem{nullptr, 0, update, now_ns});
  ++updates_;
  WakeIfReady(/*was_empty=*/items_.size() == 1);
}

void ShardQueue::Flush() {
  std::lock_guard<std::mutex> lock(mu_);
  flushing_ = true;
  cv_.notify_one();
}

void ShardQueue::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  flushing_ = true;
  cv_.notify_one();
}

void ShardQueue::WakeIfReady(bool was_empty) {
  // A sleeping consumer either waits for a first item (no deadline) or for
  // the oldest item's deadline; it needs waking only when the queue was
  // empty, a cohort is full, or a change arrived (which ends the cohort).
  if (!sleeping_) return;
  if (was_empty || updates_ > 0 || activation_.Full(items_.size())) {
    cv_.notify_one();
  }
}

bool ShardQueue::Pop(std::vector<ShardItem>* out,
                         size_t* queue_length) {
  out->clear();
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (items_.empty()) {
      if (closed_) return false;
      sleeping_ = true;
      cv_.wait(lock);
      sleeping_ = false;
      continue;
    }
    *queue_length = items_.size();
    if (!items_.front().is_event()) {
      out->push_back(items_.front());
      items_.pop_front();
      --updates_;
      return true;
    }
    const size_t ready = LeadingEvents(
        items_, updates_, [](const ShardItem& item) { return !item.is_event(); });
    int64_t deadline = 0;
    if (const size_t take = activation_.Take(ready, items_.size(),
                                             items_.front().enqueue_ns,
                                             flushing_, &deadline);
        take > 0) {
      out->assign(items_.begin(), items_.begin() + take);
      items_.erase(items_.begin(), items_.begin() + take);
      return true;
    }
    sleeping_ = true;
    cv_.wait_until(lock, std::chrono::steady_clock::time_point(
                             std::chrono::nanoseconds(deadline)));
    sleeping_ = false;
  }
}

ShardPartition::ShardPartition(uint32_t index, const EngineOptions& options,
                     const SubscriptionDirectory* directory,
                     const ListenerRegistry* listeners, ReadyFn ready)
    : index_(index),
      shard_id_(index),
      options_(options),
      directory_(directory),
      listeners_(listeners),
      ready_(std::move(ready)),
      queue_(options.cohort_max, options.cohort_wait_us * 1000),
      profile_(absl::StrCat("partition/", index), "partition", index,
               options.queue_limit) {}

ShardPartition::~ShardPartition() { Stop(); }

void ShardPartition::Start() {
  std::promise<void> placed;
  std::future<void> done = placed.get_future();
  thread_ = std::thread([this, &placed] {
    PlacePartitionThread(index_, options_, &profile_);
    placed.set_value();
    Run();
  });
  done.wait();
}

void ShardPartition::Stop() {
  queue_.Close();
  if (thread_.joinable()) thread_.join();
}

void ShardPartition::Run() {
  std::vector<ShardItem> batch;
  size_t queue_length = 0;
  while (queue_.Pop(&batch, &queue_length)) {
    const int64_t start = MonotonicNanos();
    if (batch.front().is_event()) {
      RunCohort(batch, start, queue_length);
    } else {
      // A change is counted in `updates`, not as a batch: batches, their
      // sizes and service times describe cohorts only (pubsub.proto).
      profile_.RecordWait(start - batch.front().enqueue_ns);
      ApplyUpdate(batch.front().update);
    }
  }
}

void ShardPartition::RunCohort(const std::vector<ShardItem>& cohort,
                          int64_t start_ns, size_t queue_length) {
  waits_.clear();
  views_.clear();
  live_.clear();
  for (size_t k = 0; k < cohort.size(); ++k) {
    const ShardItem& item = cohort[k];
    waits_.push_back(start_ns - item.enqueue_ns);
    // One clock reading for the whole cohort: an event that expires while
    // the cohort runs is still matched.
    if (item.job->Expired(start_ns)) {
      item.job->state[item.event].skipped.store(true,
                                                std::memory_order_relaxed);
      continue;
    }
    live_.push_back(k);
    views_.push_back(item.job->events[item.event]);
  }
  const uint64_t matches_before = shard_.counters().matches;
  if (!views_.empty()) {
    shard_.MatchCohort(views_, &matches_);
    outs_.clear();
    for (size_t k : live_) {
      const ShardItem& item = cohort[k];
      outs_.push_back({&item.job->state[item.event].partials[shard_id_],
                       item.job->WantIds()});
    }
    FillPartials(*directory_, *listeners_, shard_id_, subscriber_of_,
                 matches_, outs_, &partials_);
  }
  const uint64_t matched = shard_.counters().matches - matches_before;
  // Everything is recorded before the events are handed on, so a GetStats
  // that follows a reply includes this cohort.
  profile_.AddEvents(live_.size());
  profile_.AddExpired(cohort.size() - live_.size());
  profile_.AddMatches(matched);
  profile_.RecordWaits(waits_);
  profile_.RecordBatch(queue_length, cohort.size(),
                       MonotonicNanos() - start_ns);
  for (const ShardItem& item : cohort) {
    if (item.job->state[item.event].pending.fetch_sub(
            1, std::memory_order_acq_rel) == 1) {
      ready_(item.job, item.event);
    }
  }
}

void ShardPartition::ApplyUpdate(UpdateBatch* update) {
  absl::Status status;
  std::vector<matcher::Index::NewSubscription> batch;
  batch.reserve(update->adds.size());
  for (const UpdateBatch::Add& add : update->adds) {
    batch.push_back({add.local_id, add.predicates});
  }
  const std::vector<absl::Status> added = shard_.AddBatch(batch);
  for (size_t i = 0; i < update->adds.size(); ++i) {
    const UpdateBatch::Add& add = update->adds[i];
    const absl::Status& s = added[i];
    if (!s.ok()) {
      if (status.ok()) status = s;
      continue;
    }
    if (SubscriptionDirectory::IsBranch(add.local_id)) continue;
    if (subscriber_of_.size() <= add.local_id) {
      subscriber_of_.resize(add.local_id + 1);
    }
    subscriber_of_[add.local_id] = add.subscriber;
  }
  for (uint32_t local_id : update->removes) {
    absl::Status s = shard_.Remove(local_id);
    if (!s.ok() && status.ok()) status = s;
  }
  profile_.AddUpdates(update->adds.size() + update->removes.size());
  update->done(status);  // may delete update
}

}  // namespace service
}  // namespace cohort
