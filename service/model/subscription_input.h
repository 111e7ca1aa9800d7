// What a validated Subscribe becomes, in the matcher's vocabulary: the
// record that the engine applies (service/stages), the journal and
// snapshots store (service/storage) and the front stage builds
// (validation.h, BuildSubscriptions). It sits below all three so that none
// of them depends on another for it.
//
// Thread safety: a plain value; handed between threads whole.
#ifndef COHORT_SERVICE_MODEL_SUBSCRIPTION_INPUT_H_
#define COHORT_SERVICE_MODEL_SUBSCRIPTION_INPUT_H_

#include <cstdint>
#include <vector>

#include "matcher/types.h"

namespace cohort {
namespace service {

// A validated subscription with interned attribute ids.
struct SubscriptionInput {
  // Id of the subscriber name in the subscriber Interner.
  uint32_t subscriber = 0;
  // The matcher predicates, in request order (TypedAttributes::Lower);
  // `upper` is 0 unless op is kBetween.
  std::vector<matcher::Predicate> predicates;
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_MODEL_SUBSCRIPTION_INPUT_H_
