// The front stage's directory of subscription ids.
//
// Assigns the service's global subscription ids and records which are live,
// so that Subscribe and Unsubscribe can be checked and applied all-or-nothing
// at the front stage before any partition sees them. Global ids are dense:
// the n-th subscription ever assigned (n = 0, 1, ...) gets id n + 1 and is
// owned by partition n % P under the partition-local id n / P, so the owning
// partition of an id is computed, not looked up. Ids are never reused.
//
// Memory: one bit per id ever assigned (125 KB per million).
//
// Thread safety: all methods may be called from any thread (one mutex; each
// call is a single critical section, so concurrent Unsubscribes of the same
// id see exactly one success).
#ifndef COHORT_SERVICE_STAGES_SUBSCRIPTION_DIRECTORY_H_
#define COHORT_SERVICE_STAGES_SUBSCRIPTION_DIRECTORY_H_

#include <cstdint>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace cohort {
namespace service {

// Where a global subscription id lives.
struct Placement {
  uint32_t partition;
  uint32_t local_id;  // the matcher's SubscriptionId in that partition
};

class SubscriptionDirectory {
 public:
  // `partitions` >= 1; `max_local_id` bounds the local ids of a partition
  // (the matcher's kMaxSubscriptionId).
  SubscriptionDirectory(uint32_t partitions, uint64_t max_local_id);

  // Assigns `n` new ids, live from now on, and returns the first: the ids
  // are first, first + 1, ..., first + n - 1. RESOURCE_EXHAUSTED if the id
  // space is used up (nothing assigned).
  absl::StatusOr<uint64_t> Assign(uint64_t n);

  // Marks every id in `ids` dead if all are live; else NOT_FOUND naming the
  // first id that is not (nothing changes).
  absl::Status Kill(absl::Span<const uint64_t> ids);

  // Recovery: makes the directory what it was (ids below `next_id` have
  // been assigned; exactly `live_ids` are live). INVALID_ARGUMENT if an id
  // was assigned already, a live id is 0 or not below next_id, or next_id
  // exceeds the id space. REQUIRES: nothing assigned yet.
  absl::Status Restore(uint64_t next_id, absl::Span<const uint64_t> live_ids);

  // Marks a live id dead again (used when a partition could not apply an
  // assigned subscription).
  void Forget(uint64_t id);

  uint64_t live() const;

  Placement Place(uint64_t id) const {
    return Placement{static_cast<uint32_t>((id - 1) % partitions_),
                     static_cast<uint32_t>((id - 1) / partitions_)};
  }
  uint64_t GlobalId(uint32_t partition, uint32_t local_id) const {
    return static_cast<uint64_t>(local_id) * partitions_ + partition + 1;
  }

 private:
  bool IsLive(uint64_t id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint32_t partitions_;
  const uint64_t max_ids_;
  mutable std::mutex mu_;
  uint64_t assigned_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t live_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<uint64_t> live_bits_ ABSL_GUARDED_BY(mu_);  // bit (id - 1)
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STAGES_SUBSCRIPTION_DIRECTORY_H_
