// Tests of PartitionedIndex: randomized differential tests against
// ReferenceMatcher for several partition counts and placements, through the
// whole API and through the split steps the staged server uses (in any
// partition order); placement properties (lists stay whole until they grow,
// then spread over every partition); memory against one partition; and a
// concurrency test of the split use, meant for ThreadSanitizer too:
//   bazel test --config=tsan //matcher:partitioned_index_test
#include "matcher/partitioned_index.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "matcher/index_test_util.h"
#include "matcher/reference_matcher.h"
#include "matcher/simd.h"
#include "matcher/types.h"
#include "workload/workload.h"

namespace cohort {
namespace matcher {
namespace {

using test_util::Event;
using test_util::FormatEvent;
using test_util::RandomEvent;
using test_util::RandomPredicate;
using test_util::Rng;
using test_util::Subscription;

Subscription RandomSubscription(Rng& rng, uint32_t attributes,
                                int64_t domain,
                                const test_util::Shape& shape) {
  Subscription s;
  for (int k = 0, n = 1 + rng.Uniform(6); k < n; ++k) {
    s.push_back(RandomPredicate(rng, attributes, domain, shape));
  }
  return s;
}

// Adds `subs` through the split steps: every row planned, then applied
// partition by partition in a shuffled order of partitions; with `bulk`,
// planned between BeginPlans and EndPlans and applied with ApplyRows.
void AddSplit(PartitionedIndex& index,
              const std::vector<std::pair<SubscriptionId, Subscription>>& subs,
              Rng& rng, bool bulk) {
  std::vector<PartitionedIndex::PendingRow> rows(subs.size());
  if (bulk) index.BeginPlans();
  for (size_t i = 0; i < subs.size(); ++i) {
    ASSERT_TRUE(index.PlanAdd(subs[i].first, subs[i].second, &rows[i]).ok());
    ASSERT_TRUE(index.Contains(subs[i].first));
  }
  if (bulk) index.EndPlans();
  std::vector<uint32_t> order(index.partitions());
  for (uint32_t p = 0; p < order.size(); ++p) order[p] = p;
  for (size_t i = order.size(); i > 1; --i) {
    std::swap(order[i - 1], order[rng.Uniform(i)]);
  }
  for (uint32_t p : order) {
    std::vector<PartitionedIndex::PendingRow> mine;
    for (const auto& row : rows) {
      if (row.partition != p) continue;
      if (bulk) {
        mine.push_back(row);
      } else {
        index.ApplyRow(row);
      }
    }
    if (bulk) index.ApplyRows(p, mine);
  }
}

// Removes `ids` through the split steps, partitions in reverse order.
void RemoveSplit(PartitionedIndex& index,
                 const std::vector<SubscriptionId>& ids) {
  std::map<uint32_t, std::vector<SubscriptionId>> by_partition;
  for (SubscriptionId id : ids) {
    absl::StatusOr<uint32_t> p = index.PartitionOf(id);
    ASSERT_TRUE(p.ok()) << id;
    by_partition[*p].push_back(id);
  }
  PartitionedIndex::RemovedRows removed;
  for (auto it = by_partition.rbegin(); it != by_partition.rend(); ++it) {
    for (SubscriptionId id : it->second) {
      index.RemoveRow(it->first, id, &removed);
    }
  }
  index.FinishRemove(removed);
}

struct Config {
  uint32_t partitions;
  uint32_t spread_rows;
  bool split;  // the split steps instead of Add/Remove
  // Adds in bulk: AddBatch (whole), or BeginPlans/EndPlans and ApplyRows
  // (split).
  bool bulk = false;
};

std::string Name(const Config& c) {
  return absl::StrCat("P=", c.partitions, " spread_rows=", c.spread_rows,
                      c.split ? " split" : " whole", c.bulk ? " bulk" : "");
}

// One seed: rounds of random adds and removes, then events matched in
// cohorts of random sizes, each checked against the reference.
bool RunSeed(const Config& config, const test_util::Shape& shape,
             uint64_t seed, uint64_t* pairs) {
  Rng rng(seed);
  const uint32_t attributes = 1 + rng.Uniform(shape.max_attributes);
  const int64_t domain = 1 + rng.Uniform(shape.max_domain);
  PartitionedIndex index(config.partitions, config.spread_rows);
  ReferenceMatcher reference;
  std::vector<std::pair<SubscriptionId, Subscription>> live;
  SubscriptionId next_id = static_cast<SubscriptionId>(rng.Uniform(1000));
  static constexpr size_t kCohorts[] = {1, 2, 63, 64, 65, 1000};
  for (int round = 0; round < 4; ++round) {
    // Rows of every inline kind together (RowPlanner, InlineRanges), as in
    // IndexDifferential.
    static constexpr internal::InlineRanges kInline[] = {
        internal::InlineRanges::kAuto, internal::InlineRanges::kAlways,
        internal::InlineRanges::kNever};
    index.set_inline_ranges(kInline[rng.Uniform(std::size(kInline))]);
    std::vector<std::pair<SubscriptionId, Subscription>> adds(
        shape.min_adds + rng.Uniform(shape.add_span));
    for (auto& [id, s] : adds) {
      id = next_id++;
      s = RandomSubscription(rng, attributes, domain, shape);
      reference.Add(id, s);
    }
    if (config.split) {
      AddSplit(index, adds, rng, config.bulk);
    } else if (config.bulk) {
      std::vector<Index::NewSubscription> batch;
      for (const auto& [id, s] : adds) batch.push_back({id, s});
      for (const absl::Status& s : index.AddBatch(batch)) {
        EXPECT_TRUE(s.ok()) << s;
      }
    } else {
      for (const auto& [id, s] : adds) EXPECT_TRUE(index.Add(id, s).ok());
    }
    live.insert(live.end(), adds.begin(), adds.end());
    std::vector<SubscriptionId> removes;
    for (int i = 0, n = rng.Uniform(live.size() / 2 + 1); i < n; ++i) {
      const size_t at = rng.Uniform(live.size());
      removes.push_back(live[at].first);
      reference.Remove(live[at].first);
      live.erase(live.begin() + at);
    }
    if (config.split) {
      RemoveSplit(index, removes);
    } else {
      for (SubscriptionId id : removes) EXPECT_TRUE(index.Remove(id).ok());
    }
    EXPECT_EQ(index.size(), live.size());
    std::vector<Event> events(100 + rng.Uniform(300));
    for (Event& e : events) e = RandomEvent(rng, attributes + 1, domain);
    std::vector<EventView> views(events.begin(), events.end());
    std::vector<std::vector<SubscriptionId>> got;
    for (size_t start = 0; start < views.size();) {
      const size_t n = std::min(kCohorts[rng.Uniform(6)], views.size() - start);
      internal::UseKernelsForTest(rng.Uniform(3));
      index.MatchCohort(absl::MakeConstSpan(views).subspan(start, n), &got);
      for (size_t i = 0; i < n; ++i) {
        std::sort(got[i].begin(), got[i].end());
        const std::vector<SubscriptionId> want =
            reference.Match(events[start + i]);
        *pairs += live.size();
        if (got[i] != want) {
          ADD_FAILURE() << Name(config) << " seed " << seed << " round "
                        << round << ": found " << got[i].size()
                        << " matches, reference " << want.size() << " for "
                        << FormatEvent(events[start + i]);
          internal::UseKernelsForTest(0);
          return false;
        }
      }
      start += n;
    }
  }
  internal::UseKernelsForTest(0);
  return true;
}

TEST(PartitionedIndexDifferential, RandomizedAgainstReference) {
  // spread_rows 2 spreads nearly every list; 0 places rows by id.
  const Config configs[] = {
      {1, kSpreadRows, false}, {2, kSpreadRows, false},
      {3, 2, false},           {8, 2, true},
      {5, 0, true},            {16, kSpreadRows, true},
      {2, 2, false, true},     {4, kSpreadRows, true, true}};
  for (const Config& config : configs) {
    uint64_t pairs = 0;
    for (uint64_t seed = 1; seed <= 15; ++seed) {
      if (!RunSeed(config, test_util::kMixed, seed, &pairs)) return;
    }
    EXPECT_GE(pairs, 200'000u) << Name(config);
  }
}

// As IndexDifferential.RangeOnlyListsSortMergeAndCompact: long lead-range
// lists, whole and split over partitions (where each partition's part of a
// list sorts and merges on its own).
TEST(PartitionedIndexDifferential, RangeOnlyListsAgainstReference) {
  const Config configs[] = {{1, kSpreadRows, false},
                            {3, 2, true},
                            {4, kSpreadRows, true},
                            {1, kSpreadRows, false, true},
                            {3, 2, true, true}};
  for (const Config& config : configs) {
    uint64_t pairs = 0;
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      if (!RunSeed(config, test_util::kRangeOnly, seed, &pairs)) return;
    }
    EXPECT_GE(pairs, 1'000'000u) << Name(config);
  }
}

// A list stays in its home partition until it has spread_rows rows; then
// its rows go to every partition in runs of spread_rows. A new list's home
// is the partition with the fewest rows of its class (here all equality
// lists).
TEST(PartitionedIndex, ListsStayWholeUntilTheyGrowThenSpread) {
  constexpr uint32_t kP = 4;
  PartitionedIndex index(kP, /*spread_rows=*/8);
  // Attribute 0 == 1: 40 rows. Attributes 1 == v: one row each.
  std::map<uint32_t, int> big;
  uint32_t home = 0;
  for (SubscriptionId id = 0; id < 40; ++id) {
    PartitionedIndex::PendingRow row;
    ASSERT_TRUE(index.PlanAdd(id, {{0, Op::kEq, 1, 0}}, &row).ok());
    index.ApplyRow(row);
    if (id == 0) home = row.partition;
    ++big[row.partition];
    EXPECT_EQ(row.partition, (home + id / 8) % kP) << id;
  }
  EXPECT_EQ(big.size(), kP);  // 40 rows in runs of 8 reach all 4
  EXPECT_EQ(big[home], 16);   // runs 0 and 4
  std::map<uint32_t, int> singles;
  for (SubscriptionId id = 100; id < 106; ++id) {
    const Subscription s = {{1, Op::kEq, static_cast<int64_t>(id), 0}};
    ASSERT_TRUE(index.Add(id, s).ok());
    ++singles[*index.PartitionOf(id)];
  }
  // The three partitions with 8 rows take two each; the home, with 16,
  // none.
  EXPECT_EQ(singles.count(home), 0u);
  for (uint32_t p = 0; p < kP; ++p) {
    if (p != home) {
      EXPECT_EQ(singles[p], 2) << "partition " << p;
    }
  }
  // Every row is still found, whichever partition holds it.
  std::vector<std::vector<SubscriptionId>> out;
  const Event e = {{0, 1}, {1, 103}};
  const EventView view(e);
  index.MatchCohort(absl::MakeConstSpan(&view, 1), &out);
  EXPECT_EQ(out[0].size(), 41u);
  EXPECT_EQ(index.PartitionOf(999).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(index.Add(5, {{0, Op::kEq, 2, 0}}).code(),
            absl::StatusCode::kAlreadyExists);
  for (SubscriptionId id = 0; id < 40; ++id) ASSERT_TRUE(index.Remove(id).ok());
  for (SubscriptionId id = 100; id < 106; ++id) {
    ASSERT_TRUE(index.Remove(id).ok());
  }
  EXPECT_EQ(index.size(), 0u);
  EXPECT_EQ(index.predicates(), 0u);
  EXPECT_EQ(index.clusters(), 0u);
}

// Runs are kSpreadRows long from 4 partitions on and longer below, where
// each partition's share of the work is larger.
TEST(PartitionedIndex, SpreadRowsShrinkWithPartitionsToKSpreadRows) {
  EXPECT_EQ(SpreadRows(1), 4 * kSpreadRows);
  EXPECT_EQ(SpreadRows(2), 2 * kSpreadRows);
  EXPECT_EQ(SpreadRows(4), kSpreadRows);
  EXPECT_EQ(SpreadRows(8), kSpreadRows);
  EXPECT_EQ(SpreadRows(16), kSpreadRows);
  EXPECT_EQ(SpreadRows(64), kSpreadRows);
  // The one-argument constructor uses it: at P = 2 a list of 2 * 1024 rows
  // stays in its home.
  PartitionedIndex index(2);
  for (SubscriptionId id = 0; id < 2 * kSpreadRows; ++id) {
    ASSERT_TRUE(index.Add(id, {{0, Op::kEq, 1, 0}}).ok());
    EXPECT_EQ(*index.PartitionOf(id), *index.PartitionOf(0)) << id;
  }
}

// Equality lists and per-attribute "present" lists (subscriptions without
// an equality) are balanced as two classes: a present list's home is the
// partition with the fewest present rows, however many equality rows it
// holds, so the heavy present lists do not pile up where equality rows are
// few. Removing rows gives the room back to their class.
TEST(PartitionedIndex, PresentListsAreBalancedAsAClassOfTheirOwn) {
  constexpr uint32_t kP = 4;
  PartitionedIndex index(kP, /*spread_rows=*/64);
  // Equality rows only in partitions 0..2 (one list each, 30 rows): by all
  // rows, partition 3 would be every new list's home.
  SubscriptionId id = 0;
  std::map<uint32_t, int> equality_rows;
  for (int64_t value = 1; value <= 3; ++value) {
    for (int i = 0; i < 30; ++i, ++id) {
      ASSERT_TRUE(index.Add(id, {{0, Op::kEq, value, 0}}).ok());
      ++equality_rows[*index.PartitionOf(id)];
    }
  }
  ASSERT_EQ(equality_rows.size(), 3u);
  ASSERT_EQ(equality_rows.count(3), 0u);
  // Four present lists (attributes 1..4, ranges only), 10 rows each: one
  // per partition.
  std::set<uint32_t> present_homes;
  std::vector<SubscriptionId> present_ids;
  for (AttributeId a = 1; a <= 4; ++a) {
    const uint32_t first = static_cast<uint32_t>(id);
    for (int i = 0; i < 10; ++i, ++id) {
      ASSERT_TRUE(index.Add(id, {{a, Op::kLe, 500 + i, 0}}).ok());
      EXPECT_EQ(*index.PartitionOf(id), *index.PartitionOf(first));
      present_ids.push_back(id);
    }
    present_homes.insert(*index.PartitionOf(first));
  }
  EXPECT_EQ(present_homes.size(), kP);
  // A new equality list still goes where equality rows are fewest.
  ASSERT_TRUE(index.Add(id, {{0, Op::kEq, 9, 0}}).ok());
  EXPECT_EQ(*index.PartitionOf(id), 3u);
  // Emptying attribute 1's present list frees its partition for the next
  // present list.
  const uint32_t freed = *index.PartitionOf(present_ids[0]);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(index.Remove(present_ids[i]).ok());
  ASSERT_TRUE(index.Add(++id, {{5, Op::kGe, 7, 0}}).ok());
  EXPECT_EQ(*index.PartitionOf(id), freed);
}

// The layout's point: on a fabret-like workload, 16 partitions store about
// what one does (the predicate table once, the clusters divided), and find
// exactly the same matches.
TEST(PartitionedIndex, SixteenPartitionsCostLittleMemoryAndMatchTheSame) {
  workload::WorkloadOptions options = *workload::PresetOptions("fabret-1m");
  options.subscriptions = 100'000;
  options.events = 256;
  const workload::Workload w = workload::Generate(options);
  PartitionedIndex one(1), sixteen(16);
  for (size_t i = 0; i < w.subscriptions.size(); ++i) {
    const SubscriptionId id = static_cast<SubscriptionId>(i);
    ASSERT_TRUE(one.Add(id, w.subscriptions[i]).ok());
    ASSERT_TRUE(sixteen.Add(id, w.subscriptions[i]).ok());
  }
  EXPECT_LE(sixteen.MemoryBytes(), one.MemoryBytes() * 115 / 100)
      << "16 partitions: " << sixteen.MemoryBytes() << " bytes, one "
      << one.MemoryBytes();
  EXPECT_LE(sixteen.clusters(), one.clusters() * 115 / 100);
  // No partition holds more than twice its share of the clusters' memory.
  size_t most = 0, all = 0;
  for (uint32_t p = 0; p < 16; ++p) {
    most = std::max(most, sixteen.PartitionBytes(p));
    all += sixteen.PartitionBytes(p);
  }
  EXPECT_LE(most * 16, 2 * all);
  std::vector<EventView> views(w.events.begin(), w.events.end());
  std::vector<std::vector<SubscriptionId>> a, b;
  one.MatchCohort(views, &a);
  sixteen.MatchCohort(views, &b);
  uint64_t matches = 0;
  for (size_t i = 0; i < views.size(); ++i) {
    std::sort(a[i].begin(), a[i].end());
    std::sort(b[i].begin(), b[i].end());
    ASSERT_EQ(a[i], b[i]) << "event " << i;
    matches += a[i].size();
  }
  EXPECT_GT(matches, 1000u);
  EXPECT_EQ(one.counters().rows_checked, sixteen.counters().rows_checked);
}

// A reusable barrier for `n` threads (std::barrier is C++20).
class Barrier {
 public:
  explicit Barrier(int n) : n_(n) {}
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t phase = phase_;
    if (++waiting_ == n_) {
      waiting_ = 0;
      ++phase_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return phase_ != phase; });
  }

