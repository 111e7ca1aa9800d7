// Concurrency tests of Index::MatchEvent, the const per-event path of the
// threaded baseline, run under ThreadSanitizer by ./test.sh:
//
//   bazel test --config=tsan //matcher:match_event_concurrency_test
//
// The library itself has no threads; only these tests start some, with std::
// primitives, which ThreadSanitizer understands. The differential tests of
// the same path (single-threaded, and too slow for ThreadSanitizer at their
// sizes) are in match_event_test.cc.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <thread>
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
using test_util::RandomEvent;
using test_util::RandomSubscription;
using test_util::Rng;
using test_util::Subscription;

constexpr int kThreads = 4;

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
