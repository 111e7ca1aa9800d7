#include "service/stages/engine.h"

#include <algorithm>
#include <future>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "matcher/types.h"
#include "service/storage/durability.h"

namespace cohort {
namespace service {

namespace {

// Why an expired job ended, once `skipped` of its events were not matched.
absl::Status ExpiredStatus(const PublishJob& job, size_t skipped) {
  const std::string what =
      absl::StrCat(skipped, " of ", job.RequestEvents(),
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

Engine::Engine(const EngineOptions& options, uint32_t id_shards,
               uint32_t partials)
    : options_(options),
      directory_(id_shards, kFirstBranchId - 1, matcher::kMaxSubscriptionId),
      listeners_(options.max_subscribers),
      admission_(options.queue_limit, options.latency_target_us * 1000),
      partials_(partials),
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
  const size_t m = job->RequestEvents();
  if (!job->event_of.empty()) {
    job->records_left.reset(new std::atomic<uint32_t>[m]);
    for (size_t j = 0; j < m; ++j) {
      job->records_left[j].store(0, std::memory_order_relaxed);
    }
    for (const uint32_t j : job->event_of) {
      job->records_left[j].fetch_add(1, std::memory_order_relaxed);
    }
  }
  auto* results = job->response->mutable_results();
  results->Clear();
  results->Reserve(static_cast<int>(m));
  for (size_t i = 0; i < m; ++i) results->Add();
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
  events_published_.fetch_add(job->RequestEvents(),
                              std::memory_order_relaxed);
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
    return ExpiredStatus(*job, job->RequestEvents());
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

void Engine::Subscribe(std::vector<SubscriptionInput> subscriptions,
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
  auto change = std::make_unique<Change>();
  change->inputs = std::move(subscriptions);
  change->subscribed = std::move(done);
  change->ids.reserve(change->inputs.size());
  for (size_t i = 0; i < change->inputs.size(); ++i) {
    change->ids.push_back(*first + i);
  }
  if (absl::Status s = AssignBranches(change.get()); !s.ok()) {
    ForgetAdds(*change);  // AssignBranches assigned none
    if (order.owns_lock()) order.unlock();
    change->subscribed(s);
    return;
  }
  JournalAndRoute(change.release());
}

absl::Status Engine::AssignBranches(Change* change) {
  for (size_t i = 0; i < change->inputs.size(); ++i) {
    const SubscriptionInput& input = change->inputs[i];
    if (input.branches.empty()) continue;
    absl::StatusOr<std::vector<uint32_t>> branches =
        directory_.AssignBranches(change->ids[i], input.subscriber,
                                  input.branches.size());
    if (!branches.ok()) {
      for (size_t j = 0; j < i; ++j) {
        directory_.ReleaseBranches(change->ids[j]);
      }
      change->branches.clear();
      return branches.status();
    }
    change->branches.resize(change->inputs.size());
    change->branches[i] = *std::move(branches);
  }
  return absl::OkStatus();
}

void Engine::ForgetAdds(const Change& change) {
  for (size_t i = 0; i < change.ids.size(); ++i) {
    directory_.Forget(change.ids[i]);
    if (!change.branches.empty()) directory_.ReleaseBranches(change.ids[i]);
  }
}

void Engine::AddRows(const Change& change, size_t i, uint32_t local_id,
                     std::vector<UpdateBatch::Add>* adds) {
  const SubscriptionInput& input = change.inputs[i];
  if (change.branches.empty() || change.branches[i].empty()) {
    adds->push_back({local_id, input.subscriber, input.predicates});
    return;
  }
  for (size_t b = 0; b < input.branches.size(); ++b) {
    adds->push_back(
        {change.branches[i][b], input.subscriber, input.branches[b]});
  }
}

void Engine::RemoveRows(const Change& change, size_t i, uint32_t local_id,
                        std::vector<uint32_t>* removes) {
  if (change.branches.empty() || change.branches[i].empty()) {
    removes->push_back(local_id);
    return;
  }
  removes->insert(removes->end(), change.branches[i].begin(),
                  change.branches[i].end());
}

void Engine::Unsubscribe(std::vector<uint64_t> ids, StatusCallback done) {
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
  auto change = std::make_unique<Change>();
  change->ids = std::move(ids);
  change->unsubscribed = std::move(done);
  if (directory_.has_branches()) {
    change->branches.resize(change->ids.size());
    bool any = false;
    for (size_t i = 0; i < change->ids.size(); ++i) {
      change->branches[i] = directory_.BranchesOf(change->ids[i]);
      any |= !change->branches[i].empty();
    }
    if (!any) change->branches.clear();
  }
  JournalAndRoute(change.release());
}

absl::Status Engine::Restore(StoreState* state) {
  std::vector<uint64_t> ids;
  ids.reserve(state->live.size());
  for (const auto& [id, input] : state->live) ids.push_back(id);
  if (absl::Status s = directory_.Restore(state->next_id, ids); !s.ok()) {
    return s;
  }
  // In changes of options_.restore_chunk subscriptions, each applied
  // before the next: a change's rows are all planned, then held until
  // applied, and at fabret-10m holding every row at once was 0.9 GB of
  // fresh pages.
  const size_t chunk = std::max<size_t>(options_.restore_chunk, 1);
  auto live = state->live.begin();
  for (size_t first = 0; first < ids.size(); first += chunk) {
    const size_t n = std::min(chunk, ids.size() - first);
    auto change = std::make_unique<Change>();
    change->ids.assign(ids.begin() + first, ids.begin() + first + n);
    change->inputs.reserve(n);
    for (size_t i = 0; i < n; ++i, ++live) {
      // Moving leaves the state's subscriber as it was (a plain integer).
      change->inputs.push_back(std::move(live->second));
    }
    if (absl::Status s = AssignBranches(change.get()); !s.ok()) return s;
    std::promise<absl::Status> applied;
    change->subscribed =
        [&applied](absl::StatusOr<std::vector<uint64_t>> done) {
          applied.set_value(done.status());
        };
    RouteChange(change.release());
    if (absl::Status s = applied.get_future().get(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

void Engine::QueueBatches(
    Change* change, const std::function<void(uint32_t, UpdateBatch*)>& push) {
  // Collect the batches first: once the last one is queued, the change may
  // be applied and deleted by a partition thread at any moment.
  std::vector<std::pair<uint32_t, UpdateBatch*>> involved;
  for (uint32_t p = 0; p < change->batches.size(); ++p) {
    UpdateBatch& batch = change->batches[p];
    if (batch.adds.empty() && batch.removes.empty()) continue;
    batch.done = [this, change](absl::Status status) {
      BatchApplied(change, status);
    };
    involved.emplace_back(p, &batch);
  }
  if (involved.empty()) {
    ChangeApplied(change, absl::OkStatus());
    return;
  }
  change->pending.store(static_cast<uint32_t>(involved.size()),
                        std::memory_order_relaxed);
  for (const auto& [p, batch] : involved) push(p, batch);
}

void Engine::BatchApplied(Change* change, const absl::Status& status) {
  if (!status.ok()) {
    std::lock_guard<std::mutex> lock(change->mu);
    if (change->status.ok()) change->status = status;
  }
  if (change->pending.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  absl::Status final_status;
  {
    std::lock_guard<std::mutex> lock(change->mu);
    final_status = change->status;
  }
  ChangeApplied(change, final_status);
}

void Engine::ChangeApplied(Change* change, const absl::Status& status) {
  if (change->adds()) {
    if (status.ok()) {
      change->subscribed(std::move(change->ids));
    } else {
      ForgetAdds(*change);
      change->subscribed(absl::InternalError(status.ToString()));
    }
  } else {
    // The rows are gone from every index: their branch ids may serve
    // again.
    if (status.ok() && !change->branches.empty()) {
      for (uint64_t id : change->ids) directory_.ReleaseBranches(id);
    }
    change->unsubscribed(status);
  }
  delete change;
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

void Engine::JournalAndRoute(Change* change) {
  if (options_.durability == nullptr) {
    RouteChange(change);
    return;
  }
  auto durable = [this, change](absl::Status s) {
    if (s.ok()) {
      RouteChange(change);
      return;
    }
    if (change->adds()) {
      ForgetAdds(*change);
      change->subscribed(absl::UnavailableError(
          absl::StrCat("subscriptions not stored: ", s.message())));
    } else {
      change->unsubscribed(absl::UnavailableError(
          absl::StrCat("unsubscription not stored: ", s.message())));
    }
    delete change;
  };
  if (change->adds()) {
    options_.durability->LogSubscribe(change->ids.front(), change->inputs,
                                      std::move(durable));
  } else {
    options_.durability->LogUnsubscribe(change->ids, std::move(durable));
  }
}

void Engine::FinishEvent(PublishJob* job, size_t i,
                             StageProfile* profile) {
  if (job->event_of.empty()) {
    PublishJob::EventState& state = job->state[i];
    if (state.skipped.load(std::memory_order_relaxed)) {
      // Some partition did not match it: a partial count would be wrong,
      // and nobody waits for the answer any more.
      job->events_skipped.fetch_add(1, std::memory_order_relaxed);
    } else {
      MergeAndDeliver(job, i, i, i + 1, profile);
    }
    state.partials.clear();
    state.partials.shrink_to_fit();
  } else {
    // The last record of a request event to finish answers for all of
    // them (the acq_rel chain on records_left makes their partials
    // visible here).
    const uint32_t j = job->event_of[i];
    if (job->records_left[j].fetch_sub(1, std::memory_order_acq_rel) == 1) {
      size_t first = i;
      while (first > 0 && job->event_of[first - 1] == j) --first;
      size_t last = i + 1;
      while (last < job->events.size() && job->event_of[last] == j) ++last;
      bool skipped = false;
      for (size_t r = first; r < last; ++r) {
        skipped |= job->state[r].skipped.load(std::memory_order_relaxed);
      }
      if (skipped) {
        job->events_skipped.fetch_add(1, std::memory_order_relaxed);
      } else {
        MergeAndDeliver(job, j, first, last, profile);
      }
      for (size_t r = first; r < last; ++r) {
        job->state[r].partials.clear();
        job->state[r].partials.shrink_to_fit();
      }
    }
  }
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

void Engine::MergeAndDeliver(PublishJob* job, size_t i, size_t first,
                             size_t last, StageProfile* profile) {
  v1::EventResult* result = job->response->mutable_results(static_cast<int>(i));
  uint64_t count = 0;
  std::vector<std::pair<uint32_t, uint64_t>> deliveries;
  std::vector<uint64_t> or_ids;
  for (size_t r = first; r < last; ++r) {
    for (PublishJob::Partial& partial : job->state[r].partials) {
      count += partial.count;
      deliveries.insert(deliveries.end(), partial.deliveries.begin(),
                        partial.deliveries.end());
      or_ids.insert(or_ids.end(), partial.or_ids.begin(),
                    partial.or_ids.end());
    }
  }
  // Several records, or several branches of an "or" subscription, may
  // find one subscription: it counts (and is delivered) once.
  const bool repeats = last - first > 1 || !or_ids.empty();
  if (!or_ids.empty()) {
    std::sort(or_ids.begin(), or_ids.end());
    or_ids.erase(std::unique(or_ids.begin(), or_ids.end()), or_ids.end());
  }
  if (!job->WantIds()) {
    // One record: plain subscriptions and "or" ones are apart.
    count += or_ids.size();
  } else {
    // Each partial is ascending; merge them pairwise (P is small). A
    // subscription several records matched counts once.
    std::vector<uint64_t> ids;
    ids.reserve(count);
    for (size_t r = first; r < last; ++r) {
      for (PublishJob::Partial& partial : job->state[r].partials) {
        const size_t middle = ids.size();
        ids.insert(ids.end(), partial.ids.begin(), partial.ids.end());
        std::inplace_merge(ids.begin(), ids.begin() + middle, ids.end());
      }
    }
    if (!or_ids.empty()) {
      const size_t middle = ids.size();
      ids.insert(ids.end(), or_ids.begin(), or_ids.end());
      std::inplace_merge(ids.begin(), ids.begin() + middle, ids.end());
    }
    if (repeats) {
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    }
    count = ids.size();
    if (job->request->return_ids()) {
      result->mutable_subscription_ids()->Add(ids.begin(), ids.end());
    }
  }
  result->set_match_count(count);
  if (!deliveries.empty()) {
    std::sort(deliveries.begin(), deliveries.end());
    if (repeats) {
      deliveries.erase(std::unique(deliveries.begin(), deliveries.end()),
                       deliveries.end());
    }
    auto event =
        std::make_shared<const v1::Event>(job->request->events(static_cast<int>(i)));
    uint64_t queued = 0;
    uint64_t dropped = 0;
    uint64_t disconnected = 0;
    std::vector<std::pair<uint32_t, std::vector<uint64_t>>> remote;
    for (size_t b = 0; b < deliveries.size();) {
      size_t e = b;
      std::vector<uint64_t> ids;
      while (e < deliveries.size() && deliveries[e].first == deliveries[b].first) {
        ids.push_back(deliveries[e++].second);
      }
      if (remote_ != nullptr &&
          listeners_.HasRemoteListeners(deliveries[b].first)) {
        remote.emplace_back(deliveries[b].first, ids);
      }
      listeners_.Deliver(deliveries[b].first, event, std::move(ids), &queued,
                         &dropped, &disconnected);
      b = e;
    }
    if (!remote.empty()) remote_->Deliver(*event, remote);
    profile->AddDeliveries(queued);
    profile->AddDroppedDeliveries(dropped);
    profile->AddDisconnectedListeners(disconnected);
  }
  // Counted before the reply goes out, so a GetStats that follows the reply
  // includes this event.
  profile->AddMatches(count);
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

}  // namespace service
}  // namespace cohort
