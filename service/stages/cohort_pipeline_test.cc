// Tests of CohortPipeline, the partitioned layout's schedule, without an
// index: the activation rule (cohort_max, the wait limit, a change queued
// behind, flush), and — with P threads doing the work it hands out, also
// under ThreadSanitizer — its invariants: every event is in exactly one
// cohort, formed once; every task of a cohort runs exactly once, before any
// partition matches it; every partition matches every cohort once, on its
// own thread, or a solo cohort's on its former's; at most buffers() split
// cohorts are in flight, a partition runs that many ahead of the slowest,
// and each thread has at most one solo cohort, in its own slot; a change
// is planned only with no cohort in flight, applied by exactly the
// partitions involved, and no cohort work runs until it is finished; Close
// drains everything.
#include "service/stages/cohort_pipeline.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "gtest/gtest.h"

namespace cohort {
namespace service {
namespace {

using Kind = CohortPipeline::Work::Kind;
constexpr int64_t kForever = int64_t{3600} * 1000 * 1000 * 1000;
// The scripted tests below say which thread does what: no stealing there
// (the stealing tests and the threaded one have it).
constexpr int64_t kOwnersOnly = CohortPipeline::kNoStealing;

// A publish of `n` events (only their count matters to the pipeline).
std::unique_ptr<PublishJob> Job(size_t n) {
  auto job = std::make_unique<PublishJob>();
  job->events.resize(n);
  return job;
}

// Next(p) on another thread, so a test can see whether it blocks.
std::future<CohortPipeline::Work> NextAsync(CohortPipeline& pipeline,
                                            uint32_t p) {
  return std::async(std::launch::async, [&pipeline, p] {
    CohortPipeline::Work work;
    EXPECT_TRUE(pipeline.Next(p, &work));
    return work;
  });
}

bool Blocks(std::future<CohortPipeline::Work>& f) {
  return f.wait_for(std::chrono::milliseconds(50)) ==
         std::future_status::timeout;
}

// Starts partition threads 0 and 1, working until the pipeline closes:
// each kForm is shown to `on_form`, then reported formed with no tasks;
// each kMatch is done at once.
std::vector<std::thread> FormAndMatch(
    CohortPipeline& pipeline,
    std::function<void(const CohortPipeline::Work&)> on_form) {
  std::vector<std::thread> threads;
  for (uint32_t p : {0u, 1u}) {
    threads.emplace_back([&pipeline, on_form, p] {
      CohortPipeline::Work work;
      while (pipeline.Next(p, &work)) {
        if (work.kind == Kind::kForm) {
          on_form(work);
          pipeline.Formed(work.buffer, {}, work.events.size());
        } else if (work.kind == Kind::kMatch) {
          pipeline.MatchDone(work.buffer, work.partition);
        }
      }
    });
  }
  return threads;
}

TEST(CohortPipeline, FormsOnceCohortMaxEventsWait) {
  CohortPipeline pipeline(1, 4, kForever, 2);
  auto job = Job(3);
  pipeline.PushEvents(job.get(), MonotonicNanos());
  auto next = NextAsync(pipeline, 0);
  EXPECT_TRUE(Blocks(next)) << "formed before cohort_max events waited";
  auto more = Job(2);
  pipeline.PushEvents(more.get(), MonotonicNanos());
  CohortPipeline::Work work = next.get();
  ASSERT_EQ(work.kind, Kind::kForm);
  ASSERT_EQ(work.events.size(), 4u);
  EXPECT_EQ(work.queue_length, 5u);
  EXPECT_EQ(work.events[3].job, more.get());
  EXPECT_TRUE(pipeline.Formed(work.buffer, {}, 4));
  ASSERT_TRUE(pipeline.Next(0, &work));
  EXPECT_EQ(work.kind, Kind::kMatch);
  pipeline.MatchDone(work.buffer, 0);
  pipeline.Close();  // the fifth event goes at once now
  ASSERT_TRUE(pipeline.Next(0, &work));
  EXPECT_EQ(work.kind, Kind::kForm);
  EXPECT_EQ(work.events.size(), 1u);
  pipeline.Formed(work.buffer, {}, 1);
  ASSERT_TRUE(pipeline.Next(0, &work));
  pipeline.MatchDone(work.buffer, 0);
  EXPECT_FALSE(pipeline.Next(0, &work));
}

TEST(CohortPipeline, FormsWhenTheOldestHasWaited) {
  constexpr int64_t kWaitNs = 20 * 1000 * 1000;
  CohortPipeline pipeline(1, 64, kWaitNs, 2);
  auto job = Job(1);
  const int64_t pushed = MonotonicNanos();
  pipeline.PushEvents(job.get(), pushed);
  CohortPipeline::Work work;
  ASSERT_TRUE(pipeline.Next(0, &work));
  EXPECT_EQ(work.kind, Kind::kForm);
  EXPECT_GE(MonotonicNanos() - pushed, kWaitNs);
}

TEST(CohortPipeline, WaitZeroRunsWhatIsQueued) {
  CohortPipeline pipeline(2, 64, 0, 2, nullptr, true, kOwnersOnly);
  auto job = Job(CohortPipeline::kSoloCohort + 2);
  pipeline.PushEvents(job.get(), MonotonicNanos());
  CohortPipeline::Work work;
  ASSERT_TRUE(pipeline.Next(1, &work));
  EXPECT_EQ(work.kind, Kind::kForm);
  EXPECT_EQ(work.events.size(), CohortPipeline::kSoloCohort + 2);
  EXPECT_FALSE(work.solo);
}

// Events ahead of a change form a cohort at once (the change waits for
// them); the change is planned only once that cohort is matched everywhere,
// and events behind it wait until it is finished.
TEST(CohortPipeline, ChangeWaitsForTheCohortsBeforeIt) {
  CohortPipeline pipeline(2, 64, kForever, 2, nullptr, true, kOwnersOnly);
  auto before = Job(CohortPipeline::kSoloCohort + 1), after = Job(1);
  UpdateBatch update;
  pipeline.PushEvents(before.get(), MonotonicNanos());
  pipeline.PushUpdate(&update, MonotonicNanos());
  pipeline.PushEvents(after.get(), MonotonicNanos());
  CohortPipeline::Work work;
  ASSERT_TRUE(pipeline.Next(0, &work));
  ASSERT_EQ(work.kind, Kind::kForm);
  EXPECT_EQ(work.events.size(), CohortPipeline::kSoloCohort + 1);
  EXPECT_FALSE(work.solo);
  const uint32_t buffer = work.buffer;
  pipeline.Formed(buffer, {}, work.events.size());
  ASSERT_TRUE(pipeline.Next(0, &work));
  ASSERT_EQ(work.kind, Kind::kMatch);
  pipeline.MatchDone(buffer, 0);
  auto planner = NextAsync(pipeline, 0);
  EXPECT_TRUE(Blocks(planner)) << "planned with partition 1 still matching";
  ASSERT_TRUE(pipeline.Next(1, &work));
  ASSERT_EQ(work.kind, Kind::kMatch);
  pipeline.MatchDone(buffer, 1);
  work = planner.get();
  ASSERT_EQ(work.kind, Kind::kPlanUpdate);
  EXPECT_EQ(work.update, &update);
  auto other = NextAsync(pipeline, 1);
  EXPECT_TRUE(Blocks(other)) << "work handed out while a change is planned";
  pipeline.UpdatePlanned({false, true});  // only partition 1 has rows
  work = other.get();
  EXPECT_EQ(work.kind, Kind::kApplyUpdate);
  auto finisher = NextAsync(pipeline, 0);
  EXPECT_TRUE(Blocks(finisher)) << "finished before partition 1 applied";
  pipeline.UpdateApplied(1);
  work = finisher.get();
  EXPECT_EQ(work.kind, Kind::kFinishUpdate);
  pipeline.UpdateFinished();
  pipeline.Flush();
  ASSERT_TRUE(pipeline.Next(1, &work));
  EXPECT_EQ(work.kind, Kind::kForm);
  ASSERT_EQ(work.events.size(), 1u);
  EXPECT_EQ(work.events[0].job, after.get());
}

// A cohort whose events all expired frees its buffer without a match.
TEST(CohortPipeline, CohortWithNoLiveEventsNeedsNoMatch) {
  CohortPipeline pipeline(2, 1, 0, 2, nullptr, true, kOwnersOnly);
  auto job = Job(2);
  pipeline.PushEvents(job.get(), MonotonicNanos());
  CohortPipeline::Work work;
  ASSERT_TRUE(pipeline.Next(0, &work));
  ASSERT_EQ(work.kind, Kind::kForm);
  pipeline.Formed(work.buffer, {0, 1, 2, 3, 4}, 0);
  ASSERT_TRUE(pipeline.Next(1, &work));
  ASSERT_EQ(work.kind, Kind::kForm) << "the empty cohort was handed out";
  EXPECT_TRUE(work.solo);
  pipeline.Formed(work.buffer, {}, 1);
  // A solo cohort: its former matches every partition, in one piece of
  // work, and one MatchDone frees its slot.
  ASSERT_TRUE(pipeline.Next(1, &work));
  ASSERT_EQ(work.kind, Kind::kMatch);
  EXPECT_TRUE(work.all_partitions);
  EXPECT_TRUE(work.finish_now);
  pipeline.MatchDone(work.buffer, work.partition);
  pipeline.Close();
  EXPECT_FALSE(pipeline.Next(0, &work));
  EXPECT_FALSE(pipeline.Next(1, &work));
}

// A partition that finished its share of a cohort forms and matches the
// next ones while another has not matched the first, up to buffers()
// cohorts in flight; then it waits for the slowest to free a buffer.
TEST(CohortPipeline, PartitionRunsAheadByUpToBuffersCohorts) {
  constexpr uint32_t kBuffers = 3;
  CohortPipeline pipeline(2, 16, 0, kBuffers, nullptr, true, kOwnersOnly);
  EXPECT_EQ(pipeline.buffers(), kBuffers);
  constexpr size_t kEvents = CohortPipeline::kSoloCohort + 1;  // split
  std::vector<std::unique_ptr<PublishJob>> jobs;
  std::vector<uint32_t> buffers;
  CohortPipeline::Work work;
  for (uint64_t cohort = 0; cohort < kBuffers; ++cohort) {
    jobs.push_back(Job(kEvents));
    pipeline.PushEvents(jobs.back().get(), MonotonicNanos());
    ASSERT_TRUE(pipeline.Next(0, &work));
    ASSERT_EQ(work.kind, Kind::kForm) << "cohort " << cohort;
    EXPECT_EQ(work.cohort, cohort);
    EXPECT_EQ(work.events.size(), kEvents);
    EXPECT_FALSE(work.solo);
    buffers.push_back(work.buffer);
    EXPECT_TRUE(pipeline.Formed(work.buffer, {}, kEvents));
    ASSERT_TRUE(pipeline.Next(0, &work));
    ASSERT_EQ(work.kind, Kind::kMatch);
    EXPECT_EQ(work.cohort, cohort);
    EXPECT_EQ(work.partition, 0u);
    pipeline.MatchDone(work.buffer, 0);
  }
  std::sort(buffers.begin(), buffers.end());
  EXPECT_EQ(std::unique(buffers.begin(), buffers.end()), buffers.end())
      << "two cohorts in flight shared a buffer";
  jobs.push_back(Job(kEvents));
  pipeline.PushEvents(jobs.back().get(), MonotonicNanos());
  auto ahead = NextAsync(pipeline, 0);
  EXPECT_TRUE(Blocks(ahead)) << "formed with every buffer in use";
  // Partition 1 matches the oldest first; that frees its buffer.
  ASSERT_TRUE(pipeline.Next(1, &work));
  ASSERT_EQ(work.kind, Kind::kMatch);
  EXPECT_EQ(work.cohort, 0u);
  EXPECT_EQ(work.partition, 1u);
  const uint32_t freed = work.buffer;
  pipeline.MatchDone(work.buffer, 1);
  work = ahead.get();
  EXPECT_EQ(work.kind, Kind::kForm);
  EXPECT_EQ(work.cohort, kBuffers);
  EXPECT_EQ(work.buffer, freed);
}

// One buffer: a cohort forms only once the previous one is matched
// everywhere.
TEST(CohortPipeline, OneBufferRunsOneCohortAtATime) {
  CohortPipeline pipeline(2, 16, 0, 1, nullptr, true, kOwnersOnly);
  constexpr size_t kEvents = CohortPipeline::kSoloCohort + 1;
  auto first = Job(kEvents), second = Job(kEvents);
  pipeline.PushEvents(first.get(), MonotonicNanos());
  CohortPipeline::Work work;
  ASSERT_TRUE(pipeline.Next(0, &work));
  ASSERT_EQ(work.kind, Kind::kForm);
  pipeline.Formed(work.buffer, {}, kEvents);
  ASSERT_TRUE(pipeline.Next(0, &work));
  ASSERT_EQ(work.kind, Kind::kMatch);
  pipeline.MatchDone(work.buffer, 0);
  pipeline.PushEvents(second.get(), MonotonicNanos());
  auto next = NextAsync(pipeline, 0);
  EXPECT_TRUE(Blocks(next)) << "a second cohort formed in one buffer";
  ASSERT_TRUE(pipeline.Next(1, &work));
  ASSERT_EQ(work.kind, Kind::kMatch);
  pipeline.MatchDone(work.buffer, 1);
  work = next.get();
  EXPECT_EQ(work.kind, Kind::kForm);
  EXPECT_EQ(work.cohort, 1u);
}

// Waits (up to 10 s) until the pipeline's threads have gone to sleep `n`
// times: with no work queued, until `n` threads wait in Next. (A fixed
// sleep was not enough under the sanitizers on a loaded machine.)
void WaitUntilAsleep(const CohortPipeline& pipeline, uint64_t n) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (pipeline.counts().sleeps < n &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GE(pipeline.counts().sleeps, n) << "threads never went to sleep";
}

// A lone event with every other thread idle is split across the
// partitions, unless the server holds at least P events (in_server): then
// it runs solo on the thread that forms it.
TEST(CohortPipeline, LoneEventGoesSoloWhenTheServerHoldsPEvents) {
  for (const uint64_t held : {uint64_t{1}, uint64_t{2}}) {
    CohortPipeline pipeline(2, 64, 0, 2, [held] { return held; });
    std::atomic<int> formed{0};
    std::atomic<bool> solo{false};
    std::vector<std::thread> threads =
        FormAndMatch(pipeline, [&](const CohortPipeline::Work& work) {
          ++formed;
          solo = work.solo;
        });
    // Both threads waiting in Next before the event comes.
    WaitUntilAsleep(pipeline, 2);
    auto job = Job(1);
    pipeline.PushEvents(job.get(), MonotonicNanos());
    // Closed only once the cohort formed: Close wakes every thread, and a
    // thread it wakes first is no longer idle when the event's former
    // looks.
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (formed.load() == 0 &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    pipeline.Close();
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(formed.load(), 1) << "held " << held;
    EXPECT_EQ(solo.load(), held >= 2) << "held " << held;
  }
}

// A solo cohort's slot is its former's own, so freeing it wakes no idle
// thread, except one that waits for it: a change queued behind it (planned
// only with nothing in flight) or a shutdown (Next returns false only once
// nothing is). Either would hang here if the wake-up were missing.
TEST(CohortPipeline, FinishedSoloWakesAWaitingChangeAndShutdown) {
  for (const bool close : {false, true}) {
    CohortPipeline pipeline(4, 64, 0, 2, [] { return uint64_t{2}; });
    auto job = Job(1);
    pipeline.PushEvents(job.get(), MonotonicNanos());
    CohortPipeline::Work work;
    ASSERT_TRUE(pipeline.Next(0, &work));
    ASSERT_EQ(work.kind, Kind::kForm);
    ASSERT_TRUE(work.solo);
    pipeline.Formed(work.buffer, {}, 1);
    ASSERT_TRUE(pipeline.Next(0, &work));
    ASSERT_EQ(work.kind, Kind::kMatch);
    ASSERT_TRUE(work.all_partitions);
    UpdateBatch update;
    std::future<bool> waiter;
    if (close) {
      pipeline.Close();
      waiter = std::async(std::launch::async, [&pipeline] {
        CohortPipeline::Work w;
        return pipeline.Next(1, &w);
      });
    } else {
      pipeline.PushUpdate(&update, MonotonicNanos());
      waiter = std::async(std::launch::async, [&pipeline, &update] {
        CohortPipeline::Work w;
        return pipeline.Next(1, &w) && w.kind == Kind::kPlanUpdate &&
               w.update == &update;
      });
    }
    EXPECT_EQ(waiter.wait_for(std::chrono::milliseconds(50)),
              std::future_status::timeout)
        << "close " << close << ": went on with the solo cohort in flight";
    pipeline.MatchDone(work.buffer, work.partition);
    ASSERT_EQ(waiter.wait_for(std::chrono::seconds(10)),
              std::future_status::ready)
        << "close " << close << ": not woken when the solo cohort finished";
    EXPECT_EQ(waiter.get(), !close) << "close " << close;
    if (!close) {
      pipeline.UpdatePlanned(std::vector<bool>(4, false));
      ASSERT_TRUE(pipeline.Next(1, &work));
      ASSERT_EQ(work.kind, Kind::kFinishUpdate);
      pipeline.UpdateFinished();
      pipeline.Close();
      EXPECT_FALSE(pipeline.Next(1, &work));
    }
  }
}

// A solo cohort takes its former's own slot: it forms while every mask
// buffer holds a split cohort.
TEST(CohortPipeline, SoloFormsWithEveryBufferInUse) {
  CohortPipeline pipeline(2, 64, 0, 1, nullptr, true, kOwnersOnly);
  EXPECT_EQ(pipeline.slots(), 3u);
  auto split = Job(CohortPipeline::kSoloCohort + 1), lone = Job(1);
  pipeline.PushEvents(split.get(), MonotonicNanos());
  CohortPipeline::Work work;
  ASSERT_TRUE(pipeline.Next(0, &work));
  ASSERT_EQ(work.kind, Kind::kForm);
  EXPECT_FALSE(work.solo);
  EXPECT_EQ(work.buffer, 0u);
  pipeline.Formed(work.buffer, {}, work.events.size());
  ASSERT_TRUE(pipeline.Next(0, &work));
  ASSERT_EQ(work.kind, Kind::kMatch);
  pipeline.MatchDone(work.buffer, 0);
  // Partition 1 has not matched the split cohort: the buffer is in use.
  pipeline.PushEvents(lone.get(), MonotonicNanos());
  ASSERT_TRUE(pipeline.Next(0, &work));
  ASSERT_EQ(work.kind, Kind::kForm);
  EXPECT_TRUE(work.solo);
  EXPECT_EQ(work.buffer, 1u) << "not partition 0's own slot";
}

// Events left queued behind a solo cohort wake an idle thread, which forms
// the next while the first still runs (thread 2 stays busy throughout).
TEST(CohortPipeline, EventsLeftBehindASoloWakeAnIdleThread) {
  CohortPipeline pipeline(3, 64, 0, 2, nullptr, true, kOwnersOnly);
  std::mutex mu;
  std::condition_variable cv;
  int solos = 0;
  bool overlapped = false;
  std::vector<std::thread> threads =
      FormAndMatch(pipeline, [&](const CohortPipeline::Work& work) {
        EXPECT_TRUE(work.solo);
        std::unique_lock<std::mutex> lock(mu);
        if (++solos == 1) {
          // Hold the first solo until another thread forms the second.
          overlapped = cv.wait_for(lock, std::chrono::seconds(5),
                                   [&] { return solos >= 2; });
        } else {
          cv.notify_all();
        }
      });
  WaitUntilAsleep(pipeline, 2);
  auto job = Job(3);
  pipeline.PushEvents(job.get(), MonotonicNanos());
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::seconds(10), [&] { return solos >= 2; });
  }
  pipeline.Close();
  for (std::thread& t : threads) t.join();
  EXPECT_TRUE(overlapped) << "the second event waited for the first's end";
  EXPECT_EQ(solos, 3);
}

TEST(CohortPipeline, SoloCohortsFromFourPartitions) {
  EXPECT_FALSE(CohortPipeline::SoloCohortsFor(1));
  EXPECT_FALSE(CohortPipeline::SoloCohortsFor(3));
  EXPECT_TRUE(CohortPipeline::SoloCohortsFor(4));
  EXPECT_TRUE(CohortPipeline::SoloCohortsFor(16));
}

// Without solo cohorts, a few events queued while another thread is busy
// (here: no other thread is waiting) form one split cohort of them all,
// where with solo cohorts the oldest goes alone.
TEST(CohortPipeline, WithoutSoloCohortsFewEventsAreSplit) {
  for (const bool solo_cohorts : {true, false}) {
    CohortPipeline pipeline(2, 64, 0, 2, nullptr, solo_cohorts, kOwnersOnly);
    // Solo slots only where solo cohorts can form.
    EXPECT_EQ(pipeline.slots(), solo_cohorts ? 4u : 2u);
    auto job = Job(3);
    pipeline.PushEvents(job.get(), MonotonicNanos());
    CohortPipeline::Work work;
    ASSERT_TRUE(pipeline.Next(0, &work));
    ASSERT_EQ(work.kind, Kind::kForm);
    EXPECT_EQ(work.solo, solo_cohorts);
    EXPECT_EQ(work.events.size(), solo_cohorts ? 1u : 3u);
  }
}

// Without solo cohorts a lone event is split even when it is not alone in
// the server, and its partitions answer it themselves only if it is
// (finish_now); otherwise the reply stage does.
TEST(CohortPipeline, WithoutSoloCohortsOnlyAnEventAloneIsFinishedNow) {
  for (const uint64_t held : {uint64_t{1}, uint64_t{2}}) {
    CohortPipeline pipeline(2, 64, 0, 2, [held] { return held; },
                            /*solo_cohorts=*/false, kOwnersOnly);
    auto job = Job(1);
    pipeline.PushEvents(job.get(), MonotonicNanos());
    CohortPipeline::Work work;
    ASSERT_TRUE(pipeline.Next(0, &work));
    ASSERT_EQ(work.kind, Kind::kForm);
    EXPECT_FALSE(work.solo) << "held " << held;
    pipeline.Formed(work.buffer, {}, work.events.size());
    for (uint32_t p : {0u, 1u}) {
      ASSERT_TRUE(pipeline.Next(p, &work));
      ASSERT_EQ(work.kind, Kind::kMatch);
      EXPECT_EQ(work.partition, p);
      EXPECT_EQ(work.finish_now, held == 1) << "held " << held;
      pipeline.MatchDone(work.buffer, p);
    }
  }
}

// Forms a split cohort of `job`'s events on thread 0, numbered `cohort`,
// with no phase-1 tasks; returns its buffer.
uint32_t FormSplit(CohortPipeline& pipeline, PublishJob* job,
                   uint64_t cohort) {
  pipeline.PushEvents(job, MonotonicNanos());
  CohortPipeline::Work work;
  EXPECT_TRUE(pipeline.Next(0, &work));
  EXPECT_EQ(work.kind, Kind::kForm);
  EXPECT_EQ(work.cohort, cohort);
  EXPECT_FALSE(work.solo);
  pipeline.Formed(work.buffer, {}, work.events.size());
  return work.buffer;
}

// As FormSplit, then has thread 0 match its own share.
uint32_t FormAndMatchOwnShare(CohortPipeline& pipeline, PublishJob* job,
                              uint64_t cohort) {
  const uint32_t buffer = FormSplit(pipeline, job, cohort);
  CohortPipeline::Work work;
  EXPECT_TRUE(pipeline.Next(0, &work));
  EXPECT_EQ(work.kind, Kind::kMatch);
  EXPECT_EQ(work.partition, 0u);
  EXPECT_FALSE(work.stolen);
  pipeline.MatchDone(buffer, 0);
  return buffer;
}

// A share left waiting for its own thread past the steal delay is taken by
// a thread with nothing of its own, and counted.
TEST(CohortPipeline, IdleThreadStealsAShareLeftWaiting) {
  CohortPipeline pipeline(2, 64, 0, 1, nullptr, true, /*steal_after_ns=*/0);
  auto job = Job(CohortPipeline::kSoloCohort + 1);
  const uint32_t buffer = FormAndMatchOwnShare(pipeline, job.get(), 0);
  CohortPipeline::Work work;
  ASSERT_TRUE(pipeline.Next(0, &work));
  ASSERT_EQ(work.kind, Kind::kMatch);
  EXPECT_EQ(work.buffer, buffer);
  EXPECT_EQ(work.partition, 1u);
  EXPECT_TRUE(work.stolen);
  EXPECT_EQ(pipeline.counts().steals, 1u);
  pipeline.MatchDone(buffer, 1);
  // The cohort is matched everywhere: partition 1 has nothing left.
  pipeline.Close();
  EXPECT_FALSE(pipeline.Next(1, &work));
}

// Within the delay the share waits for its own thread, which takes it.
TEST(CohortPipeline, ShareWaitsForItsOwnThreadFirst) {
  CohortPipeline pipeline(2, 64, 0, 2, nullptr, true, kForever);
  auto job = Job(CohortPipeline::kSoloCohort + 1);
  const uint32_t buffer = FormAndMatchOwnShare(pipeline, job.get(), 0);
  auto thief = NextAsync(pipeline, 0);
  EXPECT_TRUE(Blocks(thief)) << "stole a share its thread had just got";
  CohortPipeline::Work work;
  ASSERT_TRUE(pipeline.Next(1, &work));
  ASSERT_EQ(work.kind, Kind::kMatch);
  EXPECT_EQ(work.partition, 1u);
  EXPECT_FALSE(work.stolen);
  pipeline.MatchDone(buffer, 1);
  // Something else for the waiting thread: it forms the next cohort.
  auto next = Job(CohortPipeline::kSoloCohort + 1);
  pipeline.PushEvents(next.get(), MonotonicNanos());
  work = thief.get();
  EXPECT_EQ(work.kind, Kind::kForm);
  EXPECT_EQ(pipeline.counts().steals, 0u);
}

// The delay runs out with nobody else calling in: the waiting thread wakes
// by itself and steals.
TEST(CohortPipeline, StealDelayWakesTheWaitingThread) {
  constexpr int64_t kDelayNs = 30 * 1000 * 1000;
  CohortPipeline pipeline(2, 64, 0, 2, nullptr, true, kDelayNs);
  auto job = Job(CohortPipeline::kSoloCohort + 1);
  FormAndMatchOwnShare(pipeline, job.get(), 0);
  const int64_t start = MonotonicNanos();
  CohortPipeline::Work work;
  ASSERT_TRUE(pipeline.Next(0, &work));
  EXPECT_EQ(work.kind, Kind::kMatch);
  EXPECT_TRUE(work.stolen);
  EXPECT_GE(MonotonicNanos() - start, kDelayNs / 2);
}

// A thread two cohorts behind has its oldest share taken at once, however
// long the delay.
TEST(CohortPipeline, ThreadTwoCohortsBehindIsStolenFromAtOnce) {
  CohortPipeline pipeline(2, 64, 0, 3, nullptr, true, kForever);
  auto first = Job(CohortPipeline::kSoloCohort + 1);
  auto second = Job(CohortPipeline::kSoloCohort + 1);
  const uint32_t oldest = FormAndMatchOwnShare(pipeline, first.get(), 0);
  FormAndMatchOwnShare(pipeline, second.get(), 1);
  CohortPipeline::Work work;
  ASSERT_TRUE(pipeline.Next(0, &work));
  ASSERT_EQ(work.kind, Kind::kMatch);
  EXPECT_TRUE(work.stolen);
  EXPECT_EQ(work.partition, 1u);
  EXPECT_EQ(work.buffer, oldest) << "not the oldest cohort's share";
  EXPECT_EQ(work.cohort, 0u);
}

// Forms a solo cohort of `job` (one event) on thread 0 of a pipeline whose
// server holds other events, with no phase-1 tasks.
void FormSolo(CohortPipeline& pipeline, PublishJob* job) {
  pipeline.PushEvents(job, MonotonicNanos());
  CohortPipeline::Work work;
  ASSERT_TRUE(pipeline.Next(0, &work));
  ASSERT_TRUE(work.solo);
  pipeline.Formed(work.buffer, {}, 1);
}

// Solo cohorts are their former's whole: never stolen.
TEST(CohortPipeline, SoloCohortIsNeverStolen) {
  CohortPipeline pipeline(4, 64, 0, 2, [] { return uint64_t{2}; }, true, 0);
  auto job = Job(1);
  FormSolo(pipeline, job.get());
  CohortPipeline::Work work;
  auto other = NextAsync(pipeline, 1);
  EXPECT_TRUE(Blocks(other)) << "another thread took part of a solo cohort";
  ASSERT_TRUE(pipeline.Next(0, &work));
  EXPECT_TRUE(work.all_partitions);
  pipeline.MatchDone(work.buffer, 0);
  auto next = Job(1);
  pipeline.PushEvents(next.get(), MonotonicNanos());
  EXPECT_EQ(other.get().kind, Kind::kForm);
  EXPECT_EQ(pipeline.counts().steals, 0u);
}

// With steal units, each partition's share is handed out a unit at a time,
// in order, each once, and the cohort is done (its buffer free) only after
// every unit of every partition.
TEST(CohortPipeline, SharesGoOutAUnitAtATime) {
  constexpr uint32_t kUnits = 3;
  CohortPipeline pipeline(2, 64, 0, 1, nullptr, true, kOwnersOnly, kUnits);
  EXPECT_EQ(pipeline.units(), kUnits);
  auto job = Job(CohortPipeline::kSoloCohort + 1);
  const uint32_t buffer = FormSplit(pipeline, job.get(), 0);
  CohortPipeline::Work work;
  std::vector<CohortPipeline::Work> taken;
  for (uint32_t p = 0; p < 2; ++p) {
    for (uint32_t u = 0; u < kUnits; ++u) {
      ASSERT_TRUE(pipeline.Next(p, &work));
      ASSERT_EQ(work.kind, Kind::kMatch);
      EXPECT_EQ(work.partition, p);
      EXPECT_EQ(work.unit, u) << "units out of order";
      EXPECT_FALSE(work.stolen);
      taken.push_back(work);
    }
  }
  // Every unit is out: nothing is left for either thread, and with the one
  // buffer in use the next cohort cannot form until the last MatchDone.
  auto next = Job(CohortPipeline::kSoloCohort + 1);
  pipeline.PushEvents(next.get(), MonotonicNanos());
  auto former = NextAsync(pipeline, 1);
  for (size_t i = 0; i + 1 < taken.size(); ++i) {
    pipeline.MatchDone(buffer, taken[i].partition);
    EXPECT_TRUE(Blocks(former)) << "buffer freed after " << i + 1 << " of "
                                << taken.size() << " units";
  }
  pipeline.MatchDone(buffer, taken.back().partition);
  EXPECT_EQ(former.get().kind, Kind::kForm);
}

// A thread with nothing of its own takes the units of another's share that
// its thread has not reached, while that thread is inside its first one.
TEST(CohortPipeline, IdleThreadStealsTheUnitsAShareHasLeft) {
  constexpr uint32_t kUnits = 4;
  CohortPipeline pipeline(2, 64, 0, 1, nullptr, true, /*steal_after_ns=*/0,
                          kUnits);
  auto job = Job(CohortPipeline::kSoloCohort + 1);
  const uint32_t buffer = FormSplit(pipeline, job.get(), 0);
  CohortPipeline::Work work;
  // Partition 1's thread takes its first unit and stalls in it.
  CohortPipeline::Work stalled;
  ASSERT_TRUE(pipeline.Next(1, &stalled));
  ASSERT_EQ(stalled.kind, Kind::kMatch);
  EXPECT_EQ(stalled.partition, 1u);
  EXPECT_EQ(stalled.unit, 0u);
  // Thread 0 does its own share first, then the rest of partition 1's.
  for (uint32_t u = 0; u < kUnits; ++u) {
    ASSERT_TRUE(pipeline.Next(0, &work));
    EXPECT_EQ(work.partition, 0u);
    EXPECT_EQ(work.unit, u);
    EXPECT_FALSE(work.stolen);
    pipeline.MatchDone(buffer, 0);
  }
  for (uint32_t u = 1; u < kUnits; ++u) {
    ASSERT_TRUE(pipeline.Next(0, &work));
    ASSERT_EQ(work.kind, Kind::kMatch);
    EXPECT_EQ(work.partition, 1u);
    EXPECT_EQ(work.unit, u);
    EXPECT_TRUE(work.stolen);
    pipeline.MatchDone(buffer, 1);
  }
  EXPECT_EQ(pipeline.counts().steals, kUnits - 1);
  // The stalled unit is the last one out: its MatchDone ends the cohort.
  pipeline.MatchDone(buffer, 1);
  pipeline.Close();
  EXPECT_FALSE(pipeline.Next(0, &work));
}

// A solo cohort with steal units is still one piece of work and one
// MatchDone.
TEST(CohortPipeline, SoloCohortTakesEveryUnitAtOnce) {
  CohortPipeline pipeline(4, 64, 0, 2, [] { return uint64_t{2}; }, true,
                          kOwnersOnly, /*units=*/5);
  auto job = Job(1);
  FormSolo(pipeline, job.get());
  CohortPipeline::Work work;
  ASSERT_TRUE(pipeline.Next(0, &work));
  EXPECT_EQ(work.kind, Kind::kMatch);
  EXPECT_TRUE(work.all_partitions);
  EXPECT_EQ(work.unit, 0u);
  pipeline.MatchDone(work.buffer, 0);
  pipeline.Close();
  EXPECT_FALSE(pipeline.Next(0, &work)) << "the solo cohort is still in flight";
}

// With every CPU running a partition thread, a hand-off wakes nobody: the
// thread running does the cohort, stealing the shares of those asleep.
TEST(CohortPipeline, WakesNoMoreThreadsThanCpusCanRun) {
  CohortPipeline pipeline(3, 64, 0, 1, nullptr, /*solo_cohorts=*/false,
                          /*steal_after_ns=*/0, /*units=*/1, /*cpus=*/1);
  std::vector<std::future<bool>> sleepers;
  for (uint32_t p = 1; p <= 2; ++p) {
    sleepers.push_back(std::async(std::launch::async, [&pipeline, p] {
      CohortPipeline::Work work;
      return pipeline.Next(p, &work);
    }));
  }
  // Both are asleep once the pipeline has counted their sleeps.
  while (pipeline.counts().sleeps < 2) std::this_thread::yield();
  // However the test ends, the sleepers are woken (else their futures
  // would wait for ever).
  auto close = absl::MakeCleanup([&pipeline] { pipeline.Close(); });
  auto job = Job(4);
  const uint32_t buffer = FormSplit(pipeline, job.get(), 0);
  // Its own share first, then the sleepers' shares, stolen, in whichever
  // order it finds them.
  std::set<uint32_t> done;
  for (uint32_t i = 0; i < 3; ++i) {
    CohortPipeline::Work work;
    ASSERT_TRUE(pipeline.Next(0, &work));
    ASSERT_EQ(work.kind, Kind::kMatch);
    if (i == 0) EXPECT_EQ(work.partition, 0u);
    EXPECT_EQ(work.stolen, work.partition != 0);
    EXPECT_TRUE(done.insert(work.partition).second) << work.partition;
    pipeline.MatchDone(buffer, work.partition);
  }
  EXPECT_EQ(done, (std::set<uint32_t>{0, 1, 2}));
  EXPECT_EQ(pipeline.counts().wakeups, 0u) << "woke a thread with no CPU";
  for (auto& sleeper : sleepers) {
    EXPECT_EQ(sleeper.wait_for(std::chrono::milliseconds(0)),
              std::future_status::timeout);
  }
  std::move(close).Cancel();
  pipeline.Close();  // wakes everyone, CPUs or not
  for (auto& sleeper : sleepers) EXPECT_FALSE(sleeper.get());
}

TEST(CohortPipeline, DefaultUnits) {
  for (uint32_t p : {1u, 2u, 4u, 16u, 64u}) {
    EXPECT_GE(CohortPipeline::DefaultUnits(p), 1u);
    EXPECT_LE(CohortPipeline::DefaultUnits(p), CohortPipeline::kMaxUnits);
    EXPECT_EQ(CohortPipeline::UnitsFor(p, 0), CohortPipeline::DefaultUnits(p));
    EXPECT_EQ(CohortPipeline::UnitsFor(p, 7), 7u);
  }
  EXPECT_EQ(CohortPipeline::DefaultUnits(1), 1u) << "nobody to steal";
}

// A thread with nothing to do sleeps (counted), and an event pushed wakes
// it (counted) to form the cohort.
TEST(CohortPipeline, IdleThreadSleepsAndAPushWakesIt) {
  CohortPipeline pipeline(2, 64, 0, 2, nullptr, true, kOwnersOnly);
  auto next = NextAsync(pipeline, 0);
  const int64_t give_up = MonotonicNanos() + int64_t{10} * 1000 * 1000 * 1000;
  while (pipeline.counts().sleeps == 0 && MonotonicNanos() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GE(pipeline.counts().sleeps, 1u) << "an idle thread did not sleep";
  EXPECT_EQ(pipeline.counts().wakeups, 0u);
  // Long enough for the sleeper to be in its futex wait, not just counted.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto job = Job(1);
  pipeline.PushEvents(job.get(), MonotonicNanos());
  const CohortPipeline::Work work = next.get();
  EXPECT_EQ(work.kind, Kind::kForm);
  EXPECT_EQ(pipeline.counts().wakeups, 1u);
}

// The last task's phase_one_done runs once, before its phase 2 is handed
// out; the others' never.
TEST(CohortPipeline, PhaseOneDoneRunsOnceForTheLastTask) {
  CohortPipeline pipeline(2, 64, 0, 2, nullptr, true, kOwnersOnly);
  auto job = Job(CohortPipeline::kSoloCohort + 1);
  pipeline.PushEvents(job.get(), MonotonicNanos());
  CohortPipeline::Work work;
  ASSERT_TRUE(pipeline.Next(0, &work));
  ASSERT_EQ(work.kind, Kind::kForm);
  const uint32_t buffer = work.buffer;
  int calls = 0;
  EXPECT_FALSE(pipeline.Formed(buffer, {0, 1, 1}, job->events.size(),
                               [&calls] { ++calls; }));
  // Thread 0 takes its own task first, then steals partition 1's oldest.
  std::vector<size_t> tasks;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(pipeline.Next(0, &work));
    ASSERT_EQ(work.kind, Kind::kTask);
    EXPECT_EQ(work.buffer, buffer);
    tasks.push_back(work.task);
  }
  EXPECT_EQ(tasks, (std::vector<size_t>{0, 1, 2}));
  EXPECT_FALSE(pipeline.TaskDone(buffer, [&calls] { ++calls; }));
  EXPECT_FALSE(pipeline.TaskDone(buffer, [&calls] { ++calls; }));
  EXPECT_EQ(calls, 0);
  auto match = NextAsync(pipeline, 1);
  EXPECT_TRUE(Blocks(match)) << "phase 2 handed out before the last task";
  EXPECT_TRUE(pipeline.TaskDone(buffer, [&calls, &match] {
    ++calls;
    EXPECT_EQ(match.wait_for(std::chrono::milliseconds(20)),
              std::future_status::timeout)
        << "phase 2 handed out before phase_one_done returned";
  }));
  EXPECT_EQ(calls, 1);
  work = match.get();
  EXPECT_EQ(work.kind, Kind::kMatch);
  EXPECT_EQ(work.partition, 1u);
}

TEST(CohortPipeline, DefaultBuffers) {
  EXPECT_EQ(CohortPipeline::DefaultBuffers(1), 2u);
  EXPECT_EQ(CohortPipeline::DefaultBuffers(2), 2u);
  EXPECT_EQ(CohortPipeline::DefaultBuffers(3), 2u);
  EXPECT_EQ(CohortPipeline::DefaultBuffers(4), 4u);
  EXPECT_EQ(CohortPipeline::DefaultBuffers(15), 4u);
  EXPECT_EQ(CohortPipeline::DefaultBuffers(16), 6u);
  EXPECT_EQ(CohortPipeline::DefaultBuffers(64), 6u);
  EXPECT_EQ(CohortPipeline::BuffersFor(16, 0), 6u);
  EXPECT_EQ(CohortPipeline::BuffersFor(16, 8), 8u);
  EXPECT_EQ(CohortPipeline::BuffersFor(2, 1), 1u);
}

// The invariants with P threads working, publishers pushing and a changer
// queueing changes (see the file comment), with 1, 2 and 8 buffers, with
// solo cohorts and without, with phase 2 stolen or not, in whole shares
// or in steal units, waking every sleeper or only as many as 1 CPU runs.
class CohortPipelineThreads
    : public testing::TestWithParam<
          std::tuple<uint32_t, bool, int64_t, uint32_t, uint32_t>> {};

TEST_P(CohortPipelineThreads, DoEveryPieceOnce) {
  constexpr uint32_t kP = 3;
  constexpr int kJobs = 300;
  constexpr int kChanges = 20;
  const uint32_t buffers = std::get<0>(GetParam());
  const bool solo_cohorts = std::get<1>(GetParam());
  const int64_t steal_after_ns = std::get<2>(GetParam());
  const uint32_t units = std::get<3>(GetParam());
  const uint32_t cpus = std::get<4>(GetParam());
  // Every other lone event is told the server is busy, so that both solo
  // and split cohorts form whatever the threads' timing (called from any
  // partition thread, so the counter is atomic); without solo cohorts, so
  // that split cohorts are answered both ways (finish_now).
  std::atomic<uint64_t> asked{0};
  CohortPipeline pipeline(kP, 16, 50 * 1000, buffers,
                          [&asked] { return ++asked % 2 == 0 ? kP : 0; },
                          solo_cohorts, steal_after_ns, units, cpus);
  std::vector<std::unique_ptr<PublishJob>> jobs;
  for (int j = 0; j < kJobs; ++j) jobs.push_back(Job(1 + j % 7));
  std::vector<UpdateBatch> changes(kChanges);

  std::mutex mu;  // guards the bookkeeping below
  uint64_t formed = 0;
  std::vector<uint64_t> cohort_of_buffer(pipeline.slots());
  std::vector<size_t> tasks_of_buffer(pipeline.slots());
  std::vector<std::vector<int>> task_runs(pipeline.slots());
  int split_peak = 0;
  int split_in_flight = 0;  // split cohorts formed, not matched everywhere
  std::vector<int> solo_in_flight(kP);  // by former
  // By partition: (cohort, unit) matched.
  std::vector<std::set<std::pair<uint64_t, uint32_t>>> matched(kP);
  std::map<uint64_t, uint32_t> matches_of;  // cohort -> units done
  std::map<uint64_t, uint32_t> solo_owner;  // solo cohort -> its former
  uint64_t solo = 0;
  std::map<const PublishJob*, std::vector<int>> seen;  // event -> times
  int cohort_work = 0;  // cohort pieces running now
  bool changing = false;
  int planned = 0, applied = 0, finished = 0;

  auto worker = [&](uint32_t p) {
    CohortPipeline::Work work;
    std::vector<bool> involved(kP);
    while (pipeline.Next(p, &work)) {
      std::unique_lock<std::mutex> lock(mu);
      const bool cohort_piece = work.kind == Kind::kForm ||
                                work.kind == Kind::kTask ||
                                work.kind == Kind::kMatch;
      if (cohort_piece) {
        EXPECT_FALSE(changing) << "cohort work during a change";
        ++cohort_work;
      }
      switch (work.kind) {
        case Kind::kForm: {
          const uint64_t cohort = work.cohort;
          ++formed;
          cohort_of_buffer[work.buffer] = cohort;
          EXPECT_LE(work.events.size(), 16u);
          if (work.solo) {
            EXPECT_EQ(work.buffer, buffers + p) << "not its former's slot";
            EXPECT_EQ(++solo_in_flight[p], 1) << "two solo cohorts of " << p;
            EXPECT_EQ(work.events.size(), 1u);
            solo_owner[cohort] = p;
            ++solo;
          } else {
            EXPECT_LT(work.buffer, buffers) << "a split cohort off the buffers";
            split_peak = std::max(split_peak, ++split_in_flight);
          }
          for (const QueuedEvent& e : work.events) {
            auto& times = seen[e.job];
            times.resize(e.job->events.size());
            ++times[e.event];
          }
          const size_t tasks = cohort % 4;  // some cohorts need none
          tasks_of_buffer[work.buffer] = tasks;
          task_runs[work.buffer].assign(tasks, 0);
          std::vector<uint32_t> preferred;
          for (size_t t = 0; t < tasks; ++t) {
            preferred.push_back(static_cast<uint32_t>(cohort + t));
          }
          --cohort_work;
          lock.unlock();
          pipeline.Formed(work.buffer, preferred, work.events.size());
          continue;
        }
        case Kind::kTask:
          ++task_runs[work.buffer][work.task];
          break;
        case Kind::kMatch: {
          for (int runs : task_runs[work.buffer]) {
            EXPECT_EQ(runs, 1) << "matched before every task ran once";
          }
          const uint64_t cohort = work.cohort;
          EXPECT_EQ(cohort_of_buffer[work.buffer], cohort);
          const bool is_solo = solo_owner.count(cohort) > 0;
          EXPECT_EQ(work.all_partitions, is_solo);
          if (is_solo) {
            EXPECT_EQ(solo_owner[cohort], p) << "solo cohort matched elsewhere";
          } else if (work.stolen) {
            EXPECT_NE(steal_after_ns, CohortPipeline::kNoStealing);
            EXPECT_NE(work.partition, p) << "stole its own share";
          } else {
            EXPECT_EQ(work.partition, p) << "split cohort matched elsewhere";
          }
          EXPECT_LT(work.unit, units);
          // (partition, unit) pieces this match covers.
          std::vector<std::pair<uint32_t, uint32_t>> pieces = {
              {work.partition, work.unit}};
          if (work.all_partitions) {
            EXPECT_EQ(work.unit, 0u);
            pieces.clear();
            for (uint32_t q = 0; q < kP; ++q) {
              for (uint32_t u = 0; u < units; ++u) pieces.emplace_back(q, u);
            }
          }
          for (auto [q, u] : pieces) {
            EXPECT_TRUE(matched[q].insert({cohort, u}).second)
                << "partition " << q << " matched unit " << u << " of "
                << cohort << " twice";
          }
          matches_of[cohort] += static_cast<uint32_t>(pieces.size());
          if (matches_of[cohort] == kP * units) {
            if (solo_owner.count(cohort) > 0) {
              --solo_in_flight[solo_owner[cohort]];
            } else {
              --split_in_flight;
            }
          }
          break;
        }
        case Kind::kPlanUpdate:
          EXPECT_EQ(cohort_work, 0);
          EXPECT_EQ(split_in_flight, 0) << "planned with a cohort in flight";
          for (int n : solo_in_flight) EXPECT_EQ(n, 0) << "planned with a solo";
          changing = true;
          ++planned;
          for (uint32_t q = 0; q < kP; ++q) involved[q] = (planned + q) % 2;
          lock.unlock();
          pipeline.UpdatePlanned(involved);
          continue;
        case Kind::kApplyUpdate:
          EXPECT_TRUE(changing);
          ++applied;
          lock.unlock();
          pipeline.UpdateApplied(p);
          continue;
        case Kind::kFinishUpdate:
          changing = false;
          ++finished;
          lock.unlock();
          pipeline.UpdateFinished();
          continue;
      }
      --cohort_work;
      lock.unlock();
      if (work.kind == Kind::kTask) {
        pipeline.TaskDone(work.buffer);
      } else {
        pipeline.MatchDone(work.buffer, work.partition);
      }
    }
  };
  std::vector<std::thread> threads;
  for (uint32_t p = 0; p < kP; ++p) threads.emplace_back(worker, p);
  std::thread changer([&] {
    for (UpdateBatch& change : changes) {
      pipeline.PushUpdate(&change, MonotonicNanos());
      std::this_thread::sleep_for(std::chrono::microseconds(300));
    }
  });
  for (size_t j = 0; j < jobs.size(); ++j) {
    pipeline.PushEvents(jobs[j].get(), MonotonicNanos());
    // The first jobs come one by one (lone events, solo or split), the
    // rest in a rush (cohorts).
    if (j < 30) {
      std::this_thread::sleep_for(std::chrono::microseconds(300));
    } else if (j % 5 == 0) {
      std::this_thread::yield();
    }
  }
  changer.join();
  pipeline.Close();
  for (std::thread& t : threads) t.join();

  for (const auto& job : jobs) {
    ASSERT_EQ(seen[job.get()].size(), job->events.size());
    for (int times : seen[job.get()]) EXPECT_EQ(times, 1);
  }
  for (uint32_t p = 0; p < kP; ++p) {
    EXPECT_EQ(matched[p].size(), formed * units) << "partition " << p;
  }
  EXPECT_LE(split_peak, static_cast<int>(buffers));
  EXPECT_EQ(planned, kChanges);
  EXPECT_EQ(finished, kChanges);
  int want_applied = 0;
  for (int n = 1; n <= kChanges; ++n) {
    for (uint32_t q = 0; q < kP; ++q) want_applied += (n + q) % 2;
  }
  EXPECT_EQ(applied, want_applied);
  EXPECT_GT(formed, 10u);
  if (solo_cohorts) {
    EXPECT_GT(solo, 0u);
  } else {
    EXPECT_EQ(solo, 0u);
  }
  EXPECT_GT(formed, solo) << "no cohort was split";
}

// Stealing off, at once, and after the server's delay; whole shares and 3
// units each; every sleeper woken, or no more than 1 CPU can run.
INSTANTIATE_TEST_SUITE_P(
    BuffersSolosAndStealing, CohortPipelineThreads,
    testing::Combine(testing::Values(1u, 2u, 8u), testing::Bool(),
                     testing::Values(CohortPipeline::kNoStealing, int64_t{0},
                                     CohortPipeline::kStealAfterNs),
                     testing::Values(1u, 3u), testing::Values(0u, 1u)));

}  // namespace
}  // namespace service
}  // namespace cohort
