// Over 800 lines: the index's randomized differential tests against the
// reference matcher, which share the workload builders at the top.
// Tests of the Fabret index. The backbone is a randomized differential test
// against ReferenceMatcher over many seeds, every operator, boundary values,
// interleaved add/remove and all cohort sizes, checking both matching paths
// (MatchCohort and MatchEvent); a mismatch is shrunk to a minimal set of
// subscriptions and printed as a reproducer.
#include "matcher/index.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "matcher/index_test_util.h"
#include "matcher/reference_matcher.h"
#include "matcher/simd.h"
#include "matcher/types.h"

namespace cohort {
namespace matcher {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

using test_util::Event;
using test_util::FormatEvent;
using test_util::FormatSubscription;
using test_util::RandomEvent;
using test_util::RandomPredicate;
using test_util::Rng;
using test_util::Subscription;

std::vector<SubscriptionId> MatchOne(Index& index, const Event& e) {
  std::vector<std::vector<SubscriptionId>> out;
  EventView view(e);
  index.MatchCohort(absl::MakeConstSpan(&view, 1), &out);
  std::sort(out[0].begin(), out[0].end());
  return out[0];
}

// The per-event path, sorted.
std::vector<SubscriptionId> MatchOneEvent(const Index& index, const Event& e) {
  MatchScratch scratch;
  std::vector<SubscriptionId> out = {kMaxSubscriptionId};  // must be cleared
  index.MatchEvent(e, &scratch, &out);
  std::sort(out.begin(), out.end());
  return out;
}

// Greedily drops subscriptions while a freshly built index still disagrees
// with the reference on `event`; returns the reproducer text, or an
// explanation when the failure needs the add/remove history.
std::string Shrink(std::vector<std::pair<SubscriptionId, Subscription>> live,
                   const Event& event) {
  auto fails =
      [&](const std::vector<std::pair<SubscriptionId, Subscription>>& subs) {
        Index index;
        ReferenceMatcher reference;
        for (const auto& [id, s] : subs) {
          if (!index.Add(id, s).ok()) return true;
          reference.Add(id, s);
        }
        const std::vector<SubscriptionId> want = reference.Match(event);
        return MatchOne(index, event) != want ||
               MatchOneEvent(index, event) != want;
      };
  if (!fails(live)) {
    return "fails only with its add/remove history (seed reproduces it)";
  }
  for (size_t i = 0; i < live.size();) {
    auto without = live;
    without.erase(without.begin() + i);
    if (fails(without)) {
      live = std::move(without);
    } else {
      ++i;
    }
  }
  std::string out = "minimal reproducer:\n";
  for (const auto& [id, s] : live) {
    absl::StrAppend(&out, "  id ", id, ": ", FormatSubscription(s), "\n");
  }
  absl::StrAppend(&out, "  ", FormatEvent(event), "\n");
  return out;
}

struct DifferentialStats {
  uint64_t pairs = 0;  // (subscription, event) pairs compared
  uint64_t matches = 0;
};

// How RunSeed adds a round's subscriptions: one Add each, or (kBatches)
// half the rounds through Index::AddBatch, in batches of random sizes with
// bad subscriptions among them.
enum class Adding { kOneByOne, kBatches };

// Adds `subs` to `index` with AddBatch in batches of random sizes, each
// with a bad subscription or two slipped in (an id already present, no
// predicates, a BETWEEN with value > upper), and expects every status to be
// the one Add gives.
void AddInBatches(Rng& rng, Index& index,
                  const std::vector<std::pair<SubscriptionId, Subscription>>&
                      subs) {
  static const Subscription kEmpty;
  static const Subscription kInverted = {
      {.attribute = 0, .op = Op::kBetween, .value = 5, .upper = 4}};
  static constexpr size_t kSizes[] = {1, 2, 17, 100, 100000};
  for (size_t first = 0; first < subs.size();) {
    const size_t n = std::min(kSizes[rng.Uniform(std::size(kSizes))],
                              subs.size() - first);
    std::vector<Index::NewSubscription> batch;
    std::vector<absl::StatusCode> want;
    for (size_t i = first; i < first + n; ++i) {
      if (rng.Chance(3)) {  // a repeat of the id just added
        if (!batch.empty()) {
          batch.push_back({batch.back().id, subs[i].second});
          want.push_back(absl::StatusCode::kAlreadyExists);
        }
        batch.push_back({kMaxSubscriptionId - 1,
                         rng.Chance(50) ? kEmpty : kInverted});
        want.push_back(absl::StatusCode::kInvalidArgument);
      }
      batch.push_back({subs[i].first, subs[i].second});
      want.push_back(absl::StatusCode::kOk);
    }
    const std::vector<absl::Status> got = index.AddBatch(batch);
    ASSERT_EQ(got.size(), batch.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].code(), want[i])
          << "batch entry " << i << " (id " << batch[i].id
          << "): " << got[i];
    }
    first += n;
  }
}

// One seed: rounds of random mutations followed by matching a batch of events
// in cohorts of random sizes, and each event alone with MatchEvent (one
// scratch for the whole seed, so it also grows with the index). Returns false
// (after reporting) on a mismatch.
bool RunSeed(const test_util::Shape& shape, uint64_t seed,
             DifferentialStats* stats, Adding adding = Adding::kOneByOne) {
  Rng rng(seed);
  const uint32_t attributes = 1 + rng.Uniform(shape.max_attributes);
  const int64_t domain = 1 + rng.Uniform(shape.max_domain);
  Index index;
  ReferenceMatcher reference;
  std::vector<std::pair<SubscriptionId, Subscription>> live;
  std::vector<SubscriptionId> removed;
  MatchScratch scratch;
  std::vector<SubscriptionId> per_event;
  SubscriptionId next_id = static_cast<SubscriptionId>(rng.Uniform(1000));
  // 2, 4 and 16 are weighed by the cost model (and kept on its remembered
  // verdicts between weighings, across the rounds' adds and removes).
  static constexpr size_t kCohorts[] = {1, 2, 4, 16, 63, 64, 65, 1000};
  for (int round = 0; round < 4; ++round) {
    // Each round's rows keep their ranges inline as the planner chooses,
    // all of them or none (RowPlanner, InlineRanges), so that rows of every
    // kind share clusters, are removed and are matched together.
    static constexpr internal::InlineRanges kInline[] = {
        internal::InlineRanges::kAuto, internal::InlineRanges::kAlways,
        internal::InlineRanges::kNever};
    index.set_inline_ranges(kInline[rng.Uniform(std::size(kInline))]);
    const int adds = shape.min_adds + rng.Uniform(shape.add_span);
    const bool batches = adding == Adding::kBatches && rng.Chance(50);
    const size_t live_before = live.size();
    for (int i = 0; i < adds; ++i) {
      Subscription s;
      if (!live.empty() && rng.Chance(5)) {
        s = live[rng.Uniform(live.size())].second;  // a duplicate
      } else {
        const int n = 1 + rng.Uniform(6);
        for (int k = 0; k < n; ++k)
          s.push_back(RandomPredicate(rng, attributes, domain, shape));
      }
      SubscriptionId id = next_id++;
      if (!removed.empty() && rng.Chance(30)) {  // re-add a removed id
        id = removed.back();
        removed.pop_back();
      }
      if (!batches) {
        EXPECT_TRUE(index.Add(id, s).ok());
      }
      reference.Add(id, s);
      live.emplace_back(id, std::move(s));
    }
    if (batches) {
      AddInBatches(rng, index,
                   {live.begin() + live_before, live.end()});
    }
    const int removes = rng.Uniform(live.size() / 2 + 1);
    for (int i = 0; i < removes; ++i) {
      const size_t at = rng.Uniform(live.size());
      EXPECT_TRUE(index.Remove(live[at].first).ok());
      reference.Remove(live[at].first);
      removed.push_back(live[at].first);
      live.erase(live.begin() + at);
    }
    std::vector<Event> events(100 + rng.Uniform(300));
    for (Event& e : events) e = RandomEvent(rng, attributes + 1, domain);
    std::vector<EventView> views(events.begin(), events.end());
    std::vector<std::vector<SubscriptionId>> got;
    CohortMatches pairs;
    std::vector<uint64_t> counts;
    for (size_t start = 0; start < views.size();) {
      const size_t n = std::min(kCohorts[rng.Uniform(std::size(kCohorts))],
                                views.size() - start);
      internal::UseKernelsForTest(rng.Uniform(3));
      index.MatchCohort(absl::MakeConstSpan(views).subspan(start, n), &got);
      // A quarter of the cohorts again, read as counts from the flat
      // buffer (what the service's partitions read).
      counts.clear();
      if (rng.Chance(25)) {
        index.MatchCohort(absl::MakeConstSpan(views).subspan(start, n),
                          &pairs);
        counts.resize(n);
        pairs.CountPerEvent(counts.data());
      }
      for (size_t i = 0; i < n; ++i) {
        const Event& e = events[start + i];
        std::sort(got[i].begin(), got[i].end());
        const std::vector<SubscriptionId> want = reference.Match(e);
        if (!counts.empty()) {
          EXPECT_EQ(counts[i], want.size()) << "seed " << seed << " round "
                                            << round << " " << FormatEvent(e);
        }
        stats->pairs += live.size();
        stats->matches += want.size();
        index.MatchEvent(e, &scratch, &per_event);
        std::sort(per_event.begin(), per_event.end());
        if (got[i] != want || per_event != want) {
          ADD_FAILURE() << "seed " << seed << " round " << round
                        << ": MatchCohort found " << got[i].size()
                        << " matches, MatchEvent " << per_event.size()
                        << ", reference " << want.size() << " for "
                        << FormatEvent(e) << "\n"
                        << Shrink(live, e);
          internal::UseKernelsForTest(0);
          return false;
        }
      }
      start += n;
    }
    EXPECT_EQ(index.size(), live.size());
  }
  internal::UseKernelsForTest(0);
  return true;
}

