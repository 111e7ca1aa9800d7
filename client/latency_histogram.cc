#include "client/latency_histogram.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace cohort {
namespace client {

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (int i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  max_ = std::max(max_, other.max_);
}

uint64_t LatencyHistogram::Percentile(double q) const {
  if (count_ == 0) return 0;
  const uint64_t rank = std::max<uint64_t>(
      1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_))));
  uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::min(max_, Lower(i) + Width(i) / 2);
  }
  return max_;
}

uint64_t LatencyHistogram::Lower(int i) {
  const int group = i / kSub;
  const uint64_t sub = i % kSub;
  return group == 0 ? sub : (kSub + sub) << (group - 1);
}

uint64_t LatencyHistogram::Width(int i) {
  const int group = i / kSub;
  return group == 0 ? 1 : uint64_t{1} << (group - 1);
}

}  // namespace client
}  // namespace cohort
