#include "service/stages/engine.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "matcher/types.h"
#include "service/stages/cohort_pipeline.h"
#include "service/stages/partitioned_engine.h"
#include "service/stages/sharded_engine.h"
#include "service/stages/threaded_engine.h"

namespace cohort {
namespace service {

namespace {

// Why an expired job ended, once `skipped` of its events were not matched.
absl::Status ExpiredStatus(const PublishJob& job, size_t skipped) {
  const std::string what =
      absl::StrCat(skipped, " of ", job.events.size(),
                   " events were skipped unmatched and not delivered");
  if (job.cancelled != nullptr &&
      job.cancelled->load(std::memory_order_relaxed)) {
    return absl::CancelledError(
        absl::StrCat("the caller cancelled the request; ", what));
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "the request's deadline passed before it was matched; ", what));
}

}  // namespace

absl::StatusOr<IndexLayout> ParseIndexLayout(absl::string_view name) {
  for (IndexLayout layout :
       {IndexLayout::kPartitioned, IndexLayout::kShardedPhase1,
        IndexLayout::kReplicated}) {
    if (name == IndexLayoutName(layout)) return layout;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--index: unknown layout \"", name,
                   "\"; use partitioned, sharded_phase1 or replicated"));
}

absl::string_view IndexLayoutName(IndexLayout layout) {
  switch (layout) {
    case IndexLayout::kPartitioned:
      return "partitioned";
    case IndexLayout::kShardedPhase1:
      return "sharded_phase1";
    case IndexLayout::kReplicated:
      return "replicated";
  }
  return "?";
}

Engine::Engine(const EngineOptions& options, uint32_t id_shards,
               uint32_t partials)
    : options_(options),
      partials_(partials),
      directory_(id_shards, matcher::kMaxSubscriptionId),
      listeners_(options.max_subscribers),
      admission_(options.queue_limit, options.latency_target_us * 1000),
      front_("front", "front", std::nullopt, 0),
      start_ns_(MonotonicNanos()) {}

Engine::~Engine() = default;

void Engine::Prepare(PublishJob* job) {
  const size_t n = job->events.size();
  job->state.reset(new PublishJob::EventState[n]);
  for (size_t i = 0; i < n; ++i) {
    job->state[i].pending.store(partials_, std::memory_order_relaxed);
    job->state[i].partials.resize(partials_);
  }
  job->events_left.store(n, std::memory_order_relaxed);
  job->events_skipped.store(0, std::memory_order_relaxed);
  auto* results = job->response->mutable_results();
  results->Clear();
  results->Reserve(static_cast<int>(n));
  for (size_t i = 0; i < n; ++i) results->Add();
}

void Engine::Admit(PublishJob* job, int64_t start_ns) {
  const uint64_t n = job->events.size();
  if (n == 0) {
    job->response->clear_results();
    job->done(absl::OkStatus());
    return;
  }
  Prepare(job);
  job->admitted_ns = start_ns;
  events_published_.fetch_add(n, std::memory_order_relaxed);
  front_.AddEvents(n);
  Dispatch(job);
  front_.RecordBatch(0, n, MonotonicNanos() - start_ns);
}

absl::Status Engine::Publish(PublishJob* job) {
  const int64_t start = MonotonicNanos();
  std::shared_lock<std::shared_mutex> gate(gate_);
  if (closing_) return ShuttingDownError();
  if (job->Expired(start)) {
    front_.AddExpired(job->events.size());
    return ExpiredStatus(*job, job->events.size());
  }
  absl::Status status = admission_.TryAcquire(job->events.size());
  if (!status.ok()) {
    if (absl::IsResourceExhausted(status)) front_.AddRejections(1);
    return status;
  }
  Admit(job, start);
  return absl::OkStatus();
}

absl::Status Engine::CheckRoom(uint64_t n) {
  absl::Status status = admission_.CheckRoom(n);
  if (absl::IsResourceExhausted(status)) front_.AddRejections(1);
  return status;
}