 private:
  const int n_;
  std::mutex mu_;
  std::condition_variable cv_;
  int waiting_ = 0;
  uint64_t phase_ = 0;
};

// What partition p matches of a cohort of n events whose phase 1 is done
// in `masks`: each event's ids, in no order.
std::vector<std::vector<SubscriptionId>> PartitionLists(
    const PartitionedIndex& index, uint32_t p,
    const internal::CohortMasks& masks, size_t n) {
  CohortMatches out;
  IndexCounters counters;
  out.Reset(n);
  out.BeginChunk(0);
  index.MatchPartition(p, masks, &out, &counters);
  std::vector<std::vector<SubscriptionId>> lists;
  out.ToLists(&lists);
  return lists;
}

// Steal units (MatchPartitionUnit): the units of a partition together
// match exactly what the partition does, each (event, row) in one unit
// only, whatever the unit count (more units than visits included), with
// the cohort kept per event or in masks.
TEST(PartitionedIndex, StealUnitsMatchWhatTheirPartitionDoes) {
  constexpr uint32_t kP = 4;
  Rng rng(11);
  uint64_t pairs = 0;
  for (internal::CohortKeep keep :
       {internal::CohortKeep::kPerEvent, internal::CohortKeep::kMasks}) {
    PartitionedIndex index(kP, /*spread_rows=*/2);
    index.set_cohort_keep(keep);
    for (SubscriptionId id = 0; id < 2000; ++id) {
      ASSERT_TRUE(
          index.Add(id, RandomSubscription(rng, 5, 8, test_util::kMixed))
              .ok());
    }
    for (size_t n : {1, 3, 17, 64}) {
      std::vector<Event> events(n);
      for (Event& e : events) e = RandomEvent(rng, 6, 8);
      const std::vector<EventView> views(events.begin(), events.end());
      internal::CohortMasks masks;
      index.BeginCohort(views, &masks);
      for (size_t t = 0; t < masks.tasks(); ++t) index.RunTask(t, &masks);
      for (uint32_t p = 0; p < kP; ++p) {
        std::vector<std::vector<SubscriptionId>> whole =
            PartitionLists(index, p, masks, n);
        for (auto& ids : whole) std::sort(ids.begin(), ids.end());
        CohortMatches out;
        IndexCounters counters;
        for (uint32_t units : {1u, 2u, 3u, 7u, 1000u}) {
          std::vector<std::vector<SubscriptionId>> joined(n);
          for (uint32_t u = 0; u < units; ++u) {
            out.Reset(n);
            out.BeginChunk(0);
            index.MatchPartitionUnit(p, u, units, masks, &out, &counters);
            std::vector<std::vector<SubscriptionId>> part;
            out.ToLists(&part);
            for (size_t e = 0; e < n; ++e) {
              joined[e].insert(joined[e].end(), part[e].begin(),
                               part[e].end());
            }
          }
          for (size_t e = 0; e < n; ++e) {
            std::sort(joined[e].begin(), joined[e].end());
            ASSERT_EQ(joined[e], whole[e])
                << "keep " << static_cast<int>(keep) << ", cohort of " << n
                << ", partition " << p << ", " << units << " units, event "
                << e;
            pairs += whole[e].size();
          }
        }
      }
    }
  }
  EXPECT_GT(pairs, 1000u) << "too few matches to tell";
}


// A cohort kept per event on several threads keeps a run of 2,048 or more
// satisfied slots as its bounds (PredicateBits long runs), and phase 2
// must read range entries through them (PredicateBits::Holds; the bit
// alone only where no run is kept). Thousands of distinct kLow, kHigh and
// kRange bounds on one attribute, as columns under equality access
// predicates, and NE entries (negated), checked against the reference.
TEST(PartitionedIndex, LongRunsOfSatisfiedRangesHoldInPhaseTwo) {
  constexpr uint32_t kP = 2;
  constexpr int64_t kDomain = 30000;
  PartitionedIndex index(kP, /*spread_rows=*/2);
  index.set_cohort_keep(internal::CohortKeep::kPerEvent);
  // Range predicates' runs, not inline ranges (RowPlanner), are what this
  // is about.
  index.set_inline_ranges(internal::InlineRanges::kNever);
  ReferenceMatcher reference;
  Rng rng(5);
  for (SubscriptionId id = 0; id < 12000; ++id) {
    const int64_t b = static_cast<int64_t>(rng.Uniform(kDomain));
    Subscription s = {Predicate{0, Op::kEq, static_cast<int64_t>(id % 4)}};
    switch (id % 4) {
      case 0:
        s.push_back(Predicate{1, Op::kLe, b});
        break;
      case 1:
        s.push_back(Predicate{1, Op::kGe, b});
        break;
      case 2:
        s.push_back(Predicate{1, Op::kBetween, b / 2, b / 2 + kDomain / 2});
        break;
      default:
        s.push_back(Predicate{1, Op::kLe, b});
        s.push_back(Predicate{2, Op::kNe, static_cast<int64_t>(id % 3)});
        break;
    }
    ASSERT_TRUE(reference.Add(id, s));
    ASSERT_TRUE(index.Add(id, s).ok());
  }
  uint64_t pairs = 0;
  size_t with_runs = 0;
  for (size_t n : {1, 5, 64}) {
    std::vector<Event> events(n);
    for (Event& e : events) {
      e = {{0, static_cast<int64_t>(rng.Uniform(4))},
           {1, static_cast<int64_t>(rng.Uniform(kDomain))},
           {2, static_cast<int64_t>(rng.Uniform(3))}};
    }
    const std::vector<EventView> views(events.begin(), events.end());
    internal::CohortMasks masks;
    index.BeginCohort(views, &masks);
    for (size_t t = 0; t < masks.tasks(); ++t) index.RunTask(t, &masks);
    ASSERT_TRUE(masks.per_event());
    for (size_t e = 0; e < n; ++e) with_runs += masks.event_bits(e).has_runs();
    std::vector<std::vector<SubscriptionId>> got(n);
    for (uint32_t p = 0; p < kP; ++p) {
      const std::vector<std::vector<SubscriptionId>> part =
          PartitionLists(index, p, masks, n);
      for (size_t e = 0; e < n; ++e) {
        got[e].insert(got[e].end(), part[e].begin(), part[e].end());
      }
    }
    for (size_t e = 0; e < n; ++e) {
      std::sort(got[e].begin(), got[e].end());
      ASSERT_EQ(got[e], reference.Match(events[e]))
          << "cohort of " << n << ", event " << e << ": "
          << FormatEvent(events[e]);
      pairs += got[e].size();
    }
  }
  // The runs this test is about were kept, and matches were found.
  EXPECT_GT(with_runs, 30u);
  EXPECT_GT(pairs, 10000u);
}

// Concurrency property (the staged server's use, under TSAN): P threads
// share one PartitionedIndex. Each round, the threads apply their own
// partitions' rows of a planned batch at once, then match cohorts: any
// thread takes any phase-1 task (each exactly once), and once all are done
// each thread matches its own partition; the merged results must equal the
// reference for every event. Two mask buffers alternate, so a cohort is
// begun while other threads still match the previous one.
TEST(PartitionedIndexConcurrency, TasksAndPartitionsOnSeveralThreads) {
  constexpr uint32_t kP = 4;
  constexpr int kRounds = 6;
  constexpr int kCohorts = 8;
  Rng rng(5);
  PartitionedIndex index(kP, /*spread_rows=*/4);
  ReferenceMatcher reference;
  internal::CohortMasks masks[2];
  std::vector<PartitionedIndex::PendingRow> rows;
  std::vector<std::vector<Event>> events(kCohorts);
  std::vector<std::vector<EventView>> views(kCohorts);
  std::atomic<size_t> next_task[kCohorts];
  std::atomic<size_t> tasks_done[kCohorts];
  // [cohort][partition][event] -> ids
  std::vector<std::vector<std::vector<std::vector<SubscriptionId>>>> found;
  Barrier sync(kP);

  // One round of thread p, between the planning and the checking.
  auto run_round = [&](uint32_t p) {
    for (const auto& row : rows) {
      if (row.partition == p) index.ApplyRow(row);
    }
    sync.Wait();
    for (int c = 0; c < kCohorts; ++c) {
      internal::CohortMasks& m = masks[c % 2];
      // Every thread finished cohort c - 2 (this buffer's last) before it
      // passed cohort c - 1's barrier.
      if (p == c % kP) index.BeginCohort(views[c], &m);
      sync.Wait();
      for (size_t t; (t = next_task[c].fetch_add(1)) < m.tasks();) {
        index.RunTask(t, &m);
        tasks_done[c].fetch_add(1, std::memory_order_release);
      }
      while (tasks_done[c].load(std::memory_order_acquire) < m.tasks()) {
        std::this_thread::yield();
      }
      CohortMatches pairs;
      pairs.Reset(events[c].size());
      pairs.BeginChunk(0);
      IndexCounters counters;
      index.MatchPartition(p, m, &pairs, &counters);
      pairs.ToLists(&found[c][p]);
    }
  };
  std::vector<std::thread> threads;
  for (uint32_t p = 1; p < kP; ++p) {
    threads.emplace_back([&, p] {
      for (int round = 0; round < kRounds; ++round) {
        sync.Wait();  // the batch is planned
        run_round(p);
        sync.Wait();  // done; thread 0 checks
      }
    });
  }
  SubscriptionId next_id = 0;
  uint64_t checked = 0;
  for (int round = 0; round < kRounds; ++round) {
    rows.assign(300, {});
    for (auto& row : rows) {
      const Subscription s = RandomSubscription(rng, 4, 6, test_util::kMixed);
      ASSERT_TRUE(index.PlanAdd(next_id, s, &row).ok());
      reference.Add(next_id++, s);
    }
    found.assign(kCohorts,
                 std::vector<std::vector<std::vector<SubscriptionId>>>(kP));
    for (int c = 0; c < kCohorts; ++c) {
      events[c].assign(1 + rng.Uniform(64), {});
      for (Event& e : events[c]) e = RandomEvent(rng, 5, 6);
      views[c].assign(events[c].begin(), events[c].end());
      next_task[c] = 0;
      tasks_done[c] = 0;
    }
    sync.Wait();
    run_round(0);
    sync.Wait();
    for (int c = 0; c < kCohorts; ++c) {
      for (size_t i = 0; i < events[c].size(); ++i) {
        std::vector<SubscriptionId> got;
        for (uint32_t p = 0; p < kP; ++p) {
          got.insert(got.end(), found[c][p][i].begin(), found[c][p][i].end());
        }
        std::sort(got.begin(), got.end());
        EXPECT_EQ(got, reference.Match(events[c][i]))
            << "round " << round << " cohort " << c << " event " << i;
        ++checked;
      }
    }
  }
  for (auto& t : threads) t.join();
  EXPECT_GT(checked, 1000u);
}

}  // namespace
}  // namespace matcher
}  // namespace cohort
