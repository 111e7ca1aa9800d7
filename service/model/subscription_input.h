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
  // `upper` is 0 unless op is kBetween. Empty for an "or" subscription.
  std::vector<matcher::Predicate> predicates;
  // An "or" subscription (SubscriptionSpec.any_of, expanding into two or
  // more conjunctions): one conjunction per way of taking an alternative
  // from every group, each the spec's own predicates followed by the
  // alternatives taken, in group order. The engine adds each as a matcher
  // row of its own (a *branch*) under the one subscription id. Empty for a
  // plain subscription.
  std::vector<std::vector<matcher::Predicate>> branches;

  // The conjunctions the matcher gets: `branches`, or `predicates` alone.
  size_t conjunctions() const {
    return branches.empty() ? 1 : branches.size();
  }
  const std::vector<matcher::Predicate>& conjunction(size_t b) const {
    return branches.empty() ? predicates : branches[b];
  }
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_MODEL_SUBSCRIPTION_INPUT_H_
