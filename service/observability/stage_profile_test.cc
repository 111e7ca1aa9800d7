#include "service/observability/stage_profile.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace cohort {
namespace service {
namespace {

TEST(StageProfile, BatchSizesListEveryBucketUpToTheLastNonEmptyOne) {
  StageProfile profile("partition/2", "partition", 2, 100);
  for (size_t size : {1, 1, 2, 3, 4, 5, 100, 4096, 4097, 100000}) {
    profile.RecordBatch(size, size, 1000);
  }
  cohort::v1::StageStats stats;
  profile.ToProto(&stats);
  std::vector<std::pair<uint64_t, uint64_t>> buckets;
  for (const auto& b : stats.batch_sizes()) {
    buckets.emplace_back(b.upper_bound(), b.count());
  }
  const std::vector<std::pair<uint64_t, uint64_t>> expected = {
      {1, 2},   {2, 1},   {4, 2},   {8, 1},    {16, 0},
      {32, 0},  {64, 0},  {128, 1}, {256, 0},  {512, 0},
      {1024, 0}, {2048, 0}, {4096, 1}, {UINT64_MAX, 2}};
  EXPECT_EQ(buckets, expected);
  EXPECT_EQ(stats.batches(), 10u);
}

TEST(StageProfile, ToProtoFillsEveryField) {
  StageProfile profile("partition/3", "partition", 3, 1024);
  profile.RecordBatch(10, 4, 2000);
  profile.RecordBatch(30, 8, 4000);
  profile.RecordWait(500);
  const std::vector<int64_t> waits = {1500, 2500, 3500};
  profile.RecordWaits(waits);
  profile.AddEvents(12);
  profile.AddMatches(34);
  profile.AddUpdates(5);
  profile.AddRejections(6);
  profile.AddDroppedDeliveries(7);
  profile.AddDisconnectedListeners(8);

  cohort::v1::StageStats stats;
  stats.add_batch_sizes()->set_upper_bound(99);  // Stale; must be replaced.
  profile.ToProto(&stats);
  EXPECT_EQ(stats.name(), "partition/3");
  EXPECT_EQ(stats.stage(), "partition");
  ASSERT_TRUE(stats.has_partition());
  EXPECT_EQ(stats.partition(), 3u);
  EXPECT_EQ(stats.queue_limit(), 1024u);
  EXPECT_DOUBLE_EQ(stats.queue_length_mean(), 20.0);
  EXPECT_EQ(stats.queue_length_max(), 30u);
  EXPECT_EQ(stats.wait().count(), 4u);
  EXPECT_DOUBLE_EQ(stats.wait().mean_us(), 2.0);
  EXPECT_DOUBLE_EQ(stats.wait().max_us(), 3.5);
  EXPECT_EQ(stats.service().count(), 2u);
  EXPECT_DOUBLE_EQ(stats.service().mean_us(), 3.0);
  EXPECT_DOUBLE_EQ(stats.service().max_us(), 4.0);
  ASSERT_EQ(stats.batch_sizes_size(), 4);  // 1, 2 and 4 (1 batch), 8
  EXPECT_EQ(stats.batch_sizes(0).count(), 0u);
  EXPECT_EQ(stats.batch_sizes(2).upper_bound(), 4u);
  EXPECT_EQ(stats.batch_sizes(2).count(), 1u);
  EXPECT_EQ(stats.batch_sizes(3).upper_bound(), 8u);
  EXPECT_EQ(stats.batches(), 2u);
  EXPECT_EQ(stats.events(), 12u);
  EXPECT_EQ(stats.matches(), 34u);
  EXPECT_EQ(stats.updates(), 5u);
  EXPECT_EQ(stats.rejections(), 6u);
  EXPECT_EQ(stats.dropped_deliveries(), 7u);
  EXPECT_EQ(stats.disconnected_listeners(), 8u);
  EXPECT_EQ(profile.events(), 12u);
  EXPECT_EQ(profile.batches(), 2u);
}

TEST(StageProfile, EmptyNonPartitionProfile) {
  StageProfile profile("reply", "reply", std::nullopt, 0);
  cohort::v1::StageStats stats;
  stats.set_partition(9);  // Stale; must be cleared.
  profile.ToProto(&stats);
  EXPECT_EQ(stats.name(), "reply");
  EXPECT_FALSE(stats.has_partition());
  EXPECT_EQ(stats.queue_limit(), 0u);
  EXPECT_EQ(stats.queue_length_mean(), 0.0);
  EXPECT_EQ(stats.queue_length_max(), 0u);
  EXPECT_EQ(stats.wait().count(), 0u);
  EXPECT_EQ(stats.service().p99_us(), 0.0);
  EXPECT_EQ(stats.batch_sizes_size(), 0);
  EXPECT_EQ(stats.batches(), 0u);
}

// Property: with several threads recording and one reading at once, no record
// is lost (totals are exact), and every snapshot is internally consistent
// (batches == sum of batch-size buckets == service count). Run under
// --config=tsan it also checks the profile is free of data races.
TEST(StageProfile, ConcurrentRecordingKeepsExactTotals) {
  constexpr int kThreads = 8;
  constexpr int kIterations = 5000;
  StageProfile profile("partition/0", "partition", 0, 64);
  std::atomic<bool> done{false};
  std::thread reader([&] {
    cohort::v1::StageStats stats;
    while (!done.load(std::memory_order_acquire)) {
      profile.ToProto(&stats);
      uint64_t in_buckets = 0;
      for (const auto& b : stats.batch_sizes()) in_buckets += b.count();
      ASSERT_EQ(in_buckets, stats.batches());
      ASSERT_EQ(stats.service().count(), stats.batches());
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&profile, t] {
      const std::vector<int64_t> waits = {100, 200, 300};
      for (int i = 0; i < kIterations; ++i) {
        profile.RecordBatch(t + 1, (i % 64) + 1, 1000 + i);
        profile.RecordWait(50);
        profile.RecordWaits(waits);
        profile.AddEvents(2);
        profile.AddMatches(3);
        profile.AddUpdates(1);
        profile.AddRejections(1);
        profile.AddDroppedDeliveries(1);
        profile.AddDisconnectedListeners(1);
      }
    });
  }
  for (std::thread& w : writers) w.join();
  done.store(true, std::memory_order_release);
  reader.join();

  constexpr uint64_t kTotal = uint64_t{kThreads} * kIterations;
  cohort::v1::StageStats stats;
  profile.ToProto(&stats);
  EXPECT_EQ(stats.batches(), kTotal);
  EXPECT_EQ(stats.service().count(), kTotal);
  EXPECT_EQ(stats.wait().count(), 4 * kTotal);
  EXPECT_EQ(stats.events(), 2 * kTotal);
  EXPECT_EQ(stats.matches(), 3 * kTotal);
  EXPECT_EQ(stats.updates(), kTotal);
  EXPECT_EQ(stats.rejections(), kTotal);
  EXPECT_EQ(stats.dropped_deliveries(), kTotal);
  EXPECT_EQ(stats.disconnected_listeners(), kTotal);
  EXPECT_EQ(stats.queue_length_max(), uint64_t{kThreads});
  EXPECT_DOUBLE_EQ(stats.queue_length_mean(), (kThreads + 1) / 2.0);
}

}  // namespace
}  // namespace service
}  // namespace cohort
