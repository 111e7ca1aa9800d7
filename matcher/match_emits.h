// Where phase 2 puts what it finds (ClusterStore::MatchVisits and
// MatchListsForEvent, cluster_store.h): an emit that appends a cohort's
// (id, event mask) pairs to its flat buffer, the trait that says whether an
// emit takes a block of rows at once, and one cluster list of the
// per-event path with where its matched ids go.
//
// Thread safety: an emit writes only its own output; one per thread.
#ifndef COHORT_MATCHER_MATCH_EMITS_H_
#define COHORT_MATCHER_MATCH_EMITS_H_

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "matcher/cohort_matches.h"
#include "matcher/lead_values.h"
#include "matcher/predicate_bits.h"
#include "matcher/types.h"

namespace cohort {
namespace matcher {
namespace internal {

// An emit for ClusterStore::MatchVisits that appends (id, mask) to a
// cohort's flat buffer (the caller counts the matches after, with
// CohortMatches::MatchesFrom).
class AppendToMatches {
 public:
  explicit AppendToMatches(CohortMatches* out) : out_(out) {}
  void operator()(SubscriptionId id, uint64_t mask) const {
    out_->Add(id, mask);
  }
  void AddBlock(const SubscriptionId* ids, const uint64_t* masks,
                size_t n) const {
    out_->AddBlock(ids, masks, n);
  }

 private:
  CohortMatches* out_;
};

// Whether an emit for ClusterStore::MatchVisits takes a block of rows at
// once (AddBlock(ids, masks, n): the rows whose mask is not 0), rather
// than one call per matched row.
template <typename Emit, typename = void>
struct EmitsBlocks : std::false_type {};
template <typename Emit>
struct EmitsBlocks<Emit, std::void_t<decltype(&Emit::AddBlock)>>
    : std::true_type {};

// One cluster list of the per-event path (ClusterStore::MatchListsForEvent):
// its head, the event's value of the access predicate's attribute (for the
// rows' lead ranges), the event's satisfied predicates and its open bits
// (PredicateTable::MarkSatisfied), and where the ids matched go.
struct EventList {
  uint32_t head;
  LeadPoint value;
  const PredicateBits* bits;
  const PredicateBits* open;
  std::vector<SubscriptionId>* matches;
};

}  // namespace internal
}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_MATCH_EMITS_H_
