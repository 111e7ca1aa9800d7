#include "bench/intervals.h"

#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "matcher/reference_matcher.h"
#include "matcher/types.h"
#include "workload/workload.h"

namespace cohort {
namespace bench {

using workload::Generate;
using workload::PresetOptions;
using workload::Workload;
using workload::WorkloadOptions;
namespace {

using matcher::AttributeValue;
using matcher::Op;
using matcher::Predicate;

Workload Shrunk(const std::string& preset, int64_t subscriptions,
                int64_t events) {
  absl::StatusOr<WorkloadOptions> options = PresetOptions(preset);
  EXPECT_TRUE(options.ok()) << options.status();
  options->subscriptions = subscriptions;
  options->events = events;
  return Generate(*options);
}

// Every (subscription, event) pair of the kept workload: the interval form
// matches exactly when the original predicates do.
void ExpectSameMatches(const Workload& kept, const IntervalWorkload& iw) {
  ASSERT_EQ(iw.subscriptions.size(), kept.subscriptions.size());
  ASSERT_EQ(iw.events.size(), kept.events.size());
  int64_t matches = 0;
  int64_t disagreements = 0;
  for (size_t e = 0; e < kept.events.size(); ++e) {
    for (size_t s = 0; s < kept.subscriptions.size(); ++s) {
      const bool want = matcher::Matches(kept.subscriptions[s], kept.events[e]);
      const bool got = MatchesIntervals(iw.subscriptions[s], iw.events[e]);
      matches += want;
      disagreements += want != got;
    }
  }
  EXPECT_EQ(disagreements, 0);
  EXPECT_GT(matches, 0) << "a check that never sees a match proves little";

  // Predicate by predicate too: whole subscriptions rarely hinge on one
  // bound, so a wrong bound could hide behind the other predicates.
  int64_t holds = 0;
  int64_t wrong = 0;
  for (size_t e = 0; e < kept.events.size(); ++e) {
    const std::vector<AttributeValue>& event = kept.events[e];
    for (size_t s = 0; s < kept.subscriptions.size(); ++s) {
      for (size_t i = 0; i < kept.subscriptions[s].size(); ++i) {
        const Predicate& p = kept.subscriptions[s][i];
        const IntervalPredicate& ip = iw.subscriptions[s][i];
        for (size_t a = 0; a < event.size(); ++a) {
          if (event[a].attribute != p.attribute) continue;
          const bool want = matcher::Holds(p, event[a].value);
          const int32_t r = iw.events[e][a].second;
          holds += want;
          wrong += want != (ip.lo <= r && r <= ip.hi);
          break;
        }
      }
    }
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_GT(holds, 0);
}

TEST(IntervalsTest, EveryPresetMapsExactly) {
  // selective-1m matches about 9 of 1M per event: it needs more
  // subscriptions than the others for its shrunk copy to match at all.
  const std::pair<const char*, int64_t> presets[] = {
      {"fabret-1m", 1500}, {"selective-1m", 150000}, {"ranges-1m", 1500}};
  for (const auto& [preset, subscriptions] : presets) {
    SCOPED_TRACE(preset);
    const Workload w = Shrunk(preset, subscriptions, 150);
    for (NePolicy policy :
         {NePolicy::kDropSubscriptions, NePolicy::kDropPredicates}) {
      DropNeStats stats;
      const Workload kept = DropNe(w, policy, &stats);
      absl::StatusOr<IntervalWorkload> iw = ToIntervals(kept);
      ASSERT_TRUE(iw.ok()) << iw.status();
      ExpectSameMatches(kept, *iw);
      for (const auto& event : iw->events) {
        for (const auto& [attribute, rank] : event) {
          EXPECT_GE(rank, 1);
          EXPECT_LE(rank, iw->domain - 2);
        }
      }
      for (const auto& sub : iw->subscriptions) {
        for (const IntervalPredicate& p : sub) {
          EXPECT_GE(p.lo, 0);
          EXPECT_LE(p.hi, iw->domain - 1);
        }
      }
    }
  }
}

TEST(IntervalsTest, DropNeCountsWhatItDrops) {
  Workload w;
  w.attribute_names = {"a", "b"};
  w.subscriptions = {
      {{0, Op::kEq, 5}},
      {{0, Op::kNe, 5}, {1, Op::kLt, 3}},
      {{0, Op::kNe, 5}, {1, Op::kNe, 4}},
  };
  w.events = {{{0, 5}, {1, 2}}};
  DropNeStats by_sub;
  const Workload a = DropNe(w, NePolicy::kDropSubscriptions, &by_sub);
  EXPECT_EQ(a.subscriptions.size(), 1u);
  EXPECT_EQ(by_sub.subscriptions_dropped, 2);
  EXPECT_EQ(by_sub.predicates_dropped, 3);
  EXPECT_EQ(a.options.subscriptions, 1);

  DropNeStats by_pred;
  const Workload b = DropNe(w, NePolicy::kDropPredicates, &by_pred);
  ASSERT_EQ(b.subscriptions.size(), 2u);  // the all-NE one goes
  EXPECT_EQ(b.subscriptions[1].size(), 1u);
  EXPECT_EQ(b.subscriptions[1][0].op, Op::kLt);
  EXPECT_EQ(by_pred.subscriptions_dropped, 1);
  EXPECT_EQ(by_pred.predicates_dropped, 3);
  EXPECT_EQ(b.events.size(), 1u);
}

TEST(IntervalsTest, BoundsBeyondEveryEventValueStayExact) {
  Workload w;
  w.attribute_names = {"a"};
  // LT the smallest value and GT the largest hold for no event.
  w.subscriptions = {{{0, Op::kLt, 10}},
                     {{0, Op::kGt, 30}},
                     {{0, Op::kBetween, 10, 30}},
                     {{0, Op::kLe, 10}},
                     {{0, Op::kGe, 30}}};
  w.events = {{{0, 10}}, {{0, 20}}, {{0, 30}}, {}};
  absl::StatusOr<IntervalWorkload> iw = ToIntervals(w);
  ASSERT_TRUE(iw.ok()) << iw.status();
  EXPECT_EQ(iw->domain, 5);  // 10, 20, 30 and the two sentinels
  EXPECT_EQ(iw->subscriptions[0][0].lo, 0);
  EXPECT_EQ(iw->subscriptions[0][0].hi, 0);
  EXPECT_EQ(iw->subscriptions[1][0].lo, 4);
  ExpectSameMatches(w, *iw);
}

TEST(IntervalsTest, RefusesNe) {
  Workload w;
  w.attribute_names = {"a"};
  w.subscriptions = {{{0, Op::kNe, 1}}};
  EXPECT_FALSE(ToIntervals(w).ok());
}

TEST(IntervalsTest, WritesOneLinePerSubscriptionAndEvent) {
  Workload w;
  w.attribute_names = {"a", "b"};
  w.subscriptions = {{{0, Op::kEq, 7}, {1, Op::kBetween, 1, 9}}};
  w.events = {{{1, 9}, {0, 7}}};
  absl::StatusOr<IntervalWorkload> iw = ToIntervals(w);
  ASSERT_TRUE(iw.ok());
  std::ostringstream out;
  WriteIntervals(*iw, {1}, out);
  const std::vector<std::string> lines =
      absl::StrSplit(out.str(), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0],
            "intervals v1 attributes=2 domain=4 subscriptions=1 events=1");
  EXPECT_EQ(lines[1], "S 2 0 1 1 1 1 2");
  EXPECT_EQ(lines[2], "E 1 2 1 2 0 1");
}

TEST(IntervalsTest, ParsesPolicies) {
  EXPECT_EQ(*ParseNePolicy("drop_subscriptions"),
            NePolicy::kDropSubscriptions);
  EXPECT_EQ(*ParseNePolicy("drop_predicates"), NePolicy::kDropPredicates);
  EXPECT_FALSE(ParseNePolicy("keep").ok());
}

}  // namespace
}  // namespace bench
}  // namespace cohort
