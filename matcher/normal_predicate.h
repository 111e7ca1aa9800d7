// Normalised predicates: the kinds the predicate table interns (kEq, kIn,
// kLow, kHigh, kRange, kTrue; predicate_table.h's file comment says how a
// subscription's predicates become them) and the constructors that
// normalise an interval or a set into one. Plain values, no state.
#ifndef COHORT_MATCHER_NORMAL_PREDICATE_H_
#define COHORT_MATCHER_NORMAL_PREDICATE_H_

#include <cstdint>
#include <limits>
#include <utility>

#include "absl/types/span.h"
#include "matcher/types.h"

namespace cohort {
namespace matcher {
namespace internal {

// The int64 extremes: the unbounded side of an interval.
inline constexpr int64_t kMinValue = std::numeric_limits<int64_t>::min();
inline constexpr int64_t kMaxValue = std::numeric_limits<int64_t>::max();

enum class Kind : uint8_t {
  kFree,
  kFalse,
  kEq,
  kLow,
  kHigh,
  kRange,
  kIn,
  kTrue
};

// Whether a kind has a slot of its own and is found without a range group
// (kEq and kIn by hash lookup, kTrue always), rather than by a position in
// a range group. These and "present" may be access predicates.
inline bool EqualityLike(Kind kind) {
  return kind == Kind::kEq || kind == Kind::kIn || kind == Kind::kTrue;
}

// A normalised predicate: the interval [lo, hi] of its attribute (for kEq,
// lo == hi), or for kIn the set `set` (sorted, distinct, 2 or more values;
// lo is a hash of it and hi its size, so that hashing needs only the
// fields). `set` refers to memory the creator owns (PredicateTable::Get:
// the table's, valid until its next change).
struct NormalPredicate {
  Kind kind = Kind::kFalse;
  AttributeId attribute = 0;
  int64_t lo = 0;
  int64_t hi = 0;
  absl::Span<const int64_t> set;

  template <typename H>
  friend H AbslHashValue(H h, const NormalPredicate& p) {
    return H::combine(std::move(h), p.kind, p.attribute, p.lo, p.hi);
  }
  friend bool operator==(const NormalPredicate& a, const NormalPredicate& b) {
    return a.kind == b.kind && a.attribute == b.attribute && a.lo == b.lo &&
           a.hi == b.hi && (a.kind != Kind::kIn || a.set == b.set);
  }
};

// Sets *p to FromInterval(attribute, lo, hi), field by field: a bulk load
// normalises every predicate, and a predicate built whole and then copied
// into its entry was read back before its parts were stored (a
// store-forwarding stall, the top line of a bulk load's planning).
inline void SetInterval(AttributeId attribute, int64_t lo, int64_t hi,
                        NormalPredicate* p) {
  if (lo > hi) {  // kFalse, canonical so that all share one id
    *p = NormalPredicate{};
    return;
  }
  p->attribute = attribute;
  p->lo = lo;
  p->hi = hi;
  p->set = {};
  p->kind = lo == hi           ? Kind::kEq
            : lo == kMinValue  ? Kind::kLow
            : hi == kMaxValue  ? Kind::kHigh
                               : Kind::kRange;
}
// Normalises an interval [lo, hi] on `attribute` into one predicate kind
// (lo > hi gives kFalse, lo == hi gives kEq).
inline NormalPredicate FromInterval(AttributeId attribute, int64_t lo,
                                    int64_t hi) {
  NormalPredicate p;
  SetInterval(attribute, lo, hi, &p);
  return p;
}

// The predicate that holds for every event (kTrue; attribute 0).
NormalPredicate TruePredicate();
// The predicate "x is one of `set`" on `attribute`. REQUIRES: set is sorted
// and distinct (1 value gives kEq, 0 gives kFalse); it must outlive the
// returned predicate's use.
NormalPredicate FromSet(AttributeId attribute, absl::Span<const int64_t> set);

}  // namespace internal
}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_NORMAL_PREDICATE_H_
