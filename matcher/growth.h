// Growing the index's tables by a quarter at a time instead of doubling.
//
// std::vector doubles its capacity when it fills, so a table that grew by
// appends holds on average a third more than it uses, and just after a
// doubling twice as much. The index's largest tables grow that way, one
// entry per new predicate, cluster or access list, to millions of entries
// (fabret-1m's predicate infos had room for 524,288 at 278,000 ids, 8 MB of
// its 72 bytes per subscription). Growing by a quarter keeps at most a
// quarter spare, for amortised O(1) appends at about twice the copying.
//
// Stage: the matcher; no threads. Thread safety: as the vector's.
#ifndef COHORT_MATCHER_GROWTH_H_
#define COHORT_MATCHER_GROWTH_H_

#include <algorithm>
#include <cstddef>
#include <vector>

namespace cohort {
namespace matcher {
namespace internal {

// Capacity for at least `n` elements, a quarter more than now if it must
// grow (and at least 16, so that small tables do not grow one by one).
template <typename T, typename A>
void ReserveGrowingByQuarter(std::vector<T, A>& v, size_t n) {
  if (n <= v.capacity()) return;
  v.reserve(std::max(n, v.capacity() + v.capacity() / 4 + 16));
}

// v.resize(n, fill), growing as ReserveGrowingByQuarter.
template <typename T, typename A>
void ResizeGrowingByQuarter(std::vector<T, A>& v, size_t n, const T& fill) {
  ReserveGrowingByQuarter(v, n);
  v.resize(n, fill);
}

}  // namespace internal
}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_GROWTH_H_