void Engine::PublishWhenAdmitted(PublishJob* job,
                                 StatusCallback on_admission) {
  const uint64_t n = job->events.size();
  admission_.AcquireOrWait(
      n, [this, job, n, on_admission = std::move(on_admission)](
             absl::Status status) {
        if (!status.ok()) {
          on_admission(status);
          return;
        }
        const int64_t start = MonotonicNanos();
        std::shared_lock<std::shared_mutex> gate(gate_);
        if (closing_) {
          admission_.Release(n);
          on_admission(ShuttingDownError());
          return;
        }
        if (job->Expired(start)) {  // it waited for room too long
          admission_.Release(n);
          front_.AddExpired(n);
          on_admission(ExpiredStatus(*job, n));
          return;
        }
        on_admission(absl::OkStatus());
        Admit(job, start);
      });
}

void Engine::Shutdown() {
  if (shut_down_.exchange(true)) return;
  {
    std::unique_lock<std::shared_mutex> gate(gate_);
    closing_ = true;
  }
  admission_.Shutdown();
  listeners_.CloseAll(ShuttingDownError());
  // The journal's last callbacks queue changes into the stages, so it is
  // drained (and folded into a snapshot) before they stop.
  if (options_.durability != nullptr) {
    durability_status_ = options_.durability->Close();
  }
  StopStages();
}


int64_t DeadlineNanos(std::chrono::system_clock::time_point deadline) {
  // Beyond this the deadline is as good as none (and would overflow).
  constexpr auto kForever = std::chrono::hours(24 * 365);
  const auto left = deadline - std::chrono::system_clock::now();
  if (left > kForever) return std::numeric_limits<int64_t>::max();
  return MonotonicNanos() +
         std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
}

void Engine::FinishEvent(PublishJob* job, size_t i,
                             StageProfile* profile) {
  PublishJob::EventState& state = job->state[i];
  if (state.skipped.load(std::memory_order_relaxed)) {
    // Some partition did not match it: a partial count would be wrong, and
    // nobody waits for the answer any more.
    job->events_skipped.fetch_add(1, std::memory_order_relaxed);
  } else {
    MergeAndDeliver(job, i, profile);
  }
  state.partials.clear();
  state.partials.shrink_to_fit();
  profile->AddEvents(1);
  if (job->events_left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    // The acq_rel chain on events_left makes every event's events_skipped
    // increment visible here.
    const size_t skipped = job->events_skipped.load(std::memory_order_relaxed);
    publish_durations_.Record(MonotonicNanos() - job->admitted_ns);
    job->done(skipped == 0 ? absl::OkStatus()
                           : ExpiredStatus(*job, skipped));  // may delete job
  }
}

void Engine::MergeAndDeliver(PublishJob* job, size_t i,
                             StageProfile* profile) {
  PublishJob::EventState& state = job->state[i];
  v1::EventResult* result = job->response->mutable_results(static_cast<int>(i));
  uint64_t count = 0;
  std::vector<std::pair<uint32_t, uint64_t>> deliveries;
  for (PublishJob::Partial& partial : state.partials) {
    count += partial.count;
    deliveries.insert(deliveries.end(), partial.deliveries.begin(),
                      partial.deliveries.end());
  }
  result->set_match_count(count);
  if (job->request->return_ids()) {
    // Each partial is ascending; merge them pairwise (P is small).
    std::vector<uint64_t> ids;
    ids.reserve(count);
    for (PublishJob::Partial& partial : state.partials) {
      const size_t middle = ids.size();
      ids.insert(ids.end(), partial.ids.begin(), partial.ids.end());
      std::inplace_merge(ids.begin(), ids.begin() + middle, ids.end());
    }
    result->mutable_subscription_ids()->Add(ids.begin(), ids.end());
  }
  if (!deliveries.empty()) {
    std::sort(deliveries.begin(), deliveries.end());
    auto event =
        std::make_shared<const v1::Event>(job->request->events(static_cast<int>(i)));
    uint64_t queued = 0;
    uint64_t dropped = 0;
    uint64_t disconnected = 0;
    for (size_t b = 0; b < deliveries.size();) {
      size_t e = b;
      std::vector<uint64_t> ids;
      while (e < deliveries.size() && deliveries[e].first == deliveries[b].first) {
        ids.push_back(deliveries[e++].second);
      }
      listeners_.Deliver(deliveries[b].first, event, std::move(ids), &queued,
                         &dropped, &disconnected);
      b = e;
    }
    profile->AddDeliveries(queued);
    profile->AddDroppedDeliveries(dropped);
    profile->AddDisconnectedListeners(disconnected);
  }
  // Counted before the reply goes out, so a GetStats that follows the reply
  // includes this event.
  profile->AddMatches(count);
}

