// Lead ranges and a cohort's values of an attribute: how a row without an
// equality (under a "present" access predicate) keeps its most selective
// range in the row (LeadRange), and how phase 2 finds the events of a
// cohort within it (LeadValues, LeadMask, the rank table), without a
// predicate of its own.
//
// Thread safety: plain values and pure functions; the arrays a LeadValues
// points to are a cohort's (cohort_masks.h), read-only once phase 1 is done.
#ifndef COHORT_MATCHER_LEAD_VALUES_H_
#define COHORT_MATCHER_LEAD_VALUES_H_

#include <algorithm>
#include <cstdint>

#include "matcher/event_lanes.h"

namespace cohort {
namespace matcher {
namespace internal {

// The lead range of a row under a "present" access predicate: the row's
// most selective range entry, kept in the row (cluster_store.h) instead of
// being interned as a predicate: lo <= x <= hi. Nearly every range of a
// range-heavy workload is distinct, and a predicate of its own costs a
// table entry, a mask slot and a phase-1 write per cohort, where two
// bounds in the row cost 16 bytes and a comparison against the event's
// value.
// `open`: the entry was an LT's or a GT's, which holds for a number with a
// fraction just past its integer bound (cluster_entry.h, kOpenBit); the row
// keeps it as kOpenLeadBit in its id, and its check swaps the two tests of
// such a number (LeadPoint).
struct LeadRange {
  int64_t lo = 0;
  int64_t hi = 0;
  bool open = false;
};

// One event's value of an attribute as a lead range sees it: `value`
// against the lower bound and `upper` against the upper one (UpperTest in
// types.h: the integer twice, or f and f + 1 for a number in (f, f + 1);
// an open lead the other way round), so a row's lead holds iff lo <= value
// and upper <= hi.
struct LeadPoint {
  int64_t value = 0;
  int64_t upper = 0;
};

// A cohort's values of one attribute, sorted (count of them), with
// prefix[j] the OR of the event bits of the first j values (count + 1
// words). Each event carries an attribute once, so the events whose value
// lies in [lo, hi] are prefix[values <= hi] & ~prefix[values < lo].
// Where the values span at most kMaxRankTable integers, rank[x - values[0]]
// is the count of values below x, for x within the span, so that a lead's
// events are two table reads instead of two searches (rank is null
// otherwise). Where they span more and are at least kMinBucketValues,
// buckets[(x - values[0]) >> bucket_shift] is the count of values below
// the bucket's first integer, at most kMaxBuckets buckets over the span:
// x's count is then that and a step or two along the values (null
// otherwise).
struct LeadValues {
  const int64_t* values;
  const uint64_t* prefix;
  uint32_t count;
  uint32_t rank_size;
  const uint8_t* rank;
  const uint8_t* buckets = nullptr;
  uint32_t bucket_shift = 0;
  // The same values in event order, for the vector kernels (built for
  // attributes with inline ranges or a "present" list; kAbsentLanes
  // elsewhere).
  const EventLanes* lanes = &kAbsentLanes;
};

// The largest span of a cohort's values of an attribute for which phase 1
// builds the rank table of its "present" list: 4 KiB, about as many writes
// as the table saves in searches once some hundred lead rows are checked
// (fabret-1m's 1,000-value domain fits; a million-value domain does not).
inline constexpr uint64_t kMaxRankTable = 4096;
// The bucket table (LeadValues::buckets): built from this many values of an
// attribute in a cohort (fewer are searched in as few steps), of at most
// this many buckets (1 KiB). On ranges-1m at cohort 64, whose inline
// ranges and lead tails search a cohort's 64 values of an attribute
// spanning a million integers, the searches were most of phase 2.
inline constexpr uint32_t kMinBucketValues = 8;
inline constexpr uint32_t kMaxBuckets = 1024;

namespace lead_internal {

// The number of the n sorted values below x (strictly, or at most x), by a
// binary search without branches: n is at most 64, so six steps.
template <bool kOrEqual>
inline uint32_t CountUpTo(const int64_t* v, uint32_t n, int64_t x) {
  uint32_t count = 0;
  for (uint32_t step = n == 0 ? 0 : 1u << (31 - __builtin_clz(n)); step != 0;
       step >>= 1) {
    const uint32_t next = count + step;
    const bool below = next <= n && (kOrEqual ? v[next - 1] <= x
                                             : v[next - 1] < x);
    count = below ? next : count;
  }
  return count;
}


// The count of v's values below x (kOrEqual: at most x), through its
// bucket table. REQUIRES: v.buckets.
template <bool kOrEqual>
inline uint32_t BucketCount(const LeadValues& v, int64_t x) {
  const int64_t first = v.values[0];
  const int64_t last = v.values[v.count - 1];
  if (kOrEqual ? x < first : x <= first) return 0;
  if (kOrEqual ? x >= last : x > last) return v.count;
  // first <= x <= last: x's bucket counts the values below its first
  // integer, and the values up to x are a few more (the last value is past
  // x, or at least x, so the walk stops within the values).
  uint32_t r = v.buckets[(static_cast<uint64_t>(x) -
                          static_cast<uint64_t>(first)) >>
                         v.bucket_shift];
  while (kOrEqual ? v.values[r] <= x : v.values[r] < x) ++r;
  return r;
}

// LeadMask for the rows of a sorted part, in order: lo never decreases, so
// the count of values below it only grows. The count up to hi needs no
// search for an unbounded hi, grows along the leading rows whose lo is
// INT64_MIN (in order of hi) and within runs of equal lo, and is searched
// for, from the count below lo, when hi drops.
class SortedLeadMasks {
 public:
  explicit SortedLeadMasks(const LeadValues& v) : v_(v) {}
  uint64_t Next(int64_t lo, int64_t hi) {
    while (below_ < v_.count && v_.values[below_] < lo) ++below_;
    uint32_t upto = v_.count;
    if (hi != INT64_MAX) {
      if (hi < hi_) {
        upto_ = v_.buckets != nullptr
                    ? std::max(below_, BucketCount<true>(v_, hi))
                    : below_ + CountUpTo<true>(v_.values + below_,
                                               v_.count - below_, hi);
      } else {
        if (upto_ < below_) upto_ = below_;
        while (upto_ < v_.count && v_.values[upto_] <= hi) ++upto_;
      }
      hi_ = hi;
      upto = upto_;
    }
    return upto <= below_ ? 0 : v_.prefix[upto] & ~v_.prefix[below_];
  }

