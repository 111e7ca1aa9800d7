// How phase 1 keeps a cohort (PredicateTable::BeginCohort): per event, as a
// bit vector of each event's satisfied predicates, or in masks, a 64-bit
// word per predicate for the whole cohort; and the cost model that chooses
// between them (CohortKeep::kCheaper, what the indexes use). The model's
// constants are fitted on the matcher presets; CohortCost adds up one
// cohort's sizes and prices each way.
//
// Thread safety: constants and a plain value; any thread (PerEvent reads
// simd.h's flag).
#ifndef COHORT_MATCHER_COHORT_KEEP_H_
#define COHORT_MATCHER_COHORT_KEEP_H_

#include <algorithm>
#include <cstddef>

#include "matcher/simd.h"

namespace cohort {
namespace matcher {
namespace internal {

// How BeginCohort keeps a cohort: per event or in masks, or whichever its
// cost model expects to be cheaper (kCheaper, what the indexes use; the
// others are for tests and for measuring the crossover).
enum class CohortKeep { kCheaper, kPerEvent, kMasks };

// The cost model of CohortKeep::kCheaper, in about nanoseconds on the
// development machine. Kept per event, each event checks the rows of its
// own access lists (rows_sum) against a bit vector that stays in cache,
// and marks its attributes' range predicates a word of 64 at a time (or a
// bit at a time within kRange runs): positions_sum over all events. In
// masks, each access list the cohort touches is checked once for all its
// events (rows_union), reading a 64-bit mask per entry through the slot
// table, and every range position of the cohort's attributes is written
// once (positions_all) and cleared by the next cohort. A lone event is
// always kept per event: the masks share nothing then.
// (The constants were fitted with matcher_bench --keep=per_event and
// --keep=masks at cohorts of 2 to 64 on fabret-1m, selective-1m and
// ranges-1m; bench/HISTORY.md, issue 18 step 3; refitted in step 12, after
// steps 7-11 had made both ways faster: per event 0.075 -> 0.06 a
// position, in masks 8 -> 20 a row. With the old constants fabret-1m's
// cohorts of 16 and selective-1m's of 32 went to masks at 0.93x and 0.85x
// of per event; the refit chose the faster way at 4, 8, 16 and 32 events
// on all three presets. The lead rows' and the masks' position costs were
// refitted again in issue 43: below.)
// Past kMaxCheaperPerEvent events the masks are taken without weighing:
// at 32 events they already win on all three presets (1.1-2.6x), and the
// weighing costs a look at every access list's size, a cache miss each
// on a large index (a 64-event cohort on selective-1m ran at 0.84x with
// it, in one run against the build without).
inline constexpr size_t kMaxCheaperPerEvent = 32;
inline constexpr double kPerEventRowCost = 4.0;
// A row of a "present" list (lead ranges, cluster_store.h) costs an event
// less where the slot table is too large for the cache (more than
// kCachedSlots slots): its range entries' slots are then cache misses, and
// the per-event check fetches a block's slots together so that the misses
// overlap (ClusterStore::MatchBlockForEvent), while the masks pay a miss
// for the slot and another for its mask word. Fitted on ranges-1m (5.9M
// slots) after that prefetch: per event beats masks up to 16 events, masks
// win from 32; ranges-1m's first 100,000 subscriptions (about 630,000
// slots) chose masks at 8 events with the old cost, at 0.68x of MatchEvent,
// and go per event with this one. Below the threshold (fabret-1m's table
// is) a lead row costs kPerEventLeadRowCostCached.
// Refitted in issue 43 (experiment 2's plateau): issue 18's steps 14-22
// had made the masks' phase 2 about twice as fast and the per-event path
// much less so, and fabret-1m's cohorts of 6 to 16 went per event at
// 0.56-0.82x of the masks' speed (the server then served cohort limits 4,
// 10 and 20 alike). A grid over the lead rows' costs and the masks'
// position cost, against 37 measured points (2 to 32 events on fabret-1m,
// selective-1m, events-1m, ranges-1m and ranges-1m's first 100,000
// subscriptions), found these to pick the faster way at every point but
// one near a tie (ranges-1m's 100,000 at 24 events, 0.91, where 16 and 32
// events measure 1.01 and 1.10; the old constants missed 6): a cached lead
// row 4 -> 12, an uncached one 1 -> 2.5, a masks' range position
// 1.5 -> 2.5 (bench/reports/2026-11-28-epyc2-issue43-cohort-keep, fit.py).
inline constexpr double kPerEventLeadRowCostUncached = 2.5;
inline constexpr double kPerEventLeadRowCostCached = 12.0;
// A row of a "present" list whose ranges are inline (cluster_store.h: the
// attribute has at least as many inline ranges as the list rows) costs an
// event less again: its columns need no phase-1 marks and no slots, and
// only its lead's window is read, while the masks still check every row
// against the cohort's values. Fitted on ranges-1m after issue 45's inline
// ranges: per event ran about 1,000 events/s at every cohort size, masks
// 297, 576 and 1,422 at 4, 16 and 64 events, so that per event should win
// up to 32 events (kMaxCheaperPerEvent) and lose at 64: between 0.49 and
// 0.97 (its 625,000 lead rows an event against about 970,000 rows in
// masks); the middle. That is still the price where the masks check
// inline ranges by counting (kPerEventLeadRowCostInlineScalar: no AVX2).
// With AVX2 they check them on event lanes (event_lanes.h), about twice
// as fast, and masks won from 16 events on ranges-1m (at 16 a tie, at 32
// 1.50x) and from 12 on its first 100,000 subscriptions (1.14x; at 8 per
// event won 1.09x): the price that puts both crossovers near 12 events,
// 2.5 (0.7 sent both to per event up to 32 events, at 0.67x and 0.45x of
// the masks there; bench/reports/2026-11-30-xeon2-issue45-lanes).
inline constexpr double kPerEventLeadRowCostInline = 2.5;
inline constexpr double kPerEventLeadRowCostInlineScalar = 0.7;
inline constexpr size_t kCachedSlots = size_t{1} << 19;
// Whether a slot table of `slot_limit` slots is past kCachedSlots: the one
// test both the cost model and the per-event prefetch make.
inline bool SlotTableUncached(size_t slot_limit) {
  return slot_limit > kCachedSlots;
}
inline constexpr double kPerEventPositionCost = 0.06;
// Refitted in issue 45, after the per-event check's AVX-512 kernel
// (ClusterStore::MatchBlockForEventAvx512) and phase 1's rank tables had
// made fabret-1m's per-event path about twice as fast, and the masks'
// sets and inline ranges had made events-1m's masks 4-5x faster than per
// event at every size, which the model did not see: kept per event, every
// set holding an event's value gets its bit (MarkEqualities; events-1m's
// values are in about 3,600 sets an event), and every range group of an
// event's attributes is searched (selective-1m's groups are large: its
// searches were a fifth of its MatchEvent). The old constants chose wrong
// at 17 of 45 measured points (2 to 32 events on fabret-1m, selective-1m,
// events-1m, ranges-1m and ranges-1m's first 100,000 subscriptions); a
// grid over a cached lead row's cost where the kernel runs, a search's
// and a set id's found these to choose right at all 45
// (bench/reports/2026-11-30-xeon2-issue45-avx512-event, fit.py).
inline constexpr double kPerEventLeadRowCostCachedAvx512 = 5.0;
inline constexpr double kPerEventSearchCost = 80.0;
inline constexpr double kPerEventSetIdCost = 4.0;
inline constexpr double kMaskRowCost = 20.0;
inline constexpr double kMaskPositionCost = 2.5;

// The sizes one cohort's first pass adds up (PredicateTable::BeginCohort),
// and the two ways' prices by the constants above. Accumulate each sum in
// the cohort's event order: the comparisons are of doubles.
struct CohortCost {
  double rows_sum = 0;       // every event's access lists' rows, all events
  double lead_rows_sum = 0;  // every event's "present" lists' rows
  // The same for lists whose ranges are mostly inline (not in the above).
  double inline_lead_rows_sum = 0;
  double rows_present = 0;   // "present" rows, once per attribute
  double positions_sum = 0;  // range positions of every event's attributes
  double searches_sum = 0;   // their range groups' searches, every event
  double set_ids_sum = 0;    // sets holding every event's values
  double positions_all = 0;  // range positions, once per attribute

