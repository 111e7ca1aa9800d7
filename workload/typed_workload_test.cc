#include "workload/typed_workload.h"

#include <algorithm>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "matcher/index.h"
#include "service/model/api_reference.h"
#include "workload/sha256.h"

namespace cohort {
namespace workload {
namespace {

TEST(Events1m, IsDeterministicAndExtendsLikeTheOtherPresets) {
  const TypedWorkload a = GenerateEvents1m(500, 50, 1);
  const TypedWorkload b = GenerateEvents1m(500, 50, 1);
  const TypedWorkload longer = GenerateEvents1m(800, 80, 1);
  const TypedWorkload other = GenerateEvents1m(500, 50, 2);
  ASSERT_EQ(a.subscriptions.size(), 500u);
  ASSERT_EQ(a.events.size(), 50u);
  for (size_t i = 0; i < a.subscriptions.size(); ++i) {
    EXPECT_EQ(a.subscriptions[i].SerializeAsString(),
              b.subscriptions[i].SerializeAsString());
    EXPECT_EQ(a.subscriptions[i].SerializeAsString(),
              longer.subscriptions[i].SerializeAsString());
  }
  for (size_t i = 0; i < a.events.size(); ++i) {
    EXPECT_EQ(a.events[i].SerializeAsString(),
              longer.events[i].SerializeAsString());
  }
  EXPECT_NE(a.events[0].SerializeAsString(),
            other.events[0].SerializeAsString());
}

// The lowered workload, in an Index, matches what the API's rules say, and
// the preset's shape holds: 12 or 13 attributes per event, half strings,
// every operator but the string ranges, a handful of matches per event.
// The events-1m text, and so its SHA-256 fingerprint that reports repeat,
// is byte-identical to what the generator wrote before SHA-256 came from
// OpenSSL (`cohort workload --preset=events-1m --subscriptions=2000
// --events=500` at ec0827b).
TEST(Events1m, SmallTextMatchesGoldenSha256) {
  const std::string text = TypedWorkloadText(GenerateEvents1m(2000, 500, 1));
  EXPECT_EQ(text.size(), 257523u);
  EXPECT_EQ(Sha256Hex(text),
            "b84836ca6c6078fdf3f8d529477cf5b4f652b11f42a2a5a517c4743b4ecb8fdf");
}

TEST(Events1m, LoweredMatchesTheApiRules) {
  const TypedWorkload typed = GenerateEvents1m(100000, 300, 1);
  absl::StatusOr<Workload> lowered = Lower(typed);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  ASSERT_EQ(lowered->subscriptions.size(), typed.subscriptions.size());
  ASSERT_EQ(lowered->events.size(), typed.events.size());
  ASSERT_NE(lowered->typed, nullptr);
  std::vector<int> ops(13, 0);
  for (const v1::SubscriptionSpec& s : typed.subscriptions) {
    for (const v1::Predicate& p : s.predicates()) ++ops[p.op()];
  }
  for (v1::Op op : {v1::OP_EQ, v1::OP_NE, v1::OP_GT, v1::OP_GE, v1::OP_BETWEEN,
                    v1::OP_IN, v1::OP_NOT_IN, v1::OP_PREFIX, v1::OP_EXISTS,
                    v1::OP_NOT_EXISTS}) {
    EXPECT_GT(ops[op], 0) << v1::Op_Name(op);
  }
  for (const v1::Event& e : typed.events) {
    int strings = 0;
    for (const v1::Attribute& a : e.attributes()) {
      strings += a.kind_case() == v1::Attribute::kStringValue;
    }
    EXPECT_GE(e.attributes_size(), 12);
    EXPECT_GE(strings, 6);
  }

  matcher::Index index;
  for (size_t i = 0; i < lowered->subscriptions.size(); ++i) {
    ASSERT_TRUE(index.Add(static_cast<matcher::SubscriptionId>(i),
                          lowered->subscriptions[i])
                    .ok());
  }
  std::vector<matcher::EventView> views(lowered->events.begin(),
                                        lowered->events.end());
  std::vector<std::vector<matcher::SubscriptionId>> got;
  index.MatchCohort(views, &got);
  size_t matches = 0;
  for (size_t e = 0; e < typed.events.size(); ++e) {
    std::vector<matcher::SubscriptionId> want;
    for (size_t i = 0; i < typed.subscriptions.size(); ++i) {
      if (service::ApiMatches(typed.subscriptions[i], typed.events[e])) {
        want.push_back(static_cast<matcher::SubscriptionId>(i));
      }
    }
    std::sort(got[e].begin(), got[e].end());
    ASSERT_EQ(got[e], want) << typed.events[e].ShortDebugString();
    matches += want.size();
  }
  const double mean = static_cast<double>(matches) / typed.events.size();
  std::cout << "mean matches per event at 100k subscriptions: " << mean
            << "\n";
  // A tenth of events-1m's subscriptions: a tenth of its handful.
  EXPECT_GT(mean, 0.05);
  EXPECT_LT(mean, 5);
}

// The text format gives back exactly what was written, and bad files are
// refused naming the line.
TEST(Events1m, TextRoundTripsAndBadLinesAreNamed) {
  const TypedWorkload typed = GenerateEvents1m(3000, 300, 7);
  const std::string text = TypedWorkloadText(typed);
  std::istringstream in(text);
  absl::StatusOr<TypedWorkload> back = ReadTypedWorkload(in);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->options.preset, "events-1m");
  EXPECT_EQ(back->options.seed, 7u);
  ASSERT_EQ(back->subscriptions.size(), typed.subscriptions.size());
  ASSERT_EQ(back->events.size(), typed.events.size());
  for (size_t i = 0; i < typed.subscriptions.size(); ++i) {
    ASSERT_EQ(back->subscriptions[i].SerializeAsString(),
              typed.subscriptions[i].SerializeAsString())
        << i;
  }
  for (size_t i = 0; i < typed.events.size(); ++i) {
    ASSERT_EQ(back->events[i].SerializeAsString(),
              typed.events[i].SerializeAsString())
        << i;
  }
  const std::string header =
      "# cohort-workload v2 preset=events-1m seed=1 typed\n";
  for (const auto& [bad, message] :
       std::vector<std::pair<std::string, std::string>>{
           {"S x = 1\n", "line 1: expected the header"},
           {header + "S x ==\n", "line 2: column 5: missing value"},
           {header + "E x=1\nS x = 1\n", "line 3: a subscription after"},
           {header + "Q\n", "line 2: expected a line starting with"},
           {header + "# knobs subscriptions=2 events=0 seed=1\nS x = 1\n",
            "promises 2 subscriptions"}}) {
    std::istringstream bad_in(bad);
    absl::StatusOr<TypedWorkload> refused = ReadTypedWorkload(bad_in);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(refused.status().message().find(message), std::string::npos)
        << refused.status();
  }
}

// "Or" subscriptions (pattern_load's workloads): the text keeps their
// groups, and Lower gives a row per branch, mapped to its subscription.
TEST(TypedWorkload, OrSubscriptionsRoundTripAndLowerIntoRows) {
  const std::string text =
      "# cohort-workload v2 preset=eventruler seed=1 typed\n"
      "S a = 1\n"
      "S a = 2 or b = 3 and c prefix \"x\"\n"
      "S k = 1 and (a = 1 or a = 2) and (b = 1 or b = 2 or b = 3)\n"
      "S c = \"y\"\n"
      "E a=2 b=3 c=\"xy\" k=1\n";
  std::istringstream in(text);
  absl::StatusOr<TypedWorkload> typed = ReadTypedWorkload(in);
  ASSERT_TRUE(typed.ok()) << typed.status();
  ASSERT_EQ(typed->subscriptions.size(), 4u);
  EXPECT_EQ(typed->subscriptions[1].predicates_size(), 0);
  ASSERT_EQ(typed->subscriptions[1].any_of_size(), 1);
  EXPECT_EQ(typed->subscriptions[2].any_of_size(), 2);
  std::istringstream again(TypedWorkloadText(*typed));
  absl::StatusOr<TypedWorkload> back = ReadTypedWorkload(again);
  ASSERT_TRUE(back.ok()) << back.status();
  for (size_t i = 0; i < typed->subscriptions.size(); ++i) {
    EXPECT_EQ(back->subscriptions[i].SerializeAsString(),
              typed->subscriptions[i].SerializeAsString())
        << i;
  }
  absl::StatusOr<Workload> w = Lower(*std::move(typed));
  ASSERT_TRUE(w.ok()) << w.status();
  // 1 + 2 + 2 * 3 + 1 rows.
  ASSERT_EQ(w->subscriptions.size(), 10u);
  EXPECT_EQ(w->subscription_of_row,
            (std::vector<uint32_t>{0, 1, 1, 2, 2, 2, 2, 2, 2, 3}));
  EXPECT_EQ(SubscriptionCount(*w), 4u);
  // The event matches rows of subscriptions 1 (both branches) and 2
  // (a = 2 with b = 3).
  matcher::Index index;
  for (size_t r = 0; r < w->subscriptions.size(); ++r) {
    ASSERT_TRUE(
        index.Add(static_cast<matcher::SubscriptionId>(r), w->subscriptions[r])
            .ok());
  }
  matcher::MatchScratch scratch;
  std::vector<matcher::SubscriptionId> rows;
  index.MatchEvent(w->events[0], &scratch, &rows);
  std::vector<uint32_t> owners;
  for (matcher::SubscriptionId r : rows) {
    owners.push_back(w->subscription_of_row[r]);
  }
  std::sort(owners.begin(), owners.end());
  EXPECT_EQ(owners, (std::vector<uint32_t>{1, 1, 2}));
}

TEST(Events1m, LoadOrGenerateAnyKnowsThePreset) {
  absl::StatusOr<Workload> w = LoadOrGenerateAny("", "events-1m", 100, 10);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->options.preset, "events-1m");
  EXPECT_EQ(w->subscriptions.size(), 100u);
  EXPECT_EQ(w->events.size(), 10u);
  absl::StatusOr<Workload> f = LoadOrGenerateAny("", "fabret-1m", 10, 10);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->typed, nullptr);
  EXPECT_FALSE(LoadOrGenerateAny("", "events-2m", 10, 10).ok());
}

