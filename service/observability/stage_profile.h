// The stage profile (docs/DESIGN.md section 6): what one stage instance (the
// front stage, one partition, the reply stage, the journal or the threaded
// worker pool) records about its work, and how it is summarised into
// cohort::v1::StageStats for GetStats and the Prometheus endpoint.
//
// `StageProfile` holds one stage instance's queue-length, wait-time,
// service-time and batch-size (cohort-size) distributions and its counters.
// The stage's own thread records into it; any thread (the GetStats handler,
// the metrics endpoint) may read a snapshot with `ToProto`.
//
// Its durations are LatencyHistograms (latency_histogram.h).
//
// Thread safety: `StageProfile` is thread-safe: the distributions are
// guarded by an internal std::mutex (held for a few hundred nanoseconds per
// record), the counters are relaxed std::atomic and never take the mutex. A snapshot is consistent
// for the distributions; counters read alongside it may be a little newer.
//
// Invariants (StageProfile): batches() equals the sum of the batch-size
// buckets and the number of queue-length samples; wait and service histogram
// counts equal the number of samples recorded into them.
#ifndef COHORT_SERVICE_OBSERVABILITY_STAGE_PROFILE_H_
#define COHORT_SERVICE_OBSERVABILITY_STAGE_PROFILE_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/types/span.h"
#include "proto/cohort/v1/pubsub.pb.h"
#include "service/observability/latency_histogram.h"

namespace cohort {
namespace service {

// Nanoseconds on the monotonic clock: the time base of every enqueue, wait
// and service time the stages record.
inline int64_t MonotonicNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Inclusive upper bounds of the batch-size (cohort-size) histogram buckets,
// ascending, not counting the final overflow bucket (upper bound
// kBatchSizeOverflowBound). Powers of two: cohort sizes span several orders
// of magnitude (1 when idle, --cohort_max under load) and the benefit of a
// cohort grows with its logarithm, so doubling buckets give equal resolution
// where it matters. 4096 is above any sensible --cohort_max (the matcher runs
// cohorts in chunks of 64 events, so gains flatten long before that); larger
// batches are lumped together.
inline constexpr std::array<uint64_t, 13> kBatchSizeBucketBounds = {
    1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096};
// Upper bound reported for the overflow bucket (batches over 4096 items).
inline constexpr uint64_t kBatchSizeOverflowBound =
    std::numeric_limits<uint64_t>::max();

// What /metrics exports of one stage beyond its StageStats, snapshotted
// under the same lock: the wait and service histograms, and the sums behind
// the queue-length and batch-size means.
struct StageHistograms {
  DurationBuckets wait;
  DurationBuckets service;
  uint64_t queue_length_sum = 0;
  uint64_t batch_size_sum = 0;
};

// The profile of one stage instance. See the file comment.
class StageProfile {
 public:
  // `name` is the instance's unique name ("front", "partition/3", ...),
  // `stage` its stage ("front", "partition", ...), `partition` its index for
  // partition instances (nullopt otherwise), `queue_limit` the capacity of
  // its inbound queue (0 if unbounded or none).
  StageProfile(std::string name, std::string stage,
               std::optional<uint32_t> partition, uint64_t queue_limit);

  StageProfile(const StageProfile&) = delete;
  StageProfile& operator=(const StageProfile&) = delete;

  // RecordBatch records one batch taken from the queue: `queue_length` items
  // were queued when it was taken (the batch included), it held `batch_size`
  // items and took `service_ns` to run.
  // REQUIRES: batch_size >= 1 (0 is counted in the first bucket).
  void RecordBatch(size_t queue_length, size_t batch_size, int64_t service_ns);

  // RecordWait records the queue wait of one item; RecordWaits records one
  // per element of `wait_ns` under a single lock acquisition (use it for the
  // items of a batch).
  void RecordWait(int64_t wait_ns);
  void RecordWaits(absl::Span<const int64_t> wait_ns);

