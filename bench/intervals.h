#ifndef COHORT_BENCH_INTERVALS_H_
#define COHORT_BENCH_INTERVALS_H_

// A workload restated for interval matchers such as TAMA and REIN (issue 18's
// public matchers), which know only closed integer intervals [lo, hi] over a
// small dense domain and cannot express NE.
//
// DropNe() removes what an interval matcher cannot express, so that Cohort
// and the public matchers are timed on the same subscriptions. ToIntervals()
// then maps each attribute's values, in order, onto ranks 1 ... n, where the
// n values are every event value and every predicate bound of that attribute
// in the workload. Because every bound is one of those values, the mapping is
// exact: x < v iff rank(x) < rank(v), and so on. Rank 0 and rank n + 1 are
// held by no event, so `LT` of the smallest value becomes [0, 0] instead of
// an empty interval. A subscription matches an event under the intervals iff
// it matches under the original predicates (interval_export_test checks this
// against the reference matcher).

#include <cstdint>
#include <ostream>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "workload/workload.h"

namespace cohort {
namespace bench {

enum class NePolicy {
  kDropSubscriptions,  // a subscription with any NE is left out
  kDropPredicates,     // NE predicates are left out of their subscription
};

// Parses "drop_subscriptions" or "drop_predicates".
absl::StatusOr<NePolicy> ParseNePolicy(absl::string_view name);

struct DropNeStats {
  int64_t subscriptions_dropped = 0;  // with kDropPredicates: all-NE ones
  int64_t predicates_dropped = 0;
};

// Returns `in` without its NE predicates or the subscriptions holding them,
// as `policy` says; events are kept as they are. A subscription left without
// predicates is dropped (the index refuses empty subscriptions). The result's
// options record the new counts and name the preset `<preset>-no-ne`.
workload::Workload DropNe(const workload::Workload& in, NePolicy policy,
                          DropNeStats* stats);

struct IntervalPredicate {
  uint32_t attribute = 0;
  int32_t lo = 0;  // inclusive ranks
  int32_t hi = 0;
};

struct IntervalWorkload {
  uint32_t attributes = 0;
  // Ranks lie in [0, domain); events use 1 ... domain - 2.
  int32_t domain = 0;
  std::vector<std::vector<IntervalPredicate>> subscriptions;
  // Each event as (attribute, rank) pairs, in the workload's order.
  std::vector<std::vector<std::pair<uint32_t, int32_t>>> events;
};

// Maps `w` onto ranks. INVALID_ARGUMENT if `w` holds an NE predicate, or if
// an attribute has more than 2^31 - 3 distinct values.
absl::StatusOr<IntervalWorkload> ToIntervals(const workload::Workload& w);

// True iff every predicate of `subscription` holds for `event` (brute force,
// for tests and checks).
bool MatchesIntervals(const std::vector<IntervalPredicate>& subscription,
                      const std::vector<std::pair<uint32_t, int32_t>>& event);

// Writes the text form public_driver.cc reads:
//   intervals v1 attributes=<A> domain=<D> subscriptions=<S> events=<E>
//   S <n> <attribute> <lo> <hi> ...          (one line per subscription)
//   E <expected matches> <n> <attribute> <rank> ...   (one line per event)
// `expected` holds one count per event.
void WriteIntervals(const IntervalWorkload& w,
                    const std::vector<int64_t>& expected, std::ostream& out);

}  // namespace bench
}  // namespace cohort

#endif  // COHORT_BENCH_INTERVALS_H_
