// The reply stage of the staged engines (docs/DESIGN.md section 4): one thread
// that takes events whose partial results are all written, merges them into
// the request's EventResult, delivers them to listeners, completes the
// request once its last event is merged, and gives the events back to
// admission.
//
// The partition threads hand events over with Push; the thread takes
// whatever has queued as one batch (a cohort of replies: one lock, one wake
// per batch).
//
// Thread safety: Push and FinishNow may be called from any thread, at once;
// Start and Stop from one thread (the engine's constructor and Shutdown).
// The queue is multi-producer, single-consumer, and bounded by admission:
// every queued event is an admitted one. `finish` runs on the reply thread,
// or on FinishNow's caller, for different events at once.
#ifndef COHORT_SERVICE_STAGES_REPLY_STAGE_H_
#define COHORT_SERVICE_STAGES_REPLY_STAGE_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "service/observability/stage_profile.h"
#include "service/stages/admission.h"
#include "service/stages/publish_job.h"

namespace cohort {
namespace service {

class ReplyStage {
 public:
  // Merges, delivers and completes event `event` of `job`, recording into
  // `profile` (Engine::FinishEvent).
  using FinishFn =
      std::function<void(PublishJob* job, size_t event, StageProfile*)>;

  // `admission` (not owned) gets each event's room back just before its
  // answer goes out.
  ReplyStage(uint64_t queue_limit, FinishFn finish, Admission* admission);
  ~ReplyStage();
  ReplyStage(const ReplyStage&) = delete;
  ReplyStage& operator=(const ReplyStage&) = delete;

  void Start();
  // Hands over an event whose partials are all written.
  void Push(PublishJob* job, uint32_t event);
  // Finishes an event whose partials are all written on the calling thread,
  // as the reply thread would (for the cohorts whose reply costs less than
  // a hand-off; CohortPipeline::Work::finish_now).
  void FinishNow(PublishJob* job, uint32_t event);
  // Finishes every event pushed so far, then joins the thread. REQUIRES:
  // nothing pushes any more. Idempotent.
  void Stop();

  const StageProfile& profile() const { return profile_; }

 private:
  struct ReadyEvent {
    PublishJob* job;
    uint32_t event;
    int64_t ready_ns;
  };

  void Run();

  const FinishFn finish_;
  Admission* const admission_;
  StageProfile profile_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<ReadyEvent> queue_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STAGES_REPLY_STAGE_H_
