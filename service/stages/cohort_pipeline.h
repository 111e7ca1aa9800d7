// The schedule of the partitioned layout's stages: what each of the P
// partition threads does next. The pipeline only schedules; the engine
// does the work and reports it back. docs/DESIGN.md section 4.3 gives the
// reasons and the measurements behind each rule.
//
// Contract:
//   - PushEvents and PushUpdate queue admitted events and subscription
//     changes in arrival order; Flush and Close stop waiting for company.
//   - Next(p) blocks until partition thread p has work: form a cohort
//     (kForm, by the activation rule of cohort_activation.h), run a phase-1
//     task (kTask: one it prefers first, then another's), match a cohort
//     against one partition's clusters or, solo, all of them (kMatch,
//     oldest cohort first), or one step of a change (kPlanUpdate,
//     kApplyUpdate, kFinishUpdate).
//   - Phase 2 is stealable: a thread with nothing of its own to do (no
//     task, share or cohort to form) matches another partition's share of
//     a cohort (kMatch with `stolen`) once the share has waited
//     `steal_after_ns` since the cohort's phase 1 ended, or at once when
//     that partition's thread is behind by two cohorts or more. So a
//     preempted or slowed thread holds up only the match it took, not the
//     cohorts after it, while in the normal case each partition takes its
//     own shares, and its clusters stay in its cache. With units() > 1, a
//     share is cut into that many runs of the partition's cluster lists,
//     claimed one at a time in order by its thread and thieves alike, so
//     idle threads finish the rest of a share whose thread is slow (a
//     descheduled thread still holds the unit it claimed). Work::unit
//     names the unit; each unit is its own MatchDone.
//   - The thread reports what it did: Formed, TaskDone, MatchDone,
//     UpdatePlanned, UpdateApplied, UpdateFinished.
//   - A split cohort holds one of buffers() mask buffers. From
//     kSoloFromPartitions partitions, a few queued events with other
//     threads busy form solo cohorts, each in its former's own slot.
//
// Thread safety: every method may be called from any thread. No lock is
// on a cohort's path once it is formed: its slot's state is one atomic word
// (the cohort's number and its phase), a thread claims a phase-1 task or a
// partition's share of phase 2 (a unit of it) with one compare-and-swap,
// and the last task done (TaskDone) and the last match done (MatchDone)
// move the slot on with a release store. So a thread preempted anywhere
// holds up only the task or share (unit) it claimed. A mutex guards what
// is left: the queue of events and changes, forming a cohort (one former
// at a time), and the steps of a change. A buffer's contents belong to the
// thread given kForm until Formed; its tasks then write disjoint masks,
// read-only for every thread from the cohort's last TaskDone to its last
// MatchDone. A thread with nothing to do sleeps on a futex (an event
// count: a waiter reads the count before it looks for work and sleeps only
// if the count has not moved since), and a hand-off that gives a sleeper
// work wakes it; counts() counts both.
//
// Invariants: cohorts are numbered in formation order; every unit of every
// partition's share of every cohort with live events is matched exactly
// once (a solo cohort's, all at once, on its former's thread, a split
// one's on any thread); at most buffers() split cohorts are in flight, and
// a thread's solo cohort is in its own slot (buffers() + the thread), at
// most one at a time; a change is planned only when no slot is in use, and
// no cohort forms until it is finished.
#ifndef COHORT_SERVICE_STAGES_COHORT_PIPELINE_H_
#define COHORT_SERVICE_STAGES_COHORT_PIPELINE_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/container/inlined_vector.h"
#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "matcher/cohort_masks.h"
#include "service/stages/cohort_activation.h"
#include "service/stages/publish_job.h"
#include "service/stages/update_batch.h"