// events-10m (issue 45) is events-1m with ten times the subscriptions:
// named apart, 10M by default, the same streams (so its first
// subscriptions and its events are events-1m's).
TEST(Events10m, IsEvents1mWithTenTimesTheSubscriptions) {
  EXPECT_TRUE(IsTypedPreset("events-10m"));
  EXPECT_EQ(TypedPresetSubscriptions("events-10m"), 10000000);
  EXPECT_EQ(TypedPresetSubscriptions("events-1m"), 1000000);
  EXPECT_EQ(TypedPresetSubscriptions("eventbridge-1m"), 1000000);
  const TypedWorkload one = GenerateTyped("events-1m", 300, 40, 1);
  const TypedWorkload ten = GenerateTyped("events-10m", 700, 40, 1);
  EXPECT_EQ(ten.options.preset, "events-10m");
  EXPECT_EQ(one.options.preset, "events-1m");
  const std::string one_text = TypedWorkloadText(one);
  const std::string ten_text = TypedWorkloadText(ten);
  EXPECT_TRUE(absl::StartsWith(
      ten_text, "# cohort-workload v2 preset=events-10m seed=1 typed\n"));
  // Past the header's comment lines, events-1m's lines are a part of
  // events-10m's: its subscriptions a prefix of the longer list, its
  // events the same.
  const auto lines = [](const std::string& text, bool events) {
    const size_t s = text.find("\nS ");
    const size_t e = text.find("\nE ");
    EXPECT_NE(s, std::string::npos);
    EXPECT_NE(e, std::string::npos);
    return events ? text.substr(e) : text.substr(s, e - s);
  };
  EXPECT_TRUE(absl::StartsWith(lines(ten_text, false), lines(one_text, false)));
  EXPECT_GT(lines(ten_text, false).size(), lines(one_text, false).size());
  EXPECT_EQ(lines(ten_text, true), lines(one_text, true));
  absl::StatusOr<Workload> w = LoadOrGenerateAny("", "events-10m", 100, 10);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->options.preset, "events-10m");
  EXPECT_EQ(w->subscriptions.size(), 100u);
}

