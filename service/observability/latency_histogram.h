// The one histogram of durations in the project, for the server's stage
// profile and /metrics (stage_profile.h) and for the client side's load
// driver (client/load.h).
//
// `LatencyHistogram` is a log-linear histogram of durations in nanoseconds:
// values below 32 ns are counted exactly, and every power-of-two range above
// is split into 32 equal sub-buckets, so a percentile read back from it is
// within about 1.6% of the true sample (half a sub-bucket) for any duration up
// to about 73 minutes; longer ones land in the last bucket (the maximum is
// still exact). Count, sum, minimum and maximum are tracked exactly.
// Recording is O(1) and the histogram has a fixed size (9.7 KB).
//
// Thread safety: `LatencyHistogram` is thread-compatible (const methods may
// run concurrently; anything else needs external synchronisation; a client
// recording from several threads keeps one per thread and Merges them);
// `SharedLatencyHistogram` wraps one in a std::mutex and is thread-safe.
#ifndef COHORT_SERVICE_OBSERVABILITY_LATENCY_HISTOGRAM_H_
#define COHORT_SERVICE_OBSERVABILITY_LATENCY_HISTOGRAM_H_

#include <array>
#include <cstdint>
#include <limits>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "proto/cohort/v1/pubsub.pb.h"

namespace cohort {
namespace service {

// Inclusive upper bounds, in seconds, of the duration histograms /metrics
// exports (Prometheus `le`; +Inf follows): 1-2.5-5 steps from 10 us, where a
// stage's wait or a small cohort's service starts, to 10 s, past any
// deadline a publisher would set. Fixed, so every scrape has the same
// series and rates over them can be aggregated.
inline constexpr std::array<double, 19> kDurationBucketSeconds = {
    1e-05, 2.5e-05, 5e-05, 0.0001, 0.00025, 0.0005, 0.001,
    0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
    0.5, 1, 2.5, 5, 10};

// A duration histogram as /metrics exports it: the samples at most each of
// kDurationBucketSeconds (cumulative), their count and their sum.
struct DurationBuckets {
  std::array<uint64_t, kDurationBucketSeconds.size()> cumulative{};
  uint64_t count = 0;
  double sum_seconds = 0.0;
};

// A log-linear histogram of durations in nanoseconds. See the file comment
// for its resolution.
class LatencyHistogram {
 public:
  LatencyHistogram() = default;
  LatencyHistogram(const LatencyHistogram&) = default;
  LatencyHistogram& operator=(const LatencyHistogram&) = default;

  // Record adds one sample of `ns` nanoseconds. A negative value (a clock
  // that stepped back) is recorded as 0.
  void Record(int64_t ns);

  // Merge adds every sample of `other` to this histogram.
  void Merge(const LatencyHistogram& other);

  // Percentile returns the `q`-quantile (0 <= q <= 1) of the samples in
  // nanoseconds: the midpoint of the bucket holding the sample of rank
  // ceil(q * count), clamped to [min_ns(), max_ns()]. q <= 0 gives the
  // minimum, q >= 1 the maximum, and an empty histogram gives 0.
  double Percentile(double q) const;

  // ToProto fills `out` (count, mean_us, p50_us, p99_us, max_us), all in
  // microseconds; every field is 0 when the histogram is empty.
  void ToProto(cohort::v1::Latency* out) const;

  // ToBuckets returns the histogram at kDurationBucketSeconds: a sample
  // counts towards a bound if the midpoint of its log-linear bucket is at
  // most the bound, so each cumulative count is exact but for samples within
  // about 1.6% of the bound. The sum is exact.
  DurationBuckets ToBuckets() const;

  uint64_t count() const { return count_; }
  // Sum of all samples; wraps only after 584 years of recorded time.
  uint64_t sum_ns() const { return sum_ns_; }
  // Mean, minimum and maximum of the samples; 0 when empty.
  double mean_ns() const;
  int64_t min_ns() const { return count_ == 0 ? 0 : min_ns_; }
  int64_t max_ns() const { return max_ns_; }

 private:
  // Values below 2^kSubBucketBits are counted exactly; each power-of-two
  // range above holds 2^kSubBucketBits buckets. 5 bits (32 sub-buckets)
  // bounds the relative error of a bucket midpoint to 1/64 (about 1.6%),
  // "a few percent" as the API promises, at 9.7 KB per histogram.
  static constexpr int kSubBucketBits = 5;
  static constexpr int kSubBuckets = 1 << kSubBucketBits;
  // Largest exponent covered: 2^42 ns is about 73 minutes, past the "about an
  // hour" that any queue wait or batch could plausibly take.
  static constexpr int kMaxExponent = 41;
  static constexpr int kNumBuckets =
      kSubBuckets + (kMaxExponent - kSubBucketBits + 1) * kSubBuckets;

  static int BucketIndex(uint64_t ns);
  // Smallest value and width (in ns) of bucket `index`.
  static uint64_t BucketLower(int index);
  static uint64_t BucketWidth(int index);

  std::array<uint64_t, kNumBuckets> buckets_{};
  uint64_t count_ = 0;
  uint64_t sum_ns_ = 0;
  int64_t min_ns_ = std::numeric_limits<int64_t>::max();
  int64_t max_ns_ = 0;
};

// A LatencyHistogram that any thread may record into and read: one
// std::mutex, held for a Record or one ToBuckets pass. For durations
// measured outside a stage's profile (the engine's publish durations, the
// journal's group syncs).
class SharedLatencyHistogram {
 public:
  void Record(int64_t ns) {
    std::lock_guard<std::mutex> lock(mu_);
    histogram_.Record(ns);
  }
  DurationBuckets ToBuckets() const {
    std::lock_guard<std::mutex> lock(mu_);
    return histogram_.ToBuckets();
  }

 private:
  mutable std::mutex mu_;
  LatencyHistogram histogram_ ABSL_GUARDED_BY(mu_);
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_OBSERVABILITY_LATENCY_HISTOGRAM_H_