namespace cohort {
namespace service {

// One published event waiting in the front dispatch's queue.
struct QueuedEvent {
  PublishJob* job;
  uint32_t event;
  int64_t enqueue_ns;
};

class CohortPipeline {
 public:
  // Split cohorts in flight at once, each in a mask buffer of its own: at
  // least one in phase 1 while another is in phase 2. A buffer that has
  // held a cohort of masks keeps a word per mask slot (1.3 MB on
  // fabret-1m), so more cost memory.
  static constexpr uint32_t kMaxBuffers = 64;
  // The server's choice for `partitions` (--cohorts_in_flight=0): 2 below
  // 4 partitions, 4 from 4, 6 from 16 on. On a 16-core Xeon (bench/
  // reports/2026-11-26-xeon16-cohorts-in-flight), 16 partitions matched
  // fabret-1m 1.40x faster with 4 buffers than with 2, and 8 partitions
  // 1.26x (8 buffers there: 1.03x over 4). At 16 partitions 6 buffers
  // served experiment 3's stream 1.21x faster than 4 and level with 8
  // (bench/reports/2026-11-26-xeon16-buffers); the work model counts
  // the index with them at 1.11x one partition's with its 2 (issue 18
  // step 15 in bench/HISTORY.md; 1.16x before that step halved a buffer).
  static uint32_t DefaultBuffers(uint32_t partitions);
  // `cohorts_in_flight` (--cohorts_in_flight) if set, else the default.
  static uint32_t BuffersFor(uint32_t partitions, uint32_t cohorts_in_flight);
  // The most events queued for an event to go solo. Cohorts this small
  // share little work on fabret-1m, so handing them to the partitions buys
  // less than it costs. (Chosen when the matcher kept them per event, up
  // to about 13 events; since issue 43's refit of
  // matcher::internal::CohortKeep it keeps fabret-1m's cohorts of 6 and
  // more in masks, on the solo thread as on the partitions. The bound
  // awaits a 16-core machine to be measured again.)
  static constexpr size_t kSoloCohort = 12;
  // Solo cohorts from this many partitions on (see above): they were made
  // for a 16-core server, where splitting a few events over every core
  // costs a wake-up per core; on two cores splitting costs one.
  static constexpr uint32_t kSoloFromPartitions = 4;
  // Whether a pipeline of `partitions` forms solo cohorts.
  static bool SoloCohortsFor(uint32_t partitions) {
    return partitions >= kSoloFromPartitions;
  }

  // How long a share of phase 2 waits for its own thread before another
  // may take it: a wake-up and a little more. Shares of partitions whose
  // thread is two cohorts behind may be taken at once.
  static constexpr int64_t kStealAfterNs = 20'000;
  static constexpr int64_t kNoStealing = -1;
  // Steal units: a partition's share of a cohort is cut into `units` runs
  // of its cluster lists (matcher::PartitionedIndex::MatchPartitionUnit),
  // each claimed on its own, in order, by the partition's thread or, by the
  // rule above, a thief. One unit is the whole share.
  static constexpr uint32_t kMaxUnits = 32;
  // On 2 cores (bench/reports/2026-11-28-epyc2-issue43-steal-units) 16
  // threads served 0.95-0.98x with 2 units what they served with whole
  // shares, 0.90x with 4 and 0.82x with 8 (a trip through Next per unit);
  // 2 partitions, hogged or not, 0.98-1.04x with 4. The work model leaves
  // units little to win at 16 partitions: stealing whole shares already
  // keeps the slowest core within 1% of the mean.
  static constexpr uint32_t kDefaultUnits = 1;
  // The server's choice for `partitions` (--steal_units=0): kDefaultUnits
  // for every partition count, until a many-core machine says otherwise.
  static uint32_t DefaultUnits(uint32_t partitions);
  // `steal_units` (--steal_units) if set, else the default.
  static uint32_t UnitsFor(uint32_t partitions, uint32_t steal_units) {
    return steal_units > 0 ? steal_units : DefaultUnits(partitions);
  }
  // OK if `steal_units` (--steal_units; 0: the default) is at most
  // kMaxUnits, else INVALID_ARGUMENT naming the flag and the limit.
  static absl::Status CheckStealUnits(uint32_t steal_units);

