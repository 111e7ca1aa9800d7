#include "service/observability/stage_profile.h"

#include <algorithm>
#include <utility>

namespace cohort {
namespace service {
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