TEST(IndexDifferential, RandomizedAgainstReferenceOverManySeeds) {
  DifferentialStats stats;
  constexpr uint64_t kSeeds = 60;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    if (!RunSeed(test_util::kMixed, seed, &stats)) break;
  }
  std::cout << "checked " << stats.pairs << " (subscription, event) pairs, "
            << stats.matches << " matches\n";
  EXPECT_GE(stats.pairs, 1'000'000u);
  EXPECT_GT(stats.matches, stats.pairs / 1000) << "workload too sparse";
}

// IN, NOT_IN, EXISTS and NOT_EXISTS: sets shared between subscriptions
// and attributes, sets as access predicates, subscriptions of NOT_EXISTS
// alone (checked for every event), events lacking attributes, deletes.
TEST(IndexDifferential, SetAndExistenceOperatorsAgainstReference) {
  DifferentialStats stats;
  constexpr uint64_t kSeeds = 60;
  for (uint64_t seed = 1000; seed < 1000 + kSeeds; ++seed) {
    if (!RunSeed(test_util::kSets, seed, &stats)) break;
  }
  std::cout << "checked " << stats.pairs << " (subscription, event) pairs, "
            << stats.matches << " matches\n";
  EXPECT_GE(stats.pairs, 1'000'000u);
  EXPECT_GT(stats.matches, stats.pairs / 1000) << "workload too sparse";
}

// Subscriptions without equalities only, on one or two attributes: their
// lead-range lists grow to thousands of rows, so tails merge into the
// sorted part, removals compact it, and cohorts and single events skip the
// sorted rows past their values.
TEST(IndexDifferential, RangeOnlyListsSortMergeAndCompact) {
  DifferentialStats stats;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    if (!RunSeed(test_util::kRangeOnly, seed, &stats)) break;
  }
  std::cout << "checked " << stats.pairs << " (subscription, event) pairs, "
            << stats.matches << " matches\n";
  EXPECT_GE(stats.pairs, 5'000'000u);
  EXPECT_GT(stats.matches, stats.pairs / 100) << "workload too sparse";
}

// Adds `added` to both matchers (through AddBatch if `batch`, else one
// Add each) and appends them to *live.
void AddToBoth(const std::vector<std::pair<SubscriptionId, Subscription>>&
                   added,
               bool batch, Index* index, ReferenceMatcher* reference,
               std::vector<std::pair<SubscriptionId, Subscription>>* live) {
  if (batch) {
    std::vector<Index::NewSubscription> b;
    for (const auto& [id, sub] : added) b.push_back({id, sub});
    for (const absl::Status& st : index->AddBatch(b)) {
      ASSERT_TRUE(st.ok()) << st;
    }
  } else {
    for (const auto& [id, sub] : added) {
      ASSERT_TRUE(index->Add(id, sub).ok());
    }
  }
  for (const auto& [id, sub] : added) {
    ASSERT_TRUE(reference->Add(id, sub));
    live->push_back({id, sub});
  }
}

// Checks MatchEvent, cohorts of one and cohorts of 64 against the
// reference for every event.
void ExpectMatchesReference(Index& index, const ReferenceMatcher& reference,
                            const std::vector<Event>& events,
                            const char* stage) {
  for (const Event& e : events) {
    std::vector<SubscriptionId> want = reference.Match(e);
    std::sort(want.begin(), want.end());
    ASSERT_EQ(MatchOneEvent(index, e), want)
        << stage << ": " << FormatEvent(e);
    ASSERT_EQ(MatchOne(index, e), want) << stage << ": " << FormatEvent(e);
  }
  for (size_t first = 0; first + 64 <= events.size(); first += 64) {
    std::vector<EventView> views(events.begin() + first,
                                 events.begin() + first + 64);
    std::vector<std::vector<SubscriptionId>> got;
    index.MatchCohort(views, &got);
    for (size_t i = 0; i < views.size(); ++i) {
      std::vector<SubscriptionId> want = reference.Match(views[i]);
      std::sort(want.begin(), want.end());
      std::sort(got[i].begin(), got[i].end());
      ASSERT_EQ(got[i], want) << stage << " cohort: "
                              << FormatEvent(events[first + i]);
    }
  }
}

// Removes about one in `one_in` of *live from both matchers.
void RemoveSome(uint64_t one_in, Rng& rng, Index* index,
                ReferenceMatcher* reference,
                std::vector<std::pair<SubscriptionId, Subscription>>* live) {
  for (size_t i = 0; i < live->size();) {
    if (rng.Next() % one_in == 0) {
      ASSERT_TRUE(index->Remove((*live)[i].first).ok());
      ASSERT_TRUE(reference->Remove((*live)[i].first));
      (*live)[i] = live->back();
      live->pop_back();
    } else {
      ++i;
    }
  }
}