  // The most tasks of one cohort one partition may prefer (Formed).
  static constexpr size_t kMaxQueueTasks = (size_t{1} << 20) - 1;

  struct Work {
    enum class Kind {
      kForm,          // form a cohort of `events` in `buffer`
      kTask,          // run phase-1 task `task` of `buffer`'s cohort
      kMatch,         // phase 2 of `partition` (solo: of every partition)
      kPlanUpdate,    // plan `update` (exclusive)
      kApplyUpdate,   // apply this partition's part of the planned update
      kFinishUpdate,  // finish the update (exclusive)
    };
    Kind kind = Kind::kForm;
    uint32_t buffer = 0;
    uint64_t cohort = 0;  // kForm, kTask, kMatch: its number, from 0
    size_t task = 0;
    uint32_t partition = 0;  // kMatch: whose clusters (unless all_partitions)
    // kMatch: which of units() runs of `partition`'s clusters (unless
    // all_partitions: then every unit of every partition).
    uint32_t unit = 0;
    // kMatch of a solo cohort: match every partition's clusters in turn,
    // 0 to P-1, then report them all with one MatchDone.
    bool all_partitions = false;
    // kForm: run the whole cohort yourself.
    bool solo = false;
    // kMatch: `partition` is another thread's, taken because it is behind.
    bool stolen = false;
    // kMatch: finish the events this match completes yourself rather than
    // hand them to the reply stage: the cohort is solo, or so small that
    // a hand-off would cost more than the reply.
    bool finish_now = false;
    std::vector<QueuedEvent> events;  // kForm
    // kForm: events queued when the cohort was taken (these included).
    // kMatch: events in cohorts ready for this partition (this one
    // included).
    size_t queue_length = 0;
    int64_t ready_ns = 0;  // kMatch: when the cohort's phase 1 finished
    UpdateBatch* update = nullptr;  // kPlanUpdate
  };

  // Events in the whole server, admitted and not yet answered
  // (Admission::in_flight); called from Next on any partition thread,
  // sometimes with the pipeline's lock held, so it must be thread-safe and
  // not call back into the pipeline. With solo cohorts, a lone event that
  // is not alone in the server runs solo; without, a cohort that holds
  // every event in the server is answered by its last partition.
  using InServerFn = std::function<uint64_t()>;

  // REQUIRES: partitions >= 1; 1 <= cohort_max <= 64;
  // 1 <= buffers <= kMaxBuffers; 1 <= units <= kMaxUnits. Without
  // `in_server`, a lone event with every other thread idle is always
  // split, and without `solo_cohorts` every cohort is (the server passes
  // SoloCohortsFor(partitions)).
  // With `steal_after_ns` < 0 (kNoStealing), partition p's shares go to
  // thread p only. `cpus` > 0: the CPUs this pipeline's threads may run on
  // (the server: the usable CPUs, shared out over the index copies); a
  // hand-off then wakes no more sleepers than there are CPUs not already
  // running a partition thread (0: as many as it has work for).
  CohortPipeline(uint32_t partitions, uint32_t cohort_max,
                 int64_t cohort_wait_ns, uint32_t buffers,
                 InServerFn in_server = nullptr, bool solo_cohorts = true,
                 int64_t steal_after_ns = kStealAfterNs,
                 uint32_t units = kDefaultUnits, uint32_t cpus = 0);
  CohortPipeline(const CohortPipeline&) = delete;
  CohortPipeline& operator=(const CohortPipeline&) = delete;

  // The front dispatch: queues events [first, first + count) of `job`
  // (count 0: to its end), or a change.
  void PushEvents(PublishJob* job, int64_t now_ns, uint32_t first = 0,
                  uint32_t count = 0);
  void PushUpdate(UpdateBatch* update, int64_t now_ns);
  // From now on cohorts form as soon as events are queued (shutdown).
  void Flush();
  // After Close, Next returns false once everything queued is done.
  // Implies Flush.
  void Close();

