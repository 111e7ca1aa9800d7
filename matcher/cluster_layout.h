// The layout of a cluster's rows (cluster_store.h): the marks of a removed
// row, where a subscription lives, the width classes that group rows into
// clusters and the padding of narrower rows, the sorted runs of a lead
// cluster (rows under a "present" access predicate) and when its tail is
// merged, and the block size of a cluster's check. Constants and pure
// functions; no state.
//
// Rows under a "present" access predicate (subscriptions without an
// equality) also hold their lead range (cohort_masks.h, LeadRange) before
// their ids: `capacity` lower bounds, then `capacity` upper bounds, each
// an int64 in two words. Their check starts from the lead: per event, the
// event's value against the bounds; per cohort, the events whose values
// lie within the bounds (LeadValues). Such a cluster keeps its rows sorted
// by lead, but for an unsorted tail of recent rows that is merged in once
// it passes a fraction of the sorted part, in runs by the lead's shape
// (LeadRun): leads with lo INT64_MIN (LT, LE) in order of hi, then those
// with both bounds finite (BETWEEN) in order of lo, then those with hi
// INT64_MAX (GT, GE) in order of lo. The finite ones get their middle run
// only where they are many and narrow (kMidRunRows, kMidRunSpan); else
// they sort by lo with the last run. For a value (per cohort, the
// smallest and the largest), each run's rows that may hold are one window
// of it: hi >= value in the first run, lo <= value in the others, and in
// the middle one also lo >= value - the run's widest range. Only the
// windows are visited: on ranges-1m, where a BETWEEN lead's rows used to
// be read from lo INT64_MIN on, 115,000 rows an event instead of 254,000
// (bench/HISTORY.md, issue 18 step 13). A cohort finds the events within
// each lead by walking the sorted values alongside a run's rows instead of
// searching them.
//
#ifndef COHORT_MATCHER_CLUSTER_LAYOUT_H_
#define COHORT_MATCHER_CLUSTER_LAYOUT_H_

#include <cstdint>

#include "matcher/cluster_entry.h"
#include "matcher/lead_values.h"
#include "matcher/types.h"

namespace cohort {
namespace matcher {
namespace internal {

// The head of no cluster: an empty list, or the end of one.
inline constexpr uint32_t kNoCluster = UINT32_MAX;

inline constexpr SubscriptionId kDeadRow = UINT32_MAX;

// Where a subscription lives: cluster index and row.
struct Location {
  uint32_t cluster = kNoCluster;
  uint32_t row = 0;
};

// Words a lead cluster keeps after its arrays: where its sorted runs end,
// and the middle run's widest lead (Cluster::meta).
inline constexpr uint32_t kLeadMetaWords = 3;
// A lead cluster's finite leads get a middle run of their own
// (Cluster::sorted) when the widest is narrower than this fraction of the
// spread of their lower bounds...
inline constexpr uint64_t kMidRunSpan = 4;
// ... and when they are at least this many.
inline constexpr uint32_t kMidRunRows = 1024;

// Pads a row that is narrower than its cluster: the false predicate,
// negated, which holds for every event (the false predicate's bit and mask
// are always clear). No subscription has it.
inline constexpr uint32_t kPadEntry = kNegatedBit | kFalsePredicate;

// A list keeps one cluster per width class rather than per width: widths
// 0, 1 and 2 each, then 3-4, 5-8, 9-16 and so on. An event visits fewer,
// longer clusters; each visit costs a header, a prefetch and, in a lead
// cluster, the window searches. On ranges-1m's first 20,000 subscriptions
// (5-10 ranges each) an event visited 190 lead clusters of about 100 rows,
// and the clusters' own costs were a fifth of its time: MatchEvent 1.24x
// there, ranges-1m 1.26x. On fabret-1m (91 clusters an event, 17 rows on
// average) 183,502 clusters became 122,596, MatchEvent 1.02-1.10x and
// cohort 64 1.06-1.20x. One cluster a lead list (every width padded to the
// widest) did 1.42x on the 20,000 but cost fabret-1m 14%: most of its
// matches come from lead rows, and a row that matches reads all its
// padding (bench/HISTORY.md, issue 18 step 14).
inline uint32_t WidthClass(uint32_t width) {
  if (width <= 2) return width;
  uint32_t c = 3;  // widths (2^(c-2), 2^(c-1)]
  while ((1u << (c - 1)) < width) ++c;
  return c;
}

// Which sorted run of a lead cluster a lead belongs in (Cluster::sorted):
// 0 with lo INT64_MIN, 2 with hi INT64_MAX (and lo above it), else 1.
inline int LeadRun(const LeadRange& r) {
  return r.lo == INT64_MIN ? 0 : r.hi == INT64_MAX ? 2 : 1;
}

// Rows are checked in blocks of this many so the accumulators (2 KiB) stay in
// L1 beside the column data being streamed.
inline constexpr uint32_t kMatchBlock = 256;
// The per-event check's blocks (ClusterStore::MatchBlockForEvent): its
// list of live rows is 4 bytes a row, and a longer block reads each
// column's entries and bounds in longer runs, which the hardware's
// prefetchers follow further. On ranges-1m, whose lead rows check their
// inline ranges in long windows, MatchEvent ran 1.12-1.23x faster with
// 1,024 than with 256 (three alternated pairs); 4,096 gained nothing more.
inline constexpr uint32_t kEventBlock = 1024;

// A lead cluster merges its unsorted tail once the tail passes
// max(kMinLeadTail, sorted / kLeadTailDivisor) rows. The tail is checked
// row by row for every event (the sorted part only up to the value), so a
// short tail keeps events cheap; a merge sorts the whole cluster, so a tail
// that is a fixed fraction of it keeps adding a row at amortised
// O(kLeadTailDivisor log n).
inline constexpr uint32_t kMinLeadTail = 64;
inline constexpr uint32_t kLeadTailDivisor = 8;

}  // namespace internal
}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_CLUSTER_LAYOUT_H_