// Lead clusters long enough, and finite leads narrow enough, that the
// finite leads get a sorted run of their own whose window a value's lower
// bound cuts (ClusterStore, kMidRunRows and kMidRunSpan); the random
// workloads above rarely build one. Subscriptions without an equality,
// their leads LE, GE and narrow BETWEEN on one attribute, go in one by one
// (tails merged as they grow) and in a batch; a third are removed
// (tombstones, compaction), more are added, and every stage is checked
// against the reference matcher at values near the bounds, one event at a
// time and in cohorts.
TEST(IndexDifferential, LongLeadClustersWithAMiddleRun) {
  for (const bool batch : {false, true}) {
    Rng rng(batch ? 77 : 78);
    Index index;
    ReferenceMatcher reference;
    std::vector<std::pair<SubscriptionId, Subscription>> live;
    std::vector<int64_t> bounds;
    SubscriptionId next_id = 1;
    auto make = [&]() {
      Subscription sub;
      const uint64_t kind = rng.Next() % 8;
      const int64_t lo = static_cast<int64_t>(rng.Next() % 1'000'000);
      if (kind == 0) {
        sub.push_back({.attribute = 0, .op = Op::kLe, .value = lo});
      } else if (kind == 1) {
        sub.push_back({.attribute = 0, .op = Op::kGe, .value = lo});
      } else {
        // Few widths, so that many rows are as wide as the widest: their
        // hi is a value whose window starts exactly at their lo.
        const int64_t width = static_cast<int64_t>(rng.Next() % 5) * 1'000;
        sub.push_back(
            {.attribute = 0, .op = Op::kBetween, .value = lo,
             .upper = lo + width});
        bounds.push_back(lo + width);
      }
      bounds.push_back(lo);
      // A second range on another attribute, true for most events (so
      // that attribute 0's range leads): the same row width for all.
      sub.push_back({.attribute = 1, .op = Op::kGe,
                     .value = static_cast<int64_t>(rng.Next() % 10)});
      return sub;
    };
    auto add = [&](size_t n) {
      std::vector<std::pair<SubscriptionId, Subscription>> added;
      for (size_t i = 0; i < n; ++i) added.emplace_back(next_id++, make());
      AddToBoth(added, batch, &index, &reference, &live);
    };
    auto check = [&](const char* stage) {
      std::vector<Event> events;
      for (int i = 0; i < 300; ++i) {
        int64_t v = static_cast<int64_t>(rng.Next() % 1'000'000);
        if (i % 2 == 0) {  // at, just below or just above a bound
          v = bounds[rng.Next() % bounds.size()] +
              static_cast<int64_t>(rng.Next() % 3) - 1;
        }
        events.push_back(
            {{0, v}, {1, static_cast<int64_t>(rng.Next() % 100)}});
      }
      ExpectMatchesReference(index, reference, events, stage);
    };
    add(6'000);
    check("loaded");
    RemoveSome(3, rng, &index, &reference, &live);
    check("after removals");
    add(2'000);
    check("after more adds");
  }
}

// Rows of many widths share a cluster per width class (WidthClass):
// narrower rows are padded with an entry that always holds, and a wider
// row widens its class's cluster. Subscriptions with 0 to 9 NE predicates
// on attributes 1 to 9 besides a narrow range on attribute 0 (lead
// clusters: the range is the only positive predicate, so it leads) or an
// equality on it (clusters under that equality) go in with their widths
// in a shuffled order (so clusters widen after rows are in them), one by
// one and in a batch; half are removed, which must release exactly their
// own predicates (not the padding), and more are added. Each stage is
// checked against the reference matcher, and the clusters are counted:
// one per width class and access predicate.
TEST(IndexDifferential, ClustersOfMixedWidthsArePaddedAndWidened) {
  for (const bool equality : {false, true}) {
    for (const bool batch : {false, true}) {
      SCOPED_TRACE(equality ? "equality access" : "lead clusters");
      SCOPED_TRACE(batch ? "AddBatch" : "Add");
      Rng rng((batch ? 91 : 92) + (equality ? 10 : 0));
      Index index;
      ReferenceMatcher reference;
      std::vector<std::pair<SubscriptionId, Subscription>> live;
      SubscriptionId next_id = 1;
      auto make = [&](uint32_t extra) {
        Subscription sub;
        if (equality) {
          sub.push_back({.attribute = 0, .op = Op::kEq,
                         .value = static_cast<int64_t>(rng.Next() % 4)});
        } else {
          const int64_t lo = static_cast<int64_t>(rng.Next() % 10'000);
          sub.push_back({.attribute = 0, .op = Op::kBetween, .value = lo,
                         .upper = lo + 200});
        }
        // NE, so that nothing else may lead or be the access predicate
        // (the randomized tests cover range entries in padded rows).
        for (uint32_t a = 1; a <= extra; ++a) {
          const int64_t v = static_cast<int64_t>(rng.Next() % 20);
          sub.push_back({.attribute = a, .op = Op::kNe, .value = v});
        }
        return sub;
      };
      auto add = [&](size_t n) {
        std::vector<std::pair<SubscriptionId, Subscription>> added;
        for (size_t i = 0; i < n; ++i) {
          added.emplace_back(next_id++,
                             make(static_cast<uint32_t>(rng.Next() % 10)));
        }
        AddToBoth(added, batch, &index, &reference, &live);
      };
      auto check = [&](const char* stage) {
        std::vector<Event> events;
        for (int i = 0; i < 200; ++i) {
          Event e{{0, static_cast<int64_t>(rng.Next() %
                                           (equality ? 5 : 10'300))}};
          for (AttributeId a = 1; a <= 9; ++a) {
            if (rng.Next() % 8 != 0) {  // sometimes missing
              e.push_back({a, static_cast<int64_t>(rng.Next() % 100)});
            }
          }
          events.push_back(e);
        }
        ExpectMatchesReference(index, reference, events, stage);
      };
      // Widths 0 to 9 fall in the classes 0, 1, 2, 3-4, 5-8 and 9: six
      // clusters under the one lead attribute, or under each of the four
      // equalities.
      add(3'000);
      check("loaded");
      EXPECT_EQ(index.clusters(), equality ? 24u : 6u);
      const size_t predicates = index.predicates();
      RemoveSome(2, rng, &index, &reference, &live);
      check("after removals");
      add(1'000);
      check("after more adds");
      // Removing everything releases every predicate the rows held.
      for (const auto& [id, sub] : live) ASSERT_TRUE(index.Remove(id).ok());
      EXPECT_EQ(index.clusters(), 0u);
      EXPECT_LT(index.predicates(), predicates);
      EXPECT_LE(index.predicates(), 1u) << "predicates left behind";
    }
  }
}

// The bulk load path: rounds whose subscriptions go in through AddBatch
// (batches of 1 to the whole round, bad subscriptions among them),
// interleaved with rounds of single Adds, removals and matching. Range-only
// lists get batches long enough that their lead clusters' tails and the
// range groups' tails are merged at the batch's end.
TEST(IndexDifferential, AddBatchAgainstReference) {
  DifferentialStats stats;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    if (!RunSeed(test_util::kMixed, 1000 + seed, &stats, Adding::kBatches)) {
      break;
    }
  }
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    if (!RunSeed(test_util::kRangeOnly, 1000 + seed, &stats,
                 Adding::kBatches)) {
      break;
    }
  }
  std::cout << "checked " << stats.pairs << " (subscription, event) pairs, "
            << stats.matches << " matches\n";
  EXPECT_GE(stats.pairs, 1'000'000u);
  EXPECT_GT(stats.matches, stats.pairs / 1000) << "workload too sparse";
}

TEST(IndexAddBatch, StatusesAreAddsAndBadEntriesChangeNothing) {
  const Subscription ok = {{.attribute = 1, .op = Op::kLe, .value = 10}};
  const Subscription empty;
  const Subscription inverted = {
      {.attribute = 1, .op = Op::kBetween, .value = 9, .upper = 3}};
  Index index;
  ASSERT_TRUE(index.Add(7, ok).ok());
  const std::vector<absl::Status> got = index.AddBatch({
      {.id = 1, .predicates = ok},
      {.id = 7, .predicates = ok},  // present before the batch
      {.id = 2, .predicates = empty},
      {.id = 1, .predicates = ok},  // present earlier in the batch
      {.id = 3, .predicates = inverted},
      {.id = kMaxSubscriptionId + 1, .predicates = ok},
      {.id = 4, .predicates = ok},
      {.id = 5, .predicates = ok},
      {.id = 5, .predicates = ok},  // the row just before (not yet added)
  });
  ASSERT_EQ(got.size(), 9u);
  EXPECT_TRUE(got[0].ok()) << got[0];
  EXPECT_EQ(got[1].code(), absl::StatusCode::kAlreadyExists) << got[1];
  EXPECT_EQ(got[2].code(), absl::StatusCode::kInvalidArgument) << got[2];
  EXPECT_EQ(got[3].code(), absl::StatusCode::kAlreadyExists) << got[3];
  EXPECT_EQ(got[4].code(), absl::StatusCode::kInvalidArgument) << got[4];
  EXPECT_EQ(got[5].code(), absl::StatusCode::kInvalidArgument) << got[5];
  EXPECT_TRUE(got[6].ok()) << got[6];
  EXPECT_TRUE(got[7].ok()) << got[7];
  EXPECT_EQ(got[8].code(), absl::StatusCode::kAlreadyExists) << got[8];
  EXPECT_EQ(index.size(), 4u);
  EXPECT_EQ(MatchOne(index, {{1, 5}}),
            (std::vector<SubscriptionId>{1, 4, 5, 7}));
  EXPECT_EQ(MatchOneEvent(index, {{1, 11}}), std::vector<SubscriptionId>{});
  EXPECT_TRUE(index.AddBatch({}).empty());
}

// Builds an index and a reference from `subs` (ids 0..n-1) and expects them
// and both matching paths to agree on `event`; returns the index's matches.
std::vector<SubscriptionId> MatchBoth(const std::vector<Subscription>& subs,
                                      const Event& event) {
  Index index;
  ReferenceMatcher reference;
  for (SubscriptionId id = 0; id < subs.size(); ++id) {
    EXPECT_TRUE(index.Add(id, subs[id]).ok());
    reference.Add(id, subs[id]);
  }
  std::vector<SubscriptionId> got = MatchOne(index, event);
  EXPECT_EQ(got, reference.Match(event)) << FormatEvent(event);
  EXPECT_EQ(MatchOneEvent(index, event), got) << FormatEvent(event);
  return got;
}

TEST(Index, NotEqualOnMissingAttributeDoesNotHold) {
  const std::vector<Subscription> subs = {{{0, Op::kNe, 5, 0}}};
  EXPECT_TRUE(MatchBoth(subs, {{1, 7}}).empty());
  EXPECT_EQ(MatchBoth(subs, {{0, 7}}), std::vector<SubscriptionId>{0});
  EXPECT_TRUE(MatchBoth(subs, {{0, 5}}).empty());
}

Predicate Set(AttributeId a, Op op, std::vector<int64_t> values) {
  Predicate p;
  p.attribute = a;
  p.op = op;
  p.values = std::move(values);
  return p;
}

TEST(Index, SetOperatorsHoldAsDocumented) {
  const std::vector<Subscription> subs = {
      {Set(0, Op::kIn, {3, 5, 5, kMin})},           // 0
      {Set(0, Op::kNotIn, {3, 5})},                 // 1
      {Set(0, Op::kIn, {5, 3, kMin, 3})},           // 2: 0's set again
      {Set(0, Op::kIn, {7})},                       // 3: an equality
      {Set(0, Op::kIn, {5, 7}), {1, Op::kEq, 1, 0}},  // 4
  };
  EXPECT_EQ(MatchBoth(subs, {{0, 5}}), (std::vector<SubscriptionId>{0, 2}));
  EXPECT_EQ(MatchBoth(subs, {{0, kMin}}), (std::vector<SubscriptionId>{0, 1,
                                                                       2}));
  EXPECT_EQ(MatchBoth(subs, {{0, 7}, {1, 1}}),
            (std::vector<SubscriptionId>{1, 3, 4}));
  EXPECT_EQ(MatchBoth(subs, {{0, 4}}), std::vector<SubscriptionId>{1});
  // NOT_IN, like NE, does not hold for an event lacking the attribute.
  EXPECT_TRUE(MatchBoth(subs, {{1, 1}}).empty());
}

TEST(Index, ExistenceOperatorsHoldAsDocumented) {
  const Predicate exists = Set(0, Op::kExists, {});
  const Predicate not_exists = Set(0, Op::kNotExists, {});
  const Predicate not_exists_1 = Set(1, Op::kNotExists, {});
  const std::vector<Subscription> subs = {
      {exists},                               // 0
      {not_exists},                           // 1: checked for every event
      {not_exists, not_exists_1},             // 2
      {not_exists, {1, Op::kGe, 10, 0}},      // 3
      {exists, not_exists},                   // 4: never
  };
  EXPECT_EQ(MatchBoth(subs, {{0, kMin}}), std::vector<SubscriptionId>{0});
  EXPECT_EQ(MatchBoth(subs, {{2, 0}}), (std::vector<SubscriptionId>{1, 2}));
  EXPECT_EQ(MatchBoth(subs, {{1, 10}}), (std::vector<SubscriptionId>{1, 3}));
  EXPECT_EQ(MatchBoth(subs, {}), (std::vector<SubscriptionId>{1, 2}));
}

TEST(Index, SetsAreSharedAndReleased) {
  Index index;
  for (SubscriptionId id = 0; id < 4; ++id) {
    ASSERT_TRUE(index.Add(id, {Set(0, Op::kIn, {1, 2, 3})}).ok());
  }
  ASSERT_TRUE(index.Add(4, {Set(0, Op::kNotIn, {3, 2, 1})}).ok());
  ASSERT_TRUE(index.Add(5, {Set(1, Op::kIn, {1, 2, 3})}).ok());
  EXPECT_EQ(MatchOne(index, {{0, 2}}),
            (std::vector<SubscriptionId>{0, 1, 2, 3}));
  for (SubscriptionId id = 0; id < 4; ++id) ASSERT_TRUE(index.Remove(id).ok());
  EXPECT_TRUE(MatchOne(index, {{0, 2}}).empty());
  EXPECT_EQ(MatchOne(index, {{0, 9}}), std::vector<SubscriptionId>{4});
  EXPECT_EQ(MatchOne(index, {{1, 3}}), std::vector<SubscriptionId>{5});
  ASSERT_TRUE(index.Add(0, {Set(0, Op::kIn, {2, 9})}).ok());
  EXPECT_EQ(MatchOne(index, {{0, 9}}), (std::vector<SubscriptionId>{0, 4}));
  EXPECT_EQ(index.Add(9, {Set(0, Op::kIn, {})}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(index.Add(9, {Set(0, Op::kNotIn, {})}).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(Index, RangePredicateOnMissingAttributeFails) {
  const std::vector<Subscription> subs = {{{3, Op::kLe, kMax, 0}},
                                          {{3, Op::kGe, kMin, 0}}};
  EXPECT_TRUE(MatchBoth(subs, {{0, 1}, {2, 2}}).empty());
  EXPECT_EQ(MatchBoth(subs, {{3, kMin}}).size(), 2u);
}

TEST(Index, BetweenWithEqualBoundsIsEquality) {
  const std::vector<Subscription> subs = {{{0, Op::kBetween, 4, 4}},
                                          {{0, Op::kEq, 4, 0}}};
  EXPECT_EQ(MatchBoth(subs, {{0, 4}}).size(), 2u);
  EXPECT_TRUE(MatchBoth(subs, {{0, 3}}).empty());
  EXPECT_TRUE(MatchBoth(subs, {{0, 5}}).empty());
}

TEST(Index, Int64ExtremesAreHandledWithoutOverflow) {
  const std::vector<Subscription> subs = {
      {{0, Op::kLt, kMin, 0}},          // never
      {{0, Op::kGt, kMax, 0}},          // never
      {{0, Op::kLe, kMin, 0}},          // only kMin
      {{0, Op::kGe, kMax, 0}},          // only kMax
      {{0, Op::kBetween, kMin, kMax}},  // always (when present)
      {{0, Op::kNe, kMin, 0}},
      {{0, Op::kBetween, kMax - 1, kMax}},
      {{0, Op::kBetween, kMin, kMin + 1}},
  };
  for (int64_t v : {kMin, kMin + 1, int64_t{0}, kMax - 1, kMax}) {
    MatchBoth(subs, {{0, v}});
  }
  EXPECT_EQ(MatchBoth(subs, {{0, kMin}}),
            (std::vector<SubscriptionId>{2, 4, 7}));
  EXPECT_EQ(MatchBoth(subs, {{0, kMax}}),
            (std::vector<SubscriptionId>{3, 4, 5, 6}));
}

TEST(Index, SeveralPredicatesOnOneAttribute) {
  const std::vector<Subscription> subs = {
      {{0, Op::kGt, 3, 0}, {0, Op::kLt, 7, 0}, {0, Op::kNe, 5, 0}},
      {{0, Op::kEq, 5, 0}, {0, Op::kEq, 6, 0}},  // contradiction
  };
  EXPECT_EQ(MatchBoth(subs, {{0, 4}}), std::vector<SubscriptionId>{0});
  EXPECT_TRUE(MatchBoth(subs, {{0, 5}}).empty());
  EXPECT_TRUE(MatchBoth(subs, {{0, 7}}).empty());
  EXPECT_EQ(MatchBoth(subs, {{0, 6}}), std::vector<SubscriptionId>{0});
}

TEST(Index, DuplicateSubscriptionsEachMatch) {
  const Subscription s = {{0, Op::kEq, 1, 0}, {1, Op::kLe, 10, 0}};
  EXPECT_EQ(MatchBoth({s, s, s}, {{0, 1}, {1, 10}}).size(), 3u);
}

TEST(Index, DuplicatePredicateInOneSubscription) {
  const Subscription s = {{0, Op::kEq, 1, 0},
                          {0, Op::kEq, 1, 0},
                          {0, Op::kLe, 1, 0},
                          {0, Op::kLt, 2, 0}};
  EXPECT_EQ(MatchBoth({s}, {{0, 1}}).size(), 1u);
}

TEST(Index, RemoveThenReAddKeepsIdsAndResults) {
  Index index;
  ASSERT_TRUE(index.Add(7, {{{0, Op::kEq, 1, 0}}}).ok());
  ASSERT_TRUE(index.Add(8, {{{0, Op::kEq, 1, 0}}}).ok());
  EXPECT_EQ(MatchOne(index, {{0, 1}}), (std::vector<SubscriptionId>{7, 8}));
  ASSERT_TRUE(index.Remove(7).ok());
  EXPECT_FALSE(index.Contains(7));
  EXPECT_EQ(MatchOne(index, {{0, 1}}), std::vector<SubscriptionId>{8});
  ASSERT_TRUE(index.Add(7, {{{0, Op::kEq, 2, 0}}}).ok());
  EXPECT_EQ(MatchOne(index, {{0, 1}}), std::vector<SubscriptionId>{8});
  EXPECT_EQ(MatchOne(index, {{0, 2}}), std::vector<SubscriptionId>{7});
  EXPECT_EQ(MatchOneEvent(index, {{0, 1}}), std::vector<SubscriptionId>{8});
  EXPECT_EQ(MatchOneEvent(index, {{0, 2}}), std::vector<SubscriptionId>{7});
  EXPECT_EQ(index.size(), 2u);
}

TEST(Index, CompactionKeepsSurvivorsFindable) {
  Index index;
  ReferenceMatcher reference;
  for (SubscriptionId id = 0; id < 2000; ++id) {
    const Subscription s = {{0, Op::kEq, 1, 0},
                            {1, Op::kLe, static_cast<int64_t>(id % 50), 0}};
    ASSERT_TRUE(index.Add(id, s).ok());
    reference.Add(id, s);
  }
  for (SubscriptionId id = 0; id < 2000; ++id) {
    if (id % 7 != 0) {
      ASSERT_TRUE(index.Remove(id).ok());
      reference.Remove(id);
    }
  }
  for (int64_t v = 0; v < 50; v += 7) {
    const Event e = {{0, 1}, {1, v}};
    EXPECT_EQ(MatchOne(index, e), reference.Match(e));
    EXPECT_EQ(MatchOneEvent(index, e), reference.Match(e));
  }
  // Every survivor can still be removed (its location was kept current).
  for (SubscriptionId id = 0; id < 2000; id += 7) {
    EXPECT_TRUE(index.Remove(id).ok()) << id;
  }
  EXPECT_EQ(index.size(), 0u);
  EXPECT_EQ(index.predicates(), 0u);
  EXPECT_EQ(index.clusters(), 0u);
}

TEST(Index, EmptyEventAndEmptyIndexMatchNothing) {
  Index index;
  EXPECT_TRUE(MatchOne(index, {{0, 1}}).empty());
  EXPECT_TRUE(MatchOneEvent(index, {{0, 1}}).empty());
  ASSERT_TRUE(index.Add(1, {{{0, Op::kGe, kMin, 0}}}).ok());
  EXPECT_TRUE(MatchOne(index, {}).empty());
  EXPECT_TRUE(MatchOneEvent(index, {}).empty());
  EXPECT_EQ(MatchOneEvent(index, {{0, 1}}), std::vector<SubscriptionId>{1});
  std::vector<std::vector<SubscriptionId>> out = {{99}};
  index.MatchCohort({}, &out);
  EXPECT_TRUE(out.empty());
}

TEST(Index, RejectsBadSubscriptionsWithoutChanges) {
  Index index;
  ASSERT_TRUE(index.Add(1, {{{0, Op::kEq, 1, 0}}}).ok());
  EXPECT_EQ(index.Add(2, {}).code(), absl::StatusCode::kInvalidArgument);
  const absl::Status between = index.Add(2, {{{0, Op::kBetween, 5, 4}}});
  EXPECT_EQ(between.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(between.message().find("value <= upper"), absl::string_view::npos);
  EXPECT_EQ(index.Add(1, {{{0, Op::kEq, 2, 0}}}).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(index.Add(kMaxSubscriptionId + 1, {{{0, Op::kEq, 2, 0}}}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(index.Remove(2).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(index.Remove(kMaxSubscriptionId).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(index.size(), 1u);
  EXPECT_EQ(index.predicates(), 1u);
  EXPECT_EQ(MatchOne(index, {{0, 1}}), std::vector<SubscriptionId>{1});
}

// A BETWEEN whose halves (x >= lo, x <= hi) are live already is checked as
// them and takes no predicate of its own; one whose halves are not stays
// whole. Either way it matches as a BETWEEN, and removing every row frees
// every predicate (the halves' references and statistics are undone).
// A cohort's masks path reads a block's later columns for every row while
// the slot table fits the cache (MatchBlock's every_row), and only for the
// rows still alive past kCachedSlots slots. The tests' small indexes take
// the first way; this one, with 600,000 distinct ranges, the second.
TEST(Index, MasksPathWithASlotTablePastTheCache) {
  Rng rng(41);
  Index index;
  index.set_cohort_keep(internal::CohortKeep::kMasks);
  ReferenceMatcher reference;
  // Predicates, not inline ranges (RowPlanner), are what this is about.
  index.set_inline_ranges(internal::InlineRanges::kNever);
  constexpr SubscriptionId kSubscriptions = 100000;

  constexpr int64_t kDomain = 1000000;
  std::vector<Index::NewSubscription> batch;
  std::vector<Subscription> subscriptions(kSubscriptions);
  for (SubscriptionId id = 0; id < kSubscriptions; ++id) {
    Subscription& s = subscriptions[id];
    s.push_back({0, Op::kEq, static_cast<int64_t>(rng.Uniform(4)), 0});
    for (AttributeId a = 1; a <= 6; ++a) {
      const int64_t width = kDomain * 3 / 4 + rng.Uniform(kDomain / 4);
      const int64_t lo = rng.Uniform(kDomain - width);
      s.push_back({a, Op::kBetween, lo, lo + width});
    }
    reference.Add(id, s);
    batch.push_back({id, s});
  }
  for (const absl::Status& status : index.AddBatch(batch)) {
    ASSERT_TRUE(status.ok()) << status;
  }
  ASSERT_GT(index.predicates(), internal::kCachedSlots);
  std::vector<Event> events(64);
  for (Event& e : events) {
    for (AttributeId a = 0; a <= 6; ++a) {
      e.push_back({a, static_cast<int64_t>(
                          a == 0 ? rng.Uniform(4) : rng.Uniform(kDomain))});
    }
  }
  std::vector<EventView> views(events.begin(), events.end());
  std::vector<std::vector<SubscriptionId>> got;
  index.MatchCohort(views, &got);
  size_t matched = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    std::sort(got[i].begin(), got[i].end());
    EXPECT_EQ(got[i], reference.Match(events[i])) << FormatEvent(events[i]);
    matched += got[i].size();
  }
  // Some rows live through every column, most die on the way.
  EXPECT_GT(matched, 0u);
  EXPECT_LT(matched, events.size() * kSubscriptions / 8);
}

// Checks `index` against `reference` on `events`, one at a time and in
// one cohort kept in masks and one kept per event.
void ExpectMatchesReference(Index& index, const ReferenceMatcher& reference,
                            const std::vector<Event>& events) {
  std::vector<EventView> views(events.begin(), events.end());
  for (internal::CohortKeep keep :
       {internal::CohortKeep::kMasks, internal::CohortKeep::kPerEvent}) {
    index.set_cohort_keep(keep);
    std::vector<std::vector<SubscriptionId>> got;
    index.MatchCohort(views, &got);
    for (size_t i = 0; i < events.size(); ++i) {
      std::sort(got[i].begin(), got[i].end());
      const std::vector<SubscriptionId> want = reference.Match(events[i]);
      ASSERT_EQ(got[i], want) << FormatEvent(events[i]);
      ASSERT_EQ(MatchOneEvent(index, events[i]), want) << FormatEvent(events[i]);
    }
  }
  index.set_cohort_keep(internal::CohortKeep::kCheaper);
}

// The planner's choice (InlineRanges::kAuto): ranges over a wide domain,
// nearly all distinct, stay inline once an attribute's statistics have
// kInlineMinRanges ranges, with an NE's equality (and its "present"); the
// same shapes over a narrow domain, where they are shared, stay predicates.
TEST(Index, DistinctRangesStayInlineAndSharedOnesArePredicates) {
  for (const int64_t domain : {int64_t{1000000}, int64_t{50}}) {
    Rng rng(static_cast<uint64_t>(domain));
    Index index;
    ReferenceMatcher reference;
    constexpr SubscriptionId kSubscriptions = 6000;
    for (SubscriptionId id = 0; id < kSubscriptions; ++id) {
      const int64_t lo = static_cast<int64_t>(rng.Uniform(domain));
      Subscription s = {
          {0, Op::kBetween, lo, lo + static_cast<int64_t>(rng.Uniform(100))},
          {1, Op::kLe, static_cast<int64_t>(rng.Uniform(domain)), 0},
          {2, Op::kNe, static_cast<int64_t>(rng.Uniform(domain)), 0}};
      ASSERT_TRUE(index.Add(id, s).ok());
      reference.Add(id, s);
    }
    if (domain > 1000) {
      // Each attribute's first ranges (until its statistics have 1,024
      // range entries) became predicates; none since.
      EXPECT_LT(index.predicates(), 3 * 1100u);
    } else {
      // At most every range and NE value of the domain, shared.
      EXPECT_LT(index.predicates(), 50u * 100 + 2 * 50 + 10);
    }
    std::vector<Event> events(200);
    for (Event& e : events) {
      for (AttributeId a = 0; a < 3; ++a) {
        if (!rng.Chance(80)) continue;
        e.push_back({a, static_cast<int64_t>(rng.Uniform(domain))});
      }
    }
    ExpectMatchesReference(index, reference, events);
    // Removing every other subscription releases what each took.
    for (SubscriptionId id = 0; id < kSubscriptions; id += 2) {
      ASSERT_TRUE(index.Remove(id).ok());
      reference.Remove(id);
    }
    ExpectMatchesReference(index, reference, events);
  }
}

// The planner's choice for two-sided ranges (InlineRanges::kAuto): BETWEENs
// 100 to 1,000 wide over a span of about 2,000, more of them than the span
// holds values but far fewer than the forms it holds at their widths, stay
// inline past kInlineMinRanges. Where the attribute's one-sided ranges
// outnumber its span (they are shared, as fabret-1m's), its BETWEENs stay
// predicates, although their forms would allow them inline.
TEST(Index, TwoSidedRangesStayInlineUnlessOneSidedOnesAreShared) {
  for (const bool one_sided : {false, true}) {
    SCOPED_TRACE(one_sided ? "with one-sided ranges" : "BETWEENs alone");
    Rng rng(one_sided ? 3 : 4);
    Index index;
    ReferenceMatcher reference;
    // BETWEENs alone: lo below 1,000, 100 to 999 wide (span ~2,000).
    // With one-sided ranges: three LEs below 300 to one BETWEEN, lo below
    // 300 and 100 to 399 wide (span ~700, about 90,000 forms).
    const int64_t lo_domain = one_sided ? 300 : 1000;
    const int64_t widths = one_sided ? 300 : 900;
    constexpr SubscriptionId kSubscriptions = 8000;
    for (SubscriptionId id = 0; id < kSubscriptions; ++id) {
      const int64_t lo = static_cast<int64_t>(rng.Uniform(lo_domain));
      const int64_t width = 100 + static_cast<int64_t>(rng.Uniform(widths));
      Subscription s = {{0, Op::kBetween, lo, lo + width}};
      if (one_sided && id % 4 != 0) {
        s = {{0, Op::kLe, static_cast<int64_t>(rng.Uniform(lo_domain)), 0}};
      }
      s.push_back({1, Op::kEq, static_cast<int64_t>(id % 50), 0});
      ASSERT_TRUE(index.Add(id, s).ok());
      reference.Add(id, s);
    }
    if (!one_sided) {
      // The first 1,024 BETWEENs and 50 equalities; planned by the span
      // alone, the ~6,000 after the span's ~2,000 would be predicates.
      EXPECT_LT(index.predicates(), 1100u + 50u);
    } else {
      // Up to 300 shared LEs, 50 equalities and nearly every one of the
      // 2,000 BETWEENs (taken inline, they would leave about 1,400).
      EXPECT_GT(index.predicates(), 2000u);
    }
    std::vector<Event> events(200);
    for (Event& e : events) {
      if (rng.Chance(90)) {
        e.push_back({0, static_cast<int64_t>(rng.Uniform(lo_domain + 1000))});
      }
      e.push_back({1, static_cast<int64_t>(rng.Uniform(50))});
    }
    ExpectMatchesReference(index, reference, events);
    for (SubscriptionId id = 0; id < kSubscriptions; id += 2) {
      ASSERT_TRUE(index.Remove(id).ok());
      reference.Remove(id);
    }
    ExpectMatchesReference(index, reference, events);
  }
}

// Inline bounds start narrow (int32) and a cluster takes wide ones once a
// row's bound does not fit: every row keeps its bounds, and values past
// int32's range on either side compare as they are.
TEST(Index, InlineBoundsWidenWhenABoundPassesInt32) {
  Index index;
  index.set_inline_ranges(internal::InlineRanges::kAlways);
  ReferenceMatcher reference;
  const int64_t kBig = int64_t{1} << 40;
  // Narrow: strictly within int32's range, and so their neighbours.
  const int64_t kEdges[] = {INT32_MIN + int64_t{2}, -5, 0, 7,
                            INT32_MAX - int64_t{2}};
  SubscriptionId id = 0;
  auto add = [&](Subscription s) {
    ASSERT_TRUE(index.Add(id, s).ok());
    reference.Add(id++, s);
  };
  // Narrow rows: one lead cluster (attribute 0) and inline columns on 1, 2.
  for (int64_t e : kEdges) {
    add({{0, Op::kGe, -10, 0}, {1, Op::kLe, e, 0}, {2, Op::kGt, e, 0}});
    add({{0, Op::kGe, -10, 0}, {1, Op::kBetween, e - 1, e + 1},
         {2, Op::kNe, e, 0}});
  }
  // Then wide ones into the same clusters.
  add({{0, Op::kGe, -10, 0}, {1, Op::kLe, kBig, 0}, {2, Op::kGt, -kBig, 0}});
  add({{0, Op::kGe, -10, 0}, {1, Op::kBetween, INT32_MAX, kBig},
       {2, Op::kNe, INT32_MIN, 0}});
  add({{0, Op::kGe, -10, 0}, {1, Op::kLt, INT32_MIN, 0},
       {2, Op::kGe, INT32_MAX, 0}});
  std::vector<Event> events;
  for (int64_t v1 : {-kBig, int64_t{INT32_MIN} - 1, int64_t{INT32_MIN},
                     int64_t{INT32_MIN} + 1, int64_t{-6}, int64_t{0},
                     int64_t{7}, int64_t{8}, int64_t{INT32_MAX} - 1,
                     int64_t{INT32_MAX}, int64_t{INT32_MAX} + 1, kBig,
                     kBig + 1}) {
    for (int64_t v2 : {int64_t{INT32_MIN}, int64_t{0}, int64_t{7},
                       int64_t{INT32_MAX}, kBig}) {
      events.push_back({{0, 0}, {1, v1}, {2, v2}});
      events.push_back({{0, 0}, {1, v1}});  // attribute 2 missing
    }
  }
  ExpectMatchesReference(index, reference, events);
  size_t matched = 0;
  for (const Event& e : events) matched += reference.Match(e).size();
  EXPECT_GT(matched, events.size());
}

// A cohort checks inline ranges and leads on its values in event order
// (event_lanes.h): narrow bounds and leads against int32 lanes while every
// value lies strictly within int32 (EventLanes::exact), the rest against
// int64 lanes. Under each choice of kernels, against the reference, twice:
// with clusters whose bounds all sit within int32 (next to its ends), and
// with clusters made wide by bounds past it. Events at and past those
// ends, events lacking an attribute, NEs, and leads alone with bounds past
// int32 (which clamped to it would hold for values further past).
TEST(Index, LaneChecksAgreeAtInt32EndsUnderEveryKernel) {
  const int64_t kBig = int64_t{1} << 40;
  // Bounds that keep the clusters narrow (NarrowBounds), and more.
  const std::vector<int64_t> kNarrow = {
      int64_t{INT32_MIN} + 1, int64_t{INT32_MIN} + 2, -2, -1, 0, 1, 2,
      int64_t{INT32_MAX} - 2, int64_t{INT32_MAX} - 1};
  const int64_t kFar[] = {-kBig, int64_t{INT32_MIN} - 5,
                          int64_t{INT32_MAX} + 5, kBig};
  // Values strictly within int32, and the rest at or past its ends.
  const int64_t kWithin[] = {int64_t{INT32_MIN} + 1, int64_t{INT32_MIN} + 2,
                             int64_t{INT32_MIN} + 3, -3, -2, -1, 0, 1, 2, 3,
                             int64_t{INT32_MAX} - 3, int64_t{INT32_MAX} - 2,
                             int64_t{INT32_MAX} - 1};
  const int64_t kEnds[] = {INT64_MIN,     -2 * kBig,
                           -kBig,         int64_t{INT32_MIN} - 1,
                           INT32_MIN,     INT32_MAX,
                           int64_t{INT32_MAX} + 1, kBig,
                           2 * kBig,      INT64_MAX};
  static constexpr Op kOps[] = {Op::kLt, Op::kLe, Op::kGt,
                                Op::kGe, Op::kBetween, Op::kNe};
  for (const bool wide : {false, true}) {
    SCOPED_TRACE(wide ? "wide clusters" : "narrow clusters");
    Index index;
    index.set_inline_ranges(internal::InlineRanges::kAlways);
    ReferenceMatcher reference;
    Rng rng(wide ? 4546 : 4545);
    std::vector<int64_t> bounds = kNarrow;
    if (wide) bounds.insert(bounds.end(), std::begin(kFar), std::end(kFar));
    const auto bound = [&](const std::vector<int64_t>& from) {
      return from[rng.Uniform(from.size())];
    };
    for (SubscriptionId id = 0; id < 800; ++id) {
      Subscription s;  // no equality: every row is in a lead list
      for (int k = 0, n = 1 + static_cast<int>(rng.Uniform(4)); k < n; ++k) {
        Predicate p;
        p.attribute = static_cast<AttributeId>(rng.Uniform(3));
        p.op = kOps[rng.Uniform(std::size(kOps))];
        p.value = bound(bounds);
        if (p.op == Op::kBetween) {
          p.upper = bound(bounds);
          if (p.upper < p.value) std::swap(p.value, p.upper);
        }
        s.push_back(p);
      }
      ASSERT_TRUE(index.Add(id, s).ok());
      reference.Add(id, s);
    }
    // Leads alone (their own width class, so that the first clusters stay
    // as they are) with bounds past int32.
    const std::vector<int64_t> far(std::begin(kFar), std::end(kFar));
    for (SubscriptionId id = 800; id < 900; ++id) {
      Predicate p;
      p.attribute = static_cast<AttributeId>(rng.Uniform(3));
      p.op = kOps[rng.Uniform(std::size(kOps) - 1)];  // not NE
      p.value = bound(far);
      if (p.op == Op::kBetween) {
        p.upper = bound(far);
        if (p.upper < p.value) std::swap(p.value, p.upper);
      }
      ASSERT_TRUE(index.Add(id, {p}).ok());
      reference.Add(id, {p});
    }
    // Four cohorts of values within int32, then four that may hold its
    // ends.
    std::vector<Event> events(512);
    for (size_t i = 0; i < events.size(); ++i) {
      for (AttributeId a = 0; a < 3; ++a) {
        if (rng.Chance(20)) continue;  // attribute missing
        const bool end = i >= 256 && rng.Chance(30);
        events[i].push_back(
            {a, end ? kEnds[rng.Uniform(std::size(kEnds))]
                    : kWithin[rng.Uniform(std::size(kWithin))]});
      }
    }
    for (uint64_t kernels = 0; kernels < 3; ++kernels) {
      SCOPED_TRACE(absl::StrCat("kernels ", kernels));
      internal::UseKernelsForTest(kernels);
      ExpectMatchesReference(index, reference, events);
    }
    internal::UseKernelsForTest(0);
    size_t matched = 0;
    for (const Event& e : events) matched += reference.Match(e).size();
    EXPECT_GT(matched, 10 * events.size());
  }
}

TEST(Index, RangeWithLiveHalvesTakesNoPredicate) {
  Index index;
  // Predicates, not inline ranges (RowPlanner), are what this is about.
  index.set_inline_ranges(internal::InlineRanges::kNever);
  ASSERT_TRUE(index.Add(1, {{{0, Op::kEq, 1, 0}, {1, Op::kGe, 10, 0}}}).ok());
  ASSERT_TRUE(index.Add(2, {{{0, Op::kEq, 1, 0}, {1, Op::kLe, 20, 0}}}).ok());
  ASSERT_EQ(index.predicates(), 3u);
  ASSERT_TRUE(
      index.Add(3, {{{0, Op::kEq, 1, 0}, {1, Op::kBetween, 10, 20}}}).ok());
  EXPECT_EQ(index.predicates(), 3u) << "the BETWEEN was interned whole";
  ASSERT_TRUE(
      index.Add(4, {{{0, Op::kEq, 1, 0}, {1, Op::kBetween, 30, 40}}}).ok());
  EXPECT_EQ(index.predicates(), 4u) << "a BETWEEN without live halves";
  auto match = [&](int64_t x) {
    std::vector<SubscriptionId> ids = MatchOneEvent(index, {{0, 1}, {1, x}});
    EXPECT_EQ(ids, MatchOne(index, {{0, 1}, {1, x}})) << x;
    return ids;
  };
  EXPECT_EQ(match(15), (std::vector<SubscriptionId>{1, 2, 3}));
  EXPECT_EQ(match(9), (std::vector<SubscriptionId>{2}));
  EXPECT_EQ(match(21), (std::vector<SubscriptionId>{1}));
  EXPECT_EQ(match(35), (std::vector<SubscriptionId>{1, 4}));
  // Its halves outlive the rows that made them live.
  ASSERT_TRUE(index.Remove(1).ok());
  ASSERT_TRUE(index.Remove(2).ok());
  EXPECT_EQ(match(15), (std::vector<SubscriptionId>{3}));
  EXPECT_EQ(match(21), (std::vector<SubscriptionId>{}));
  for (SubscriptionId id : {3, 4}) ASSERT_TRUE(index.Remove(id).ok());
  EXPECT_EQ(index.predicates(), 0u);
}

// A set that many subscriptions share is as likely as its values, however
// few equalities name them: the rare equality beside it is the access
// predicate, so an event checks that equality's rows, not every row of the
// set (eventbridge-1m's `status in ["error", "timeout"]` beside an account
// had made the set the access predicate of 60,000 rows).
TEST(Index, SharedSetIsNotTakenForRare) {
  Index index;
  constexpr int kRows = 2000;
  const Predicate in{1, Op::kIn, 0, 0, {7, 9}};
  for (int i = 0; i < kRows; ++i) {  // a = i / 4: four rows a value
    ASSERT_TRUE(index.Add(i, {{{0, Op::kEq, i / 4, 0}, in}}).ok());
  }
  std::vector<std::vector<AttributeValue>> records;
  for (int v = 0; v < 10; ++v) records.push_back({{0, v * 7}, {1, 9}});
  const std::vector<EventView> events(records.begin(), records.end());
  std::vector<std::vector<SubscriptionId>> got;
  index.MatchCohort(events, &got);
  for (int v = 0; v < 10; ++v) {
    std::sort(got[v].begin(), got[v].end());
    const SubscriptionId first = 4 * v * 7;
    EXPECT_EQ(got[v], (std::vector<SubscriptionId>{first, first + 1,
                                                   first + 2, first + 3}));
  }
  // The equality's four rows an event, not the set's 2,000.
  EXPECT_LE(index.counters().rows_checked, 10u * 8);
}

TEST(Index, SparseIdsAllocatePagesNotRanges) {
  Index index;
  const size_t empty = index.MemoryBytes();
  ASSERT_TRUE(index.Add(kMaxSubscriptionId, {{{0, Op::kEq, 1, 0}}}).ok());
  EXPECT_LT(index.MemoryBytes() - empty, size_t{8} << 20);
  EXPECT_EQ(MatchOne(index, {{0, 1}}),
            std::vector<SubscriptionId>{kMaxSubscriptionId});
}

class CohortSizeTest : public ::testing::TestWithParam<size_t> {};

// Property: a cohort of any size returns, per event, exactly what matching
// the events one at a time returns.
TEST_P(CohortSizeTest, CohortEqualsOneAtATime) {
  Rng rng(GetParam());
  Index index;
  ReferenceMatcher reference;
  for (SubscriptionId id = 0; id < 400; ++id) {
    Subscription s;
    for (int k = 0, n = 1 + rng.Uniform(4); k < n; ++k) {
      s.push_back(RandomPredicate(rng, 4, 6));
    }
    ASSERT_TRUE(index.Add(id, s).ok());
    reference.Add(id, s);
  }
  std::vector<Event> events(GetParam());
  for (Event& e : events) e = RandomEvent(rng, 5, 6);
  std::vector<EventView> views(events.begin(), events.end());
  std::vector<std::vector<SubscriptionId>> got;
  index.MatchCohort(views, &got);
  ASSERT_EQ(got.size(), events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    std::sort(got[i].begin(), got[i].end());
    EXPECT_EQ(got[i], reference.Match(events[i])) << "event " << i;
  }
  EXPECT_EQ(index.counters().events, events.size());
}

// Matches `cohorts` cohorts of `size` events each drawn from `values` (on
// attribute 0) and expects the reference's results for every event.
void MatchCohortsOf(Index& index, const ReferenceMatcher& reference,
                    size_t cohorts, size_t size, int64_t values) {
  Rng rng(size);
  std::vector<Event> events(size);
  std::vector<std::vector<SubscriptionId>> got;
  for (size_t c = 0; c < cohorts; ++c) {
    for (Event& e : events) {
      e = {{0, static_cast<int64_t>(rng.Uniform(values))}};
    }
    std::vector<EventView> views(events.begin(), events.end());
    index.MatchCohort(views, &got);
    for (size_t i = 0; i < size; ++i) {
      std::sort(got[i].begin(), got[i].end());
      ASSERT_EQ(got[i], reference.Match(events[i]))
          << "cohort " << c << " event " << i;
    }
  }
}

// The cost model's verdicts are remembered per cohort size for 63 cohorts,
// then weighed again; cohorts that share no list are matched event by
// event, cohorts that share one long list in masks, and the results stay
// exact either way.
TEST(IndexCohortVerdict, VerdictsAreRememberedAndWeighedAgain) {
  Index apart;  // 1,000 lists of one row: events share nothing
  Index shared;  // one list of 1,000 rows: every event checks all of it
  ReferenceMatcher apart_reference, shared_reference;
  for (SubscriptionId id = 0; id < 1000; ++id) {
    const Subscription own = {{0, Op::kEq, static_cast<int64_t>(id), 0}};
    const Subscription one = {{0, Op::kEq, 0, 0}};
    ASSERT_TRUE(apart.Add(id, own).ok());
    apart_reference.Add(id, own);
    ASSERT_TRUE(shared.Add(id, one).ok());
    shared_reference.Add(id, one);
  }
  // Cohorts 1, 65, 129 and 193 of each size are weighed.
  MatchCohortsOf(apart, apart_reference, 200, 4, 1000);
  EXPECT_EQ(apart.counters().chunks_weighed, 4u);
  EXPECT_EQ(apart.counters().chunks_remembered_per_event, 196u);
  MatchCohortsOf(shared, shared_reference, 200, 16, 1);
  EXPECT_EQ(shared.counters().chunks_weighed, 4u);
  EXPECT_EQ(shared.counters().chunks_remembered_per_event, 0u);
  // Each size has its own verdict; setting the way of keeping forgets them.
  MatchCohortsOf(apart, apart_reference, 1, 5, 1000);
  EXPECT_EQ(apart.counters().chunks_weighed, 5u);
  apart.set_cohort_keep(internal::CohortKeep::kCheaper);
  MatchCohortsOf(apart, apart_reference, 2, 4, 1000);
  EXPECT_EQ(apart.counters().chunks_weighed, 6u);
  EXPECT_EQ(apart.counters().chunks_remembered_per_event, 197u);
  // Forced ways are never weighed.
  shared.set_cohort_keep(internal::CohortKeep::kPerEvent);
  MatchCohortsOf(shared, shared_reference, 3, 16, 1);
  EXPECT_EQ(shared.counters().chunks_weighed, 4u);
  EXPECT_EQ(shared.counters().events, 200u * 16 + 3 * 16);
}

INSTANTIATE_TEST_SUITE_P(Sizes, CohortSizeTest,
                         ::testing::Values(1, 2, 63, 64, 65, 1000));

}  // namespace
}  // namespace matcher
}  // namespace cohort