  // Blocks until partition `p` has work and describes it in *work; false
  // when closed and drained.
  bool Next(uint32_t p, Work* work);

  // A test's hook, called on the calling thread with no lock held at each
  // hand-off: as Next returns work, and on entering PushEvents, Formed,
  // TaskDone and MatchDone. Tests set one that yields or sleeps at random,
  // to preempt threads where hand-offs race (engine_test). Null, the
  // default, costs a relaxed load per hand-off. Set it while no pipeline
  // runs.
  using HandOffHook = void (*)();
  static void SetHandOffHookForTesting(HandOffHook hook);

  // What the pipeline has counted so far; callers with several pipelines
  // (index copies) add them up.
  struct Counts {
    uint64_t steals = 0;  // matches stolen (Work::stolen)
    uint64_t sleeps = 0;  // a partition thread found nothing to do, slept
    // Threads woken by a hand-off (a sleep that ends at its deadline is
    // not a wake-up).
    uint64_t wakeups = 0;
    Counts& operator+=(const Counts& other) {
      steals += other.steals;
      sleeps += other.sleeps;
      wakeups += other.wakeups;
      return *this;
    }
  };
  Counts counts() const {
    return Counts{steals_.load(std::memory_order_relaxed),
                  sleeps_.load(std::memory_order_relaxed),
                  wakeups_.load(std::memory_order_relaxed)};
  }

  // Mask buffers: split cohorts in flight at most.
  uint32_t buffers() const { return buffers_; }
  // Steal units per partition share (see kMaxUnits).
  uint32_t units() const { return units_; }
  // Work::buffer lies in [0, slots()): the mask buffers, then, with solo
  // cohorts, one slot per partition thread for its solo cohort.
  uint32_t slots() const {
    return buffers_ + (solo_cohorts_ ? partitions_ : 0);
  }

  // The cohort of kForm `buffer` has `events` events (0: every event had
  // expired, and no partition need match it) and phase-1 tasks 0 ..
  // preferred.size() - 1 left to run, task t preferably by partition
  // preferred[t] % partitions (none: its phase 1 is done). Returns true if
  // its phase 1 is done now. REQUIRES: fewer than kMaxQueueTasks tasks
  // preferred by any one partition.
  bool Formed(uint32_t buffer, absl::Span<const uint32_t> preferred,
              size_t events) {
    return Formed(buffer, preferred, events, [] {});
  }
  // As above; if its phase 1 is done now (and events > 0),
  // `phase_one_done` runs first, before any thread may take its phase 2
  // (so what it records is there before the cohort's events are
  // answered).
  bool Formed(uint32_t buffer, absl::Span<const uint32_t> preferred,
              size_t events, absl::FunctionRef<void()> phase_one_done);
  // A task of `buffer` ran. Returns true if it was the cohort's last, and
  // then runs `phase_one_done` first, as Formed does.
  bool TaskDone(uint32_t buffer) { return TaskDone(buffer, [] {}); }
  bool TaskDone(uint32_t buffer, absl::FunctionRef<void()> phase_one_done);
  // A unit of `buffer`'s cohort (Work::unit) is matched against
  // partition `partition`'s clusters; for a solo cohort
  // (Work::all_partitions), the cohort against every partition's.
  void MatchDone(uint32_t buffer, uint32_t partition);
  // The update is planned; `involved[p]` says whether partition p has a
  // part to apply.
  void UpdatePlanned(const std::vector<bool>& involved);
  void UpdateApplied(uint32_t p);
  void UpdateFinished();