void FillPartial(const SubscriptionDirectory& directory,
                 const ListenerRegistry& listeners, uint32_t partition,
                 bool return_ids, const std::vector<uint32_t>& subscriber_of,
                 std::vector<matcher::SubscriptionId>* local,
                 PublishJob::Partial* partial) {
  partial->count = local->size();
  if (return_ids) {
    // Local ids ascending give global ids ascending within a partition.
    std::sort(local->begin(), local->end());
    partial->ids.reserve(local->size());
    for (matcher::SubscriptionId id : *local) {
      partial->ids.push_back(directory.GlobalId(partition, id));
    }
  }
  // With nobody listening at all, a match's subscriber is not worth the
  // cache miss of looking it up (thousands per event on fabret-1m). A
  // listener that registers meanwhile gets deliveries from the next event
  // on, as with the per-match test.
  if (listeners.size() == 0) return;
  for (matcher::SubscriptionId id : *local) {
    const uint32_t subscriber = subscriber_of[id];
    if (listeners.HasListeners(subscriber)) {
      partial->deliveries.emplace_back(subscriber,
                                       directory.GlobalId(partition, id));
    }
  }
}

void FillPartials(const SubscriptionDirectory& directory,
                  const ListenerRegistry& listeners, uint32_t partition,
                  const std::vector<uint32_t>& subscriber_of,
                  const matcher::CohortMatches& matches,
                  absl::Span<const PartialOut> outs,
                  PartialsScratch* scratch) {
  bool lists = listeners.size() != 0;
  for (const PartialOut& out : outs) lists |= out.return_ids;
  if (lists) {
    matches.ToLists(&scratch->lists);
    for (size_t i = 0; i < outs.size(); ++i) {
      FillPartial(directory, listeners, partition, outs[i].return_ids,
                  subscriber_of, &scratch->lists[i], outs[i].partial);
    }
    return;
  }
  scratch->counts.resize(outs.size());
  matches.CountPerEvent(scratch->counts.data());
  for (size_t i = 0; i < outs.size(); ++i) {
    outs[i].partial->count = scratch->counts[i];
  }
}

void Engine::FillStats(v1::Stats* stats,
                       std::vector<StageHistograms>* histograms) const {
  stats->set_subscriptions(directory_.live());
  stats->set_events_published(events_published_.load(std::memory_order_relaxed));
  stats->set_uptime_us(static_cast<uint64_t>((MonotonicNanos() - start_ns_) / 1000));
  stats->set_cohort_max(options_.cohort_max);
  stats->set_cohort_wait_us(static_cast<uint64_t>(options_.cohort_wait_us));
  stats->set_listeners(listeners_.size());
  stats->set_events_in_flight(admission_.in_flight());
  stats->set_admission_limit(admission_.current_limit());
  std::vector<const StageProfile*> profiles = {&front_};
  AddStageStats(stats, &profiles);
  if (options_.durability != nullptr) {
    profiles.push_back(&options_.durability->journal_profile());
  }
  if (histograms != nullptr) histograms->resize(profiles.size());
  for (size_t i = 0; i < profiles.size(); ++i) {
    profiles[i]->ToProto(stats->add_stages(),
                         histograms == nullptr ? nullptr : &(*histograms)[i]);
  }
}

