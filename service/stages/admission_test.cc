// Admission (admission.h): the fixed in-flight limit, stream waiters, and
// the limit adapted to a latency target, driven with explicit times so the
// adaptation is deterministic; one concurrent test for TSAN.

#include "service/stages/admission.h"

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort {
namespace service {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kInterval = Admission::kTargetInterval;

TEST(AdmissionTest, FixedLimitAdmitsUpToTheLimit) {
  Admission admission(64);
  EXPECT_TRUE(admission.TryAcquire(48).ok());
  EXPECT_TRUE(admission.CheckRoom(16).ok());
  EXPECT_TRUE(admission.TryAcquire(16).ok());
  absl::Status full = admission.TryAcquire(1);
  EXPECT_TRUE(absl::IsResourceExhausted(full));
  EXPECT_THAT(full.message(), HasSubstr("64 of 64 events in flight"));
  EXPECT_THAT(full.message(), HasSubstr("--queue_limit"));
  EXPECT_TRUE(absl::IsResourceExhausted(admission.CheckRoom(1)));
  admission.Release(16);
  EXPECT_EQ(admission.in_flight(), 48u);
  EXPECT_TRUE(admission.TryAcquire(16).ok());
  EXPECT_EQ(admission.current_limit(), 64u);
}

TEST(AdmissionTest, TooLargeNeverFitsButCheckRoomLeavesItToValidation) {
  Admission admission(8);
  absl::Status status = admission.TryAcquire(9);
  EXPECT_TRUE(absl::IsResourceExhausted(status));
  EXPECT_THAT(status.message(), HasSubstr("can never be admitted"));
  EXPECT_TRUE(admission.CheckRoom(9).ok());
  EXPECT_EQ(admission.in_flight(), 0u);
}

TEST(AdmissionTest, WaitersAreAdmittedInOrderBeforeNewUnaryPublishes) {
  Admission admission(10);
  ASSERT_TRUE(admission.TryAcquire(10).ok());
  std::vector<int> order;
  admission.AcquireOrWait(4, [&](absl::Status s) {
    EXPECT_TRUE(s.ok());
    order.push_back(1);
  });
  admission.AcquireOrWait(6, [&](absl::Status s) {
    EXPECT_TRUE(s.ok());
    order.push_back(2);
  });
  EXPECT_TRUE(order.empty());
  admission.Release(5);
  // 5 free: the first waiter fits, and a unary publish must not overtake
  // the second.
  EXPECT_EQ(order, std::vector<int>({1}));
  EXPECT_TRUE(absl::IsResourceExhausted(admission.TryAcquire(1)));
  admission.Release(5);
  EXPECT_EQ(order, std::vector<int>({1, 2}));
  EXPECT_EQ(admission.in_flight(), 10u);
}

TEST(AdmissionTest, ShutdownFailsWaitersAndLaterAcquisitions) {
  Admission admission(4);
  ASSERT_TRUE(admission.TryAcquire(4).ok());
  absl::Status waited;
  admission.AcquireOrWait(2, [&](absl::Status s) { waited = s; });
  admission.Shutdown();
  EXPECT_TRUE(absl::IsUnavailable(waited));
  EXPECT_TRUE(absl::IsUnavailable(admission.TryAcquire(1)));
}

TEST(AdmissionTest, WithoutATargetReleaseTimesDoNotChangeTheLimit) {
  Admission admission(100);
  for (int64_t t = 1; t <= 10; ++t) {
    ASSERT_TRUE(admission.TryAcquire(10).ok());
    admission.Release(10, t * kInterval, /*min_sojourn_ns=*/1000 * kMs);
  }
  EXPECT_EQ(admission.current_limit(), 100u);
}

// Releases `per_interval` events in `steps` equal parts over one interval
// starting at *now, each with the given sojourn, admitting as many again
// after each part (so per_interval / steps must be in flight).
void RunInterval(Admission* admission, int64_t* now, uint64_t per_interval,
                 int64_t sojourn_ns, int steps = 4) {
  for (int i = 0; i < steps; ++i) {
    const uint64_t n = per_interval / steps;
    admission->Release(n, *now, sojourn_ns);
    // Admit the next part with whatever limit is in force: an empty
    // admission always admits.
    ASSERT_TRUE(admission->TryAcquire(n).ok());
    *now += kInterval / steps;
  }
}

TEST(AdmissionTest, StandingQueueCutsTheLimitToThroughputTimesTarget) {
  Admission admission(4096, /*latency_target_ns=*/10 * kMs);
  int64_t now = 5 * kInterval;
  ASSERT_TRUE(admission.TryAcquire(100).ok());
  // 400 events per 100 ms = 4,000 events/s, each answered after 30 ms:
  // Little's law gives 4,000/s x 10 ms = 40 events in flight.
  RunInterval(&admission, &now, 400, 30 * kMs);
  RunInterval(&admission, &now, 400, 30 * kMs);
  EXPECT_EQ(admission.current_limit(), 40u);
  // 100 in flight now: nothing more fits until they drain below 40.
  absl::Status refused = admission.TryAcquire(1);
  EXPECT_TRUE(absl::IsResourceExhausted(refused));
  EXPECT_THAT(refused.message(), HasSubstr("the limit is 40"));
  EXPECT_THAT(refused.message(), HasSubstr("--latency_target_us=10000"));
  EXPECT_THAT(refused.message(), HasSubstr("--queue_limit=4096"));
  // (Within the second interval, which has not ended.)
  admission.Release(70, now - kMs, 30 * kMs);
  EXPECT_TRUE(admission.TryAcquire(10).ok());
  EXPECT_TRUE(absl::IsResourceExhausted(admission.TryAcquire(1)));
}

TEST(AdmissionTest, OneFastAnswerInAnIntervalKeepsTheLimit) {
  Admission admission(4096, 10 * kMs);
  int64_t now = kInterval;
  ASSERT_TRUE(admission.TryAcquire(100).ok());
  // Most answers are late but one came within the target: no standing
  // queue (CoDel's minimum), so the limit is not cut.
  for (int i = 0; i < 8; ++i) {
    admission.Release(10, now, i == 3 ? 9 * kMs : 50 * kMs);
    ASSERT_TRUE(admission.TryAcquire(10).ok());
    now += kInterval / 4;
  }
  EXPECT_EQ(admission.current_limit(), 4096u);
}

TEST(AdmissionTest, LimitGrowsBackByAQuarterPerIntervalUpToTheQueueLimit) {
  Admission admission(100, 10 * kMs);
  int64_t now = kInterval;
  ASSERT_TRUE(admission.TryAcquire(50).ok());
  RunInterval(&admission, &now, 200, 40 * kMs);  // first interval starts
  RunInterval(&admission, &now, 200, 40 * kMs);
  ASSERT_EQ(admission.current_limit(), 20u);  // 2,000/s x 10 ms
  const uint64_t expected[] = {25, 31, 38, 47, 58, 72, 90, 100, 100};
  for (uint64_t want : expected) {
    RunInterval(&admission, &now, 200, 2 * kMs);
    EXPECT_EQ(admission.current_limit(), want);
  }
}

TEST(AdmissionTest, LimitBelowOneRequestStillAdmitsOneAtATime) {
  Admission admission(64, 1 * kMs);
  int64_t now = kInterval;
  ASSERT_TRUE(admission.TryAcquire(16).ok());
  // 160 events per 100 ms at 1 ms target: 1,600/s x 1 ms = 1 event.
  RunInterval(&admission, &now, 160, 20 * kMs, /*steps=*/10);
  RunInterval(&admission, &now, 160, 20 * kMs, /*steps=*/10);
  ASSERT_EQ(admission.current_limit(), 1u);
  EXPECT_EQ(admission.in_flight(), 16u);
  EXPECT_TRUE(absl::IsResourceExhausted(admission.TryAcquire(16)));
  admission.Release(16, now, 20 * kMs);
  EXPECT_TRUE(admission.TryAcquire(16).ok());  // nothing in flight
  // A waiting stream gets in the same way, once the server is empty.
  bool admitted = false;
  admission.AcquireOrWait(16, [&](absl::Status s) { admitted = s.ok(); });
  EXPECT_FALSE(admitted);
  admission.Release(16, now, 20 * kMs);
  EXPECT_TRUE(admitted);
}

TEST(AdmissionTest, ReleasesWithoutATimeAreNotMeasured) {
  Admission admission(1000, 10 * kMs);
  ASSERT_TRUE(admission.TryAcquire(500).ok());
  // Events given back unserved (shutdown, expired while waiting) carry no
  // time and must not start or end an interval.
  for (int i = 0; i < 50; ++i) admission.Release(10);
  EXPECT_EQ(admission.current_limit(), 1000u);
  EXPECT_EQ(admission.in_flight(), 0u);
}

// Many threads admitting and releasing with a target whose limit moves: the
// count stays consistent and never passes the fixed limit (TSAN checks the
// locking).
TEST(AdmissionTest, ConcurrentAcquireAndReleaseWithATarget) {
  constexpr uint64_t kLimit = 256;
  Admission admission(kLimit, /*latency_target_ns=*/50'000);
  std::atomic<int64_t> clock{kInterval};
  std::atomic<uint64_t> admitted{0};
  std::atomic<bool> over{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5000; ++i) {
        const uint64_t n = 1 + static_cast<uint64_t>((i + t) % 16);
        if (!admission.TryAcquire(n).ok()) continue;
        admitted.fetch_add(n);
        if (admission.in_flight() > kLimit) over = true;
        const int64_t now = clock.fetch_add(kInterval / 64);
        // Alternate slow and fast answers so the limit moves both ways.
        admission.Release(n, now, (i / 200) % 2 == 0 ? 200'000 : 10'000);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_FALSE(over);
  EXPECT_GT(admitted.load(), 0u);
  EXPECT_EQ(admission.in_flight(), 0u);
  EXPECT_GE(admission.current_limit(), 1u);
  EXPECT_LE(admission.current_limit(), kLimit);
}

}  // namespace
}  // namespace service
}  // namespace cohort
