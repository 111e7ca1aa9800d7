// Tests of Index::MatchEvent, the const per-event path of the threaded
// baseline: a differential test on workloads whose predicate groups grow
// sorted parts and whose clusters get compacted (index_test's differential
// test covers the small-domain workloads), and concurrency tests run under
// ThreadSanitizer:
//
//   bazel test --config=tsan //matcher:match_event_test
//
// The library itself has no threads; only these tests start some, with std::
// primitives, which ThreadSanitizer understands.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "matcher/cohort_masks.h"
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
using test_util::Rng;
using test_util::Subscription;

constexpr int kThreads = 4;

Subscription RandomSubscription(Rng& rng, uint32_t attributes, int64_t domain,
                                int max_predicates) {
  Subscription s;
  for (int k = 0, n = 1 + rng.Uniform(max_predicates); k < n; ++k) {
    s.push_back(RandomPredicate(rng, attributes, domain));
  }
  return s;
}

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
  ReferenceMatcher reference;
  SubscriptionId id = 0;
  while (index.predicates() <= internal::kCachedSlots + 20000) {
    Subscription s;
    for (int k = 0, n = 2 + rng.Uniform(2); k < n; ++k) {
      s.push_back(RandomPredicate(rng, kAttributes, kDomain, test_util::kRangeOnly));
    }
    ASSERT_TRUE(index.Add(id, s).ok());
    reference.Add(id, s);
    ++id;
  }
  for (SubscriptionId gone = 0; gone < id; gone += 7) {
    ASSERT_TRUE(index.Remove(gone).ok());
    reference.Remove(gone);
  }
  std::vector<Event> events(40);
  for (Event& e : events) e = RandomEvent(rng, kAttributes, kDomain);
  MatchScratch scratch;
  EXPECT_TRUE(AgreeOnEvents(index, reference, events, &scratch));
}

// A random index of `n` subscriptions (ids 0..n-1) and `events` events over
// `attributes` attributes, with each event's matches computed beforehand
// (sorted) by the reference matcher.
struct Workload {
  Index index;
  std::vector<Event> events;
  std::vector<std::vector<SubscriptionId>> expected;
};

void BuildWorkload(uint64_t seed, uint32_t attributes, int n, int events,
                   Workload* w) {
  Rng rng(seed);
  ReferenceMatcher reference;
  for (SubscriptionId id = 0; id < static_cast<SubscriptionId>(n); ++id) {
    const Subscription s = RandomSubscription(rng, attributes, 40, 4);
    ASSERT_TRUE(w->index.Add(id, s).ok());
    reference.Add(id, s);
  }
  // Some removals so the threads also read tombstones.
  for (SubscriptionId id = 0; id < static_cast<SubscriptionId>(n); id += 3) {
    ASSERT_TRUE(w->index.Remove(id).ok());
    reference.Remove(id);
  }
  for (int i = 0; i < events; ++i) {
    w->events.push_back(RandomEvent(rng, attributes, 40));
    w->expected.push_back(reference.Match(w->events.back()));
  }
}

// Makes threads that call `body(t)` start together, so their calls overlap.
template <typename Body>
void RunThreads(Body body) {
  std::atomic<int> waiting{kThreads};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      waiting.fetch_sub(1);
      while (waiting.load() > 0) std::this_thread::yield();
      body(t);
    });
  }
  for (std::thread& thread : threads) thread.join();
}

// Property: MatchEvent is safe for concurrent readers. Four threads, each
// with its own scratch, match different events (thread t takes every 4th,
// starting at t) on one shared Index at the same time, several passes each,
// and every result equals the one precomputed on one thread; under
// ThreadSanitizer the run also shows that MatchEvent writes nothing shared.
TEST(MatchEventConcurrency, ThreadsWithOwnScratchMatchLikeOneThread) {
  Workload w;
  BuildWorkload(7, 6, 3000, 400, &w);
  const Index& index = w.index;
  constexpr int kPasses = 3;
  std::vector<std::vector<std::vector<SubscriptionId>>> got(kThreads);
  RunThreads([&](int t) {
    MatchScratch scratch;
    std::vector<SubscriptionId> matches;
    for (int pass = 0; pass < kPasses; ++pass) {
      for (size_t i = t; i < w.events.size(); i += kThreads) {
        index.MatchEvent(w.events[i], &scratch, &matches);
        std::sort(matches.begin(), matches.end());
        got[t].push_back(matches);
      }
    }
  });
  uint64_t matched = 0;
  for (int t = 0; t < kThreads; ++t) {
    size_t k = 0;
    for (int pass = 0; pass < kPasses; ++pass) {
      for (size_t i = t; i < w.events.size(); i += kThreads, ++k) {
        ASSERT_LT(k, got[t].size());
        EXPECT_EQ(got[t][k], w.expected[i])
            << "thread " << t << " pass " << pass << " event " << i;
        matched += got[t][k].size();
      }
    }
    EXPECT_EQ(k, got[t].size());
  }
  EXPECT_GT(matched, 0u) << "workload too sparse to test anything";
}

// Property: the threaded baseline's locking discipline is sound. Readers
// call MatchEvent under a shared lock while a writer, under the exclusive
// lock, adds and removes subscriptions that no event can match (they need an
// attribute the events lack) but that share the readers' predicate groups
// and grow the predicate ids past the readers' scratch. Every reader result
// equals the precomputed one, and ThreadSanitizer sees no race.
TEST(MatchEventConcurrency, SharedLockReadersWhileWriterChurns) {
  constexpr uint32_t kAttributes = 4;
  constexpr AttributeId kAbsent = kAttributes + 1;  // no event carries it
  Workload w;
  BuildWorkload(11, kAttributes, 1000, 200, &w);
  std::shared_mutex mu;
  // Readers run a fixed number of rounds rather than until the writer is
  // done: glibc's rwlock prefers readers, so readers that kept relocking
  // could starve the writer.
  constexpr size_t kRounds = 3;
  std::vector<int> mismatches(kThreads - 1, 0);
  RunThreads([&](int t) {
    if (t == 0) {  // the writer
      Rng rng(99);
      constexpr SubscriptionId kFirst = 1u << 20;
      constexpr int kChurn = 600;
      for (int i = 0; i < kChurn; ++i) {
        Subscription s = RandomSubscription(rng, kAttributes, 5000, 3);
        s.push_back({kAbsent, Op::kEq, static_cast<int64_t>(i % 7), 0});
        std::unique_lock<std::shared_mutex> lock(mu);
        EXPECT_TRUE(w.index.Add(kFirst + i, s).ok());
        if (i % 2 == 1) {
          EXPECT_TRUE(w.index.Remove(kFirst + i - 1).ok());
        }
      }
      return;
    }
    MatchScratch scratch;
    std::vector<SubscriptionId> matches;
    for (size_t n = 0; n < kRounds * w.events.size(); ++n) {
      const size_t e = (n + t) % w.events.size();
      {
        std::shared_lock<std::shared_mutex> lock(mu);
        w.index.MatchEvent(w.events[e], &scratch, &matches);
      }
      std::sort(matches.begin(), matches.end());
      mismatches[t - 1] += matches != w.expected[e];
    }
  });
  for (int r = 0; r < kThreads - 1; ++r) {
    EXPECT_EQ(mismatches[r], 0) << "reader " << r;
  }
  EXPECT_EQ(w.index.size(), 1000u - 334u + 300u);
}

}  // namespace
}  // namespace matcher
}  // namespace cohort