 private:
  struct Item {
    QueuedEvent event;                // when update == nullptr
    UpdateBatch* update = nullptr;
  };
  enum SlotState : uint64_t { kFree = 0, kForming, kPhase1, kPhase2 };
  // A claim word's low bits count units claimed (0 .. kMaxUnits).
  static constexpr int kUnitBits = 6;
  static_assert(kMaxUnits < (1 << kUnitBits), "units fit a claim word");
  // A slot's state word: (cohort + 1) << 2 | SlotState; 0 for a slot never
  // used. A cohort's number is unique, so a thread that read the word and
  // then claims by it cannot claim in a later cohort of the slot.
  static uint64_t Tag(uint64_t cohort, SlotState state) {
    return (cohort + 1) << 2 | state;
  }
  static SlotState StateOf(uint64_t tag) {
    return static_cast<SlotState>(tag & 3);
  }
  static uint64_t CohortOf(uint64_t tag) { return (tag >> 2) - 1; }
  // The tasks a partition prefers, not yet handed out: it takes from the
  // tail, others steal from the head. `range` packs the cohort's number
  // (its low 24 bits), head and tail (20 bits each); one compare-and-swap
  // claims a task. `tasks` is written by the former before the slot's
  // phase 1 is published and read by a thread only once it has claimed
  // one of them.
  struct TaskQueue {
    std::vector<uint32_t> tasks;
    std::atomic<uint64_t> range{0};
  };
  struct Slot {
    std::atomic<uint64_t> tag{0};
    // Set by the former, published by the tag's release store; read by
    // scans that may be a cohort late, so atomics.
    std::atomic<size_t> events{0};
    std::atomic<int64_t> ready_ns{0};
    std::atomic<size_t> tasks_left{0};
    std::atomic<uint32_t> matches_left{0};
    // By partition: ClaimWord(c, n), n the units claimed of the share of
    // c, the last cohort in this slot that any were claimed of (a solo
    // cohort claims all in partition 0's). Only rises, so a claim by a
    // stale reading fails.
    std::unique_ptr<std::atomic<uint64_t>[]> claims;
    std::unique_ptr<TaskQueue[]> queues;  // by partition
  };
  // A slot in use as a scan saw it.
  struct Seen {
    uint32_t buffer;
    uint64_t tag;
  };
  enum class UpdateState { kNone, kPlanning, kApplying, kFinishReady,
                           kFinishing };

