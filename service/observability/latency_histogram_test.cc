#include "service/observability/latency_histogram.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace cohort {
namespace service {
namespace {

// Percentiles come from a log-linear histogram with 32 sub-buckets per power
// of two: a bucket midpoint is within 1/64 of any value in the bucket.
constexpr double kRelativeTolerance = 0.02;

void ExpectNearRelative(double expected, double actual) {
  EXPECT_NEAR(actual, expected, std::abs(expected) * kRelativeTolerance)
      << "expected " << expected << ", got " << actual;
}

// The q-quantile of `sorted` by the same rank rule as Percentile.
double ExactQuantile(const std::vector<int64_t>& sorted, double q) {
  size_t rank = static_cast<size_t>(std::ceil(q * sorted.size() - 1e-9));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return static_cast<double>(sorted[rank - 1]);
}

// Empty buckets below the largest non-empty one are listed too, so each
// bucket's range starts right after the previous bucket's upper bound.
TEST(LatencyHistogram, EmptyGivesZeros) {
  LatencyHistogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.sum_ns(), 0u);
  EXPECT_EQ(h.min_ns(), 0);
  EXPECT_EQ(h.max_ns(), 0);
  EXPECT_EQ(h.mean_ns(), 0.0);
  EXPECT_EQ(h.Percentile(0.5), 0.0);
  EXPECT_EQ(h.Percentile(1.0), 0.0);

  cohort::v1::Latency proto;
  proto.set_count(7);  // ToProto must overwrite stale values.
  proto.set_p99_us(3.0);
  h.ToProto(&proto);
  EXPECT_EQ(proto.count(), 0u);
  EXPECT_EQ(proto.mean_us(), 0.0);
  EXPECT_EQ(proto.p50_us(), 0.0);
  EXPECT_EQ(proto.p99_us(), 0.0);
  EXPECT_EQ(proto.max_us(), 0.0);
}

TEST(LatencyHistogram, UniformPercentilesWithinTwoPercent) {
  LatencyHistogram h;
  // 1 us .. 100 ms in 1 us steps.
  for (int64_t i = 1; i <= 100000; ++i) h.Record(i * 1000);
  EXPECT_EQ(h.count(), 100000u);
  ExpectNearRelative(50000e3, h.Percentile(0.5));
  ExpectNearRelative(90000e3, h.Percentile(0.9));
  ExpectNearRelative(99000e3, h.Percentile(0.99));
  EXPECT_EQ(h.Percentile(1.0), 100000e3);
  EXPECT_EQ(h.Percentile(0.0), 1e3);
  EXPECT_DOUBLE_EQ(h.mean_ns(), 50000.5e3);
}

TEST(LatencyHistogram, LogNormalPercentilesMatchExactQuantiles) {
  std::mt19937_64 rng(42);
  // Median about 20 us, with a long tail into the tens of milliseconds.
  std::lognormal_distribution<double> dist(std::log(20e3), 1.5);
  LatencyHistogram h;
  std::vector<int64_t> samples;
  for (int i = 0; i < 200000; ++i) {
    const int64_t ns = static_cast<int64_t>(dist(rng));
    samples.push_back(ns);
    h.Record(ns);
  }
  std::sort(samples.begin(), samples.end());
  for (double q : {0.01, 0.1, 0.5, 0.9, 0.99, 0.999}) {
    SCOPED_TRACE(q);
    ExpectNearRelative(ExactQuantile(samples, q), h.Percentile(q));
  }
  EXPECT_EQ(h.max_ns(), samples.back());
  EXPECT_EQ(h.min_ns(), samples.front());
}

TEST(LatencyHistogram, SmallValuesAreExact) {
  LatencyHistogram h;
  for (int64_t ns = 0; ns < 32; ++ns) h.Record(ns);
  // Rank ceil(q * 32) is the value rank - 1.
  EXPECT_EQ(h.Percentile(0.5), 15.0);
  EXPECT_EQ(h.Percentile(1.0 / 32), 0.0);
  EXPECT_EQ(h.Percentile(31.0 / 32), 30.0);
}

TEST(LatencyHistogram, SingleValueIsExact) {
  LatencyHistogram h;
  for (int i = 0; i < 10; ++i) h.Record(123456789);
  EXPECT_EQ(h.Percentile(0.5), 123456789.0);
  EXPECT_EQ(h.Percentile(0.99), 123456789.0);
}

TEST(LatencyHistogram, NegativeIsRecordedAsZero) {
  LatencyHistogram h;
  h.Record(-5);
  EXPECT_EQ(h.count(), 1u);
  EXPECT_EQ(h.min_ns(), 0);
  EXPECT_EQ(h.max_ns(), 0);
  EXPECT_EQ(h.Percentile(0.5), 0.0);
}

TEST(LatencyHistogram, BeyondRangeKeepsExactMaxAndMean) {
  LatencyHistogram h;
  const int64_t ten_hours = int64_t{10} * 3600 * 1000 * 1000 * 1000;
  h.Record(1000);
  h.Record(ten_hours);
  EXPECT_EQ(h.max_ns(), ten_hours);
  EXPECT_EQ(h.Percentile(1.0), static_cast<double>(ten_hours));
  EXPECT_DOUBLE_EQ(h.mean_ns(), (ten_hours + 1000) / 2.0);
  // The 0.99 sample lands in the last bucket (about 70 minutes) and is
  // reported below the true value, but never above the maximum.
  EXPECT_GT(h.Percentile(0.99), 3600e9);
  EXPECT_LE(h.Percentile(0.99), static_cast<double>(ten_hours));
}

TEST(LatencyHistogram, MergeEqualsRecordingEverything) {
  LatencyHistogram a, b, all;
  std::mt19937_64 rng(7);
  std::exponential_distribution<double> dist(1.0 / 50e3);
  for (int i = 0; i < 5000; ++i) {
    const int64_t x = static_cast<int64_t>(dist(rng));
    const int64_t y = static_cast<int64_t>(dist(rng)) + 1000000;
    a.Record(x);
    b.Record(y);
    all.Record(x);
    all.Record(y);
  }
  LatencyHistogram empty;
  a.Merge(empty);
  a.Merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.sum_ns(), all.sum_ns());
  EXPECT_EQ(a.min_ns(), all.min_ns());
  EXPECT_EQ(a.max_ns(), all.max_ns());
  for (double q : {0.1, 0.5, 0.9, 0.99}) {
    EXPECT_EQ(a.Percentile(q), all.Percentile(q)) << q;
  }
  // Merging into an empty histogram copies it.
  empty.Merge(b);
  EXPECT_EQ(empty.min_ns(), b.min_ns());
  EXPECT_EQ(empty.Percentile(0.5), b.Percentile(0.5));
}

