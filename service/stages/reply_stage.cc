#include "service/stages/reply_stage.h"

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
  profile_.RecordWait(0);
  // The event's room is returned before its answer goes out, so that a
  // client that has its answer finds the room (see Run).
  admission_->Release(1, start, start - job->admitted_ns);
  finish_(job, event, &profile_);
  profile_.RecordBatch(1, 1, MonotonicNanos() - start);
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
    for (const ReadyEvent& ready : batch) {
      waits.push_back(start - ready.ready_ns);
      // Each event's room is returned just before its answer goes out: a
      // client that has its answer (a closed-loop publisher) must find the
      // room when it publishes again. Returned after the whole batch, a
      // full server refused that next publish until the batch was done
      // (ServerOverload.ExcessPublishesAreRejectedAndTheServerRecovers
      // failed so under ASan). Admission then runs at most one event
      // ahead of the memory it bounds.
      const int64_t now = MonotonicNanos();
      admission_->Release(1, now, now - ready.job->admitted_ns);
      finish_(ready.job, ready.event, &profile_);  // may free the job
    }
    profile_.RecordWaits(waits);
    profile_.RecordBatch(batch.size(), batch.size(), MonotonicNanos() - start);
    batch.clear();
  }
}

}  // namespace service
}  // namespace cohort
