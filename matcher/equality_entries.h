// How the predicate table interns its equality predicates (EqEntry, in a
// flat hash set keyed by (attribute, value)): each entry holds its key, so
// that a lookup (phase 1 does one per event attribute) reads the set's
// control bytes and one slot, and not the found id's Info as well (an
// IdEq compare: a cache miss in a table of a million predicates; 5% of
// fabret-1m's samples at cohort 64). Plain values; no state.
#ifndef COHORT_MATCHER_EQUALITY_ENTRIES_H_
#define COHORT_MATCHER_EQUALITY_ENTRIES_H_

#include <cstddef>
#include <cstdint>

#include "absl/hash/hash.h"
#include "matcher/cluster_entry.h"
#include "matcher/types.h"

namespace cohort {
namespace matcher {
namespace internal {

struct EqKey {
  AttributeId attribute;
  int64_t value;
};
struct EqEntry {
  int64_t value;
  AttributeId attribute;
  PredicateId id;
};
struct EqHash {
  using is_transparent = void;
  size_t operator()(const EqKey& k) const {
    return absl::HashOf(k.attribute, k.value);
  }
  size_t operator()(const EqEntry& e) const {
    return absl::HashOf(e.attribute, e.value);
  }
};
struct EqSame {
  using is_transparent = void;
  static bool Same(AttributeId a, int64_t v, const EqEntry& e) {
    return a == e.attribute && v == e.value;
  }
  bool operator()(const EqEntry& a, const EqEntry& b) const {
    return Same(a.attribute, a.value, b);
  }
  bool operator()(const EqEntry& a, const EqKey& b) const {
    return Same(b.attribute, b.value, a);
  }
  bool operator()(const EqKey& a, const EqEntry& b) const {
    return Same(a.attribute, a.value, b);
  }
};

}  // namespace internal
}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_EQUALITY_ENTRIES_H_