TEST(LatencyHistogram, ToProtoIsInMicroseconds) {
  LatencyHistogram h;
  h.Record(1000);
  h.Record(2000);
  h.Record(3000);
  cohort::v1::Latency proto;
  h.ToProto(&proto);
  EXPECT_EQ(proto.count(), 3u);
  EXPECT_DOUBLE_EQ(proto.mean_us(), 2.0);
  ExpectNearRelative(2.0, proto.p50_us());
  ExpectNearRelative(3.0, proto.p99_us());
  EXPECT_DOUBLE_EQ(proto.max_us(), 3.0);
}

// Every percentile is within 1/64 of the true nearest-rank value, over
// values spread across six powers of ten (what the load driver records:
// 100 ns to 0.1 s).
TEST(LatencyHistogram, PercentilesWithinOneSixtyFourth) {
  LatencyHistogram h;
  std::vector<uint64_t> values;
  uint64_t v = 1000;
  for (int i = 0; i < 20000; ++i) {
    v = (v * 6364136223846793005ull + 1442695040888963407ull);
    values.push_back(100 + (v >> 40) % 100000000);
  }
  for (uint64_t x : values) h.Record(static_cast<int64_t>(x));
  std::sort(values.begin(), values.end());
  for (double q : {0.01, 0.5, 0.9, 0.99, 0.999, 1.0}) {
    const size_t rank = static_cast<size_t>(std::ceil(q * values.size()));
    const double truth = static_cast<double>(values[rank - 1]);
    EXPECT_NEAR(h.Percentile(q), truth, truth / 64) << "q = " << q;
  }
  EXPECT_EQ(h.max_ns(), static_cast<int64_t>(values.back()));
}

// Property: SharedLatencyHistogram keeps every sample recorded by
// concurrent threads, while a reader takes snapshots whose counts only grow
// and always equal their +Inf-free total (no sample is above 10 s here).
TEST(SharedLatencyHistogram, ConcurrentRecordsAndReadsKeepExactTotals) {
  SharedLatencyHistogram h;
  constexpr int kThreads = 4;
  constexpr int kSamples = 5000;
  std::atomic<bool> done{false};
  std::thread reader([&] {
    uint64_t last = 0;
    while (!done.load()) {
      const DurationBuckets b = h.ToBuckets();
      EXPECT_GE(b.count, last);
      EXPECT_EQ(b.cumulative.back(), b.count);
      last = b.count;
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&h, t] {
      for (int i = 0; i < kSamples; ++i) h.Record(1000 * (t + 1) + i);
    });
  }
  for (std::thread& w : writers) w.join();
  done.store(true);
  reader.join();
  const DurationBuckets b = h.ToBuckets();
  EXPECT_EQ(b.count, uint64_t{kThreads * kSamples});
  // Samples from 1,000 ns to 8,999 ns: all at or below the 10 us bound.
  EXPECT_EQ(b.cumulative[0], b.count);
}

}  // namespace
}  // namespace service
}  // namespace cohort
