#include "service/stages/threaded_engine.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace cohort {
namespace service {

ThreadedEngine::ThreadedEngine(const EngineOptions& options)
    : Engine(options, /*id_shards=*/1, /*partials=*/1),
      workers_profile_("worker", "worker", std::nullopt, options.queue_limit) {
  for (uint32_t i = 0; i < options.threads; ++i) {
    workers_.emplace_back([this] { RunWorker(); });
  }
}

ThreadedEngine::~ThreadedEngine() { Shutdown(); }

void ThreadedEngine::Dispatch(PublishJob* job) {
  std::lock_guard<std::mutex> lock(queue_mu_);
  queue_.push_back(QueuedJob{job, MonotonicNanos()});
  queue_cv_.notify_one();
}

void ThreadedEngine::RunWorker() {
  matcher::MatchScratch scratch;
  std::vector<matcher::SubscriptionId> local;
  for (;;) {
    QueuedJob queued;
    size_t queue_length;
    {
      std::unique_lock<std::mutex> lock(queue_mu_);
      queue_cv_.wait(lock, [this] { return !queue_.empty() || queue_closed_; });
      if (queue_.empty()) return;  // closed and drained
      queue_length = queue_.size();
      queued = queue_.front();
      queue_.pop_front();
    }
    const int64_t start = MonotonicNanos();
    workers_profile_.RecordWait(start - queued.enqueue_ns);
    const size_t n = queued.job->events.size();
    if (queued.job->Expired(start)) {
      for (size_t i = 0; i < n; ++i) {
        queued.job->state[i].skipped.store(true, std::memory_order_relaxed);
      }
      workers_profile_.AddExpired(n);
    } else {
      Match(queued.job, &scratch, &local);
    }
    const int64_t admitted = queued.job->admitted_ns;
    for (size_t i = 0; i < n; ++i) {
      // The event's room is returned before its answer goes out, as the
      // reply stage does (ReplyStage::Run).
      const int64_t now = MonotonicNanos();
      admission_.Release(1, now, now - admitted);
      FinishEvent(queued.job, i, &workers_profile_);  // may free job
    }
    workers_profile_.RecordBatch(queue_length, n, MonotonicNanos() - start);
  }
}

void ThreadedEngine::Match(PublishJob* job, matcher::MatchScratch* scratch,
                           std::vector<matcher::SubscriptionId>* local) {
  const bool return_ids = job->WantIds();
  std::shared_lock<std::shared_mutex> lock(index_mu_);
  for (size_t i = 0; i < job->events.size(); ++i) {
    index_.MatchEvent(job->events[i], scratch, local);
    FillPartial(directory_, listeners_, /*partition=*/0, return_ids,
                subscriber_of_, local, &job->state[i].partials[0]);
  }
}

absl::Status ThreadedEngine::Apply(const Change& change) {
  absl::Status status;
  std::vector<UpdateBatch::Add> rows;
  for (size_t i = 0; i < change.ids.size(); ++i) {
    AddRows(change, i, directory_.Place(change.ids[i]).local_id, &rows);
  }
  std::unique_lock<std::shared_mutex> lock(index_mu_);
  // One AddBatch (the bulk path: the index's upkeep once, at its end).
  std::vector<matcher::Index::NewSubscription> batch(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    batch[i] = {rows[i].local_id, rows[i].predicates};
  }
  const std::vector<absl::Status> added = index_.AddBatch(batch);
  for (size_t i = 0; i < rows.size(); ++i) {
    const uint32_t local_id = rows[i].local_id;
    if (!added[i].ok()) {
      // Validated input cannot fail here; if it does, the change is
      // answered with the error and its ids forgotten (ChangeApplied).
      if (status.ok()) status = added[i];
      continue;
    }
    if (SubscriptionDirectory::IsBranch(local_id)) continue;
    if (subscriber_of_.size() <= local_id) subscriber_of_.resize(local_id + 1);
    subscriber_of_[local_id] = rows[i].subscriber;
  }
  workers_profile_.AddUpdates(change.ids.size());
  return status;
}

absl::Status ThreadedEngine::Remove(const Change& change) {
  absl::Status status;
  std::vector<uint32_t> rows;
  for (size_t i = 0; i < change.ids.size(); ++i) {
    RemoveRows(change, i, directory_.Place(change.ids[i]).local_id, &rows);
  }
  std::unique_lock<std::shared_mutex> lock(index_mu_);
  for (uint32_t row : rows) {
    absl::Status s = index_.Remove(row);
    if (!s.ok() && status.ok()) status = absl::InternalError(s.ToString());
  }
  workers_profile_.AddUpdates(change.ids.size());
  return status;
}

void ThreadedEngine::RouteChange(Change* change) {
  ChangeApplied(change, change->adds() ? Apply(*change) : Remove(*change));
}

void ThreadedEngine::StopStages() {
  if (stopped_) return;
  stopped_ = true;
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    queue_closed_ = true;
    queue_cv_.notify_all();
  }
  for (std::thread& worker : workers_) worker.join();
}

void ThreadedEngine::AddStageStats(
    v1::Stats* stats, std::vector<const StageProfile*>* profiles) const {
  stats->set_mode("threaded");
  stats->set_partitions(0);
  profiles->push_back(&workers_profile_);
}

}  // namespace service
}  // namespace cohort