  // Counters; see StageStats in pubsub.proto for their meaning.
  void AddEvents(uint64_t n) { Add(events_, n); }
  void AddMatches(uint64_t n) { Add(matches_, n); }
  void AddUpdates(uint64_t n) { Add(updates_, n); }
  void AddRejections(uint64_t n) { Add(rejections_, n); }
  void AddDroppedDeliveries(uint64_t n) { Add(dropped_deliveries_, n); }
  void AddDisconnectedListeners(uint64_t n) { Add(disconnected_listeners_, n); }
  void AddExpired(uint64_t n) { Add(expired_, n); }
  void AddDeliveries(uint64_t n) { Add(deliveries_, n); }

  uint64_t events() const { return Load(events_); }
  uint64_t matches() const { return Load(matches_); }
  uint64_t updates() const { return Load(updates_); }
  uint64_t rejections() const { return Load(rejections_); }
  uint64_t dropped_deliveries() const { return Load(dropped_deliveries_); }
  uint64_t disconnected_listeners() const {
    return Load(disconnected_listeners_);
  }
  uint64_t expired() const { return Load(expired_); }
  uint64_t deliveries() const { return Load(deliveries_); }
  // Batches recorded so far (takes the lock).
  uint64_t batches() const;

  // Where a partition thread runs: its CPU (nullopt: not pinned) and the
  // NUMA node of its memory (nullopt: not placed). Set once, by the
  // partition thread before it serves (under the lock).
  void SetPlacement(std::optional<uint32_t> cpu,
                    std::optional<uint32_t> numa_node);
  std::optional<uint32_t> cpu() const;
  std::optional<uint32_t> numa_node() const;

  const std::string& name() const { return name_; }
  const std::string& stage() const { return stage_; }
  std::optional<uint32_t> partition() const { return partition_; }
  uint64_t queue_limit() const { return queue_limit_; }

  // ToProto overwrites every field of `out` with a snapshot of this profile.
  // batch_sizes lists the buckets by ascending upper bound, up to the last
  // non-empty one (empty ones before it included, so that each bucket's
  // range starts after the previous bucket's upper bound). With
  // `histograms`, also fills it from the same snapshot (for /metrics).
  void ToProto(cohort::v1::StageStats* out,
               StageHistograms* histograms = nullptr) const;

 private:
  static constexpr size_t kNumBatchBuckets = kBatchSizeBucketBounds.size() + 1;

  static void Add(std::atomic<uint64_t>& counter, uint64_t n) {
    counter.fetch_add(n, std::memory_order_relaxed);
  }
  static uint64_t Load(const std::atomic<uint64_t>& counter) {
    return counter.load(std::memory_order_relaxed);
  }
  static size_t BatchBucket(size_t batch_size);

  const std::string name_;
  const std::string stage_;
  const std::optional<uint32_t> partition_;
  const uint64_t queue_limit_;

  mutable std::mutex mu_;
  std::optional<uint32_t> cpu_ ABSL_GUARDED_BY(mu_);
  std::optional<uint32_t> numa_node_ ABSL_GUARDED_BY(mu_);
  LatencyHistogram wait_ ABSL_GUARDED_BY(mu_);
  LatencyHistogram service_ ABSL_GUARDED_BY(mu_);
  std::array<uint64_t, kNumBatchBuckets> batch_buckets_ ABSL_GUARDED_BY(mu_){};
  uint64_t batches_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t queue_length_sum_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t queue_length_max_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t batch_size_sum_ ABSL_GUARDED_BY(mu_) = 0;

  std::atomic<uint64_t> events_{0};
  std::atomic<uint64_t> matches_{0};
  std::atomic<uint64_t> updates_{0};
  std::atomic<uint64_t> rejections_{0};
  std::atomic<uint64_t> dropped_deliveries_{0};
  std::atomic<uint64_t> disconnected_listeners_{0};
  std::atomic<uint64_t> expired_{0};
  std::atomic<uint64_t> deliveries_{0};
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_OBSERVABILITY_STAGE_PROFILE_H_
