#include "service/observability/prometheus.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort {
namespace service {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

cohort::v1::Stats FilledStats() {
  cohort::v1::Stats stats;
  stats.set_subscriptions(1000);
  stats.set_events_published(123456);
  stats.set_uptime_us(2500000);
  stats.set_mode("staged");
  stats.set_partitions(2);
  stats.set_cohort_max(64);
  stats.set_cohort_wait_us(200);
  stats.set_listeners(3);
  stats.set_events_in_flight(48);
  stats.set_admission_limit(160);

  cohort::v1::StageStats* front = stats.add_stages();
  front->set_name("front");
  front->set_stage("front");
  front->set_events(123456);

  cohort::v1::StageStats* p0 = stats.add_stages();
  p0->set_name("partition/0");
  p0->set_stage("partition");
  p0->set_partition(0);
  p0->set_queue_limit(4096);
  p0->set_queue_length_mean(12.5);
  p0->set_queue_length_max(40);
  p0->mutable_wait()->set_count(10);
  p0->mutable_wait()->set_mean_us(2.5);
  p0->mutable_wait()->set_p50_us(2.0);
  p0->mutable_wait()->set_p99_us(9.0);
  p0->mutable_wait()->set_max_us(11.0);
  p0->mutable_service()->set_count(4);
  p0->mutable_service()->set_mean_us(100.0);
  p0->mutable_service()->set_p50_us(90.0);
  p0->mutable_service()->set_p99_us(150.0);
  p0->mutable_service()->set_max_us(151.0);
  const std::pair<uint64_t, uint64_t> buckets[] = {
      {1, 1}, {8, 2}, {100, 3}, {UINT64_MAX, 4}};
  for (const auto& [bound, count] : buckets) {
    cohort::v1::HistogramBucket* b = p0->add_batch_sizes();
    b->set_upper_bound(bound);
    b->set_count(count);
  }
  p0->set_batches(10);
  p0->set_events(123456);
  p0->set_matches(777);
  p0->set_updates(500);
  p0->set_rejections(5);

  cohort::v1::StageStats* reply = stats.add_stages();
  reply->set_name("re\"ply\\x\n");  // Exercises label escaping.
  reply->set_stage("reply");
  reply->set_dropped_deliveries(6);
  reply->set_disconnected_listeners(1);
  return stats;
}

// One parsed sample line: name{labels} value.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;  // Unescaped values.
  std::string value;
};

bool IsNameChar(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         c == ':' || (!first && c >= '0' && c <= '9');
}

// Parses a name at `line[*pos]`; false if there is none.
bool ParseName(const std::string& line, size_t* pos, std::string* name) {
  const size_t start = *pos;
  while (*pos < line.size() && IsNameChar(line[*pos], *pos == start)) ++*pos;
  *name = line.substr(start, *pos - start);
  return !name->empty();
}

// Parses `"escaped value"` at `line[*pos]`.
bool ParseQuoted(const std::string& line, size_t* pos, std::string* value) {
  if (*pos >= line.size() || line[*pos] != '"') return false;
  value->clear();
  for (++*pos; *pos < line.size(); ++*pos) {
    char c = line[*pos];
    if (c == '"') {
      ++*pos;
      return true;
    }
    if (c == '\\') {
      if (++*pos >= line.size()) return false;
      c = line[*pos];
      if (c == 'n') {
        c = '\n';
      } else if (c != '\\' && c != '"') {
        return false;
      }
    } else if (c == '\n') {
      return false;
    }
    value->push_back(c);
  }
  return false;
}

bool ParseValue(const std::string& text) {
  if (text == "+Inf" || text == "-Inf" || text == "NaN") return true;
  char* end = nullptr;
  std::strtod(text.c_str(), &end);
  return !text.empty() && end == text.c_str() + text.size();
}

bool ParseSample(const std::string& line, Sample* sample) {
  size_t pos = 0;
  if (!ParseName(line, &pos, &sample->name)) return false;
  if (pos < line.size() && line[pos] == '{') {
    ++pos;
    while (pos < line.size() && line[pos] != '}') {
      std::string name, value;
      if (!ParseName(line, &pos, &name)) return false;
      if (pos >= line.size() || line[pos++] != '=') return false;
      if (!ParseQuoted(line, &pos, &value)) return false;
      if (!sample->labels.emplace(name, value).second) return false;
      if (pos < line.size() && line[pos] == ',') ++pos;
    }
    if (pos >= line.size()) return false;
    ++pos;  // '}'
  }
  if (pos >= line.size() || line[pos++] != ' ') return false;
  sample->value = line.substr(pos);
  return ParseValue(sample->value);
}

// The family a sample belongs to, given the declared families' types.
std::string FamilyOf(const std::string& name,
                     const std::map<std::string, std::string>& types) {
  for (const char* suffix : {"_bucket", "_count", "_sum"}) {
    if (!absl::EndsWith(name, suffix)) continue;
    const std::string base = name.substr(0, name.size() - std::strlen(suffix));
    auto it = types.find(base);
    if (it != types.end() &&
        (it->second == "histogram" || it->second == "summary")) {
      return base;
    }
  }
  return name;
}

