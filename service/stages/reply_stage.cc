#include "service/stages/reply_stage.h"

#include <algorithm>
#include <optional>
#include <utility>

namespace cohort {
namespace service {

ReplyStage::ReplyStage(uint64_t queue_limit, FinishFn finish,
                       Admission* admission)
    : finish_(std::move(finish)),
      admission_(admission),
      profile_("reply", "reply", std::nullopt, queue_limit) {}

ReplyStage::~ReplyStage() { Stop(); }

void ReplyStage::Start() {
  thread_ = std::thread([this] { Run(); });
}

void ReplyStage::Push(PublishJob* job, uint32_t event) {
  std::lock_guard<std::mutex> lock(mu_);
  queue_.push_back(ReadyEvent{job, event, MonotonicNanos()});
  if (queue_.size() == 1) cv_.notify_one();
}

void ReplyStage::FinishNow(PublishJob* job, uint32_t event) {
  const int64_t start = MonotonicNanos();
  const int64_t admitted = job->admitted_ns;  // before finish frees the job
  profile_.RecordWait(0);
  finish_(job, event, &profile_);
  const int64_t end = MonotonicNanos();
  profile_.RecordBatch(1, 1, end - start);
  admission_->Release(1, end, end - admitted);
}

void ReplyStage::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    cv_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

void ReplyStage::Run() {
  std::vector<ReadyEvent> batch;
  std::vector<int64_t> waits;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return !queue_.empty() || closed_; });
      if (queue_.empty()) return;  // closed and drained
      batch.swap(queue_);
    }
    const int64_t start = MonotonicNanos();
    waits.clear();
    int64_t newest_admitted = 0;
    for (const ReadyEvent& ready : batch) {
      waits.push_back(start - ready.ready_ns);
      // Read before finishing, which may free the job.
      newest_admitted = std::max(newest_admitted, ready.job->admitted_ns);
      finish_(ready.job, ready.event, &profile_);
    }
    profile_.RecordWaits(waits);
    const int64_t end = MonotonicNanos();
    profile_.RecordBatch(batch.size(), batch.size(), end - start);
    const size_t n = batch.size();
    batch.clear();
    // Returning the events last lets waiting streams in only once these
    // events' memory is no longer needed.
    admission_->Release(n, end, end - newest_admitted);
  }
}

}  // namespace service
}  // namespace cohort
