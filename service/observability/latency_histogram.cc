#include "service/observability/latency_histogram.h"

#include <algorithm>
#include <cmath>

namespace cohort {
namespace service {
namespace {

constexpr double kNanosPerMicro = 1000.0;

// Percentile computes the rank as ceil(q * count); q * count carries rounding
// error (0.99 * 100 is not exactly 99 in binary), so a product within this
// much of an integer is taken to be that integer.
constexpr double kRankEpsilon = 1e-9;

}  // namespace

int LatencyHistogram::BucketIndex(uint64_t ns) {
  constexpr uint64_t kLargest = (uint64_t{2} << kMaxExponent) - 1;
  ns = std::min(ns, kLargest);
  if (ns < kSubBuckets) return static_cast<int>(ns);
  const int exponent = 63 - __builtin_clzll(ns);
  const int shift = exponent - kSubBucketBits;
  const int sub = static_cast<int>(ns >> shift) - kSubBuckets;
  return kSubBuckets + shift * kSubBuckets + sub;
}

uint64_t LatencyHistogram::BucketLower(int index) {
  if (index < kSubBuckets) return static_cast<uint64_t>(index);
  const int shift = (index - kSubBuckets) / kSubBuckets;
  const int sub = (index - kSubBuckets) % kSubBuckets;
  return static_cast<uint64_t>(kSubBuckets + sub) << shift;
}

uint64_t LatencyHistogram::BucketWidth(int index) {
  if (index < kSubBuckets) return 1;
  return uint64_t{1} << ((index - kSubBuckets) / kSubBuckets);
}

void LatencyHistogram::Record(int64_t ns) {
  ns = std::max<int64_t>(ns, 0);
  ++buckets_[BucketIndex(static_cast<uint64_t>(ns))];
  ++count_;
  sum_ns_ += static_cast<uint64_t>(ns);
  min_ns_ = std::min(min_ns_, ns);
  max_ns_ = std::max(max_ns_, ns);
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  if (other.count_ == 0) return;
  for (int i = 0; i < kNumBuckets; ++i) buckets_[i] += other.buckets_[i];
  count_ += other.count_;
  sum_ns_ += other.sum_ns_;
  min_ns_ = std::min(min_ns_, other.min_ns_);
  max_ns_ = std::max(max_ns_, other.max_ns_);
}

double LatencyHistogram::mean_ns() const {
  if (count_ == 0) return 0.0;
  return static_cast<double>(sum_ns_) / static_cast<double>(count_);
}

double LatencyHistogram::Percentile(double q) const {
  if (count_ == 0) return 0.0;
  if (q <= 0.0) return static_cast<double>(min_ns_);
  if (q >= 1.0) return static_cast<double>(max_ns_);
  const double exact = q * static_cast<double>(count_);
  uint64_t rank = static_cast<uint64_t>(std::ceil(exact - kRankEpsilon));
  rank = std::clamp<uint64_t>(rank, 1, count_);
  uint64_t seen = 0;
  for (int i = 0; i < kNumBuckets; ++i) {
    seen += buckets_[i];
    if (seen < rank) continue;
    // A bucket holds the integers [lower, lower + width - 1]; its midpoint
    // halves the worst-case error, and clamping makes single-valued
    // distributions and the extremes exact.
    const double mid = static_cast<double>(BucketLower(i)) +
                       static_cast<double>(BucketWidth(i) - 1) / 2.0;
    return std::clamp(mid, static_cast<double>(min_ns_),
                      static_cast<double>(max_ns_));
  }
  return static_cast<double>(max_ns_);  // Not reached: buckets sum to count_.
}

void LatencyHistogram::ToProto(cohort::v1::Latency* out) const {
  out->Clear();
  if (count_ == 0) return;
  out->set_count(count_);
  out->set_mean_us(mean_ns() / kNanosPerMicro);
  out->set_p50_us(Percentile(0.5) / kNanosPerMicro);
  out->set_p99_us(Percentile(0.99) / kNanosPerMicro);
  out->set_max_us(static_cast<double>(max_ns_) / kNanosPerMicro);
}

DurationBuckets LatencyHistogram::ToBuckets() const {
  DurationBuckets out;
  out.count = count_;
  out.sum_seconds = static_cast<double>(sum_ns_) / 1e9;
  if (count_ == 0) return out;
  size_t bound = 0;
  uint64_t seen = 0;
  for (int i = 0; i < kNumBuckets; ++i) {
    const double mid_seconds = (static_cast<double>(BucketLower(i)) +
                                static_cast<double>(BucketWidth(i) - 1) / 2.0) /
                               1e9;
    while (bound < kDurationBucketSeconds.size() &&
           kDurationBucketSeconds[bound] < mid_seconds) {
      out.cumulative[bound++] = seen;
    }
    seen += buckets_[i];
  }
  while (bound < kDurationBucketSeconds.size()) {
    out.cumulative[bound++] = seen;
  }
  return out;
}

}  // namespace service
}  // namespace cohort
