#include "matcher/cohort_matches.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "matcher/index_test_util.h"

namespace cohort {
namespace matcher {
namespace {

using test_util::Rng;

// What a buffer should hold, built the slow way: each event's ids.
struct Expected {
  std::vector<std::vector<SubscriptionId>> lists;
  uint64_t matches = 0;
};

// Fills `m` for `events` events with `pairs_per_chunk` random pairs a chunk
// (masks of the given density, in percent of a chunk's events), and some
// per-event runs (EndEvent); returns the expected lists.
Expected Fill(Rng& rng, size_t events, size_t pairs_per_chunk, int density,
              CohortMatches* m) {
  Expected want;
  want.lists.resize(events);
  m->Reset(events);
  SubscriptionId next = 0;
  for (size_t base = 0; base < events; base += 64) {
    m->BeginChunk(base);
    const size_t n = std::min<size_t>(64, events - base);
    for (size_t k = 0; k < pairs_per_chunk; ++k) {
      uint64_t mask = 0;
      for (size_t i = 0; i < n; ++i) {
        if (rng.Chance(density)) mask |= uint64_t{1} << i;
      }
      if (mask == 0) mask = uint64_t{1} << rng.Uniform(n);
      const SubscriptionId id = next++;
      m->Add(id, mask);
      for (size_t i = 0; i < n; ++i) {
        if ((mask >> i) & 1) want.lists[base + i].push_back(id);
      }
      want.matches += __builtin_popcountll(mask);
    }
    // Events' ids from a per-event path: runs of 0 to 3 ids, an event's
    // ids possibly in two runs.
    for (int r = 0; r < 4; ++r) {
      const size_t e = rng.Uniform(n);
      const int ids = static_cast<int>(rng.Uniform(4));
      for (int j = 0; j < ids; ++j) {
        m->event_ids()->push_back(next);
        want.lists[base + e].push_back(next++);
        ++want.matches;
      }
      m->EndEvent(e);
    }
  }
  return want;
}

void ExpectHolds(const CohortMatches& m, const Expected& want) {
  const size_t events = want.lists.size();
  ASSERT_EQ(m.events(), events);
  EXPECT_EQ(m.matches(), want.matches);
  std::vector<uint64_t> counts(events, 12345);
  m.CountPerEvent(counts.data());
  for (size_t i = 0; i < events; ++i) {
    EXPECT_EQ(counts[i], want.lists[i].size()) << "event " << i;
  }
  std::vector<std::vector<SubscriptionId>> lists(events + 3, {7, 8});
  m.ToLists(&lists);
  ASSERT_EQ(lists.size(), events);
  for (size_t i = 0; i < events; ++i) {
    std::vector<SubscriptionId> got = lists[i];
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, want.lists[i]) << "event " << i;
  }
  uint64_t seen = 0;
  m.ForEachMatch([&](size_t event, SubscriptionId id) {
    ASSERT_LT(event, events);
    EXPECT_TRUE(std::binary_search(want.lists[event].begin(),
                                   want.lists[event].end(), id));
    ++seen;
  });
  EXPECT_EQ(seen, want.matches);
  // From an id on: exactly the matches of ids that high, pairs and runs.
  for (SubscriptionId min : {SubscriptionId{0}, SubscriptionId{3},
                             SubscriptionId{40}, SubscriptionId{1} << 30}) {
    uint64_t want_from = 0;
    for (const auto& list : want.lists) {
      want_from += std::count_if(list.begin(), list.end(),
                                 [min](SubscriptionId id) { return id >= min; });
    }
    uint64_t from = 0;
    m.ForEachMatchFrom(min, [&](size_t event, SubscriptionId id) {
      ASSERT_LT(event, events);
      EXPECT_GE(id, min);
      EXPECT_TRUE(std::binary_search(want.lists[event].begin(),
                                     want.lists[event].end(), id));
      ++from;
    });
    EXPECT_EQ(from, want_from) << "from " << min;
  }
}

TEST(CohortMatches, EmptyCohortAndEmptyChunk) {
  CohortMatches m;
  m.Reset(0);
  EXPECT_EQ(m.matches(), 0u);
  std::vector<std::vector<SubscriptionId>> lists(2);
  m.ToLists(&lists);
  EXPECT_TRUE(lists.empty());
  m.Reset(5);
  m.BeginChunk(0);
  std::vector<uint64_t> counts(5, 9);
  m.CountPerEvent(counts.data());
  EXPECT_EQ(counts, std::vector<uint64_t>(5, 0));
}

// Fewer pairs than the counter's blocks of sixteen, a few blocks, and
// enough dense pairs that counts pass 2^16 (the rippled planes).
TEST(CohortMatches, CountsListsAndMatchesAgreeWithTheSlowWay) {
  Rng rng(17);
  for (size_t events : {1, 7, 64, 65, 200}) {
    for (size_t pairs : {0, 5, 16, 47, 1000}) {
      for (int density : {3, 50, 100}) {
        CohortMatches m;
        const Expected want = Fill(rng, events, pairs, density, &m);
        ExpectHolds(m, want);
        if (HasFatalFailure()) return;
      }
    }
  }
  CohortMatches m;
  const Expected want = Fill(rng, 64, 70000, 90, &m);
  ExpectHolds(m, want);
}

TEST(CohortMatches, ResetForgetsThePreviousCohort) {
  Rng rng(3);
  CohortMatches m;
  Fill(rng, 100, 300, 40, &m);
  const Expected want = Fill(rng, 10, 20, 40, &m);
  ExpectHolds(m, want);
}

// AddBlock keeps exactly the rows whose mask is not zero, in order, and
// grows the buffer as Add does (blocks larger than the room it starts
// with, and many of them).
TEST(CohortMatches, AddBlockKeepsTheRowsWithAMask) {
  Rng rng(7);
  CohortMatches m;
  m.Reset(64);
  m.BeginChunk(0);
  std::vector<std::vector<SubscriptionId>> want(64);
  uint64_t want_matches = 0;
  size_t want_pairs = 0;
  SubscriptionId next = 0;
  for (int block = 0; block < 300; ++block) {
    const size_t n = 1 + rng.Uniform(block % 10 == 0 ? 3000 : 256);
    std::vector<SubscriptionId> ids(n);
    std::vector<uint64_t> masks(n);
    for (size_t j = 0; j < n; ++j) {
      ids[j] = next++;
      masks[j] = rng.Chance(25) ? rng.Next() | 1 : 0;
      if (masks[j] == 0) continue;
      ++want_pairs;
      want_matches += __builtin_popcountll(masks[j]);
      for (int i = 0; i < 64; ++i) {
        if ((masks[j] >> i) & 1) want[i].push_back(ids[j]);
      }
    }
    m.AddBlock(ids.data(), masks.data(), n);
  }
  EXPECT_EQ(m.pairs(), want_pairs);
  EXPECT_EQ(m.matches(), want_matches);
  std::vector<std::vector<SubscriptionId>> lists;
  m.ToLists(&lists);
  ASSERT_EQ(lists.size(), 64u);
  for (size_t e = 0; e < 64; ++e) {
    std::sort(lists[e].begin(), lists[e].end());
    EXPECT_EQ(lists[e], want[e]) << "event " << e;
  }
}

}  // namespace
}  // namespace matcher
}  // namespace cohort
