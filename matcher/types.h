// Vocabulary types of the matcher: attributes, predicates, events and
// subscription ids as the index sees them (after the service has interned
// attribute names to dense ids).
//
// Stage: used by the partition stage and by tools; no threads, no gRPC.
// Everything here is a plain value type, safe to copy between threads.
#ifndef COHORT_MATCHER_TYPES_H_
#define COHORT_MATCHER_TYPES_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace cohort {
namespace matcher {

// Dense attribute id, assigned by whoever interns attribute names.
using AttributeId = uint32_t;

// Id of a subscription inside one index. The index keeps a location table
// indexed by id, so ids should be dense (the service hands out per-partition
// sequence numbers); memory grows with the largest id ever added.
using SubscriptionId = uint32_t;

// Largest id `Index::Add` accepts; bounds the location table. (A lead
// cluster's rows keep a flag in the top bit of their ids, and the id with
// every bit set marks a removed row: cluster_entry.h.)
inline constexpr SubscriptionId kMaxSubscriptionId = (1u << 31) - 2;

// Comparison operators, numbered as in proto `cohort.v1.Op`.
enum class Op : uint8_t {
  kEq = 1,
  kNe = 2,
  kLt = 3,
  kLe = 4,
  kGt = 5,
  kGe = 6,
  kBetween = 7,  // inclusive: value <= x <= upper
  kIn = 8,       // x is one of `values`
  kNotIn = 9,    // x is none of `values` (the attribute present)
  // 10 is the API's OP_PREFIX, which the service turns into kEq on a
  // derived attribute (service/model/typed_attributes.h); no matcher op.
  kExists = 11,     // the attribute is present, whatever its value
  kNotExists = 12,  // the attribute is absent
};

// "EQ", "NE", ... as in the workload file format.
absl::string_view OpName(Op op);
// Parses "EQ" ... "NOT_EXISTS"; returns false on anything else.
bool ParseOp(absl::string_view name, Op* op);

// One predicate: `attribute op value` (and `upper` for kBetween, `values`
// for kIn and kNotIn). Every op but kNotExists holds for an event only if
// the event carries `attribute`; kNotExists holds only if it does not. A
// subscription of kNotExists predicates alone is checked for every event
// (predicate_table.h, kTrue).
struct Predicate {
  AttributeId attribute = 0;
  Op op = Op::kEq;
  int64_t value = 0;
  int64_t upper = 0;  // only meaningful for kBetween
  // kIn and kNotIn: the set, 1 or more values in any order (repeats
  // allowed); empty for the other ops.
  std::vector<int64_t> values;

  friend bool operator==(const Predicate& a, const Predicate& b) {
    if (a.attribute != b.attribute || a.op != b.op) return false;
    switch (a.op) {
      case Op::kBetween:
        return a.value == b.value && a.upper == b.upper;
      case Op::kIn:
      case Op::kNotIn:
        return a.values == b.values;
      case Op::kExists:
      case Op::kNotExists:
        return true;
      default:
        return a.value == b.value;
    }
  }
};

// True iff `p` holds for the value `x` of its attribute (the caller has
// already checked that the event carries the attribute; kNotExists never
// holds then).
inline bool Holds(const Predicate& p, int64_t x) {
  switch (p.op) {
    case Op::kIn:
      return std::find(p.values.begin(), p.values.end(), x) != p.values.end();
    case Op::kNotIn:
      return std::find(p.values.begin(), p.values.end(), x) == p.values.end();
    case Op::kExists:
      return true;
    case Op::kNotExists:
      return false;
    case Op::kEq:
      return x == p.value;
    case Op::kNe:
      return x != p.value;
    case Op::kLt:
      return x < p.value;
    case Op::kLe:
      return x <= p.value;
    case Op::kGt:
      return x > p.value;
    case Op::kGe:
      return x >= p.value;
    case Op::kBetween:
      return p.value <= x && x <= p.upper;
  }
  return false;
}

// One attribute/value pair of an event. A number with a fraction (the
// service's doubles, DESIGN 1.6) is its floor with `half_above` set: the
// number lies strictly between `value` and `value + 1`. No equality or set
// holds for it (so NE and NOT_IN do), and a range [lo, hi] holds iff
// lo <= value and value + 1 <= hi: against a lower bound it is `value`,
// against an upper bound `value + 1` (UpperTest).
// REQUIRES when half_above: value < INT64_MAX.
struct AttributeValue {
  AttributeId attribute = 0;
  int64_t value = 0;
  bool half_above = false;
};

// What an upper bound is compared with: value, or value + 1 when the number
// lies above value (AttributeValue).
inline int64_t UpperTest(const AttributeValue& av) {
  return av.value + static_cast<int64_t>(av.half_above);
}

// True iff `p` holds for `av`, a value of its attribute (Holds, with
// AttributeValue's rule for a number with a fraction).
inline bool HoldsFor(const Predicate& p, const AttributeValue& av) {
  if (!av.half_above) return Holds(p, av.value);
  const int64_t f = av.value;  // the number is in (f, f + 1)
  switch (p.op) {
    case Op::kEq:
    case Op::kIn:
      return false;
    case Op::kNe:
    case Op::kNotIn:
    case Op::kExists:
      return true;
    case Op::kNotExists:
      return false;
    case Op::kLt:
    case Op::kLe:
      return f < p.value;
    case Op::kGt:
    case Op::kGe:
      return f >= p.value;
    case Op::kBetween:
      return p.value <= f && f < p.upper;
  }
  return false;
}

// An event as the matcher sees it. REQUIRES: attributes are distinct.
using EventView = absl::Span<const AttributeValue>;

// Human-readable form, e.g. "a3 BETWEEN 10 20" or "a1 IN 4,7" (attribute
// printed as a<id>).
std::string DebugString(const Predicate& p);

}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_TYPES_H_