  // Next without the test's hook.
  bool NextUnhooked(uint32_t p, Work* work);
  // Next's choices, in priority order; each fills *work and returns true if
  // it applies. The cohort ones take no lock.
  bool TakeUpdateWork(uint32_t p, Work* work)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool TakeCohortWork(uint32_t p, Work* work);
  // Forms a cohort on thread p if the activation rule allows; otherwise
  // sets *deadline_ns to when the oldest event's wait runs out (0: none).
  bool TakeForm(uint32_t p, Work* work, int64_t* deadline_ns)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool TakePlan(Work* work) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Another partition's share of a cohort in phase 2, when the rule in
  // the contract allows; otherwise lowers *deadline_ns (0: none) to when
  // the first share waiting for its own thread may be taken.
  bool TakeStolenMatch(uint32_t p, Work* work, int64_t* deadline_ns);
  // A claim word (Slot::claims): `claimed` units of `cohort`'s share.
  static uint64_t ClaimWord(uint64_t cohort, uint32_t claimed) {
    return (cohort + 1) << kUnitBits | claimed;
  }
  // Whether every unit of partition q's share of phase 2 of `cohort` (or
  // of a later cohort) in `slot` has been claimed.
  bool Claimed(const Slot& slot, uint64_t cohort, uint32_t q) const {
    return slot.claims[q].load(std::memory_order_relaxed) >=
           ClaimWord(cohort, units_);
  }
  // Whether no unit of it has.
  static bool Untouched(const Slot& slot, uint64_t cohort, uint32_t q) {
    return slot.claims[q].load(std::memory_order_relaxed) <=
           ClaimWord(cohort, 0);
  }
  // Claims the next unit of partition q's share of phase 2 of `cohort` in
  // `slot` (*unit), or, `all`, every unit of it (*unit = 0; the first
  // claim of the share only).
  bool ClaimMatch(Slot& slot, uint64_t cohort, uint32_t q, bool all,
                  uint32_t* unit);
  // Describes unit `unit` of partition q's match of buffer b's cohort,
  // claimed.
  void TakeMatch(uint32_t b, uint64_t cohort, uint32_t q, uint32_t unit,
                 Work* work);
  // Split cohorts in flight of whose share partition q has claimed no
  // unit yet.
  uint32_t Backlog(uint32_t q) const;
  // Claims a phase-1 task of `cohort` in `slot` for partition p: one it
  // prefers, else another's; false if none is left.
  bool ClaimTask(Slot& slot, uint64_t cohort, uint32_t p, size_t* task);
  bool InFlight() const;
  void PhaseOneDone(uint32_t b, uint64_t cohort);
  void Free(uint32_t b, uint64_t cohort);
  // The slots in use, oldest cohort first.
  absl::InlinedVector<Seen, 32> InFlightByAge() const;
  // Records that the locked state changed (needs_lock_), under mu_.
  void Changed() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves the event count on and wakes up to `n` sleeping threads; with
  // `cpu_bound` (work any thread may do), no more than CpuRoom.
  void Wake(int n, bool cpu_bound = false);
  // Wakes up to `n` sleeping threads, the event count moved already.
  void WakeSleepers(int n);
  // How many sleepers a hand-off of work any thread may do wakes at most,
  // `idle` of the threads sleeping (idle_ read after the event count
  // moved): the CPUs not running a partition thread, with `cpus` given;
  // else all. A thread woken with every CPU busy only waits for one, and
  // the threads running take the work (or steal it) when they next look.
  int CpuRoom(uint32_t idle) const;
  // Sleeps while the event count is `seen`, until `deadline_ns` (0: no
  // deadline) or a Wake.
  void Sleep(uint32_t seen, int64_t deadline_ns);

  const uint32_t partitions_;
  const CohortActivation activation_;
  const uint32_t buffers_;
  const InServerFn in_server_;
  const bool solo_cohorts_;
  const int64_t steal_after_ns_;
  const uint32_t units_;
  const uint32_t cpus_;
  std::unique_ptr<Slot[]> slots_;
  std::atomic<uint64_t> steals_{0};
  std::atomic<uint64_t> sleeps_{0};
  std::atomic<uint64_t> wakeups_{0};
  // The event count sleepers wait on, and how many sleep or are about to.
  // (Not over-aligned: an over-aligned slot array came out misaligned
  // under the sanitizers' allocator.)
  std::atomic<uint32_t> epoch_{0};
  std::atomic<uint32_t> idle_{0};
  // Mirrors of the locked state that lock-free paths read: events queued,
  // changes queued or under way, closed. needs_lock_: Next has something
  // to do under the lock (events or a change queued, a change under way,
  // or closed).
  std::atomic<size_t> queued_{0};
  std::atomic<bool> changes_{false};
  std::atomic<bool> closed_{false};
  std::atomic<bool> needs_lock_{false};
  std::mutex mu_;
  std::deque<Item> items_ ABSL_GUARDED_BY(mu_);
  size_t updates_ ABSL_GUARDED_BY(mu_) = 0;  // changes in items_
  uint64_t formed_ ABSL_GUARDED_BY(mu_) = 0;  // cohorts formed so far
  UpdateState update_state_ ABSL_GUARDED_BY(mu_) = UpdateState::kNone;
  UpdateBatch* update_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::vector<bool> to_apply_ ABSL_GUARDED_BY(mu_);  // by partition
  uint32_t applying_ ABSL_GUARDED_BY(mu_) = 0;
  bool flushing_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STAGES_COHORT_PIPELINE_H_
