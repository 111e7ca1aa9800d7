#include "workload/workload.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "workload/sha256.h"

namespace cohort {
namespace workload {
namespace {

using matcher::Op;

// The determinism goldens: fabret-1m / fabret-uniform knobs, shrunk to 2000
// subscriptions and 500 events. If one of these changes, every recorded
// benchmark result changes meaning: only update them together with a
// version bump of the generator and a note in fabret.md.
constexpr char kGoldenFabretSmall[] =
    "8486cc9491ea078ecc674b1c14d0b79f46a08d6994b5786f10928a40edeeb0ff";
constexpr char kGoldenUniformSmall[] =
    "f5fa2927b0620d71e1ba1477596749e9f3775b7d211d71563a0fbd89ff5a99ee";
// selective-1m and ranges-1m, shrunk the same way (workload/presets.md).
constexpr char kGoldenSelectiveSmall[] =
    "a1d8d466d16e4983b49b079e23d4690e6f181942d28bbfa29c10c7f7d2b05827";
constexpr char kGoldenRangesSmall[] =
    "081fe1b2e98a557c1257d3abbe8bff605917a970340232aa9d01c8db19c515b6";

WorkloadOptions Small(absl::string_view preset, int64_t subscriptions = 2000,
                      int64_t events = 500) {
  WorkloadOptions options = *PresetOptions(preset);
  options.subscriptions = subscriptions;
  options.events = events;
  return options;
}

// The S lines of a workload text (everything before the first E line).
std::string SubscriptionLines(const std::string& text) {
  const size_t first_s = text.find("\nS ");
  const size_t first_e = text.find("\nE ");
  return text.substr(first_s, first_e - first_s);
}

std::string EventLines(const std::string& text) {
  return text.substr(text.find("\nE "));
}

TEST(Generate, SmallFabretMatchesGoldenSha256) {
  EXPECT_EQ(Sha256Hex(WorkloadText(Generate(Small("fabret-1m")))),
            kGoldenFabretSmall);
}

TEST(Generate, SmallUniformMatchesGoldenSha256) {
  EXPECT_EQ(Sha256Hex(WorkloadText(Generate(Small("fabret-uniform")))),
            kGoldenUniformSmall);
}

TEST(Generate, SameOptionsGiveIdenticalBytes) {
  const std::string first = WorkloadText(Generate(Small("fabret-1m")));
  const std::string second = WorkloadText(Generate(Small("fabret-1m")));
  EXPECT_EQ(first, second);
  EXPECT_TRUE(absl::StartsWith(
      first, "# cohort-workload v1 preset=fabret-1m seed=1\n# knobs "));
}

TEST(Generate, DifferentSeedsGiveDifferentWorkloads) {
  WorkloadOptions other = Small("fabret-1m");
  other.seed = 2;
  EXPECT_NE(SubscriptionLines(WorkloadText(Generate(Small("fabret-1m")))),
            SubscriptionLines(WorkloadText(Generate(other))));
}

TEST(Generate, EventCountDoesNotChangeSubscriptions) {
  const std::string many = WorkloadText(Generate(Small("fabret-1m", 300, 500)));
  const std::string few = WorkloadText(Generate(Small("fabret-1m", 300, 7)));
  EXPECT_EQ(SubscriptionLines(many), SubscriptionLines(few));
  // A shorter run is a prefix of a longer one.
  EXPECT_TRUE(absl::StartsWith(EventLines(many), EventLines(few)));
}

TEST(Generate, SubscriptionCountDoesNotChangeEvents) {
  const std::string many = WorkloadText(Generate(Small("fabret-1m", 900, 50)));
  const std::string few = WorkloadText(Generate(Small("fabret-1m", 20, 50)));
  EXPECT_EQ(EventLines(many), EventLines(few));
}

TEST(PresetOptions, UniformDiffersFromFabretOnlyInZipfExponents) {
  WorkloadOptions fabret = *PresetOptions("fabret-1m");
  WorkloadOptions uniform = *PresetOptions("fabret-uniform");
  EXPECT_EQ(fabret.subscriptions, 1000000);
  EXPECT_EQ(fabret.events, 100000);
  EXPECT_EQ(fabret.zipf_attributes, 0.8);
  EXPECT_EQ(fabret.zipf_values, 0.8);
  EXPECT_EQ(uniform.zipf_attributes, 0.0);
  EXPECT_EQ(uniform.zipf_values, 0.0);
  EXPECT_EQ(uniform.preset, "fabret-uniform");
  uniform.preset = fabret.preset;
  uniform.zipf_attributes = fabret.zipf_attributes;
  uniform.zipf_values = fabret.zipf_values;
  EXPECT_EQ(uniform, fabret);
  EXPECT_TRUE(Validate(fabret).ok());
}

TEST(PresetOptions, SelectiveIsEqualityHeavyOverALargeDomain) {
  const WorkloadOptions o = *PresetOptions("selective-1m");
  EXPECT_EQ(o.preset, "selective-1m");
  EXPECT_EQ(o.subscriptions, 1000000);
  EXPECT_EQ(o.domain, 100000);
  EXPECT_EQ(o.eq_fraction, 0.9);
  EXPECT_EQ(o.min_predicates, 3);
  EXPECT_EQ(o.max_predicates, 6);
  EXPECT_EQ(o.zipf_values, 0.5);
  EXPECT_TRUE(Validate(o).ok());
}

TEST(PresetOptions, RangesHasOnlyRangesOverAMillionValues) {
  const WorkloadOptions o = *PresetOptions("ranges-1m");
  EXPECT_EQ(o.preset, "ranges-1m");
  EXPECT_EQ(o.subscriptions, 1000000);
  EXPECT_EQ(o.domain, 1000000);
  EXPECT_EQ(o.eq_fraction, 0.0);
  EXPECT_EQ(o.min_predicates, 5);
  EXPECT_EQ(o.max_predicates, 10);
  EXPECT_EQ(o.event_attributes, 20);
  EXPECT_EQ(o.between_max_width, 100000);
  EXPECT_TRUE(Validate(o).ok());
}

TEST(Generate, SmallSelectiveAndRangesMatchGoldenSha256) {
  EXPECT_EQ(Sha256Hex(WorkloadText(Generate(Small("selective-1m")))),
            kGoldenSelectiveSmall);
  EXPECT_EQ(Sha256Hex(WorkloadText(Generate(Small("ranges-1m")))),
            kGoldenRangesSmall);
}

TEST(Generate, RangesPresetGivesFiveToTenRangesNearlyAllDistinct) {
  const Workload w = Generate(Small("ranges-1m", 5000, 10));
  std::set<std::tuple<uint32_t, int, int64_t, int64_t>> ranges;
  size_t range_count = 0;
  for (const auto& sub : w.subscriptions) {
    EXPECT_GE(sub.size(), 5u);
    EXPECT_LE(sub.size(), 10u);
    for (const matcher::Predicate& p : sub) {
      ASSERT_NE(p.op, Op::kEq);
      if (p.op == Op::kNe) continue;
      ++range_count;
      ranges.insert({p.attribute, static_cast<int>(p.op), p.value, p.upper});
    }
  }
  ASSERT_GT(range_count, 20000u);
  // "Nearly every range is a predicate of its own."
  EXPECT_GT(static_cast<double>(ranges.size()) / range_count, 0.97);
}

TEST(Generate, SelectivePresetIsMostlyEqualities) {
  const Workload w = Generate(Small("selective-1m", 5000, 10));
  size_t eq = 0, all = 0;
  for (const auto& sub : w.subscriptions) {
    EXPECT_GE(sub.size(), 3u);
    EXPECT_LE(sub.size(), 6u);
    for (const matcher::Predicate& p : sub) {
      ++all;
      eq += p.op == Op::kEq;
    }
  }
  EXPECT_NEAR(static_cast<double>(eq) / all, 0.9, 0.02);
}

TEST(PresetOptions, UnknownPresetIsRejected) {
  absl::StatusOr<WorkloadOptions> options = PresetOptions("fabret-2m");
  ASSERT_FALSE(options.ok());
  EXPECT_TRUE(absl::StrContains(options.status().message(), "fabret-2m"));
}

TEST(Validate, RejectsEachBadKnobNamingFieldAndLimit) {
  struct Case {
    void (*mutate)(WorkloadOptions&);
    const char* message;
  };
  const Case cases[] = {
      {[](WorkloadOptions& o) { o.event_attributes = 33; },
       "event_attributes (33) must be <= attributes (32)"},
      {[](WorkloadOptions& o) { o.max_predicates = 40; },
       "max_predicates (40) must be <= attributes (32)"},
      {[](WorkloadOptions& o) { o.min_predicates = 5, o.max_predicates = 3; },
       "min_predicates (5) must be <= max_predicates (3)"},
      {[](WorkloadOptions& o) { o.domain = 0; }, "domain (0) must be in [1, "},
      {[](WorkloadOptions& o) { o.eq_fraction = 1.5; },
       "eq_fraction (1.5) must be in [0, 1]"},
      {[](WorkloadOptions& o) { o.eq_fraction = std::nan(""); }, "eq_fraction"},
      {[](WorkloadOptions& o) { o.zipf_values = -0.1; },
       "zipf_values (-0.1) must be finite and >= 0"},
      {[](WorkloadOptions& o) { o.subscriptions = -1; },
       "subscriptions (-1) must be in [0, "},
      {[](WorkloadOptions& o) { o.between_max_width = 0; },
       "between_max_width (0)"},
      {[](WorkloadOptions& o) { o.preset = "a b"; }, "preset"},
      {[](WorkloadOptions& o) { o.attributes = 1 << 16, o.domain = 1 << 24; },
       "attributes * domain"},
  };
  for (const Case& c : cases) {
    WorkloadOptions options;
    c.mutate(options);
    const absl::Status status = Validate(options);
    EXPECT_FALSE(status.ok()) << c.message;
    EXPECT_TRUE(absl::StrContains(status.message(), c.message))
        << status.message() << " lacks " << c.message;
  }
}

// Attribute frequencies over all subscription predicates.
std::vector<int64_t> AttributeCounts(const Workload& w) {
  std::vector<int64_t> counts(w.attribute_names.size());
  for (const auto& subscription : w.subscriptions) {
    for (const matcher::Predicate& p : subscription) ++counts[p.attribute];
  }
  return counts;
}

TEST(Generate, FabretSubscriptionsFollowTheSpecification) {
  const Workload w = Generate(Small("fabret-1m", 50000, 10));
  int64_t predicates = 0, eq = 0;
  for (const auto& subscription : w.subscriptions) {
    ASSERT_GE(subscription.size(), 2u);
    ASSERT_LE(subscription.size(), 6u);
    std::set<matcher::AttributeId> attributes;
    for (const matcher::Predicate& p : subscription) {
      attributes.insert(p.attribute);
      ASSERT_LT(p.attribute, 32u);
      ASSERT_GE(p.value, 0);
      ASSERT_LE(p.value, 999);
      if (p.op == Op::kBetween) {
        ASSERT_GE(p.upper, p.value);
        ASSERT_LE(p.upper, 999);
        ASSERT_LE(p.upper - p.value, 100);
      }
      eq += p.op == Op::kEq;
    }
    EXPECT_EQ(attributes.size(), subscription.size());
    predicates += static_cast<int64_t>(subscription.size());
  }
  const double eq_fraction = static_cast<double>(eq) / predicates;
  EXPECT_NEAR(eq_fraction, 0.70, 0.01);
  EXPECT_NEAR(static_cast<double>(predicates) / 50000, 4.0, 0.05);
  const std::vector<int64_t> counts = AttributeCounts(w);
  EXPECT_EQ(std::max_element(counts.begin(), counts.end()), counts.begin());
  EXPECT_GT(counts[0], 3 * counts[31]);  // 32^0.8 = 16 before exclusion
}

TEST(Generate, UniformPresetSpreadsAttributesEvenly) {
  const std::vector<int64_t> counts =
      AttributeCounts(Generate(Small("fabret-uniform", 50000, 0)));
  const auto [min, max] = std::minmax_element(counts.begin(), counts.end());
  // About 6250 per attribute, standard deviation about 80.
  EXPECT_LT(static_cast<double>(*max) / *min, 1.1);
}

TEST(Generate, EventsCarrySixteenDistinctAttributesInTheDomain) {
  const Workload w = Generate(Small("fabret-1m", 0, 5000));
  std::vector<int64_t> counts(32);
  for (const auto& event : w.events) {
    ASSERT_EQ(event.size(), 16u);
    std::set<matcher::AttributeId> attributes;
    for (const matcher::AttributeValue& av : event) {
      attributes.insert(av.attribute);
      ++counts[av.attribute];
      ASSERT_GE(av.value, 0);
      ASSERT_LE(av.value, 999);
    }
    EXPECT_EQ(attributes.size(), 16u);
  }
  EXPECT_EQ(std::max_element(counts.begin(), counts.end()), counts.begin());
}

TEST(Generate, PopularValuesDifferPerAttribute) {
  const Workload w = Generate(Small("fabret-1m", 0, 5000));
  std::vector<std::vector<int64_t>> counts(32, std::vector<int64_t>(1000));
  for (const auto& event : w.events) {
    for (const matcher::AttributeValue& av : event) {
      ++counts[av.attribute][av.value];
    }
  }
  std::set<int64_t> top_values;
  for (int a = 0; a < 4; ++a) {
    top_values.insert(std::max_element(counts[a].begin(), counts[a].end()) -
                      counts[a].begin());
  }
  EXPECT_GE(top_values.size(), 3u);
}

TEST(ZipfTable, RankOneIsTwoToThePointEightTimesRankTwo) {
  const internal::ZipfTable table(1000, 0.8);
  const double expected = std::pow(2.0, 0.8);
  EXPECT_NEAR(static_cast<double>(table.weight(0)) / table.weight(1), expected,
              1e-9);
  internal::Rng rng(42);
  int64_t rank1 = 0, rank2 = 0;
  for (int i = 0; i < 1000000; ++i) {
    const uint32_t rank = table.Sample(rng);
    ASSERT_LT(rank, 1000u);
    rank1 += rank == 0;
    rank2 += rank == 1;
  }
  EXPECT_NEAR(static_cast<double>(rank1) / rank2, expected, 0.03 * expected);
}

TEST(ZipfTable, ExponentZeroIsUniform) {
  const internal::ZipfTable table(7, 0.0);
  for (uint32_t i = 0; i < 7; ++i) EXPECT_EQ(table.weight(i), table.weight(0));
}

TEST(DeterministicPow, AgreesWithLibmToNearlyFullPrecision) {
  // A geometric sweep of bases; the float counter is deliberate.
  // NOLINTNEXTLINE(cert-flp30-c)
  for (double base = 1; base <= 1e6; base = base * 1.37 + 1) {
    for (double exponent : {0.0, 0.5, 0.8, 1.0, 1.3, 2.5, 7.0}) {
      const double expected = std::pow(base, -exponent);
      // e^y amplifies the absolute error of y = -exponent * ln(base).
      const double y = exponent * std::log(base);
      EXPECT_NEAR(internal::DeterministicPow(base, -exponent), expected,
                  1e-15 * (1 + y) * expected)
          << base << "^-" << exponent;
    }
  }
  EXPECT_EQ(internal::DeterministicExp(-800), 0.0);
  EXPECT_NEAR(internal::DeterministicLog(1e-300), std::log(1e-300), 1e-12);
}

TEST(Rng, SplitMixAndXoshiroKnownAnswers) {
  // splitmix64 from state 0 first outputs 0xe220a8397b1dcdaf.
  EXPECT_EQ(internal::Mix64(0x9E3779B97F4A7C15ULL), 0xe220a8397b1dcdafULL);
  internal::Rng a(7), b(7);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(a.Next(), b.Next());
  for (int i = 0; i < 10000; ++i) {
    ASSERT_LT(a.Below(3), 3u);
    const int64_t x = a.InRange(-5, 5);
    ASSERT_TRUE(x >= -5 && x <= 5);
  }
}

TEST(SampleDistinct, FallbackAfterRedrawsStillYieldsDistinctRanks) {
  // Exponent 40 puts nearly all weight on rank 0, so drawing all 32 ranks
  // needs the exact fallback.
  const internal::ZipfTable table(32, 40.0);
  internal::Rng rng(3);
  std::vector<bool> used(32, false);
  std::vector<uint32_t> out;
  internal::SampleDistinct(table, 32, rng, &used, &out);
  ASSERT_EQ(out.size(), 32u);
  EXPECT_EQ(std::set<uint32_t>(out.begin(), out.end()).size(), 32u);
  EXPECT_EQ(std::count(used.begin(), used.end(), true), 0);
}

TEST(EventPayload, DependsOnSeedAndEventNumberOnly) {
  WorkloadOptions options;
  const std::string p0 = EventPayload(options, 0);
  EXPECT_EQ(p0.size(), 64u);
  EXPECT_EQ(p0, EventPayload(options, 0));
  EXPECT_NE(p0, EventPayload(options, 1));
  options.events = 5;  // not an input of the payload
  EXPECT_EQ(p0, EventPayload(options, 0));
  options.seed = 9;
  EXPECT_NE(p0, EventPayload(options, 0));
  options.payload_bytes = 13;
  EXPECT_EQ(EventPayload(options, 4).size(), 13u);
}

TEST(WorkloadText, RoundTripsThroughTheReader) {
  WorkloadOptions options = Small("fabret-uniform", 500, 100);
  options.eq_fraction = 0.123456789;
  const Workload original = Generate(options);
  const std::string text = WorkloadText(original);
  std::istringstream in(text);
  absl::StatusOr<Workload> read = ReadWorkload(in);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->options, original.options);
  EXPECT_EQ(WorkloadText(*read), text);
  ASSERT_EQ(read->subscriptions.size(), original.subscriptions.size());
  for (size_t i = 0; i < original.subscriptions.size(); ++i) {
    const auto& a = original.subscriptions[i];
    const auto& b = read->subscriptions[i];
    ASSERT_EQ(a.size(), b.size());
    for (size_t j = 0; j < a.size(); ++j) {
      EXPECT_EQ(original.attribute_names[a[j].attribute],
                read->attribute_names[b[j].attribute]);
      EXPECT_EQ(a[j].op, b[j].op);
      EXPECT_EQ(a[j].value, b[j].value);
      if (a[j].op == Op::kBetween) {
        EXPECT_EQ(a[j].upper, b[j].upper);
      }
    }
  }
  std::ostringstream out;
  WriteWorkload(*read, out);
  EXPECT_EQ(out.str(), text);
}

absl::StatusOr<Workload> Parse(const std::string& text) {
  std::istringstream in(text);
  return ReadWorkload(in);
}

TEST(ReadWorkload, InternsNamesInOrderOfFirstAppearance) {
  absl::StatusOr<Workload> w = Parse(
      "# cohort-workload v1 preset=hand seed=5\r\n"
      "# a comment\n\n"
      "S 2 color EQ 3 size BETWEEN 1 4\n"
      "S 0\n"
      "E 2 shape 7 color 3\n");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->attribute_names,
            (std::vector<std::string>{"color", "size", "shape"}));
  EXPECT_EQ(w->options.preset, "hand");
  EXPECT_EQ(w->options.seed, 5u);
  EXPECT_EQ(w->options.subscriptions, 2);
  EXPECT_EQ(w->options.events, 1);
  EXPECT_EQ(w->subscriptions[0][1].op, Op::kBetween);
  EXPECT_EQ(w->subscriptions[0][1].upper, 4);
  EXPECT_EQ(w->events[0][0].attribute, 2u);
}

TEST(ReadWorkload, RejectsMalformedInputNamingLineAndToken) {
  const std::string h = "# cohort-workload v1 preset=x seed=1\n";
  struct Case {
    std::string text;
    std::vector<std::string> expected;  // substrings of the message
  };
  const Case cases[] = {
      {"S 1 a0 EQ 1\n", {"line 1", "header"}},
      {"# cohort-workload v2\n", {"line 1", "'v2'"}},
      {h + "S 1 a0 EQQ 5\n", {"line 2", "unknown operator 'EQQ'"}},
      {h + "S 3 a0 EQ 1 a1 EQ 2\n", {"line 2", "declares 3", "only 2"}},
      {h + "S 1 a0 EQ 1 a1\n", {"line 2", "extra token 'a1'"}},
      {h + "S 1 a0 EQ 1x\n", {"line 2", "value '1x'"}},
      {h + "#\nS 1 a0 BETWEEN 9 3\n", {"line 3", "lower 9 > upper 3"}},
      {h + "S 1 a0 BETWEEN 9\n", {"line 2", "upper bound"}},
      {h + "E 1 a0 1\nS 1 a0 EQ 1\n", {"line 3", "S line after E"}},
      {h + "X 1 a0 1\n", {"line 2", "record type 'X'"}},
      {h + "S -1\n", {"line 2", "count '-1'"}},
      {h + "E two a0 1\n", {"line 2", "count 'two'"}},
      {h + "E 2 a0 1\n", {"line 2", "declares 2 values"}},
      {h + "E 2 a0 1 a0 2\n", {"line 2", "repeats attribute 'a0'"}},
      {h + "E 1 a0 1.5\n", {"line 2", "value '1.5'"}},
      {h + "S 1 9a EQ 1\n", {"line 2", "attribute name '9a'"}},
      {h + "# knobs colour=3\n", {"line 2", "'colour=3'", "unknown knob"}},
      {h + "# knobs subscriptions=2 events=0\nS 1 a0 EQ 1\n",
       {"line 3", "subscriptions=2", "1 S lines"}},
      {"# cohort-workload v1 seed=minus\n", {"line 1", "'seed=minus'"}},
      {"", {"line 1", "empty"}},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Workload> w = Parse(c.text);
    ASSERT_FALSE(w.ok()) << c.text;
    for (const std::string& part : c.expected) {
      EXPECT_TRUE(absl::StrContains(w.status().message(), part))
          << "'" << w.status().message() << "' lacks '" << part << "' for\n"
          << c.text;
    }
  }
}

TEST(ReadWorkloadFile, MissingFileIsNotFound) {
  absl::StatusOr<Workload> w = ReadWorkloadFile("/nonexistent/workload.txt");
  EXPECT_EQ(w.status().code(), absl::StatusCode::kNotFound);
}

TEST(Summarize, CountsOperatorsAndMatchesPerSampledEvent) {
  absl::StatusOr<Workload> w = Parse(
      "# cohort-workload v1\n"
      "S 1 a EQ 1\nS 1 a GE 0\nS 2 b EQ 2 a NE 3\nS 1 b BETWEEN 0 9\n"
      "E 1 a 1\nE 1 b 2\nE 2 a 5 b 2\n");
  ASSERT_TRUE(w.ok()) << w.status();
  const WorkloadReport all = Summarize(*w, "abc", 10);
  EXPECT_EQ(all.subscriptions, 4);
  EXPECT_EQ(all.events, 3);
  EXPECT_EQ(all.predicates, 5);
  EXPECT_EQ(all.op_counts[static_cast<int>(Op::kEq)], 2);
  EXPECT_EQ(all.op_counts[static_cast<int>(Op::kBetween)], 1);
  EXPECT_EQ(all.subscriptions_without_eq, 2);
  EXPECT_EQ(all.sample_events, 3);  // capped at the number of events
  // Event 0 matches S0, S1; event 1 matches S3; event 2 matches S1, S2, S3.
  EXPECT_DOUBLE_EQ(all.mean_matches, 2.0);
  EXPECT_EQ(all.p99_matches, 3);
  EXPECT_EQ(all.max_matches, 3);
  const WorkloadReport two = Summarize(*w, "abc", 2);  // events 0 and 1
  EXPECT_DOUBLE_EQ(two.mean_matches, 1.5);
  EXPECT_EQ(two.p99_matches, 2);

  const std::string text = FormatReportText(all);
  EXPECT_TRUE(absl::StrContains(text, "sha256: abc\n")) << text;
  EXPECT_TRUE(absl::StrContains(text, "mean 2.00, p99 3")) << text;
  const std::string json = FormatReportJson(all);
  EXPECT_TRUE(absl::StrContains(json, "\"sha256\": \"abc\"")) << json;
  EXPECT_TRUE(absl::StrContains(json, "\"EQ\": 2")) << json;
  EXPECT_TRUE(absl::StrContains(json, "\"p99_matches_per_event\": 3")) << json;
}

TEST(FormatKnobValue, ShortestFormThatRoundTrips) {
  EXPECT_EQ(internal::FormatKnobValue(0.7), "0.7");
  EXPECT_EQ(internal::FormatKnobValue(0), "0");
  EXPECT_EQ(internal::FormatKnobValue(0.1 + 0.2), "0.30000000000000004");
}

// fabret-10m (issue 45) is fabret-1m with ten times the subscriptions: the
// same knobs but the count and the name, the same events, and its first
// subscriptions are fabret-1m's, so that figures at 1M and 10M compare.
TEST(Presets, Fabret10mContinuesFabret1m) {
  const WorkloadOptions ten = *PresetOptions("fabret-10m");
  EXPECT_EQ(ten.subscriptions, 10000000);
  EXPECT_EQ(ten.preset, "fabret-10m");
  WorkloadOptions one = *PresetOptions("fabret-1m");
  one.preset = ten.preset;
  one.subscriptions = ten.subscriptions;
  EXPECT_EQ(ten, one);
  const std::string a = WorkloadText(Generate(Small("fabret-1m", 2000, 300)));
  const std::string b =
      WorkloadText(Generate(Small("fabret-10m", 5000, 300)));
  EXPECT_TRUE(absl::StartsWith(b, "# cohort-workload v1 preset=fabret-10m "));
  EXPECT_TRUE(absl::StartsWith(SubscriptionLines(b), SubscriptionLines(a)));
  EXPECT_GT(SubscriptionLines(b).size(), SubscriptionLines(a).size());
  EXPECT_EQ(EventLines(b), EventLines(a));
  EXPECT_TRUE(Validate(ten).ok());
}

}  // namespace
}  // namespace workload
}  // namespace cohort