TEST(EventBridge1m, IsDeterministicAndExtendsLikeTheOtherPresets) {
  const TypedWorkload a = GenerateEventBridge1m(500, 50, 1);
  const TypedWorkload b = GenerateEventBridge1m(500, 50, 1);
  const TypedWorkload longer = GenerateEventBridge1m(800, 80, 1);
  const TypedWorkload other = GenerateEventBridge1m(500, 50, 2);
  ASSERT_EQ(a.patterns.size(), 500u);
  ASSERT_EQ(a.subscriptions.size(), 500u);
  ASSERT_EQ(a.events.size(), 50u);
  for (size_t i = 0; i < a.subscriptions.size(); ++i) {
    EXPECT_EQ(a.patterns[i], b.patterns[i]);
    EXPECT_EQ(a.patterns[i], longer.patterns[i]);
    EXPECT_EQ(a.subscriptions[i].SerializeAsString(),
              longer.subscriptions[i].SerializeAsString());
  }
  for (size_t i = 0; i < a.events.size(); ++i) {
    EXPECT_EQ(a.events[i].json(), longer.events[i].json());
    EXPECT_EQ(a.events[i].attributes_size(), 0);
  }
  EXPECT_NE(a.events[0].json(), other.events[0].json());
  EXPECT_NE(a.patterns[0], other.patterns[0]);
}

