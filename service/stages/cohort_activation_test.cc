#include "service/stages/cohort_activation.h"

#include <cstdint>
#include <deque>
#include <limits>

#include "gtest/gtest.h"
#include "service/observability/stage_profile.h"

namespace cohort {
namespace service {
namespace {

// Far in the future and far in the past, on the MonotonicNanos clock.
constexpr int64_t kHour = int64_t{3600} * 1000 * 1000 * 1000;

TEST(LeadingEvents, StopsAtTheFirstChange) {
  const auto is_change = [](char c) { return c == 'c'; };
  const std::deque<char> items = {'e', 'e', 'c', 'e'};
  EXPECT_EQ(LeadingEvents(items, 1, is_change), 2u);
  EXPECT_EQ(LeadingEvents(std::deque<char>{'c', 'e'}, 1, is_change), 0u);
  // With no change queued the queue is not scanned.
  EXPECT_EQ(LeadingEvents(std::deque<char>{'e', 'e', 'e'}, 0, is_change), 3u);
}

TEST(CohortActivation, WaitsUntilAThresholdTrips) {
  const CohortActivation activation(/*cohort_max=*/4, /*cohort_wait_ns=*/kHour);
  const int64_t now = MonotonicNanos();
  int64_t deadline = 0;
  // Three events, none old, nothing behind them: wait for the oldest's
  // deadline.
  EXPECT_EQ(activation.Take(3, 3, now, false, &deadline), 0u);
  EXPECT_EQ(deadline, now + kHour);
  // cohort_max events: a full cohort now, never more than cohort_max.
  EXPECT_EQ(activation.Take(4, 4, now, false, &deadline), 4u);
  EXPECT_EQ(activation.Take(9, 9, now, false, &deadline), 4u);
  // A change queued behind them ends the cohort.
  EXPECT_EQ(activation.Take(2, 3, now, false, &deadline), 2u);
  // Flushing (shutdown).
  EXPECT_EQ(activation.Take(1, 1, now, true, &deadline), 1u);
  // The oldest has waited long enough.
  EXPECT_EQ(activation.Take(1, 1, now - 2 * kHour, false, &deadline), 1u);
  EXPECT_TRUE(activation.Full(4));
  EXPECT_FALSE(activation.Full(3));
}

TEST(CohortActivation, ZeroCohortMaxMeansNoLimit) {
  const CohortActivation unlimited(/*cohort_max=*/0, /*cohort_wait_ns=*/0);
  int64_t deadline = 0;
  EXPECT_EQ(unlimited.Take(100000, 100000, MonotonicNanos(), false, &deadline),
            100000u);
  EXPECT_FALSE(unlimited.Full(std::numeric_limits<uint32_t>::max() - 1));
}

TEST(CohortActivation, ZeroWaitTakesWhatIsQueued) {
  const CohortActivation activation(/*cohort_max=*/64, /*cohort_wait_ns=*/0);
  int64_t deadline = -1;
  EXPECT_EQ(activation.Take(1, 1, MonotonicNanos(), false, &deadline), 1u);
  EXPECT_EQ(deadline, -1);  // untouched when a cohort forms
}

}  // namespace
}  // namespace service
}  // namespace cohort
