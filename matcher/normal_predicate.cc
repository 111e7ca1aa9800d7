#include "matcher/normal_predicate.h"

#include <algorithm>
#include <limits>

#include "absl/hash/hash.h"

namespace cohort {
namespace matcher {
namespace internal {

NormalPredicate TruePredicate() {
  NormalPredicate p;
  p.kind = Kind::kTrue;
  return p;
}

NormalPredicate FromSet(AttributeId attribute, absl::Span<const int64_t> set) {
  if (set.empty()) return NormalPredicate{};
  if (set.size() == 1) return FromInterval(attribute, set[0], set[0]);
  NormalPredicate p;
  p.kind = Kind::kIn;
  p.attribute = attribute;
  p.lo = static_cast<int64_t>(absl::HashOf(set));
  p.hi = static_cast<int64_t>(set.size());
  p.set = set;
  return p;
}

}  // namespace internal
}  // namespace matcher
}  // namespace cohort