// The file's bytes pin the generator (as Events1m's golden does): a change
// of them changes the meaning of every recorded eventbridge-1m figure.
TEST(EventBridge1m, SmallTextMatchesGoldenSha256) {
  const std::string text =
      TypedWorkloadText(GenerateEventBridge1m(2000, 500, 1));
  EXPECT_EQ(text.size(), 544526u);
  EXPECT_EQ(Sha256Hex(text),
            "6fef2e2abed1e95b02dd638f2f6e44f1c0485ac5f7343471de4ae5b824c6d08d");
}

// Every operator of issue 44 is in the mix, with "or" and numbers with
// fractions; events are nested, with arrays (of objects too) and doubles.
TEST(EventBridge1m, UsesEveryOperatorOverNestedJsonWithArrays) {
  const TypedWorkload typed = GenerateEventBridge1m(20000, 2000, 1);
  std::vector<int> ops(v1::Op_ARRAYSIZE, 0);
  int doubles = 0;
  int any_of = 0;
  auto count = [&](const v1::Predicate& p) {
    ++ops[p.op()];
    doubles += p.operand_case() == v1::Predicate::kDoubleValue;
  };
  for (const v1::SubscriptionSpec& s : typed.subscriptions) {
    for (const v1::Predicate& p : s.predicates()) count(p);
    any_of += s.any_of_size();
    for (const v1::AnyOf& group : s.any_of()) {
      for (const v1::Conjunction& c : group.alternatives()) {
        for (const v1::Predicate& p : c.predicates()) count(p);
      }
    }
  }
  for (int op = v1::OP_EQ; op <= v1::OP_SUFFIX_IGNORE_CASE; ++op) {
    EXPECT_GT(ops[op], 0) << v1::Op_Name(static_cast<v1::Op>(op));
  }
  EXPECT_GT(doubles, 1000);
  EXPECT_GT(any_of, 800);
  size_t arrays_of_objects = 0, two_resources = 0, fractions = 0;
  for (const v1::Event& e : typed.events) {
    const std::string& json = e.json();
    EXPECT_NE(json.find("\"detail\":{\"state\""), std::string::npos);
    arrays_of_objects += json.find("\"items\":[{") != std::string::npos;
    two_resources += json.find("\",\"arn:aws:") != std::string::npos;
    fractions += json.find("\"total\":") != std::string::npos &&
                 json.find('.', json.find("\"total\":")) <
                     json.find(',', json.find("\"total\":"));
  }
  EXPECT_EQ(arrays_of_objects, typed.events.size());
  EXPECT_GT(two_resources, 200u);
  EXPECT_GT(fractions, 1500u);
}

// Lowered as the server lowers it (patterns into rows, a row per "or"
// branch; JSON events flattened into a record per combination of their
// arrays), the index finds exactly the subscriptions the API's rules say
// each event matches (service::ApiJsonEvent, written apart).
TEST(EventBridge1m, LoweredMatchesTheApiRules) {
  const TypedWorkload typed = GenerateEventBridge1m(50000, 200, 1);
  absl::StatusOr<Workload> lowered = Lower(typed);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  ASSERT_NE(lowered->lowering, nullptr);
  EXPECT_EQ(SubscriptionCount(*lowered), typed.subscriptions.size());
  EXPECT_GT(lowered->subscriptions.size(), typed.subscriptions.size());
  ASSERT_FALSE(lowered->event_of_record.empty());
  EXPECT_GT(lowered->events.size(), typed.events.size());
  EXPECT_EQ(lowered->event_of_record.size(), lowered->events.size());
  EXPECT_EQ(EventCount(*lowered), typed.events.size());
  matcher::Index index;
  for (size_t r = 0; r < lowered->subscriptions.size(); ++r) {
    ASSERT_TRUE(
        index.Add(static_cast<matcher::SubscriptionId>(r),
                  lowered->subscriptions[r])
            .ok());
  }
  std::vector<matcher::EventView> views(lowered->events.begin(),
                                        lowered->events.end());
  std::vector<std::vector<matcher::SubscriptionId>> rows;
  index.MatchCohort(views, &rows);
  std::vector<std::vector<uint32_t>> got(typed.events.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    for (matcher::SubscriptionId row : rows[r]) {
      got[lowered->event_of_record[r]].push_back(
          lowered->subscription_of_row[row]);
    }
  }
  size_t matches = 0;
  for (size_t e = 0; e < typed.events.size(); ++e) {
    std::sort(got[e].begin(), got[e].end());
    got[e].erase(std::unique(got[e].begin(), got[e].end()), got[e].end());
    const service::ApiJsonEvent event(typed.events[e]);
    std::vector<uint32_t> want;
    for (size_t i = 0; i < typed.subscriptions.size(); ++i) {
      if (event.Matches(typed.subscriptions[i])) {
        want.push_back(static_cast<uint32_t>(i));
      }
    }
    ASSERT_EQ(got[e], want) << typed.events[e].json();
    matches += want.size();
  }
  const double mean = static_cast<double>(matches) / typed.events.size();
  std::cout << "mean matches per event at 50k patterns: " << mean << "\n";
  EXPECT_GT(mean, 0.05);
  EXPECT_LT(mean, 20);
  // The report (cohort workload's) counts events and their distinct
  // patterns the same way, by brute force over rows and records.
  const WorkloadReport report = Summarize(*lowered, "", typed.events.size());
  EXPECT_EQ(report.events, static_cast<int64_t>(typed.events.size()));
  EXPECT_EQ(report.subscriptions,
            static_cast<int64_t>(typed.subscriptions.size()));
  EXPECT_DOUBLE_EQ(report.mean_matches, mean);
}

