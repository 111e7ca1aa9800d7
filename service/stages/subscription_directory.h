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
// Branches: an "or" subscription (SubscriptionInput::branches) is one
// global id whose conjunctions are matcher rows of their own, each under a
// *branch id*: a local id from kFirstBranchId up (plain local ids stay
// below it), assigned densely and reused once released, the same in every
// partition. A branch id maps back to its subscription's global id and
// subscriber (BranchOwner, BranchSubscriber), so a partition turns the
// rows it matched into the subscription, which the reply stage counts
// once per event (Engine::MergeAndDeliver). 16 bytes per branch id ever
// in use at once, in pages of 65536.
//
// Thread safety: all methods may be called from any thread (one mutex; each
// call is a single critical section, so concurrent Unsubscribes of the same
// id see exactly one success). BranchOwner and BranchSubscriber take no
// lock: a partition calls them for the branch ids it matched, whose
// assignment happened before the partition applied their rows (the update
// queue orders the two), and a branch id is released only once its rows
// are removed everywhere.
#ifndef COHORT_SERVICE_STAGES_SUBSCRIPTION_DIRECTORY_H_
#define COHORT_SERVICE_STAGES_SUBSCRIPTION_DIRECTORY_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace cohort {
namespace service {

// Where a global subscription id lives.
struct Placement {
  uint32_t partition;
  uint32_t local_id;  // the matcher's SubscriptionId in that partition
};

// The first branch id; also one more than the largest plain local id.
inline constexpr uint32_t kFirstBranchId = uint32_t{1} << 30;

class SubscriptionDirectory {
 public:
  static bool IsBranch(uint32_t local_id) { return local_id >= kFirstBranchId; }

  // `partitions` >= 1; `max_local_id` bounds the plain local ids of a
  // partition (below kFirstBranchId) and `max_branch_id` the branch ids
  // (at least kFirstBranchId; the matcher's kMaxSubscriptionId).
  SubscriptionDirectory(uint32_t partitions, uint64_t max_local_id,
                        uint32_t max_branch_id = (uint32_t{1} << 31) - 2);
  ~SubscriptionDirectory();

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

  // Assigns `n` branch ids to the subscription `id` of `subscriber` and
  // returns them, ascending. RESOURCE_EXHAUSTED if fewer than `n` are free
  // (nothing assigned). REQUIRES: `id` has no branch ids.
  absl::StatusOr<std::vector<uint32_t>> AssignBranches(uint64_t id,
                                                       uint32_t subscriber,
                                                       size_t n);
  // The branch ids of `id` (none for a plain subscription).
  std::vector<uint32_t> BranchesOf(uint64_t id) const;
  // Frees the branch ids of `id`, if any. REQUIRES: their rows are not in
  // any index any more (or were never added).
  void ReleaseBranches(uint64_t id);
  // The subscription and subscriber of an assigned branch id.
  uint64_t BranchOwner(uint32_t branch) const {
    return Entry(branch).owner.load(std::memory_order_relaxed);
  }
  uint32_t BranchSubscriber(uint32_t branch) const {
    return Entry(branch).subscriber.load(std::memory_order_relaxed);
  }
  // Whether some branch id is assigned now (relaxed: a partition that
  // applied a branch's rows sees it).
  bool has_branches() const {
    return branches_live_.load(std::memory_order_relaxed) != 0;
  }
  // Branch ids assigned now.
  uint64_t branches() const {
    return branches_live_.load(std::memory_order_relaxed);
  }

  Placement Place(uint64_t id) const {
    return Placement{static_cast<uint32_t>((id - 1) % partitions_),
                     static_cast<uint32_t>((id - 1) / partitions_)};
  }
  uint64_t GlobalId(uint32_t partition, uint32_t local_id) const {
    return static_cast<uint64_t>(local_id) * partitions_ + partition + 1;
  }

 private:
  struct BranchEntry {
    std::atomic<uint64_t> owner{0};
    std::atomic<uint32_t> subscriber{0};
  };
  static constexpr uint32_t kBranchPageBits = 16;
  static constexpr uint32_t kBranchPageSize = uint32_t{1} << kBranchPageBits;

  bool IsLive(uint64_t id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  BranchEntry& MutableEntry(uint32_t branch) const {
    const uint32_t i = branch - kFirstBranchId;
    return pages_[i >> kBranchPageBits].load(
        std::memory_order_relaxed)[i & (kBranchPageSize - 1)];
  }
  const BranchEntry& Entry(uint32_t branch) const {
    return MutableEntry(branch);
  }
  // The pages that hold max_branches_ entries (pages_'s length).
  uint32_t branch_pages() const {
    return (max_branches_ >> kBranchPageBits) + 1;
  }

  const uint32_t partitions_;
  const uint64_t max_ids_;
  const uint32_t max_branches_;  // branch ids kFirstBranchId.. at most
  mutable std::mutex mu_;
  uint64_t assigned_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t live_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<uint64_t> live_bits_ ABSL_GUARDED_BY(mu_);  // bit (id - 1)
  // Branch ids: never used ones from next_branch_ on, released ones in
  // free_branches_; each subscription's in branches_of_.
  uint32_t next_branch_ ABSL_GUARDED_BY(mu_) = 0;  // minus kFirstBranchId
  std::vector<uint32_t> free_branches_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, std::vector<uint32_t>> branches_of_
      ABSL_GUARDED_BY(mu_);
  // Pages of entries (allocated under mu_, read without it), by
  // (branch - kFirstBranchId) >> kBranchPageBits.
  std::unique_ptr<std::atomic<BranchEntry*>[]> pages_;
  std::atomic<uint64_t> branches_live_{0};
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STAGES_SUBSCRIPTION_DIRECTORY_H_