 private:
  const LeadValues v_;
  uint32_t below_ = 0;
  uint32_t upto_ = 0;
  int64_t hi_ = INT64_MIN;
};

}  // namespace lead_internal

// LeadMask through the rank table. REQUIRES: v.rank. No branches: lead
// rows are checked in a loop where the bounds' cases (below the cohort's
// values, within, past them) mix unpredictably, and as branches they were
// half of phase 2's mispredictions on fabret-1m at cohort 64 (callgrind's
// branch simulation).
inline uint64_t RankedLeadMask(const LeadValues& v, int64_t lo, int64_t hi) {
  // Offsets from the smallest value, wrapping below it: a bound below the
  // smallest value, or past the largest, lies outside [0, rank_size).
  // rank[rank_size] is count, so an offset past the table is clamped to
  // it; a bound below the smallest value reads rank[0], which is 0.
  const uint64_t span = v.rank_size;
  const uint64_t l = static_cast<uint64_t>(lo) -
                     static_cast<uint64_t>(v.values[0]);
  const uint64_t h = static_cast<uint64_t>(hi) -
                     static_cast<uint64_t>(v.values[0]);
  const uint64_t below_at =
      (l < span ? l : span) & -static_cast<uint64_t>(lo > v.values[0]);
  const uint64_t upto_at = ((h < span - 1 ? h : span - 1) + 1) &
                           -static_cast<uint64_t>(hi >= v.values[0]);
  // prefix only grows, so upto <= below gives 0 here too.
  return v.prefix[v.rank[upto_at]] & ~v.prefix[v.rank[below_at]];
}


// The bucket table of `count` sorted values whose largest offset from the
// smallest is `last` (LeadValues::buckets): its shift, and its
// BucketTableSize(last, shift) entries written to `table`.
inline uint32_t BucketShift(uint64_t last) {
  uint32_t shift = 0;
  while ((last >> shift) >= kMaxBuckets) ++shift;
  return shift;
}
inline uint64_t BucketTableSize(uint64_t last, uint32_t shift) {
  return (last >> shift) + 1;
}
inline void FillBuckets(const int64_t* values, uint32_t count,
                        uint32_t shift, uint64_t buckets, uint8_t* table) {
  // Bucket b counts the values below its first integer, values[0] +
  // (b << shift): value i for the buckets whose first integer lies in
  // (value i - 1, value i], a run at a time.
  uint64_t b = 0;
  for (uint32_t i = 0; i < count && b < buckets; ++i) {
    const uint64_t offset = static_cast<uint64_t>(values[i]) -
                            static_cast<uint64_t>(values[0]);
    const uint64_t through = std::min<uint64_t>((offset >> shift) + 1,
                                                buckets);
    for (; b < through; ++b) table[b] = static_cast<uint8_t>(i);
  }
  for (; b < buckets; ++b) table[b] = static_cast<uint8_t>(count);
}

// The events of a cohort whose value of the attribute lies in [lo, hi]
// (INT64_MIN, INT64_MAX: unbounded): a row's lead range
// (cluster_store.h), or a range predicate of a group's unsorted tail
// (PredicateTable::RunTask).
// Inlined: it is the inner step of phase 2's lead and inline range checks
// at every row (out of line it was a fifth of ranges-1m's cohort 64).
__attribute__((always_inline)) inline uint64_t LeadMask(const LeadValues& v,
                                                        int64_t lo,
                                                        int64_t hi) {
  if (v.rank != nullptr) return RankedLeadMask(v, lo, hi);
  if (v.buckets != nullptr) {
    const uint32_t upto = lead_internal::BucketCount<true>(v, hi);
    const uint32_t below = lead_internal::BucketCount<false>(v, lo);
    return upto <= below ? 0 : v.prefix[upto] & ~v.prefix[below];
  }
  // Unbounded sides (kLow and kHigh leads) need no search.
  const uint32_t upto =
      hi == INT64_MAX ? v.count
                      : lead_internal::CountUpTo<true>(v.values, v.count, hi);
  const uint32_t below =
      lo == INT64_MIN ? 0
                      : lead_internal::CountUpTo<false>(v.values, v.count, lo);
  return upto <= below ? 0 : v.prefix[upto] & ~v.prefix[below];
}

// No lead values: the access predicate is an equality.
inline constexpr uint32_t kNoLead = UINT32_MAX;

}  // namespace internal
}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_LEAD_VALUES_H_