// "P" and "J" lines give back exactly the patterns and JSON events written,
// and bad ones are refused naming the line.
TEST(EventBridge1m, TextRoundTripsAndBadLinesAreNamed) {
  const TypedWorkload typed = GenerateEventBridge1m(3000, 300, 7);
  const std::string text = TypedWorkloadText(typed);
  EXPECT_NE(text.find("\nP {\""), std::string::npos);
  EXPECT_NE(text.find("\nJ {\"version\""), std::string::npos);
  std::istringstream in(text);
  absl::StatusOr<TypedWorkload> back = ReadTypedWorkload(in);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->options.preset, "eventbridge-1m");
  EXPECT_EQ(back->patterns, typed.patterns);
  ASSERT_EQ(back->subscriptions.size(), typed.subscriptions.size());
  for (size_t i = 0; i < typed.subscriptions.size(); ++i) {
    ASSERT_EQ(back->subscriptions[i].SerializeAsString(),
              typed.subscriptions[i].SerializeAsString())
        << i;
  }
  ASSERT_EQ(back->events.size(), typed.events.size());
  for (size_t i = 0; i < typed.events.size(); ++i) {
    ASSERT_EQ(back->events[i].SerializeAsString(),
              typed.events[i].SerializeAsString())
        << i;
  }
  const std::string header =
      "# cohort-workload v2 preset=eventbridge-1m seed=1 typed\n";
  for (const auto& [bad, message] :
       std::vector<std::pair<std::string, std::string>>{
           {header + "P {\"a\": [{\"regex\": \"x\"}]}\n",
            "line 2: pattern: at a[0]"},
           {header + "P {\"a\": [1]}\nS b = 1\n", "line 3: \"S \" and \"P \""},
           {header + "S b = 1\nP {\"a\": [1]}\n", "line 3: \"S \" and \"P \""},
           {header + "J {\"a\": 1}\nP {\"a\": [1]}\n",
            "line 3: a subscription after"},
           {header + "J \n", "line 2: an empty JSON event"}}) {
    std::istringstream bad_in(bad);
    absl::StatusOr<TypedWorkload> refused = ReadTypedWorkload(bad_in);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(refused.status().message().find(message), std::string::npos)
        << refused.status();
  }
  // A JSON event Lower cannot flatten is refused naming its events.
  std::istringstream broken(header + "P {\"a\": [1]}\nJ {\"a\": \n");
  absl::StatusOr<TypedWorkload> read = ReadTypedWorkload(broken);
  ASSERT_TRUE(read.ok()) << read.status();
  absl::StatusOr<Workload> lowered = Lower(*std::move(read));
  EXPECT_EQ(lowered.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(lowered.status().message().find("events 0 to 0: events[0].json"),
            std::string::npos)
      << lowered.status();
}

TEST(EventBridge1m, LoadOrGenerateAnyKnowsThePreset) {
  absl::StatusOr<Workload> w =
      LoadOrGenerateAny("", "eventbridge-1m", 200, 20);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->options.preset, "eventbridge-1m");
  EXPECT_EQ(SubscriptionCount(*w), 200u);
  EXPECT_EQ(EventCount(*w), 20u);
  EXPECT_GE(w->events.size(), 20u);
  EXPECT_TRUE(IsTypedPreset("eventbridge-1m"));
}

}  // namespace
}  // namespace workload
}  // namespace cohort
