#include "service/stages/cohort_pipeline.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <climits>
#include <utility>

#include "absl/strings/str_cat.h"
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
// pipeline's lock (forming, changes) is held briefly, and a
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

// Wakes all sleepers.
constexpr int kAll = INT_MAX;

// A task queue's range word (CohortPipeline::TaskQueue): the cohort's low
// 24 bits, then head and tail, 20 bits each.
constexpr int kIndexBits = 20;
constexpr uint64_t kIndexMask = (uint64_t{1} << kIndexBits) - 1;
constexpr uint64_t kGenMask = ~((uint64_t{1} << (2 * kIndexBits)) - 1);
uint64_t RangeGen(uint64_t cohort) { return cohort << (2 * kIndexBits); }

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
                  std::atomic<uint32_t>::is_always_lock_free,
              "the event count is waited on as a futex word");

uint32_t* FutexWord(std::atomic<uint32_t>* word) {
  return reinterpret_cast<uint32_t*>(word);
}

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

uint32_t CohortPipeline::DefaultUnits(uint32_t /*partitions*/) {
  return kDefaultUnits;
}

absl::Status CohortPipeline::CheckStealUnits(uint32_t steal_units) {
  if (steal_units > kMaxUnits) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--steal_units: at most ", kMaxUnits, " (0 = the default)"));
  }
  return absl::OkStatus();
}

uint32_t CohortPipeline::BuffersFor(uint32_t partitions,
                                    uint32_t cohorts_in_flight) {
  return cohorts_in_flight > 0 ? cohorts_in_flight
                               : DefaultBuffers(partitions);
}

CohortPipeline::CohortPipeline(uint32_t partitions, uint32_t cohort_max,
                               int64_t cohort_wait_ns, uint32_t buffers,
                               InServerFn in_server, bool solo_cohorts,
                               int64_t steal_after_ns, uint32_t units,
                               uint32_t cpus)
    : partitions_(partitions),
      activation_(cohort_max, cohort_wait_ns),
      buffers_(buffers),
      in_server_(std::move(in_server)),
      solo_cohorts_(solo_cohorts),
      steal_after_ns_(steal_after_ns),
      units_(units),
      cpus_(cpus),
      slots_(std::make_unique<Slot[]>(slots())),
      to_apply_(partitions, false) {
  assert(units_ >= 1 && units_ <= kMaxUnits);
  for (uint32_t b = 0; b < slots(); ++b) {
    // Value-initialized: no share of any cohort claimed.
    slots_[b].claims = std::make_unique<std::atomic<uint64_t>[]>(partitions);
    slots_[b].queues = std::make_unique<TaskQueue[]>(partitions);
  }
}

void CohortPipeline::Changed() {
  queued_.store(items_.size(), std::memory_order_relaxed);
  const bool changes = updates_ > 0 || update_state_ != UpdateState::kNone;
  changes_.store(changes, std::memory_order_relaxed);
  needs_lock_.store(!items_.empty() || changes ||
                        closed_.load(std::memory_order_relaxed),
                    std::memory_order_release);
}

void CohortPipeline::Wake(int n, bool cpu_bound) {
  // Sequentially consistent with Sleep's: a sleeper either sees the count
  // move (and does not sleep) or is counted in idle_ here. So a thread not
  // counted idle here looks for work again after this hand-off, and
  // leaving the work to such threads (CpuRoom) loses no wake-up.
  epoch_.fetch_add(1, std::memory_order_seq_cst);
  if (n <= 0) return;
  const uint32_t idle = idle_.load(std::memory_order_seq_cst);
  if (idle == 0) return;
  WakeSleepers(cpu_bound ? std::min(n, CpuRoom(idle)) : n);
}

int CohortPipeline::CpuRoom(uint32_t idle) const {
  if (cpus_ == 0) return kAll;
  const uint32_t running = partitions_ > idle ? partitions_ - idle : 0;
  return cpus_ > running ? static_cast<int>(cpus_ - running) : 0;
}