  // Kept per event: every event checks its own lists, searches its own
  // range groups, marks its own positions and sets; a lead row costs less
  // where the slot table is uncached, or with the AVX-512 kernel.
  double PerEvent(size_t slot_limit) const {
    const double lead_row =
        SlotTableUncached(slot_limit) ? kPerEventLeadRowCostUncached
        : UseAvx512()                 ? kPerEventLeadRowCostCachedAvx512
                                      : kPerEventLeadRowCostCached;
    return kPerEventRowCost * rows_sum + lead_row * lead_rows_sum +
           (UseAvx2() ? kPerEventLeadRowCostInline
                      : kPerEventLeadRowCostInlineScalar) *
               inline_lead_rows_sum +
           kPerEventPositionCost * positions_sum +
           kPerEventSearchCost * searches_sum +
           kPerEventSetIdCost * set_ids_sum;
  }
  // In masks, the least it can cost before the lists' union is known: each
  // list is checked once, so at least the rows of an average event's lists
  // (and every "present" row).
  double MaskFloor(size_t events) const {
    return kMaskPositionCost * positions_all +
           kMaskRowCost *
               std::max(rows_present,
                        (rows_sum + lead_rows_sum + inline_lead_rows_sum) /
                            events);
  }
  // In masks, once the union of the lists' rows (`rows_union`) is known.
  double Masks(double rows_union) const {
    return kMaskPositionCost * positions_all + kMaskRowCost * rows_union;
  }
};

}  // namespace internal
}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_COHORT_KEEP_H_
