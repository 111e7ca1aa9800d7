// A subscription change on its way to the stages that apply it: the adds
// and removes of one Subscribe or Unsubscribe (or of recovery), for one
// partition (the sharded_phase1 layout) or for the whole of one index copy
// (the partitioned and replicated layouts). Created by the engine's front
// (engine.h, Engine::RouteChange), applied on a partition thread.
//
// Thread safety: handed over whole through a stage's queue; the stage that
// applies it calls `done` once, and nothing touches it afterwards.
#ifndef COHORT_SERVICE_STAGES_UPDATE_BATCH_H_
#define COHORT_SERVICE_STAGES_UPDATE_BATCH_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "matcher/types.h"
#include "service/model/subscription_input.h"

namespace cohort {
namespace service {

struct UpdateBatch {
  // A matcher row: a plain subscription's, or a branch of an "or"
  // subscription's (local_id a branch id, subscription_directory.h).
  struct Add {
    uint32_t local_id;
    uint32_t subscriber;
    // Owned by the update's creator (its SubscriptionInput).
    absl::Span<const matcher::Predicate> predicates;
  };
  std::vector<Add> adds;
  std::vector<uint32_t> removes;  // local ids (and branch ids)
  // Called on an engine thread once the batch is applied; the status is the
  // first error (should never happen for validated input).
  std::function<void(absl::Status)> done;
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STAGES_UPDATE_BATCH_H_
