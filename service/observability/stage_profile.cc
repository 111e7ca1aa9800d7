#include "service/observability/stage_profile.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace cohort {
namespace service {
namespace {

constexpr double kNanosPerMicro = 1000.0;

// Percentile computes the rank as ceil(q * count); q * count carries rounding
// error (0.99 * 100 is not exactly 99 in binary), so a product within this
// much of an integer is taken to be that integer.
constexpr double kRankEpsilon = 1e-9;

}  // namespace

// ---------------------------------------------------------------------------
// LatencyHistogram

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

// ---------------------------------------------------------------------------
// StageProfile

StageProfile::StageProfile(std::string name, std::string stage,
                           std::optional<uint32_t> partition,
                           uint64_t queue_limit)
    : name_(std::move(name)),
      stage_(std::move(stage)),
      partition_(partition),
      queue_limit_(queue_limit) {}

size_t StageProfile::BatchBucket(size_t batch_size) {
  const auto it = std::lower_bound(kBatchSizeBucketBounds.begin(),
                                   kBatchSizeBucketBounds.end(),
                                   static_cast<uint64_t>(batch_size));
  return static_cast<size_t>(it - kBatchSizeBucketBounds.begin());
}

void StageProfile::RecordBatch(size_t queue_length, size_t batch_size,
                               int64_t service_ns) {
  const size_t bucket = BatchBucket(batch_size);
  std::lock_guard<std::mutex> lock(mu_);
  ++batch_buckets_[bucket];
  ++batches_;
  queue_length_sum_ += queue_length;
  queue_length_max_ = std::max<uint64_t>(queue_length_max_, queue_length);
  batch_size_sum_ += batch_size;
  service_.Record(service_ns);
}

void StageProfile::RecordWait(int64_t wait_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  wait_.Record(wait_ns);
}

void StageProfile::RecordWaits(absl::Span<const int64_t> wait_ns) {
  if (wait_ns.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (int64_t ns : wait_ns) wait_.Record(ns);
}

uint64_t StageProfile::batches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return batches_;
}

void StageProfile::SetPlacement(std::optional<uint32_t> cpu,
                                std::optional<uint32_t> numa_node) {
  std::lock_guard<std::mutex> lock(mu_);
  cpu_ = cpu;
  numa_node_ = numa_node;
}

std::optional<uint32_t> StageProfile::cpu() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cpu_;
}

std::optional<uint32_t> StageProfile::numa_node() const {
  std::lock_guard<std::mutex> lock(mu_);
  return numa_node_;
}

void StageProfile::ToProto(cohort::v1::StageStats* out,
                           StageHistograms* histograms) const {
  out->Clear();
  out->set_name(name_);
  out->set_stage(stage_);
  if (partition_.has_value()) out->set_partition(*partition_);
  out->set_queue_limit(queue_limit_);
  out->set_events(events());
  out->set_matches(matches());
  out->set_updates(updates());
  out->set_rejections(rejections());
  out->set_dropped_deliveries(dropped_deliveries());
  out->set_disconnected_listeners(disconnected_listeners());
  out->set_expired(expired());
  out->set_deliveries(deliveries());
  if (const std::optional<uint32_t> cpu = this->cpu(); cpu.has_value()) {
    out->set_cpu(*cpu);
  }
  if (const std::optional<uint32_t> node = numa_node(); node.has_value()) {
    out->set_numa_node(*node);
  }

  std::lock_guard<std::mutex> lock(mu_);
  out->set_batches(batches_);
  out->set_queue_length_mean(batches_ == 0
                                 ? 0.0
                                 : static_cast<double>(queue_length_sum_) /
                                       static_cast<double>(batches_));
  out->set_queue_length_max(queue_length_max_);
  wait_.ToProto(out->mutable_wait());
  service_.ToProto(out->mutable_service());
  if (histograms != nullptr) {
    histograms->wait = wait_.ToBuckets();
    histograms->service = service_.ToBuckets();
    histograms->queue_length_sum = queue_length_sum_;
    histograms->batch_size_sum = batch_size_sum_;
  }
  // Every bucket up to the last non-empty one is listed, empty ones too: a
  // bucket's lower bound is the previous bucket's upper bound, so leaving
  // one out would make its neighbour appear to cover its range.
  size_t last = kNumBatchBuckets;
  while (last > 0 && batch_buckets_[last - 1] == 0) --last;
  for (size_t i = 0; i < last; ++i) {
    cohort::v1::HistogramBucket* bucket = out->add_batch_sizes();
    bucket->set_upper_bound(i < kBatchSizeBucketBounds.size()
                                ? kBatchSizeBucketBounds[i]
                                : kBatchSizeOverflowBound);
    bucket->set_count(batch_buckets_[i]);
  }
}

}  // namespace service
}  // namespace cohort
