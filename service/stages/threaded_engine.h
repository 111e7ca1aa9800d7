// The threaded baseline (--mode=threaded): the paper's thread-per-request
// server (THPS), kept to measure what staging and cohorts buy.
//
// A pool of `threads` workers takes whole Publish requests from one queue;
// a worker matches each event of its request, one at a time, against one
// shared, unpartitioned index under a readers/writer lock (many workers read
// at once with Index::MatchEvent and their own scratch; Subscribe and
// Unsubscribe take the lock exclusively and apply the change on the calling
// thread before answering: Engine::RouteChange), then merges, delivers and answers the request
// itself. There are no cohorts and no partitions.
//
// Thread safety: see engine.h. index_ and subscriber_of_ are read under a
// shared lock of index_mu_ and written under an exclusive one.
#ifndef COHORT_SERVICE_STAGES_THREADED_ENGINE_H_
#define COHORT_SERVICE_STAGES_THREADED_ENGINE_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "matcher/index.h"
#include "service/stages/engine.h"
#include "service/stages/partials.h"

namespace cohort {
namespace service {

class ThreadedEngine : public Engine {
 public:
  explicit ThreadedEngine(const EngineOptions& options);
  ~ThreadedEngine() override;

 protected:
  // Applies the change on the calling thread under the writer lock.
  void RouteChange(Change* change) override;
  void Dispatch(PublishJob* job) override;
  void StopStages() override;
  void AddStageStats(
      v1::Stats* stats,
      std::vector<const StageProfile*>* profiles) const override;

 private:
  struct QueuedJob {
    PublishJob* job;
    int64_t enqueue_ns;
  };

  void RunWorker();
  // Adds the rows of change.inputs[i] under change.ids[i] to the index,
  // or removes those of change.ids (under the writer lock); the first
  // error, if any.
  absl::Status Apply(const Change& change);
  absl::Status Remove(const Change& change);
  void Match(PublishJob* job, matcher::MatchScratch* scratch,
             std::vector<matcher::SubscriptionId>* local);

  StageProfile workers_profile_;
  std::vector<std::thread> workers_;
  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<QueuedJob> queue_ ABSL_GUARDED_BY(queue_mu_);
  bool queue_closed_ ABSL_GUARDED_BY(queue_mu_) = false;
  bool stopped_ = false;  // only touched by the thread calling Shutdown

  mutable std::shared_mutex index_mu_;
  matcher::Index index_ ABSL_GUARDED_BY(index_mu_);
  std::vector<uint32_t> subscriber_of_ ABSL_GUARDED_BY(index_mu_);
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STAGES_THREADED_ENGINE_H_