TEST(RenderPrometheus, EveryLineParsesAndFamiliesAreDeclaredOnceAndGrouped) {
  const std::string text = RenderPrometheus(FilledStats());
  ASSERT_TRUE(absl::EndsWith(text, "\n"));
  std::map<std::string, int> help_count, type_count;
  std::map<std::string, std::string> types;
  std::set<std::string> finished;  // Families whose group has ended.
  std::string current;             // Family of the current group.
  int samples = 0;
  const std::vector<std::string> lines =
      absl::StrSplit(absl::string_view(text).substr(0, text.size() - 1), '\n');
  for (const std::string& line : lines) {
    SCOPED_TRACE(line);
    ASSERT_FALSE(line.empty());
    if (absl::StartsWith(line, "# HELP ") ||
        absl::StartsWith(line, "# TYPE ")) {
      const std::vector<std::string> parts = absl::StrSplit(line, ' ');
      ASSERT_GE(parts.size(), 4u);
      const std::string& family = parts[2];
      if (parts[1] == "HELP") {
        ++help_count[family];
      } else {
        ++type_count[family];
        types[family] = parts[3];
        EXPECT_THAT(parts[3], ::testing::AnyOf("counter", "gauge", "summary",
                                               "histogram"));
      }
      if (family != current) {
        if (!current.empty()) finished.insert(current);
        current = family;
      }
      continue;
    }
    ASSERT_NE(line[0], '#');
    Sample sample;
    ASSERT_TRUE(ParseSample(line, &sample));
    ++samples;
    const std::string family = FamilyOf(sample.name, types);
    EXPECT_EQ(family, current) << "sample outside its family's group";
    EXPECT_EQ(finished.count(family), 0u);
    EXPECT_TRUE(absl::StartsWith(sample.name, "cohort_"));
  }
  EXPECT_GT(samples, 50);
  for (const auto& [family, n] : type_count) {
    EXPECT_EQ(n, 1) << family;
    EXPECT_EQ(help_count[family], 1) << family;
  }
  EXPECT_EQ(help_count.size(), type_count.size());
}

TEST(RenderPrometheus, ServiceWideMetrics) {
  const std::string text = RenderPrometheus(FilledStats());
  EXPECT_THAT(text, HasSubstr("# TYPE cohort_subscriptions gauge\n"
                              "cohort_subscriptions 1000\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE cohort_events_published_total counter\n"
                              "cohort_events_published_total 123456\n"));
  EXPECT_THAT(text, HasSubstr("\ncohort_uptime_seconds 2.5\n"));
  EXPECT_THAT(text, HasSubstr("\ncohort_listeners 3\n"));
  EXPECT_THAT(text, HasSubstr("\ncohort_events_in_flight 48\n"));
  EXPECT_THAT(text, HasSubstr("\ncohort_admission_limit 160\n"));
  EXPECT_THAT(text, HasSubstr("\ncohort_partitions 2\n"));
  EXPECT_THAT(text, HasSubstr("\ncohort_cohort_max 64\n"));
  EXPECT_THAT(text, HasSubstr("\ncohort_cohort_wait_us 200\n"));
  EXPECT_THAT(text, HasSubstr("\ncohort_info{mode=\"staged\"} 1\n"));
}

TEST(RenderPrometheus, PerStageMetrics) {
  const std::string text = RenderPrometheus(FilledStats());
  const std::string p0 =
      "{stage=\"partition\",name=\"partition/0\",partition=\"0\"";
  EXPECT_THAT(text, HasSubstr("\ncohort_stage_queue_limit" + p0 + "} 4096\n"));
  EXPECT_THAT(text,
              HasSubstr("\ncohort_stage_queue_length_mean" + p0 + "} 12.5\n"));
  EXPECT_THAT(text,
              HasSubstr("\ncohort_stage_queue_length_max" + p0 + "} 40\n"));
  EXPECT_THAT(text, HasSubstr("\ncohort_stage_batches_total" + p0 + "} 10\n"));
  EXPECT_THAT(text,
              HasSubstr("\ncohort_stage_events_total" + p0 + "} 123456\n"));
  EXPECT_THAT(text, HasSubstr("\ncohort_stage_matches_total" + p0 + "} 777\n"));
  EXPECT_THAT(text, HasSubstr("\ncohort_stage_updates_total" + p0 + "} 500\n"));
  EXPECT_THAT(text,
              HasSubstr("\ncohort_stage_rejections_total" + p0 + "} 5\n"));
  // Stages other than partitions carry no partition label.
  EXPECT_THAT(text, HasSubstr("\ncohort_stage_events_total{stage=\"front\","
                              "name=\"front\"} 123456\n"));
  EXPECT_THAT(
      text, HasSubstr("\ncohort_stage_dropped_deliveries_total{stage=\"reply\","
                      "name=\"re\\\"ply\\\\x\\n\"} 6\n"));
  EXPECT_THAT(text,
              HasSubstr("\ncohort_stage_disconnected_listeners_total{"
                        "stage=\"reply\",name=\"re\\\"ply\\\\x\\n\"} 1\n"));
}