void CohortPipeline::WakeSleepers(int n) {
  if (n <= 0) return;
  const long woken = syscall(SYS_futex, FutexWord(&epoch_),
                             FUTEX_WAKE_PRIVATE, n, nullptr, nullptr, 0);
  if (woken > 0) {
    wakeups_.fetch_add(static_cast<uint64_t>(woken),
                       std::memory_order_relaxed);
  }
}

void CohortPipeline::Sleep(uint32_t seen, int64_t deadline_ns) {
  idle_.fetch_add(1, std::memory_order_seq_cst);
  if (epoch_.load(std::memory_order_seq_cst) == seen) {
    sleeps_.fetch_add(1, std::memory_order_relaxed);
    if (deadline_ns > 0) {
      // An absolute deadline on CLOCK_MONOTONIC, MonotonicNanos' clock.
      timespec until;
      until.tv_sec = static_cast<time_t>(deadline_ns / 1'000'000'000);
      until.tv_nsec = static_cast<long>(deadline_ns % 1'000'000'000);
      syscall(SYS_futex, FutexWord(&epoch_),
              FUTEX_WAIT_BITSET_PRIVATE, seen, &until, nullptr,
              FUTEX_BITSET_MATCH_ANY);
    } else {
      syscall(SYS_futex, FutexWord(&epoch_), FUTEX_WAIT_PRIVATE, seen,
              nullptr, nullptr, 0);
    }
  }
  idle_.fetch_sub(1, std::memory_order_seq_cst);
}

void CohortPipeline::PushEvents(PublishJob* job, int64_t now_ns,
                                uint32_t first, uint32_t count) {
  HandOff();
  const uint32_t end =
      count == 0 ? static_cast<uint32_t>(job->events.size()) : first + count;
  {
    std::lock_guard<std::mutex> lock(LockSpinning(mu_), std::adopt_lock);
    for (uint32_t i = first; i < end; ++i) {
      items_.push_back(Item{QueuedEvent{job, i, now_ns}, nullptr});
    }
    Changed();
  }
  // One sleeper is enough: whoever wakes forms the cohort or, if no buffer
  // is free, leaves it to the thread that frees one.
  Wake(1, /*cpu_bound=*/true);
}

void CohortPipeline::PushUpdate(UpdateBatch* update, int64_t now_ns) {
  {
    std::lock_guard<std::mutex> lock(LockSpinning(mu_), std::adopt_lock);
    items_.push_back(Item{QueuedEvent{nullptr, 0, now_ns}, update});
    ++updates_;
    Changed();
  }
  Wake(kAll);
}

void CohortPipeline::Flush() {
  {
    std::lock_guard<std::mutex> lock(LockSpinning(mu_), std::adopt_lock);
    flushing_ = true;
  }
  Wake(kAll);
}

void CohortPipeline::Close() {
  {
    std::lock_guard<std::mutex> lock(LockSpinning(mu_), std::adopt_lock);
    closed_.store(true, std::memory_order_relaxed);
    flushing_ = true;
    Changed();
  }
  Wake(kAll);
}

bool CohortPipeline::InFlight() const {
  for (uint32_t b = 0; b < slots(); ++b) {
    if (StateOf(slots_[b].tag.load(std::memory_order_acquire)) != kFree) {
      return true;
    }
  }
  return false;
}

absl::InlinedVector<CohortPipeline::Seen, 32> CohortPipeline::InFlightByAge()
    const {
  // Called on every trip through Next: no heap, and an insertion sort of a
  // few slots. The words may be stale by the time they are used; claims
  // made by them then fail.
  absl::InlinedVector<Seen, 32> order;
  for (uint32_t b = 0; b < slots(); ++b) {
    const uint64_t tag = slots_[b].tag.load(std::memory_order_acquire);
    if (StateOf(tag) == kFree) continue;
    order.push_back(Seen{b, tag});
    for (size_t i = order.size() - 1;
         i > 0 && CohortOf(order[i - 1].tag) > CohortOf(tag); --i) {
      std::swap(order[i - 1], order[i]);
    }
  }
  return order;
}

void CohortPipeline::PhaseOneDone(uint32_t b, uint64_t cohort) {
  Slot& s = slots_[b];
  s.ready_ns.store(MonotonicNanos(), std::memory_order_relaxed);
  s.tag.store(Tag(cohort, kPhase2), std::memory_order_release);
  // A solo cohort's former goes on by itself; the others all have work,
  // as many as can run: with stealing, the threads running take the
  // shares of those left asleep (without, each share waits for its own).
  Wake(b >= buffers_ ? 0 : kAll, /*cpu_bound=*/steal_after_ns_ >= 0);
}

void CohortPipeline::Free(uint32_t b, uint64_t cohort) {
  slots_[b].tag.store(Tag(cohort, kFree), std::memory_order_release);
  epoch_.fetch_add(1, std::memory_order_seq_cst);
  const uint32_t idle = idle_.load(std::memory_order_seq_cst);
  if (idle == 0) return;
  // A split cohort's buffer is room to form the next one, which matters
  // only to queued events: with none queued, an idle thread has nothing to
  // form, and the next push wakes one. A solo cohort's slot is its
  // former's own, and that thread is awake: only a change waiting for no
  // cohort in flight, or a shutdown, waits on it. Waking every idle thread
  // regardless cost a 16-partition server 2 to 4 context switches per
  // event under 8 and 16 closed-loop clients, and a 2-partition one 2 to 3
  // per event at one client (2-core VM). (Read after idle_: a sleeper
  // counted there had seen the queue, under the lock, before it slept.)
  if (changes_.load(std::memory_order_relaxed) ||
      closed_.load(std::memory_order_relaxed)) {
    WakeSleepers(kAll);  // to plan a change, or to exit
  } else if (b < buffers_ && queued_.load(std::memory_order_relaxed) > 0) {
    WakeSleepers(CpuRoom(idle));  // room to form a cohort
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

bool CohortPipeline::ClaimMatch(Slot& slot, uint64_t cohort, uint32_t q,
                                bool all, uint32_t* unit) {
  std::atomic<uint64_t>& claim = slot.claims[q];
  const uint64_t none = ClaimWord(cohort, 0);
  const uint64_t full = ClaimWord(cohort, units_);
  uint64_t last = claim.load(std::memory_order_acquire);
  // A word below `none` is an earlier cohort's (all of whose units were
  // claimed): this cohort's first claim. Units go in order, 0 first.
  while (last < full) {
    const uint64_t from = last < none ? none : last;
    const uint64_t next = all ? full : from + 1;
    if (claim.compare_exchange_weak(last, next, std::memory_order_acq_rel,
                                    std::memory_order_acquire)) {
      *unit = static_cast<uint32_t>(from - none);
      return true;
    }
  }
  return false;
}

bool CohortPipeline::ClaimTask(Slot& slot, uint64_t cohort, uint32_t p,
                               size_t* task) {
  const uint64_t gen = RangeGen(cohort);
  // Takes the tail of a queue (own) or its head, if it holds tasks of
  // `cohort`; a queue of an earlier cohort in the slot is empty (the slot
  // was freed), and one of a later cohort has another number.
  auto take = [&](TaskQueue& queue, bool own) {
    uint64_t range = queue.range.load(std::memory_order_acquire);
    for (;;) {
      if ((range & kGenMask) != gen) return false;
      const uint64_t head = (range >> kIndexBits) & kIndexMask;
      const uint64_t tail = range & kIndexMask;
      if (head >= tail) return false;
      const uint64_t next = own ? range - 1 : range + (uint64_t{1} << kIndexBits);
      if (queue.range.compare_exchange_weak(range, next,
                                            std::memory_order_acq_rel,
                                            std::memory_order_acquire)) {
        *task = queue.tasks[own ? tail - 1 : head];
        return true;
      }
    }
  };
  if (take(slot.queues[p], true)) return true;
  // Steal the others' first tasks: they take theirs from the back.
  for (uint32_t i = 1; i < partitions_; ++i) {
    if (take(slot.queues[(p + i) % partitions_], false)) return true;
  }
  return false;
}

bool CohortPipeline::TakeCohortWork(uint32_t p, Work* work) {
  // Oldest cohort first: its tasks and matches finish events soonest.
  for (const Seen& seen : InFlightByAge()) {
    const uint32_t b = seen.buffer;
    Slot& s = slots_[b];
    const uint64_t cohort = CohortOf(seen.tag);
    const bool solo = b >= buffers_;
    if (solo && b != buffers_ + p) continue;
    const SlotState state = StateOf(seen.tag);
    if (state == kPhase1) {
      size_t task = 0;
      if (!ClaimTask(s, cohort, p, &task)) continue;
      work->kind = Work::Kind::kTask;
      work->buffer = b;
      work->cohort = cohort;
      work->task = task;
      return true;
    }
    if (state != kPhase2) continue;
    if (solo) {
      // Every partition's match in one piece of work: one MatchDone per
      // cohort rather than per partition.
      uint32_t unit = 0;
      if (!ClaimMatch(s, cohort, 0, /*all=*/true, &unit)) continue;
      work->kind = Work::Kind::kMatch;
      work->buffer = b;
      work->cohort = cohort;
      work->partition = 0;
      work->unit = 0;
      work->all_partitions = true;
      work->finish_now = true;
      work->stolen = false;
      work->ready_ns = s.ready_ns.load(std::memory_order_relaxed);
      work->queue_length = s.events.load(std::memory_order_relaxed);
      return true;
    }
    uint32_t unit = 0;
    if (!ClaimMatch(s, cohort, p, /*all=*/false, &unit)) continue;
    TakeMatch(b, cohort, p, unit, work);
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
  for (const Seen& seen : InFlightByAge()) {
    const uint32_t b = seen.buffer;
    if (b >= buffers_ || StateOf(seen.tag) != kPhase2) continue;
    Slot& s = slots_[b];
    const uint64_t cohort = CohortOf(seen.tag);
    const int64_t eligible =
        s.ready_ns.load(std::memory_order_relaxed) + steal_after_ns_;
    for (uint32_t i = 1; i < partitions_; ++i) {
      const uint32_t q = (p + i) % partitions_;
      if (Claimed(s, cohort, q)) continue;
      if (now < eligible && Backlog(q) < 2) {
        if (*deadline_ns == 0 || eligible < *deadline_ns) {
          *deadline_ns = eligible;
        }
        continue;
      }
      uint32_t unit = 0;
      if (!ClaimMatch(s, cohort, q, /*all=*/false, &unit)) continue;
      TakeMatch(b, cohort, q, unit, work);
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
    const uint64_t tag = s.tag.load(std::memory_order_acquire);
    if (StateOf(tag) != kFree && Untouched(s, CohortOf(tag), q)) ++n;
  }
  return n;
}

void CohortPipeline::TakeMatch(uint32_t b, uint64_t cohort, uint32_t q,
                               uint32_t unit, Work* work) {
  const Slot& s = slots_[b];
  const size_t events = s.events.load(std::memory_order_relaxed);
  work->kind = Work::Kind::kMatch;
  work->buffer = b;
  work->cohort = cohort;
  work->partition = q;
  work->unit = unit;
  work->all_partitions = false;
  work->finish_now = solo_cohorts_
                         ? events <= kSoloCohort
                         : in_server_ != nullptr && in_server_() <= events;
  work->ready_ns = s.ready_ns.load(std::memory_order_relaxed);
  work->queue_length = events;  // and the events of other cohorts ready for q
  for (uint32_t r = 0; r < buffers_; ++r) {
    if (r == b) continue;
    const Slot& ready = slots_[r];
    const uint64_t tag = ready.tag.load(std::memory_order_acquire);
    if (StateOf(tag) == kPhase2 && !Claimed(ready, CohortOf(tag), q)) {
      work->queue_length += ready.events.load(std::memory_order_relaxed);
    }
  }
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
  const uint32_t idle = idle_.load(std::memory_order_relaxed);
  const bool solo =
      solo_cohorts_ && ready <= kSoloCohort &&
      (idle + 1 < partitions_ ||
       (ready == 1 && in_server_ != nullptr && in_server_() >= 2));
  // A solo cohort takes its former's own slot (free: a thread finishes its
  // solo cohort before it forms another), a split one a mask buffer. Only
  // a former, under the lock, takes a free slot, so one seen free stays
  // so; the acquire orders the last match's reads of the buffer before
  // this former's writes.
  uint32_t b = buffers_ + p;
  if (!solo) {
    b = 0;
    while (b < buffers_ && StateOf(slots_[b].tag.load(
                               std::memory_order_acquire)) != kFree) {
      ++b;
    }
    if (b == buffers_) return false;
  }
  Slot& s = slots_[b];
  assert(StateOf(s.tag.load(std::memory_order_acquire)) == kFree);
  const size_t take = solo ? 1 : split;
  const uint64_t cohort = formed_++;
  work->kind = Work::Kind::kForm;
  work->buffer = b;
  work->cohort = cohort;
  work->solo = solo;
  work->queue_length = items_.size() - updates_;
  work->events.clear();
  for (size_t i = 0; i < take; ++i) {
    work->events.push_back(items_.front().event);
    items_.pop_front();
  }
  s.events.store(take, std::memory_order_relaxed);
  s.tasks_left.store(0, std::memory_order_relaxed);
  s.matches_left.store(partitions_ * units_, std::memory_order_relaxed);
  s.tag.store(Tag(cohort, kForming), std::memory_order_release);
  Changed();
  // Events left behind a solo cohort go to an idle thread, if any (one
  // wake-up each: the next solo former wakes the next).
  if (solo && ready > 1 && idle > 0) Wake(1, /*cpu_bound=*/true);
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
  Changed();
  work->kind = Work::Kind::kPlanUpdate;
  work->update = update_;
  return true;
}

bool CohortPipeline::Next(uint32_t p, Work* work) {
  const bool more = NextUnhooked(p, work);
  HandOff();
  return more;
}

bool CohortPipeline::NextUnhooked(uint32_t p, Work* work) {
  for (;;) {
    // Read before looking: a hand-off after this moves it, and Sleep then
    // returns at once.
    const uint32_t seen = epoch_.load(std::memory_order_seq_cst);
    // A change in progress: no cohort is in flight.
    if (changes_.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> lock(LockSpinning(mu_), std::adopt_lock);
      if (TakeUpdateWork(p, work)) return true;
    }
    if (TakeCohortWork(p, work)) return true;
    int64_t deadline = 0;
    if (needs_lock_.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> lock(LockSpinning(mu_), std::adopt_lock);
      if (TakeForm(p, work, &deadline) || TakePlan(work)) return true;
      if (closed_.load(std::memory_order_relaxed) && items_.empty() &&
          update_state_ == UpdateState::kNone && !InFlight()) {
        return false;
      }
    }
    // Another's share last: a cohort of its own to form keeps this core's
    // clusters in its cache.
    if (TakeStolenMatch(p, work, &deadline)) return true;
    Sleep(seen, deadline);
  }
}

bool CohortPipeline::Formed(uint32_t buffer,
                            absl::Span<const uint32_t> preferred,
                            size_t events,
                            absl::FunctionRef<void()> phase_one_done) {
  // The slot is this thread's own until its state says otherwise.
  HandOff();
  Slot& s = slots_[buffer];
  const uint64_t cohort = CohortOf(s.tag.load(std::memory_order_relaxed));
  s.events.store(events, std::memory_order_relaxed);
  if (events == 0) {  // every event had expired: nothing to match
    Free(buffer, cohort);
    return true;
  }
  if (preferred.empty()) {
    phase_one_done();
    PhaseOneDone(buffer, cohort);
    return true;
  }
  // The queues keep their capacity from cohort to cohort. Nobody reads
  // them: the last cohort's are empty, and this one's are not yet
  // published.
  assert(partitions_ >= 1);
  for (uint32_t q = 0; q < partitions_; ++q) s.queues[q].tasks.clear();
  for (uint32_t t = 0; t < preferred.size(); ++t) {
    s.queues[preferred[t] % partitions_].tasks.push_back(t);
  }
  for (uint32_t q = 0; q < partitions_; ++q) {
    const size_t n = s.queues[q].tasks.size();
    assert(n <= kMaxQueueTasks);
    s.queues[q].range.store(RangeGen(cohort) | n, std::memory_order_release);
  }
  s.tasks_left.store(preferred.size(), std::memory_order_relaxed);
  s.tag.store(Tag(cohort, kPhase1), std::memory_order_release);
  // A sleeper for each task at most: a thread woken to find every task
  // taken only sleeps again.
  Wake(static_cast<int>(std::min<size_t>(
           preferred.size(), idle_.load(std::memory_order_relaxed))),
       /*cpu_bound=*/true);
  return false;
}

bool CohortPipeline::TaskDone(uint32_t buffer,
                              absl::FunctionRef<void()> phase_one_done) {
  // The count's acquire and release chain every task's writes to the
  // last, whose release store of phase 2 hands them on.
  HandOff();
  Slot& s = slots_[buffer];
  if (s.tasks_left.fetch_sub(1, std::memory_order_acq_rel) != 1) return false;
  phase_one_done();
  PhaseOneDone(buffer, CohortOf(s.tag.load(std::memory_order_relaxed)));
  return true;
}

void CohortPipeline::MatchDone(uint32_t buffer, uint32_t /*partition*/) {
  // As TaskDone: every unit's reads of the buffer happen before the last
  // frees it.
  HandOff();
  Slot& s = slots_[buffer];
  const uint32_t n =
      buffer >= buffers_ ? partitions_ * units_ : 1;  // solo: every unit
  if (s.matches_left.fetch_sub(n, std::memory_order_acq_rel) != n) return;
  Free(buffer, CohortOf(s.tag.load(std::memory_order_relaxed)));
}

void CohortPipeline::UpdatePlanned(const std::vector<bool>& involved) {
  {
    std::lock_guard<std::mutex> lock(LockSpinning(mu_), std::adopt_lock);
    to_apply_ = involved;
    applying_ = static_cast<uint32_t>(
        std::count(involved.begin(), involved.end(), true));
    update_state_ = applying_ > 0 ? UpdateState::kApplying
                                  : UpdateState::kFinishReady;
    Changed();
  }
  Wake(kAll);
}

void CohortPipeline::UpdateApplied(uint32_t /*p*/) {
  bool finish = false;
  {
    std::lock_guard<std::mutex> lock(LockSpinning(mu_), std::adopt_lock);
    if (--applying_ == 0) {
      update_state_ = UpdateState::kFinishReady;
      finish = true;
    }
  }
  if (finish) Wake(kAll);
}

void CohortPipeline::UpdateFinished() {
  {
    std::lock_guard<std::mutex> lock(LockSpinning(mu_), std::adopt_lock);
    update_state_ = UpdateState::kNone;
    update_ = nullptr;
    Changed();
  }
  Wake(kAll);
}

}  // namespace service
}  // namespace cohort