DurationBuckets Engine::PublishDurations() const {
  return publish_durations_.ToBuckets();
}

absl::Status CheckLatencyTarget(int64_t us) {
  if (us < 0 || us > kMaxLatencyTargetUs) {
    return absl::InvalidArgumentError(
        absl::StrCat("--latency_target_us: between 0 (off) and ",
                     kMaxLatencyTargetUs, " (one minute)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Engine>> CreateEngine(
    const std::string& mode, const EngineOptions& options) {
  if (options.queue_limit == 0) {
    return absl::InvalidArgumentError("--queue_limit must be at least 1");
  }
  if (absl::Status s = CheckLatencyTarget(options.latency_target_us); !s.ok()) {
    return s;
  }
  if (mode == "staged") {
    if (options.partitions == 0) {
      return absl::InvalidArgumentError("--partitions must be at least 1");
    }
    if (options.cohorts_in_flight > CohortPipeline::kMaxBuffers) {
      return absl::InvalidArgumentError(
          absl::StrCat("--cohorts_in_flight: at most ",
                       CohortPipeline::kMaxBuffers, " (0 = the default)"));
    }
    if (options.index_layout == IndexLayout::kPartitioned) {
      return std::unique_ptr<Engine>(new PartitionedEngine(options));
    }
    return std::unique_ptr<Engine>(new ShardedEngine(options));
  }
  if (mode == "threaded") {
    if (options.threads == 0) {
      return absl::InvalidArgumentError("--threads must be at least 1");
    }
    return std::unique_ptr<Engine>(new ThreadedEngine(options));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--mode: unknown mode \"", mode, "\"; use staged or threaded"));
}

absl::StatusOr<uint64_t> Engine::AssignIds(
    size_t count, std::unique_lock<std::mutex>* order) {
  if (options_.durability != nullptr) {
    *order = std::unique_lock<std::mutex>(order_mu_);
  }
  absl::StatusOr<uint64_t> first = directory_.Assign(count);
  if (!first.ok() && order->owns_lock()) order->unlock();
  return first;
}

absl::Status Engine::KillIds(absl::Span<const uint64_t> ids,
                             std::unique_lock<std::mutex>* order) {
  if (options_.durability != nullptr) {
    *order = std::unique_lock<std::mutex>(order_mu_);
  }
  absl::Status status = directory_.Kill(ids);
  if (!status.ok() && order->owns_lock()) order->unlock();
  return status;
}

void Engine::JournalSubscribe(uint64_t first,
                              absl::Span<const SubscriptionInput> subscriptions,
                              std::function<void(absl::Status)> durable) {
  if (options_.durability == nullptr) {
    durable(absl::OkStatus());
    return;
  }
  const size_t count = subscriptions.size();
  options_.durability->LogSubscribe(
      first, subscriptions,
      [this, first, count, durable = std::move(durable)](absl::Status s) {
        if (s.ok()) {
          durable(s);
          return;
        }
        for (uint64_t id = first; id < first + count; ++id) {
          directory_.Forget(id);
        }
        durable(absl::UnavailableError(
            absl::StrCat("subscriptions not stored: ", s.message())));
      });
}

void Engine::JournalUnsubscribe(absl::Span<const uint64_t> ids,
                                std::function<void(absl::Status)> durable) {
  if (options_.durability == nullptr) {
    durable(absl::OkStatus());
    return;
  }
  options_.durability->LogUnsubscribe(
      ids, [durable = std::move(durable)](absl::Status s) {
        durable(s.ok() ? s
                       : absl::UnavailableError(absl::StrCat(
                             "unsubscription not stored: ", s.message())));
      });
}

}  // namespace service
}  // namespace cohort
