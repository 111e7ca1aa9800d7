// Differential tests of Index::MatchEvent, the const per-event path of the
// threaded baseline, on workloads whose predicate groups grow sorted parts
// and whose clusters get compacted (index_test's differential test covers
// the small-domain workloads). Its concurrency tests, which run under
// ThreadSanitizer, are in match_event_concurrency_test.cc.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "matcher/index.h"
#include "matcher/index_test_util.h"
#include "matcher/reference_matcher.h"
#include "matcher/types.h"

namespace cohort {
namespace matcher {
namespace {

using test_util::Event;
using test_util::FormatEvent;
using test_util::RandomEvent;
using test_util::RandomPredicate;
using test_util::RandomSubscription;
using test_util::Rng;
using test_util::Subscription;

// Expects MatchEvent, MatchCohort and the reference to agree on `events`.
// Returns false after the first disagreement.
bool AgreeOnEvents(Index& index, const ReferenceMatcher& reference,
                   const std::vector<Event>& events, MatchScratch* scratch) {
  std::vector<EventView> views(events.begin(), events.end());
  std::vector<std::vector<SubscriptionId>> cohort;
  index.MatchCohort(views, &cohort);
  std::vector<SubscriptionId> got;
  for (size_t i = 0; i < events.size(); ++i) {
    index.MatchEvent(events[i], scratch, &got);
    std::sort(got.begin(), got.end());
    std::sort(cohort[i].begin(), cohort[i].end());
    const std::vector<SubscriptionId> want = reference.Match(events[i]);
    if (got != want || cohort[i] != want) {
      ADD_FAILURE() << "MatchEvent found " << got.size() << ", MatchCohort "
                    << cohort[i].size() << ", reference " << want.size()
                    << " for " << FormatEvent(events[i]);
      return false;
    }
  }
  return true;
}

// Property: on few attributes with wide value domains, range groups grow
// past their unsorted tail (so phase 1 binary-searches sorted parts), and
// removing most subscriptions in random order compacts clusters and rebuilds
// groups; MatchEvent agrees with MatchCohort and the reference throughout,
// including after re-adding into the rebuilt structures.
TEST(MatchEventDifferential, SortedGroupsCompactionAndRebuilds) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    Rng rng(seed);
    const uint32_t attributes = 1 + rng.Uniform(3);
    const int64_t domain = 200 + rng.Uniform(2000);
    Index index;
    ReferenceMatcher reference;
    std::vector<std::pair<SubscriptionId, Subscription>> live;
    MatchScratch scratch;
    SubscriptionId next_id = 0;
    auto add = [&](int n) {
      for (int i = 0; i < n; ++i) {
        Subscription s = RandomSubscription(rng, attributes, domain, 4);
        EXPECT_TRUE(index.Add(next_id, s).ok());
        reference.Add(next_id, s);
        live.emplace_back(next_id++, std::move(s));
      }
    };
    std::vector<Event> events(150);
    for (Event& e : events) e = RandomEvent(rng, attributes + 1, domain);
    add(3000);
    ASSERT_TRUE(AgreeOnEvents(index, reference, events, &scratch));
    for (int stage = 0; stage < 3; ++stage) {  // remove 60% each stage
      for (size_t n = live.size() * 3 / 5; n > 0; --n) {
        const size_t at = rng.Uniform(live.size());
        ASSERT_TRUE(index.Remove(live[at].first).ok());
        reference.Remove(live[at].first);
        live[at] = std::move(live.back());
        live.pop_back();
      }
      ASSERT_TRUE(AgreeOnEvents(index, reference, events, &scratch));
    }
    add(200);
    ASSERT_TRUE(AgreeOnEvents(index, reference, events, &scratch));
  }
}

// Property: past internal::kCachedSlots range predicates, the per-event
// path fetches lead clusters' slots ahead (ClusterStore::MatchBlockForEvent)
// and the cost model weighs lead rows less; MatchEvent and MatchCohort still
// agree with the reference, tombstones included.
TEST(MatchEventDifferential, RangesPastTheCachedSlotTable) {
  Rng rng(11);
  constexpr uint32_t kAttributes = 3;
  constexpr int64_t kDomain = 10000000;
  Index index;
  // Ranges in the predicate table: planned inline (kAuto), these distinct
  // ranges would take no table slot, and the table would never grow past
  // the threshold.
  index.set_inline_ranges(internal::InlineRanges::kNever);
  ReferenceMatcher reference;
  SubscriptionId id = 0;
  constexpr SubscriptionId kMostSubscriptions = 400000;
  while (index.predicates() <= internal::kCachedSlots + 20000 &&
         id < kMostSubscriptions) {
    Subscription s;
    for (int k = 0, n = 3 + rng.Uniform(2); k < n; ++k) {
      s.push_back(
          RandomPredicate(rng, kAttributes, kDomain, test_util::kRangeOnly));
    }
    ASSERT_TRUE(index.Add(id, s).ok());
    reference.Add(id, s);
    ++id;
  }
  ASSERT_GT(index.predicates(), internal::kCachedSlots)
      << "after " << id << " subscriptions: " << index.predicates();
  for (SubscriptionId gone = 0; gone < id; gone += 7) {
    ASSERT_TRUE(index.Remove(gone).ok());
    reference.Remove(gone);
  }
  std::vector<Event> events(40);
  size_t matched = 0;
  for (Event& e : events) {
    e = RandomEvent(rng, kAttributes, kDomain);
    matched += reference.Match(e).size();
  }
  EXPECT_GT(matched, 0u) << "no event matches: the test checks nothing";
  MatchScratch scratch;
  EXPECT_TRUE(AgreeOnEvents(index, reference, events, &scratch));
}

}  // namespace
}  // namespace matcher
}  // namespace cohort
