// The activation rule of cohort scheduling (docs/DESIGN.md section 4; the
// pair of thresholds of Larus and Parkes' StagedServer), in one place for
// every stage that forms cohorts: the partitioned and replicated layouts'
// front dispatch (CohortPipeline) and the partition queues of the
// sharded_phase1 layout (ShardQueue).
//
// A queue holds events and subscription changes in arrival order. The
// events before the first change (LeadingEvents) form a cohort as soon as
// one of these holds:
//   - `cohort_max` of them are waiting (0: no limit);
//   - a change is queued behind them (it must wait for the events before
//     it, so they go now);
//   - the queue is flushing (shutdown: admitted work finishes promptly);
//   - the oldest has waited `cohort_wait_ns`.
// The cohort takes at most cohort_max of them.
//
// Thread safety: immutable after construction; its methods read only their
// arguments (and the clock). Callers hold their queue's lock.
#ifndef COHORT_SERVICE_STAGES_COHORT_ACTIVATION_H_
#define COHORT_SERVICE_STAGES_COHORT_ACTIVATION_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "service/observability/stage_profile.h"

namespace cohort {
namespace service {

// LeadingEvents()
//
// The number of items of `items` (a deque or vector) before the first one
// for which `is_change` holds; all of them when `changes`, the number of
// changes queued, is 0.
template <typename Items, typename IsChange>
size_t LeadingEvents(const Items& items, size_t changes, IsChange is_change) {
  if (changes == 0) return items.size();
  size_t n = 0;
  while (n < items.size() && !is_change(items[n])) ++n;
  return n;
}

class CohortActivation {
 public:
  // `cohort_max` 0 means no limit on a cohort's events.
  CohortActivation(uint32_t cohort_max, int64_t cohort_wait_ns)
      : cohort_max_(cohort_max == 0 ? std::numeric_limits<uint32_t>::max()
                                    : cohort_max),
        cohort_wait_ns_(cohort_wait_ns) {}

  // Take()
  //
  // With `ready` events leading a queue of `queued` items, the oldest
  // queued at `oldest_ns` (MonotonicNanos), returns how many of them form
  // a cohort now (1 to cohort_max), or 0 and sets *deadline_ns to when the
  // oldest's wait runs out. The clock is read only when nothing else
  // trips. REQUIRES: ready >= 1.
  size_t Take(size_t ready, size_t queued, int64_t oldest_ns, bool flushing,
              int64_t* deadline_ns) const {
    const int64_t deadline = oldest_ns + cohort_wait_ns_;
    if (ready >= cohort_max_ || ready < queued || flushing ||
        MonotonicNanos() >= deadline) {
      return std::min<size_t>(ready, cohort_max_);
    }
    *deadline_ns = deadline;
    return 0;
  }

  // Whether `queued` events fill a cohort.
  bool Full(size_t queued) const { return queued >= cohort_max_; }

 private:
  const uint32_t cohort_max_;
  const int64_t cohort_wait_ns_;
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STAGES_COHORT_ACTIVATION_H_
