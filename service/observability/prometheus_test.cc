#include "service/observability/prometheus.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <optional>
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
  stats.set_index_copies(1);
  stats.set_stolen_matches(17);
  stats.set_pipeline_sleeps(18);
  stats.set_pipeline_wakeups(19);
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
  reply->set_deliveries(42);
  return stats;
}

// FilledStats with histograms: partition/0 waited 3 us, 20 us and 2 ms,
// and ran cohorts of 30 us and 4 s; publishes took 80 us and 70 ms; the
// journal synced once in 1.5 ms.
MetricsSnapshot FilledSnapshot() {
  MetricsSnapshot snapshot;
  snapshot.stats = FilledStats();
  snapshot.stages.resize(snapshot.stats.stages_size());
  LatencyHistogram wait, service, publish, journal;
  for (int64_t ns : {3'000, 20'000, 2'000'000}) wait.Record(ns);
  for (int64_t ns : {int64_t{30'000}, int64_t{4'000'000'000}}) {
    service.Record(ns);
  }
  for (int64_t ns : {80'000, 70'000'000}) publish.Record(ns);
  journal.Record(1'500'000);
  snapshot.stages[1].wait = wait.ToBuckets();
  snapshot.stages[1].service = service.ToBuckets();
  snapshot.stages[1].queue_length_sum = 125;
  snapshot.stages[1].batch_size_sum = 640;
  snapshot.publish = publish.ToBuckets();
  snapshot.journal_sync = journal.ToBuckets();
  ProcessMetrics process;
  process.cpu_seconds = 1.25;
  process.resident_bytes = 1 << 20;
  process.virtual_bytes = 1 << 30;
  process.open_fds = 12;
  process.max_fds = 1024;
  process.start_time_seconds = 1.7e9;
  snapshot.process = process;
  return snapshot;
}

MetricsSnapshot StatsOnly(const cohort::v1::Stats& stats) {
  MetricsSnapshot snapshot;
  snapshot.stats = stats;
  return snapshot;
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
  const std::string text = RenderPrometheus(FilledSnapshot());
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
    EXPECT_TRUE(absl::StartsWith(sample.name, "cohort_") ||
                absl::StartsWith(sample.name, "process_"));
  }
  EXPECT_GT(samples, 50);
  for (const auto& [family, n] : type_count) {
    EXPECT_EQ(n, 1) << family;
    EXPECT_EQ(help_count[family], 1) << family;
  }
  EXPECT_EQ(help_count.size(), type_count.size());
  // Naming conventions: counters end in _total and nothing else does;
  // units are spelled out (no _us, _ms or _microseconds).
  for (const auto& [family, type] : types) {
    EXPECT_EQ(type == "counter", absl::EndsWith(family, "_total")) << family;
    for (const char* unit : {"_us", "_ms", "_microseconds", "_nanoseconds"}) {
      EXPECT_FALSE(absl::EndsWith(family, unit)) << family;
    }
  }
  EXPECT_EQ(types["cohort_stage_wait_seconds"], "histogram");
  EXPECT_EQ(types["cohort_publish_duration_seconds"], "histogram");
}

// Every histogram's buckets are cumulative (never decreasing, ending in
// +Inf) and its +Inf bucket equals its _count.
TEST(RenderPrometheus, HistogramsAreCumulativeAndEndInTheirCount) {
  const std::string text = RenderPrometheus(FilledSnapshot());
  std::map<std::string, std::vector<double>> buckets;  // series -> counts
  std::map<std::string, std::string> inf, count;
  for (absl::string_view view : absl::StrSplit(text, '\n')) {
    const std::string line(view);
    if (line.empty() || line[0] == '#') continue;
    Sample sample;
    ASSERT_TRUE(ParseSample(line, &sample)) << line;
    std::string series = sample.name;
    if (absl::EndsWith(series, "_bucket")) {
      series.resize(series.size() - std::strlen("_bucket"));
    } else if (absl::EndsWith(series, "_count")) {
      series.resize(series.size() - std::strlen("_count"));
    } else {
      continue;
    }
    const std::string le = sample.labels["le"];
    sample.labels.erase("le");
    for (const auto& [name, value] : sample.labels) {
      series += "," + name + "=" + value;
    }
    if (absl::EndsWith(sample.name, "_count")) {
      count[series] = sample.value;
    } else if (le == "+Inf") {
      inf[series] = sample.value;
      buckets[series].push_back(std::strtod(sample.value.c_str(), nullptr));
    } else {
      buckets[series].push_back(std::strtod(sample.value.c_str(), nullptr));
    }
  }
  EXPECT_GT(buckets.size(), 5u);
  for (const auto& [series, counts] : buckets) {
    SCOPED_TRACE(series);
    EXPECT_TRUE(std::is_sorted(counts.begin(), counts.end()));
    ASSERT_EQ(inf.count(series), 1u);
    EXPECT_EQ(inf[series], count[series]);
  }
}

TEST(RenderPrometheus, ClusterSnapshotsAndTrimming) {
  MetricsSnapshot snapshot = FilledSnapshot();
  EXPECT_THAT(RenderPrometheus(snapshot),
              ::testing::Not(HasSubstr("cohort_cluster_")));
  v1::ClusterStats* cluster = snapshot.stats.mutable_cluster();
  cluster->set_node("node-1");
  cluster->set_snapshot_position(4000);
  cluster->set_snapshots_published(3);
  cluster->set_snapshot_failures(1);
  cluster->set_log_first_position(2001);
  const std::string text = RenderPrometheus(snapshot);
  EXPECT_THAT(text, HasSubstr("# TYPE cohort_cluster_snapshot_position gauge\n"
                              "cohort_cluster_snapshot_position 4000\n"));
  EXPECT_THAT(text, HasSubstr("\ncohort_cluster_snapshots_published_total 3\n"));
  EXPECT_THAT(text, HasSubstr("\ncohort_cluster_snapshot_failures_total 1\n"));
  EXPECT_THAT(text, HasSubstr("\ncohort_cluster_log_first_position 2001\n"));
  // Never trimmed (or an older node that does not say): 1.
  cluster->set_log_first_position(0);
  EXPECT_THAT(RenderPrometheus(snapshot),
              HasSubstr("\ncohort_cluster_log_first_position 1\n"));
}

TEST(RenderPrometheus, ServiceWideMetrics) {
  const std::string text = RenderPrometheus(FilledSnapshot());
  EXPECT_THAT(text, HasSubstr("# TYPE cohort_subscriptions gauge\n"
                              "cohort_subscriptions 1000\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE cohort_events_published_total counter\n"
                              "cohort_events_published_total 123456\n"));
  EXPECT_THAT(text, HasSubstr("\ncohort_uptime_seconds 2.5\n"));
  EXPECT_THAT(text, HasSubstr("\ncohort_listeners 3\n"));
  EXPECT_THAT(text, HasSubstr("\ncohort_events_in_flight 48\n"));
  EXPECT_THAT(text, HasSubstr("\ncohort_admission_limit 160\n"));
  EXPECT_THAT(text, HasSubstr("\ncohort_partitions 2\n"));
  EXPECT_THAT(text, HasSubstr("\ncohort_index_copies 1\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE cohort_stolen_matches_total counter\n"
                              "cohort_stolen_matches_total 17\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE cohort_pipeline_sleeps_total counter\n"
                              "cohort_pipeline_sleeps_total 18\n"));
  EXPECT_THAT(text,
              HasSubstr("# TYPE cohort_pipeline_wakeups_total counter\n"
                        "cohort_pipeline_wakeups_total 19\n"));
  EXPECT_THAT(text, HasSubstr("\ncohort_cohort_max 64\n"));
  EXPECT_THAT(text, HasSubstr("\ncohort_cohort_wait_seconds 0.0002\n"));
  EXPECT_THAT(text, HasSubstr("\ncohort_info{mode=\"staged\","
                              "index_layout=\"\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE process_cpu_seconds_total counter\n"
                              "process_cpu_seconds_total 1.25\n"));
  EXPECT_THAT(text, HasSubstr("\nprocess_resident_memory_bytes 1048576\n"));
  EXPECT_THAT(text, HasSubstr("\nprocess_virtual_memory_bytes 1073741824\n"));
  EXPECT_THAT(text, HasSubstr("\nprocess_open_fds 12\n"));
  EXPECT_THAT(text, HasSubstr("\nprocess_max_fds 1024\n"));
  EXPECT_THAT(text, HasSubstr("\nprocess_start_time_seconds 1700000000\n"));
}

// Publish and journal durations are histograms in seconds; a sample lands
// in the first bucket whose bound is at or above it.
TEST(RenderPrometheus, PublishAndJournalDurations) {
  const std::string text = RenderPrometheus(FilledSnapshot());
  const std::string p = "\ncohort_publish_duration_seconds_bucket{le=";
  EXPECT_THAT(text, HasSubstr(p + "\"5e-05\"} 0\n"));
  EXPECT_THAT(text, HasSubstr(p + "\"0.0001\"} 1\n"));
  EXPECT_THAT(text, HasSubstr(p + "\"0.05\"} 1\n"));
  EXPECT_THAT(text, HasSubstr(p + "\"0.1\"} 2\n"));
  EXPECT_THAT(text, HasSubstr(p + "\"+Inf\"} 2\n"));
  EXPECT_THAT(text,
              HasSubstr("\ncohort_publish_duration_seconds_sum 0.07008\n"));
  EXPECT_THAT(text, HasSubstr("\ncohort_publish_duration_seconds_count 2\n"));
  const std::string j = "\ncohort_journal_fsync_duration_seconds_bucket{le=";
  EXPECT_THAT(text, HasSubstr(j + "\"0.001\"} 0\n"));
  EXPECT_THAT(text, HasSubstr(j + "\"0.0025\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("\ncohort_journal_fsync_duration_seconds_sum "
                        "0.0015\n"));
  // Without a journal (and without /proc) those families are left out.
  MetricsSnapshot bare = FilledSnapshot();
  bare.journal_sync.reset();
  bare.process.reset();
  const std::string without = RenderPrometheus(bare);
  EXPECT_THAT(without, Not(HasSubstr("cohort_journal_")));
  EXPECT_THAT(without, Not(HasSubstr("process_")));
  EXPECT_THAT(without, HasSubstr("cohort_publish_duration_seconds_count 2\n"));
}

TEST(RenderPrometheus, PerStageMetrics) {
  const std::string text = RenderPrometheus(FilledSnapshot());
  const std::string p0 =
      "{stage=\"partition\",name=\"partition/0\",partition=\"0\"";
  EXPECT_THAT(text, HasSubstr("\ncohort_stage_queue_limit" + p0 + "} 4096\n"));
  EXPECT_THAT(text,
              HasSubstr("\ncohort_stage_queue_length_sum" + p0 + "} 125\n"));
  EXPECT_THAT(text,
              HasSubstr("\ncohort_stage_queue_length_count" + p0 + "} 10\n"));
  EXPECT_THAT(text, Not(HasSubstr("queue_length_mean")));
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
  EXPECT_THAT(text, HasSubstr("\ncohort_stage_deliveries_total{stage=\"reply\","
                              "name=\"re\\\"ply\\\\x\\n\"} 42\n"));
}

TEST(RenderPrometheus, StageDurationHistograms) {
  const std::string text = RenderPrometheus(FilledSnapshot());
  const std::string p0 =
      "{stage=\"partition\",name=\"partition/0\",partition=\"0\"";
  const std::string w = "\ncohort_stage_wait_seconds_bucket" + p0;
  EXPECT_THAT(text, HasSubstr("# TYPE cohort_stage_wait_seconds histogram"));
  EXPECT_THAT(text, HasSubstr(w + ",le=\"1e-05\"} 1\n"));
  EXPECT_THAT(text, HasSubstr(w + ",le=\"2.5e-05\"} 2\n"));
  EXPECT_THAT(text, HasSubstr(w + ",le=\"0.001\"} 2\n"));
  EXPECT_THAT(text, HasSubstr(w + ",le=\"0.0025\"} 3\n"));
  EXPECT_THAT(text, HasSubstr(w + ",le=\"+Inf\"} 3\n"));
  EXPECT_THAT(text,
              HasSubstr("\ncohort_stage_wait_seconds_sum" + p0 +
                        "} 0.002023\n"));
  EXPECT_THAT(text,
              HasSubstr("\ncohort_stage_wait_seconds_count" + p0 + "} 3\n"));
  const std::string s = "\ncohort_stage_service_seconds_bucket" + p0;
  EXPECT_THAT(text, HasSubstr(s + ",le=\"2.5e-05\"} 0\n"));
  EXPECT_THAT(text, HasSubstr(s + ",le=\"5e-05\"} 1\n"));
  EXPECT_THAT(text, HasSubstr(s + ",le=\"2.5\"} 1\n"));
  EXPECT_THAT(text, HasSubstr(s + ",le=\"5\"} 2\n"));
  // Stages without samples have every bucket, at zero.
  EXPECT_THAT(text, HasSubstr("\ncohort_stage_wait_seconds_bucket{"
                              "stage=\"front\",name=\"front\",le=\"10\"} 0\n"));
  // Without StageHistograms there are no per-stage histograms at all.
  const std::string bare = RenderPrometheus(StatsOnly(FilledStats()));
  EXPECT_THAT(bare, Not(HasSubstr("cohort_stage_wait_seconds")));
  EXPECT_THAT(bare, Not(HasSubstr("cohort_stage_queue_length_sum")));
  EXPECT_THAT(bare, HasSubstr("cohort_stage_batch_size_count"));
}

// ToBuckets counts a sample towards a bound by its bucket's midpoint:
// exact away from the bounds, and within the histogram's 1.6% near them.
TEST(LatencyHistogramBuckets, CumulativeCountsAtTheExportedBounds) {
  LatencyHistogram h;
  EXPECT_EQ(h.ToBuckets().count, 0u);
  EXPECT_EQ(h.ToBuckets().cumulative.back(), 0u);
  for (int64_t ns : std::vector<int64_t>{9'000, 10'200, 99'000, 101'000,
                                          20'000'000'000}) {
    h.Record(ns);
  }
  const DurationBuckets b = h.ToBuckets();
  EXPECT_EQ(b.count, 5u);
  EXPECT_DOUBLE_EQ(b.sum_seconds, 20.0002192);
  EXPECT_EQ(b.cumulative[0], 1u);  // 10 us
  EXPECT_EQ(b.cumulative[1], 2u);  // 25 us
  EXPECT_EQ(b.cumulative[3], 3u);  // 100 us
  EXPECT_EQ(b.cumulative[4], 4u);  // 250 us
  EXPECT_EQ(b.cumulative.back(), 4u);  // 10 s: the 20 s sample is above
}

TEST(RenderPrometheus, BatchSizeHistogramIsCumulative) {
  const std::string text = RenderPrometheus(FilledSnapshot());
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
  EXPECT_THAT(text,
              HasSubstr("\ncohort_stage_batch_size_sum" + p0 + "} 640\n"));
  // An empty histogram still has every bucket, at zero.
  EXPECT_THAT(text,
              HasSubstr("\ncohort_stage_batch_size_bucket{stage=\"front\","
                        "name=\"front\",le=\"4096\"} 0\n"));
}

TEST(RenderPrometheus, NoStagesLeavesOutStageFamilies) {
  cohort::v1::Stats stats;
  stats.set_mode("threaded");
  const std::string text = RenderPrometheus(StatsOnly(stats));
  EXPECT_THAT(text, HasSubstr("cohort_info{mode=\"threaded\","
                              "index_layout=\"\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("\ncohort_subscriptions 0\n"));
  EXPECT_THAT(text, Not(HasSubstr("cohort_stage_")));
}

// This process's figures are read from /proc and are plausible.
TEST(ReadProcessMetrics, ReadsThisProcess) {
  std::vector<char> touched(8 << 20, 1);  // 8 MiB resident at least
  const std::optional<ProcessMetrics> process = ReadProcessMetrics();
  ASSERT_TRUE(process.has_value());
  EXPECT_GE(process->resident_bytes, touched.size());
  EXPECT_GE(process->virtual_bytes, process->resident_bytes);
  EXPECT_GE(process->open_fds, 3u);  // stdin, stdout, stderr at least
  EXPECT_GE(process->max_fds, process->open_fds);
  EXPECT_GE(process->cpu_seconds, 0.0);
  const double now = static_cast<double>(std::time(nullptr));
  EXPECT_LE(process->start_time_seconds, now + 1);
  EXPECT_GT(process->start_time_seconds, now - 3600);
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
