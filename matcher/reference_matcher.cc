#include "matcher/reference_matcher.h"

#include <algorithm>

namespace cohort {
namespace matcher {

bool Matches(absl::Span<const Predicate> predicates, EventView event) {
  for (const Predicate& p : predicates) {
    const AttributeValue* found = nullptr;
    for (const AttributeValue& av : event) {
      if (av.attribute == p.attribute) {
        found = &av;
        break;
      }
    }
    if (found == nullptr) {
      if (p.op != Op::kNotExists) return false;
    } else if (!HoldsFor(p, *found)) {
      return false;
    }
  }
  return true;
}

bool ReferenceMatcher::Add(SubscriptionId id,
                           absl::Span<const Predicate> predicates) {
  return subscriptions_.try_emplace(id, predicates.begin(), predicates.end())
      .second;
}

bool ReferenceMatcher::Remove(SubscriptionId id) {
  return subscriptions_.erase(id) == 1;
}

std::vector<SubscriptionId> ReferenceMatcher::Match(EventView event) const {
  std::vector<SubscriptionId> out;
  for (const auto& [id, predicates] : subscriptions_) {
    if (Matches(predicates, event)) out.push_back(id);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace matcher
}  // namespace cohort
