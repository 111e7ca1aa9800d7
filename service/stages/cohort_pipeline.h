// The schedule of the partitioned layout's stages (docs/DESIGN.md section 4):
// what each of the P partition threads does next.
//
//   front dispatch --> predicate stage ----------> partition 0..P-1 --> reply
//   one queue of       phase 1 of a cohort, cut     phase 2 over its own
//   events and         into tasks that any idle     clusters, reading the
//   changes            partition thread takes       cohort's masks
//
// The front stage pushes every admitted event, and every subscription
// change, onto one queue, in arrival order (PushEvents, PushUpdate). A
// cohort is formed once for the whole server: when a mask buffer is free
// and the events at the head of the queue trip an activation threshold —
// `cohort_max` of them, the oldest `cohort_wait_ns` old, a change queued
// behind them, or a flush — one partition thread takes up to cohort_max of
// them (kForm) and starts its phase 1 (PredicateTable::BeginCohort), which
// lists the cohort's tasks, each with the partition it prefers. Partition
// threads then take tasks (kTask): their own first — a task's preference
// follows the part of the predicate table it walks (CohortMasks::task_part),
// so that part stays in one core's caches from cohort to cohort — and,
// with none of their own left, another's. Once all have run, every
// partition matches the cohort against its own clusters (kMatch), oldest
// cohort first. A buffer is free again once every partition has matched
// its cohort. With two or more buffers (buffers()), phase 1 of the next
// cohort runs while partitions still match the previous one, and a
// partition that finishes early spends its time on the next cohort's tasks:
// the predicate stage's work goes to whichever cores are idle. More buffers
// let a partition that finished early run further ahead, so that the
// partitions' uneven shares of one cohort even out over several instead of
// each cohort waiting for its slowest partition (DefaultBuffers).
//
// From kSoloFromPartitions partitions on (SoloCohortsFor), when at most
// kSoloCohort events are queued and some other partition thread is busy,
// the oldest forms a *solo* cohort of its own, run whole by the thread
// that forms it: its phase 1, every partition's match (one piece of work,
// Work::all_partitions), and its reply. Splitting so little work over
// busy cores costs more in hand-offs (a wake-up each, tens of
// microseconds) and barriers than it saves, and
// solo cohorts run side by side on the cores, as a threaded server's
// requests do. A solo cohort holds no mask buffer (a lone event is matched
// per event, without masks) but a slot of its former's own, so that every
// core can run one at once however many split cohorts fill the buffers:
// with two buffers shared, a 16-core server under 16 closed-loop clients
// could match at most two events at a time (bench/reports/
// 2026-11-26-xeon16-exp3: 14,241 events/s against threaded's 31,306).
// Events left queued behind a solo cohort wake an idle thread, if there is
// one. With every other thread idle the events queued are split over them,
// even a lone event (its match then takes a fraction of the time), unless
// it is not alone in the server (`in_server`: events admitted and not yet
// answered): then other events are on their way, as from two or more
// closed-loop clients, and each runs whole on a core of its own (measured
// on 2 partitions before solo cohorts stopped applying there: 2 clients'
// mean response 0.280 -> 0.245 ms, level with threaded).
// Once more events queue, cohorts take them all and are split.
// The events of a cohort of at most kSoloCohort events are finished by the
// thread that completes them rather than handed to the reply stage
// (kMatch's finish_now): on many cores one reply thread would not keep up.
//
// Below kSoloFromPartitions partitions there are no solo cohorts: every
// cohort takes all the events queued and is split over the partitions, and
// its events go to the reply stage, which answers them in batches while
// the partitions go on to the next cohort. Only a cohort that holds every
// event in the server (`in_server`: nothing else to do) is answered by the
// thread that completes it, saving the hand-off's latency. On two cores
// under 8 and 16 closed-loop clients this answered 5-10% sooner than solo
// cohorts answered inline, and sooner than the threaded server
// (bench/reports/2026-11-26-epyc2-exp1-accounting).
//
// A subscription change waits at the head of the queue until no cohort is
// in flight, then is applied in three steps: one thread plans it against
// the shared predicate table (kPlanUpdate), each partition involved applies
// its rows (kApplyUpdate, at once on their threads), and one thread
// finishes it (kFinishUpdate: releases predicates, answers). No cohort
// forms meanwhile, so predicate ids are stable while a cohort is in flight,
// and a publish admitted after a change was answered is matched against it.
//
// The pipeline only schedules: the engine does the work and reports it
// (Formed, TaskDone, MatchDone, UpdatePlanned, UpdateApplied,
// UpdateFinished).
//
// Thread safety: every method may be called from any thread; one mutex
// guards all state (held for a few hundred nanoseconds per call) but a
// slot's two counts of work done, which are atomics. Every partition
// thread contends for the mutex: on 16 cores it is what limits the
// pipeline (bench/reports/2026-11-27-xeon16-diagnosis: there, in 20 runs
// of 21, 29-48% of the threads' time went to waiting in Next and 12-23% to
// taking the lock to report work done). So the predicate stage hands its
// tasks out in batches of about 20 us (EngineOptions::
// phase1_batch_positions), TaskDone and MatchDone take the lock only for
// a cohort's last task and last match, and the lock is taken by spinning
// on try_lock for about a microsecond before blocking. Next blocks. A
// buffer's contents belong to the thread given kForm until it calls
// Formed; its tasks then write disjoint masks, which are read-only for
// every thread from the cohort's last TaskDone to its last MatchDone. The
// mutex orders those hand-offs, with the counts: each task's and match's
// release on its count is acquired by the last, which then takes the
// lock.
// Invariants: cohorts are numbered in formation order; every partition
// matches every cohort with live events exactly once (a solo cohort's on
// its former's thread); at most buffers() split cohorts are in flight, and
// a thread's solo cohort is in its own slot (buffers() + the thread), at
// most one at a time; a change is planned only when no slot is in use, and
// no cohort forms until it is finished.
#ifndef COHORT_SERVICE_STAGES_COHORT_PIPELINE_H_
#define COHORT_SERVICE_STAGES_COHORT_PIPELINE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
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
  // the index with them at 1.11x one partition's with its 2 (bench/
  // reports/2026-11-26-xeon2-issue18-step15-split-ranges; 1.16x before
  // that step halved a buffer).
  static uint32_t DefaultBuffers(uint32_t partitions);
  // `cohorts_in_flight` (--cohorts_in_flight) if set, else the default.
  static uint32_t BuffersFor(uint32_t partitions, uint32_t cohorts_in_flight);
  // The most events queued for an event to go solo. Cohorts this small
  // share little work on fabret-1m (the matcher keeps them per event there:
  // matcher::internal::CohortKeep; its crossover lies at about 13 events),
  // so handing them to the partitions buys less than it costs.
  static constexpr size_t kSoloCohort = 12;
  // Solo cohorts from this many partitions on (see above): they were made
  // for a 16-core server, where splitting a few events over every core
  // costs a wake-up per core; on two cores splitting costs one.
  static constexpr uint32_t kSoloFromPartitions = 4;
  // Whether a pipeline of `partitions` forms solo cohorts.
  static bool SoloCohortsFor(uint32_t partitions) {
    return partitions >= kSoloFromPartitions;
  }

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
    // kMatch of a solo cohort: match every partition's clusters in turn,
    // 0 to P-1, then report them all with one MatchDone.
    bool all_partitions = false;
    // kForm: run the whole cohort yourself.
    bool solo = false;
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
  // (Admission::in_flight); called with the pipeline's lock held, so it
  // must not call back into the pipeline. With solo cohorts, a lone event
  // that is not alone in the server runs solo; without, a cohort that
  // holds every event in the server is answered by its last partition.
  using InServerFn = std::function<uint64_t()>;

  // REQUIRES: partitions >= 1; 1 <= cohort_max <= 64;
  // 1 <= buffers <= kMaxBuffers. Without `in_server`, a lone event with
  // every other thread idle is always split, and without `solo_cohorts`
  // every cohort is (the server passes SoloCohortsFor(partitions)).
  CohortPipeline(uint32_t partitions, uint32_t cohort_max,
                 int64_t cohort_wait_ns, uint32_t buffers,
                 InServerFn in_server = nullptr, bool solo_cohorts = true);
  CohortPipeline(const CohortPipeline&) = delete;
  CohortPipeline& operator=(const CohortPipeline&) = delete;

  // The front dispatch: queues every event of `job`, or a change.
  void PushEvents(PublishJob* job, int64_t now_ns);
  void PushUpdate(UpdateBatch* update, int64_t now_ns);
  // From now on cohorts form as soon as events are queued (shutdown).
  void Flush();
  // After Close, Next returns false once everything queued is done.
  // Implies Flush.
  void Close();

  // Blocks until partition `p` has work and describes it in *work; false
  // when closed and drained.
  bool Next(uint32_t p, Work* work);

  // Mask buffers: split cohorts in flight at most.
  uint32_t buffers() const { return buffers_; }
  // Work::buffer lies in [0, slots()): the mask buffers, then, with solo
  // cohorts, one slot per partition thread for its solo cohort.
  uint32_t slots() const {
    return buffers_ + (solo_cohorts_ ? partitions_ : 0);
  }

  // The cohort of kForm `buffer` has `events` events (0: every event had
  // expired, and no partition need match it) and phase-1 tasks 0 ..
  // preferred.size() - 1 left to run, task t preferably by partition
  // preferred[t] % partitions (none: its phase 1 is done). Returns true if
  // its phase 1 is done now.
  bool Formed(uint32_t buffer, absl::Span<const uint32_t> preferred,
              size_t events);
  // A task of `buffer` ran. Returns true if it was the cohort's last.
  bool TaskDone(uint32_t buffer);
  // `buffer`'s cohort is matched against partition `partition`'s
  // clusters; for a solo cohort (Work::all_partitions), against every
  // partition's.
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
  enum class SlotState { kFree, kForming, kPhase1, kPhase2 };
  // The tasks a partition prefers, not yet handed out by it: it takes from
  // the back, others steal from `head`.
  struct TaskQueue {
    std::vector<uint32_t> tasks;
    size_t head = 0;
  };
  struct Slot {
    SlotState state = SlotState::kFree;
    uint64_t cohort = 0;
    size_t events = 0;
    size_t tasks = 0;
    size_t unclaimed = 0;
    // Counted without the lock (TaskDone, MatchDone): only a cohort's
    // last task and last match take it. Reset under the lock when the
    // slot is taken; no thread reports to a free slot.
    std::atomic<size_t> tasks_done{0};
    std::atomic<uint32_t> matched{0};
    int64_t ready_ns = 0;
    bool solo = false;
    uint32_t owner = 0;             // solo: the thread that runs it all
    std::vector<bool> taken;        // by partition: its match handed out
    std::vector<TaskQueue> queues;  // by partition
    std::vector<bool> claimed;      // by task
  };
  enum class UpdateState { kNone, kPlanning, kApplying, kFinishReady,
                           kFinishing };

  // Next's choices, in priority order; each fills *work and returns true if
  // it applies. REQUIRES: mu_ held.
  bool TakeUpdateWork(uint32_t p, Work* work)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool TakeCohortWork(uint32_t p, Work* work)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forms a cohort on thread p if the activation rule allows; otherwise
  // sets *deadline_ns to when the oldest event's wait runs out (0: none).
  bool TakeForm(uint32_t p, Work* work, int64_t* deadline_ns)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool TakePlan(Work* work) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A task of `slot` for partition p: one it prefers, else another's.
  // REQUIRES: slot.unclaimed > 0.
  static size_t Claim(Slot& slot, uint32_t p);
  bool InFlight() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PhaseOneDone(Slot& slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Free(Slot& slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The buffers in use, oldest cohort first.
  absl::InlinedVector<uint32_t, 32> InFlightByAge() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint32_t partitions_;
  const CohortActivation activation_;
  const uint32_t buffers_;
  const InServerFn in_server_;
  const bool solo_cohorts_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> items_ ABSL_GUARDED_BY(mu_);
  size_t updates_ ABSL_GUARDED_BY(mu_) = 0;  // changes in items_
  std::vector<Slot> slots_ ABSL_GUARDED_BY(mu_);
  uint64_t formed_ ABSL_GUARDED_BY(mu_) = 0;  // cohorts formed so far
  UpdateState update_state_ ABSL_GUARDED_BY(mu_) = UpdateState::kNone;
  UpdateBatch* update_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::vector<bool> to_apply_ ABSL_GUARDED_BY(mu_);  // by partition
  uint32_t applying_ ABSL_GUARDED_BY(mu_) = 0;
  uint32_t idle_ ABSL_GUARDED_BY(mu_) = 0;  // threads waiting in Next
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool flushing_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STAGES_COHORT_PIPELINE_H_