TEST(RenderPrometheus, LatencySummaries) {
  const std::string text = RenderPrometheus(FilledStats());
  const std::string p0 =
      "{stage=\"partition\",name=\"partition/0\",partition=\"0\"";
  const std::string w = "\ncohort_stage_wait_microseconds";
  EXPECT_THAT(text, HasSubstr("# TYPE cohort_stage_wait_microseconds summary"));
  EXPECT_THAT(text, HasSubstr(w + p0 + ",quantile=\"0.5\"} 2\n"));
  EXPECT_THAT(text, HasSubstr(w + p0 + ",quantile=\"0.99\"} 9\n"));
  EXPECT_THAT(text, HasSubstr(w + p0 + ",quantile=\"1\"} 11\n"));
  EXPECT_THAT(text, HasSubstr(w + "_sum" + p0 + "} 25\n"));
  EXPECT_THAT(text, HasSubstr(w + "_count" + p0 + "} 10\n"));
  const std::string s = "\ncohort_stage_service_microseconds";
  EXPECT_THAT(text, HasSubstr(s + p0 + ",quantile=\"0.99\"} 150\n"));
  EXPECT_THAT(text, HasSubstr(s + "_sum" + p0 + "} 400\n"));
  EXPECT_THAT(text, HasSubstr(s + "_count" + p0 + "} 4\n"));
}

TEST(RenderPrometheus, BatchSizeHistogramIsCumulative) {
  const std::string text = RenderPrometheus(FilledStats());
  const std::string p0 =
      "{stage=\"partition\",name=\"partition/0\",partition=\"0\"";
  const std::string b = "\ncohort_stage_batch_size_bucket" + p0;
  EXPECT_THAT(text, HasSubstr("# TYPE cohort_stage_batch_size histogram"));
  EXPECT_THAT(text, HasSubstr(b + ",le=\"1\"} 1\n"));
  EXPECT_THAT(text, HasSubstr(b + ",le=\"2\"} 1\n"));
  EXPECT_THAT(text, HasSubstr(b + ",le=\"8\"} 3\n"));
  EXPECT_THAT(text, HasSubstr(b + ",le=\"64\"} 3\n"));
  EXPECT_THAT(text, HasSubstr(b + ",le=\"100\"} 6\n"));  // Extra bound kept.
  EXPECT_THAT(text, HasSubstr(b + ",le=\"128\"} 6\n"));
  EXPECT_THAT(text, HasSubstr(b + ",le=\"4096\"} 6\n"));
  EXPECT_THAT(text, HasSubstr(b + ",le=\"+Inf\"} 10\n"));
  EXPECT_THAT(text, Not(HasSubstr("le=\"18446744073709551615\"")));
  EXPECT_THAT(text,
              HasSubstr("\ncohort_stage_batch_size_count" + p0 + "} 10\n"));
  // An empty histogram still has every bucket, at zero.
  EXPECT_THAT(text,
              HasSubstr("\ncohort_stage_batch_size_bucket{stage=\"front\","
                        "name=\"front\",le=\"4096\"} 0\n"));
}

TEST(RenderPrometheus, NoStagesLeavesOutStageFamilies) {
  cohort::v1::Stats stats;
  stats.set_mode("threaded");
  const std::string text = RenderPrometheus(stats);
  EXPECT_THAT(text, HasSubstr("cohort_info{mode=\"threaded\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("\ncohort_subscriptions 0\n"));
  EXPECT_THAT(text, Not(HasSubstr("cohort_stage_")));
}

TEST(PrometheusInternal, EscapeLabelValue) {
  EXPECT_EQ(internal::EscapeLabelValue("plain/0"), "plain/0");
  EXPECT_EQ(internal::EscapeLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
}

TEST(PrometheusInternal, FormatDouble) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(internal::FormatDouble(0.0), "0");
  EXPECT_EQ(internal::FormatDouble(2.5), "2.5");
  EXPECT_EQ(internal::FormatDouble(0.1), "0.1");
  EXPECT_EQ(internal::FormatDouble(1e20), "1e+20");
  EXPECT_EQ(std::strtod(internal::FormatDouble(1.0 / 3).c_str(), nullptr),
            1.0 / 3);
  EXPECT_EQ(internal::FormatDouble(kInf), "+Inf");
  EXPECT_EQ(internal::FormatDouble(-kInf), "-Inf");
  EXPECT_EQ(internal::FormatDouble(std::nan("")), "NaN");
}

}  // namespace
}  // namespace service
}  // namespace cohort
