// Predicate ids and the entries of cluster rows that name them (phase 2,
// cluster_store.h): the id, and two flag bits a row's check reads without
// a lookup. Part of the index's encoding: plain constants, no state.
#ifndef COHORT_MATCHER_CLUSTER_ENTRY_H_
#define COHORT_MATCHER_CLUSTER_ENTRY_H_

#include <cstddef>
#include <cstdint>

namespace cohort {
namespace matcher {
namespace internal {

using PredicateId = uint32_t;

// A cluster entry (cluster_store.h) is a predicate id below 2^29, with
// kNegatedBit set when negated and kRangeEntryBit set when the predicate is
// of a range kind (kLow, kHigh or kRange; "present" included), so that the
// per-event check knows, without a lookup, where the predicate's bit lies
// (see PredicateBits). kOpenBit marks an LT's or GT's kLow or kHigh: the
// same interval for integers as an LE's or GE's (x < c is x <= c - 1), so
// the two share one predicate, but for a number with a fraction, in (f, f +
// 1), an LT c holds where LE c - 1 does not (f = c - 1), and a GT c where
// GE c + 1 does not (f = c): the per-event check takes those boundary
// predicates as holding for open entries (PredicateTable::MarkSatisfied's
// `open` bits). Cohort masks never see such numbers (their cohorts are kept
// per event) and ignore the bit. Without kRangeEntryBit, kOpenBit marks a
// set's entry (kIn, negated or not: IsSetEntry): a cohort kept in masks
// computes its mask when a row reads it (ClusterStore::SetMask) rather
// than writing every set's mask in phase 1.
inline constexpr uint32_t kNegatedBit = 1u << 31;
inline constexpr uint32_t kRangeEntryBit = 1u << 30;
inline constexpr uint32_t kOpenBit = 1u << 29;
inline constexpr uint32_t kEntryIdMask = kOpenBit - 1;

// An inline range (cluster_store.h): a range entry kept as its bounds in
// the row rather than as a predicate of the table. Its entry is kInlineMark
// (negated, range and open at once, which no predicate's entry is: open
// range entries are never negated) with the attribute id in the low bits
// (kInlineAttributeMask), kInlineOpenBit when it is an LT's or GT's (open,
// as kOpenBit says for a predicate's entry), and kInlineNotBit when it is
// an NE's: the attribute is present and its value outside the bounds
// (which are then the NE's value twice). Its bounds lie in the cluster's
// bounds arrays. Attributes past kInlineAttributeMask stay predicates.
inline constexpr uint32_t kInlineMark = kNegatedBit | kRangeEntryBit | kOpenBit;
inline constexpr uint32_t kInlineNotBit = 1u << 28;
inline constexpr uint32_t kInlineOpenBit = 1u << 27;
inline constexpr uint32_t kInlineAttributeMask = kInlineOpenBit - 1;
// A set's entry (kOpenBit without kRangeEntryBit; see above).
inline bool IsSetEntry(uint32_t e) {
  return (e & (kOpenBit | kRangeEntryBit)) == kOpenBit;
}
inline bool IsInline(uint32_t e) { return (e & kInlineMark) == kInlineMark; }
inline uint32_t InlineAttribute(uint32_t e) { return e & kInlineAttributeMask; }
inline uint32_t InlineEntry(uint32_t attribute, bool open, bool outside) {
  return kInlineMark | (open ? kInlineOpenBit : 0u) |
         (outside ? kInlineNotBit : 0u) | attribute;
}

// A row of a lead cluster (cluster_store.h) keeps kOpenLeadBit in its id
// when its lead range is an LT's or a GT's (LeadRange::open): a number with
// a fraction, in (f, f + 1), then meets the lead's bounds the other way
// round (against the lower f + 1, against the upper f). Readers of a
// row's id mask it with kRowIdMask; ids are at most kMaxSubscriptionId, so
// a flagged id is never the removed row's mark (all bits set).
inline constexpr uint32_t kOpenLeadBit = 1u << 31;
inline constexpr uint32_t kRowIdMask = kOpenLeadBit - 1;

// Predicate id 0 never holds (its mask is always zero). It stands for
// unsatisfiable predicates (LT INT64_MIN) and marks removed rows.
inline constexpr PredicateId kFalsePredicate = 0;
// Predicate ids are below this (they must fit kEntryIdMask).
inline constexpr size_t kMaxPredicates = size_t{kEntryIdMask} + 1;

// The cohort mask of cluster entry `e`: its predicate's mask (read through
// the slot table), complemented, without a branch, for a negated entry.
inline uint64_t EntryMask(uint32_t e, const uint32_t* slots,
                          const uint64_t* words) {
  const uint64_t flip = -static_cast<uint64_t>(e >> 31);
  return words[slots[e & kEntryIdMask]] ^ flip;
}

}  // namespace internal
}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_CLUSTER_ENTRY_H_
