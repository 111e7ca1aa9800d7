#include "service/stages/cohort_pipeline.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <utility>

#include "service/observability/stage_profile.h"

namespace cohort {
namespace service {
namespace {

// Tries of LockSpinning before it blocks: about a microsecond.
constexpr int kLockSpins = 64;

void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Takes `mu`, first trying a while without blocking, and returns it. The
// pipeline's lock is held for a few hundred nanoseconds at a time, and a
// std::mutex waiter sleeps in the kernel at once, so that every hand-off
// of a contended lock costs a wake-up and 16 threads, once queued on it,
// stay queued (bench/reports/2026-11-27-xeon16-diagnosis). glibc's
// adaptive mutexes spin the same way (PTHREAD_MUTEX_ADAPTIVE_NP).
std::mutex& LockSpinning(std::mutex& mu) {
  for (int i = 0; i < kLockSpins; ++i) {
    if (mu.try_lock()) return mu;
    CpuRelax();
  }
  mu.lock();
  return mu;
}

std::atomic<CohortPipeline::HandOffHook> hand_off_hook{nullptr};

// The test's hook (SetHandOffHookForTesting), if any.
void HandOff() {
  if (CohortPipeline::HandOffHook hook =
          hand_off_hook.load(std::memory_order_relaxed)) {
    hook();
  }
}

}  // namespace

void CohortPipeline::SetHandOffHookForTesting(HandOffHook hook) {
  hand_off_hook.store(hook, std::memory_order_relaxed);
}

uint32_t CohortPipeline::DefaultBuffers(uint32_t partitions) {
  if (partitions >= 16) return 6;
  return partitions >= 4 ? 4 : 2;
}

uint32_t CohortPipeline::BuffersFor(uint32_t partitions,
                                    uint32_t cohorts_in_flight) {
  return cohorts_in_flight > 0 ? cohorts_in_flight
                               : DefaultBuffers(partitions);
}

CohortPipeline::CohortPipeline(uint32_t partitions, uint32_t cohort_max,
                               int64_t cohort_wait_ns, uint32_t buffers,
                               InServerFn in_server, bool solo_cohorts,
                               int64_t steal_after_ns)
    : partitions_(partitions),
      activation_(cohort_max, cohort_wait_ns),
      buffers_(buffers),
      in_server_(std::move(in_server)),
      solo_cohorts_(solo_cohorts),
      steal_after_ns_(steal_after_ns),
      slots_(slots()),
      to_apply_(partitions, false) {}

void CohortPipeline::PushEvents(PublishJob* job, int64_t now_ns,
                                uint32_t first, uint32_t count) {
  HandOff();
  const uint32_t end =
      count == 0 ? static_cast<uint32_t>(job->events.size()) : first + count;
  std::lock_guard<std::mutex> lock(LockSpinning(mu_), std::adopt_lock);
  for (uint32_t i = first; i < end; ++i) {
    items_.push_back(Item{QueuedEvent{job, i, now_ns}, nullptr});
  }
  // One waiter is enough: whoever wakes forms the cohort or, if no buffer
  // is free, leaves it to the thread that frees one.
  cv_.notify_one();
}

void CohortPipeline::PushUpdate(UpdateBatch* update, int64_t now_ns) {
  std::lock_guard<std::mutex> lock(LockSpinning(mu_), std::adopt_lock);
  items_.push_back(Item{QueuedEvent{nullptr, 0, now_ns}, update});
  ++updates_;
  cv_.notify_all();
}

void CohortPipeline::Flush() {
  std::lock_guard<std::mutex> lock(LockSpinning(mu_), std::adopt_lock);
  flushing_ = true;
  cv_.notify_all();
}

void CohortPipeline::Close() {
  std::lock_guard<std::mutex> lock(LockSpinning(mu_), std::adopt_lock);
  closed_ = true;
  flushing_ = true;
  cv_.notify_all();
}

bool CohortPipeline::InFlight() const {
  for (const Slot& s : slots_) {
    if (s.state != SlotState::kFree) return true;
  }
  return false;
}

absl::InlinedVector<uint32_t, 32> CohortPipeline::InFlightByAge() const {
  // Called on every trip through Next, under the lock that every partition
  // thread contends for: no heap, and an insertion sort of a few slots.
  absl::InlinedVector<uint32_t, 32> order;
  for (uint32_t b = 0; b < slots_.size(); ++b) {
    if (slots_[b].state == SlotState::kFree) continue;
    order.push_back(b);
    for (size_t i = order.size() - 1;
         i > 0 && slots_[order[i - 1]].cohort > slots_[b].cohort; --i) {
      std::swap(order[i - 1], order[i]);
    }
  }
  return order;
}

void CohortPipeline::PhaseOneDone(Slot& slot) {
  slot.state = SlotState::kPhase2;
  slot.ready_ns = MonotonicNanos();
  // A solo cohort's former goes on by itself; the others all have work.
  if (!slot.solo) cv_.notify_all();
}

void CohortPipeline::Free(Slot& slot) {
  slot.state = SlotState::kFree;
  // A split cohort's buffer is room to form the next one, which matters
  // only to queued events: with none queued, an idle thread has nothing to
  // form, and the next push wakes one. A solo cohort's slot is its
  // former's own, and that thread is awake: only a change waiting for no
  // cohort in flight, or a shutdown, waits on it. Waking every idle thread
  // regardless cost a 16-partition server 2 to 4 context switches per
  // event under 8 and 16 closed-loop clients, and a 2-partition one 2 to 3
  // per event at one client (2-core VM).
  if ((!slot.solo && !items_.empty()) || updates_ > 0 || closed_) {
    cv_.notify_all();  // room to form a cohort, or to plan a change
  }
}

bool CohortPipeline::TakeUpdateWork(uint32_t p, Work* work) {
  if (update_state_ == UpdateState::kApplying && to_apply_[p]) {
    to_apply_[p] = false;
    work->kind = Work::Kind::kApplyUpdate;
    work->update = update_;
    return true;
  }
  if (update_state_ == UpdateState::kFinishReady) {
    update_state_ = UpdateState::kFinishing;
    work->kind = Work::Kind::kFinishUpdate;
    work->update = update_;
    return true;
  }
  return false;
}

bool CohortPipeline::TakeCohortWork(uint32_t p, Work* work) {
  // Oldest cohort first: its tasks and matches finish events soonest.
  for (uint32_t b : InFlightByAge()) {
    Slot& s = slots_[b];
    work->buffer = b;
    work->cohort = s.cohort;
    if (s.solo) {
      if (s.owner != p) continue;
      if (s.state == SlotState::kPhase1 && s.unclaimed > 0) {
        work->kind = Work::Kind::kTask;
        work->task = Claim(s, p);
        return true;
      }
      // Every partition's match in one piece of work: one trip through
      // the lock and one MatchDone per cohort rather than per partition.
      if (s.state != SlotState::kPhase2 || s.taken[0]) continue;
      s.taken.assign(partitions_, true);
      work->kind = Work::Kind::kMatch;
      work->partition = 0;
      work->all_partitions = true;
      work->finish_now = true;
      work->ready_ns = s.ready_ns;
      work->queue_length = s.events;
      return true;
    }
    if (s.state == SlotState::kPhase1 && s.unclaimed > 0) {
      work->kind = Work::Kind::kTask;
      work->task = Claim(s, p);
      return true;
    }
    if (s.state != SlotState::kPhase2 || s.taken[p]) continue;
    TakeMatch(s, p, work);
    work->stolen = false;
    return true;
  }
  return false;
}

bool CohortPipeline::TakeStolenMatch(uint32_t p, Work* work,
                                     int64_t* deadline_ns) {
  if (steal_after_ns_ < 0 || partitions_ == 1) return false;
  // Stealing moves a partition's clusters into another core's cache, so
  // only when waiting would cost more: the share has waited for its own
  // thread longer than a wake-up takes (that thread is busy, preempted or
  // slowed), or its thread is behind by more than the match it is on.
  const int64_t now = MonotonicNanos();
  for (uint32_t b : InFlightByAge()) {
    Slot& s = slots_[b];
    if (s.solo || s.state != SlotState::kPhase2) continue;
    const int64_t eligible = s.ready_ns + steal_after_ns_;
    for (uint32_t i = 1; i < partitions_; ++i) {
      const uint32_t q = (p + i) % partitions_;
      if (s.taken[q]) continue;
      if (now < eligible && Backlog(q) < 2) {
        if (*deadline_ns == 0 || eligible < *deadline_ns) {
          *deadline_ns = eligible;
        }
        continue;
      }
      TakeMatch(s, q, work);
      work->buffer = b;
      work->cohort = s.cohort;
      work->stolen = true;
      steals_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  return false;
}

uint32_t CohortPipeline::Backlog(uint32_t q) const {
  uint32_t n = 0;
  for (uint32_t b = 0; b < buffers_; ++b) {
    const Slot& s = slots_[b];
    if (s.state != SlotState::kFree && !s.solo && !s.taken[q]) ++n;
  }
  return n;
}

void CohortPipeline::TakeMatch(Slot& s, uint32_t q, Work* work) {
  s.taken[q] = true;
  work->kind = Work::Kind::kMatch;
  work->partition = q;
  work->all_partitions = false;
  work->finish_now = solo_cohorts_
                         ? s.events <= kSoloCohort
                         : in_server_ != nullptr && in_server_() <= s.events;
  work->ready_ns = s.ready_ns;
  work->queue_length = 0;  // events of the cohorts ready for q
  for (const Slot& ready : slots_) {
    if (ready.state == SlotState::kPhase2 && !ready.solo &&
        (&ready == &s || !ready.taken[q])) {
      work->queue_length += ready.events;
    }
  }
}

size_t CohortPipeline::Claim(Slot& slot, uint32_t p) {
  --slot.unclaimed;
  TaskQueue& mine = slot.queues[p];
  while (mine.tasks.size() > mine.head) {
    const uint32_t t = mine.tasks.back();
    mine.tasks.pop_back();
    if (!slot.claimed[t]) {
      slot.claimed[t] = true;
      return t;
    }
  }
  // Steal the others' first tasks: they take theirs from the back.
  const uint32_t n = static_cast<uint32_t>(slot.queues.size());
  for (uint32_t i = 1; i < n; ++i) {
    TaskQueue& other = slot.queues[(p + i) % n];
    while (other.head < other.tasks.size()) {
      const uint32_t t = other.tasks[other.head++];
      if (!slot.claimed[t]) {
        slot.claimed[t] = true;
        return t;
      }
    }
  }
  return 0;  // unreachable while unclaimed was > 0
}

bool CohortPipeline::TakeForm(uint32_t p, Work* work, int64_t* deadline_ns) {
  *deadline_ns = 0;
  if (update_state_ != UpdateState::kNone) return false;
  const size_t ready = LeadingEvents(
      items_, updates_, [](const Item& item) { return item.update != nullptr; });
  if (ready == 0) return false;
  const size_t split = activation_.Take(
      ready, items_.size(), items_.front().event.enqueue_ns, flushing_,
      deadline_ns);
  if (split == 0) return false;
  // Few events queued and some other partition thread busy: run the
  // oldest alone, here, and leave the rest for whoever is free next (an
  // event kept per event shares nothing with the others, so batching them
  // would only make the first wait for the last). With every other thread
  // idle, the events queued are split over them — even a lone event, its
  // match then taking a fraction of the time, unless it is not alone in the
  // server: the others' events are on their way.
  const bool solo =
      solo_cohorts_ && ready <= kSoloCohort &&
      (idle_ + 1 < partitions_ ||
       (ready == 1 && in_server_ != nullptr && in_server_() >= 2));
  // A solo cohort takes its former's own slot (free: a thread finishes its
  // solo cohort before it forms another), a split one a mask buffer.
  uint32_t b = buffers_ + p;
  if (!solo) {
    b = 0;
    while (b < buffers_ && slots_[b].state != SlotState::kFree) ++b;
    if (b == buffers_) return false;
  }
  Slot& s = slots_[b];
  assert(s.state == SlotState::kFree);
  const size_t take = solo ? 1 : split;
  work->kind = Work::Kind::kForm;
  work->buffer = b;
  work->cohort = formed_;
  work->solo = solo;
  work->queue_length = items_.size() - updates_;
  work->events.clear();
  for (size_t i = 0; i < take; ++i) {
    work->events.push_back(items_.front().event);
    items_.pop_front();
  }
  // Events left behind a solo cohort go to an idle thread, if any (one
  // wake-up each: the next solo former wakes the next).
  if (solo && ready > 1 && idle_ > 0) cv_.notify_one();
  s.state = SlotState::kForming;
  s.cohort = formed_++;
  s.events = take;
  s.tasks = s.unclaimed = 0;
  s.tasks_done.store(0, std::memory_order_relaxed);
  s.matched.store(0, std::memory_order_relaxed);
  s.solo = work->solo;
  s.owner = p;
  s.taken.assign(partitions_, false);
  return true;
}

bool CohortPipeline::TakePlan(Work* work) {
  if (update_state_ != UpdateState::kNone || items_.empty() ||
      items_.front().update == nullptr || InFlight()) {
    return false;
  }
  update_ = items_.front().update;
  items_.pop_front();
  --updates_;
  update_state_ = UpdateState::kPlanning;
  work->kind = Work::Kind::kPlanUpdate;
  work->update = update_;
  return true;
}

bool CohortPipeline::Next(uint32_t p, Work* work) {
  const bool more = NextLocked(p, work);
  HandOff();
  return more;
}

bool CohortPipeline::NextLocked(uint32_t p, Work* work) {
  std::unique_lock<std::mutex> lock(LockSpinning(mu_), std::adopt_lock);
  for (;;) {
    if (TakeUpdateWork(p, work) || TakeCohortWork(p, work)) return true;
    int64_t deadline = 0;
    if (TakeForm(p, work, &deadline) || TakePlan(work)) return true;
    // Another's share last: a cohort of its own to form keeps this core's
    // clusters in its cache.
    if (TakeStolenMatch(p, work, &deadline)) return true;
    if (closed_ && items_.empty() && !InFlight() &&
        update_state_ == UpdateState::kNone) {
      return false;
    }
    ++idle_;
    if (deadline > 0) {
      cv_.wait_until(lock, std::chrono::steady_clock::time_point(
                               std::chrono::nanoseconds(deadline)));
    } else {
      cv_.wait(lock);
    }
    --idle_;
  }
}

bool CohortPipeline::Formed(uint32_t buffer,
                            absl::Span<const uint32_t> preferred,
                            size_t events) {
  HandOff();
  std::lock_guard<std::mutex> lock(LockSpinning(mu_), std::adopt_lock);
  Slot& s = slots_[buffer];
  s.events = events;
  if (events == 0) {  // every event had expired: nothing to match
    Free(s);
    return true;
  }
  s.tasks = s.unclaimed = preferred.size();
  if (s.tasks == 0) {
    PhaseOneDone(s);
    return true;
  }
  // The queues keep their capacity from cohort to cohort.
  s.queues.resize(partitions_);
  for (TaskQueue& q : s.queues) {
    q.tasks.clear();
    q.head = 0;
  }
  s.claimed.assign(s.tasks, false);
  for (uint32_t t = 0; t < s.tasks; ++t) {
    s.queues[preferred[t] % partitions_].tasks.push_back(t);
  }
  s.state = SlotState::kPhase1;
  // A waiter for each task at most: a thread woken to find every task
  // taken only queues on the lock again.
  for (size_t i = std::min<size_t>(s.tasks, idle_); i > 0; --i) {
    cv_.notify_one();
  }
  return false;
}

bool CohortPipeline::TaskDone(uint32_t buffer) {
  // Without the lock but for the cohort's last task. The slot itself and
  // s.tasks were set under the lock before this thread was handed the
  // task, and stay until the last task is done. The count's acquire and
  // release chain every task's writes to the last, whose unlock hands
  // them on with phase 2.
  HandOff();
  Slot& s = slots_[buffer];
  // Read first: once this count is in, the slot may be freed and taken.
  const size_t tasks = s.tasks;
  if (s.tasks_done.fetch_add(1, std::memory_order_acq_rel) + 1 < tasks) {
    return false;
  }
  std::lock_guard<std::mutex> lock(LockSpinning(mu_), std::adopt_lock);
  PhaseOneDone(s);
  return true;
}

void CohortPipeline::MatchDone(uint32_t buffer, uint32_t /*partition*/) {
  // Without the lock but for the cohort's last match (as TaskDone): every
  // partition's reads of the buffer happen before the last frees it.
  HandOff();
  Slot& s = slots_[buffer];
  const uint32_t n = s.solo ? partitions_ : 1;  // read first, as in TaskDone
  if (s.matched.fetch_add(n, std::memory_order_acq_rel) + n < partitions_) {
    return;
  }
  std::lock_guard<std::mutex> lock(LockSpinning(mu_), std::adopt_lock);
  Free(s);
}

void CohortPipeline::UpdatePlanned(const std::vector<bool>& involved) {
  std::lock_guard<std::mutex> lock(LockSpinning(mu_), std::adopt_lock);
  to_apply_ = involved;
  applying_ = static_cast<uint32_t>(
      std::count(involved.begin(), involved.end(), true));
  update_state_ = applying_ > 0 ? UpdateState::kApplying
                                : UpdateState::kFinishReady;
  cv_.notify_all();
}

void CohortPipeline::UpdateApplied(uint32_t /*p*/) {
  std::lock_guard<std::mutex> lock(LockSpinning(mu_), std::adopt_lock);
  if (--applying_ == 0) {
    update_state_ = UpdateState::kFinishReady;
    cv_.notify_all();
  }
}

void CohortPipeline::UpdateFinished() {
  std::lock_guard<std::mutex> lock(LockSpinning(mu_), std::adopt_lock);
  update_state_ = UpdateState::kNone;
  update_ = nullptr;
  cv_.notify_all();
}

}  // namespace service
}  // namespace cohort
