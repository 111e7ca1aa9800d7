// LatencyHistogram: a log-bucketed histogram of durations in nanoseconds, for
// the load driver (client/load.h) and anything else that reports latency
// percentiles measured on the client side.
//
// Each power-of-two range [2^e, 2^(e+1)) is split into 32 equal sub-buckets,
// so a percentile (reported as its bucket's midpoint) is within 1/64 of the
// true value; values below 32 ns are exact. Recording is O(1) and the
// histogram has a fixed size (1,920 counters, 15 KiB) whatever it holds.
//
// Thread safety: none; callers that record from several threads lock, or
// keep one histogram per thread and Merge them.
#ifndef COHORT_CLIENT_LATENCY_HISTOGRAM_H_
#define COHORT_CLIENT_LATENCY_HISTOGRAM_H_

#include <algorithm>
#include <cstdint>
#include <vector>

namespace cohort {
namespace client {

class LatencyHistogram {
 public:
  LatencyHistogram() : counts_(kBuckets, 0) {}

  // Record() adds one value of `ns` nanoseconds.
  void Record(uint64_t ns) {
    ++counts_[Index(ns)];
    ++count_;
    sum_ += ns;
    max_ = std::max(max_, ns);
  }
  // Merge() adds every value recorded in `other`.
  void Merge(const LatencyHistogram& other);

  uint64_t count() const { return count_; }
  // The largest value recorded, exactly; 0 when empty.
  uint64_t max() const { return max_; }
  // The exact mean; 0 when empty.
  double Mean() const {
    return count_ == 0 ? 0 : static_cast<double>(sum_) / count_;
  }
  // Percentile() is the midpoint of the bucket holding the ceil(q * count)-th
  // smallest value (the smallest for q = 0), capped at the maximum; 0 when
  // empty. REQUIRES: 0 <= q <= 1.
  uint64_t Percentile(double q) const;

 private:
  static constexpr int kSubBits = 5;  // 32 sub-buckets per power of two
  static constexpr uint64_t kSub = uint64_t{1} << kSubBits;
  // Group 0 holds 0 ... 31 exactly; group g >= 1 holds [2^(g+4), 2^(g+5)).
  static constexpr int kBuckets = (64 - kSubBits + 1) * kSub;

  static int Index(uint64_t v) {
    if (v < kSub) return static_cast<int>(v);
    const int shift = 63 - __builtin_clzll(v) - kSubBits;
    return (shift + 1) * kSub + static_cast<int>((v >> shift) & (kSub - 1));
  }
  // The smallest value of bucket `i`, and how many values it spans.
  static uint64_t Lower(int i);
  static uint64_t Width(int i);

  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t max_ = 0;
};

}  // namespace client
}  // namespace cohort

#endif  // COHORT_CLIENT_LATENCY_HISTOGRAM_H_
