// A brute-force matcher that is obviously correct: it stores subscriptions
// as given and checks every predicate of every subscription against each
// event. It exists to test and fuzz `Index` and to compute workload
// statistics; it is far too slow for serving.
//
// Thread safety: none; one thread at a time (const methods may be called
// concurrently with each other).
#ifndef COHORT_MATCHER_REFERENCE_MATCHER_H_
#define COHORT_MATCHER_REFERENCE_MATCHER_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "matcher/types.h"

namespace cohort {
namespace matcher {

// True iff every predicate of `predicates` holds for `event` (a predicate on
// an attribute the event lacks does not hold, unless it is kNotExists). An
// empty conjunction matches.
bool Matches(absl::Span<const Predicate> predicates, EventView event);

class ReferenceMatcher {
 public:
  // Adds a subscription. Returns false if `id` is already present.
  bool Add(SubscriptionId id, absl::Span<const Predicate> predicates);
  // Removes a subscription. Returns false if `id` is not present.
  bool Remove(SubscriptionId id);

  // Ids of all subscriptions that match `event`, ascending.
  std::vector<SubscriptionId> Match(EventView event) const;

  size_t size() const { return subscriptions_.size(); }

 private:
  absl::flat_hash_map<SubscriptionId, std::vector<Predicate>> subscriptions_;
};

}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_REFERENCE_MATCHER_H_
