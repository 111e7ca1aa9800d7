// Partial results: what one partition (or the threaded worker) found for
// the events of a cohort, turned from the matcher's local ids into
// PublishJob::Partial (counts, global ids, deliveries), for the stage that
// merges them (Engine::FinishEvent).
//
// Thread safety: called by the partition thread that matched the events;
// each call writes only the partials it is given. The directory and the
// listener registry are read (both are thread-safe).
#ifndef COHORT_SERVICE_STAGES_PARTIALS_H_
#define COHORT_SERVICE_STAGES_PARTIALS_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "matcher/cohort_matches.h"
#include "matcher/types.h"
#include "service/stages/listeners.h"
#include "service/stages/publish_job.h"
#include "service/stages/subscription_directory.h"

namespace cohort {
namespace service {

// Turns the local ids one partition (or the threaded worker) matched for one
// event into its partial result: the count, the global ids ascending if
// `return_ids`, and (subscriber, global id) for matched subscribers that have
// listeners; a branch id (an "or" subscription's row) goes to or_ids as its
// subscription. Sorts *local and may drop its branch ids. `subscriber_of`
// maps plain local id -> subscriber id.
void FillPartial(const SubscriptionDirectory& directory,
                 const ListenerRegistry& listeners, uint32_t partition,
                 bool return_ids, const std::vector<uint32_t>& subscriber_of,
                 std::vector<matcher::SubscriptionId>* local,
                 PublishJob::Partial* partial);

// Where one event of a cohort's flat matches goes: its partial, and whether
// its request returns ids.
struct PartialOut {
  PublishJob::Partial* partial;
  bool return_ids;
};
// Scratch for FillPartials, reused from cohort to cohort by one thread.
struct PartialsScratch {
  std::vector<std::vector<matcher::SubscriptionId>> lists;
  std::vector<uint64_t> counts;
};
// The partials of a cohort's events from its flat matches (event i of
// `matches` goes to outs[i]). Where no event returns ids and nobody
// listens, a partial needs only its count, and the counts come from one
// pass over the pairs (CohortMatches::CountPerEvent), and, while "or"
// subscriptions are live, their branches from one more over the ids
// (ForEachMatchFrom); else every event's ids are listed
// (CohortMatches::ToLists) and go through FillPartial.
// REQUIRES: outs.size() == matches.events().
void FillPartials(const SubscriptionDirectory& directory,
                  const ListenerRegistry& listeners, uint32_t partition,
                  const std::vector<uint32_t>& subscriber_of,
                  const matcher::CohortMatches& matches,
                  absl::Span<const PartialOut> outs,
                  PartialsScratch* scratch);

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STAGES_PARTIALS_H_
