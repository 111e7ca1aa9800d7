// Tests of the load driver: the JSON and CSV
// reports, option checks, and RunLoad end to end against a CohortServer
// started in-process on 127.0.0.1.
#include "client/load.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "proto/cohort/v1/pubsub.pb.h"
#include "service/api/server.h"
#include "service/api/server_test_util.h"
#include "service/observability/latency_histogram.h"
#include "workload/workload.h"

namespace cohort {
namespace client {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// ---------------------------------------------------------------------------
// Reports.

// A report as a two-second publish run of 1,000 events with 2,500 matches
// would produce, with 3 rejections and 1 UNAVAILABLE.
LoadReport SampleReport() {
  LoadReport r;
  r.options.server = "127.0.0.1:50051";
  r.options.mode = PublishMode::kUnary;
  r.options.clients = 2;
  r.options.batch = 1;
  r.options.rate = 500;
  r.options.warmup_s = 1;
  r.options.duration_s = 2;
  r.subscribed = true;
  r.subscribe.subscribed = 2000;
  r.subscribe.seconds = 0.5;
  r.published = true;
  r.publish.requests = 1000;
  r.publish.events = 1000;
  r.publish.matches = 2500;
  for (int i = 1; i <= 1000; ++i) r.publish.latency.Record(i * 1000);  // 1 ms
  r.publish.errors["RESOURCE_EXHAUSTED"] = 3;
  r.publish.errors["UNAVAILABLE"] = 1;
  return r;
}

google::protobuf::Struct ParseJson(const std::string& json) {
  google::protobuf::Struct out;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &out);
  EXPECT_TRUE(status.ok()) << status.ToString() << "\n" << json;
  return out;
}

double Number(const google::protobuf::Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  EXPECT_TRUE(it != s.fields().end()) << key;
  return it == s.fields().end() ? -1 : it->second.number_value();
}

TEST(LoadReportJson, HasTheFieldsTheBenchScriptsRead) {
  const std::string json = LoadReportJson(SampleReport());
  EXPECT_EQ(json.back(), '\n');
  const google::protobuf::Struct s = ParseJson(json);
  EXPECT_EQ(s.fields().at("phase").string_value(), "publish");
  EXPECT_EQ(s.fields().at("mode").string_value(), "unary");
  EXPECT_EQ(Number(s, "rate"), 500);
  EXPECT_EQ(Number(s, "duration"), 2);
  EXPECT_EQ(Number(s, "events_per_s"), 500);
  EXPECT_EQ(Number(s, "matches_per_event"), 2.5);
  EXPECT_EQ(Number(s, "rejections"), 3);
  const auto& latency = s.fields().at("latency_us").struct_value();
  EXPECT_EQ(Number(latency, "count"), 1000);
  EXPECT_NEAR(Number(latency, "p50"), 500, 500 / 64.0);
  EXPECT_NEAR(Number(latency, "p90"), 900, 900 / 64.0);
  EXPECT_NEAR(Number(latency, "p99"), 990, 990 / 64.0);
  EXPECT_NEAR(Number(latency, "p999"), 999, 999 / 64.0);
  EXPECT_EQ(Number(latency, "max"), 1000);
  EXPECT_NEAR(Number(latency, "mean"), 500.5, 0.1);
  const auto& errors = s.fields().at("errors").struct_value();
  EXPECT_EQ(Number(errors, "RESOURCE_EXHAUSTED"), 3);
  EXPECT_EQ(Number(errors, "UNAVAILABLE"), 1);
  const auto& load = s.fields().at("load").struct_value();
  EXPECT_EQ(Number(load, "subscriptions"), 2000);
  EXPECT_EQ(Number(load, "seconds"), 0.5);
  EXPECT_EQ(Number(load, "subscriptions_per_s"), 4000);
  // No GetStats: "stats" is null.
  EXPECT_EQ(s.fields().at("stats").kind_case(),
            google::protobuf::Value::kNullValue);
}

TEST(LoadReportJson, LoadOnlyRunHasPhaseLoadAndNoPublishCounts) {
  LoadReport r;
  r.options.mode = PublishMode::kNone;
  const google::protobuf::Struct s = ParseJson(LoadReportJson(r));
  EXPECT_EQ(s.fields().at("phase").string_value(), "load");
  EXPECT_EQ(s.fields().at("mode").string_value(), "none");
  EXPECT_EQ(Number(s, "events_per_s"), 0);
  EXPECT_EQ(Number(s, "matches_per_event"), 0);
  EXPECT_EQ(s.fields().at("load").kind_case(),
            google::protobuf::Value::kNullValue);
}

TEST(LoadReportJson, StageCountersAreTheDifferenceOverThePublishPhase) {
  LoadReport r = SampleReport();
  v1::Stats before, after;
  v1::StageStats* b = before.add_stages();
  b->set_name("partition/0");
  b->set_batches(10);
  b->set_events(100);
  v1::StageStats* a = after.add_stages();
  a->set_name("partition/0");
  a->set_batches(30);
  a->set_events(900);
  a->set_rejections(2);
  after.set_mode("staged");
  after.set_partitions(1);
  r.publish.before = before;
  r.publish.after = after;
  const google::protobuf::Struct s = ParseJson(LoadReportJson(r));
  const auto& stats = s.fields().at("stats").struct_value();
  EXPECT_EQ(stats.fields().at("mode").string_value(), "staged");
  const auto& stage =
      stats.fields().at("stages").list_value().values(0).struct_value();
  EXPECT_EQ(stage.fields().at("name").string_value(), "partition/0");
  EXPECT_EQ(Number(stage, "batches"), 20);
  EXPECT_EQ(Number(stage, "events"), 800);
  EXPECT_EQ(Number(stage, "events_per_batch"), 40);
  EXPECT_EQ(Number(stage, "rejections"), 2);
  EXPECT_THAT(FormatServerText(r), HasSubstr("partition/0"));
}

TEST(LoadReportJson, EscapesStrings) {
  LoadReport r;
  r.options.server = "a\"b\\c\n";
  const google::protobuf::Struct s = ParseJson(LoadReportJson(r));
  EXPECT_EQ(s.fields().at("server").string_value(), "a\"b\\c\n");
}

// Splits one CSV line into fields, honouring RFC 4180 quotes.
std::vector<std::string> CsvFields(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      fields.back().push_back('"');
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back().push_back(c);
    }
  }
  return fields;
}

// The CSV as a map from column name to value.
std::map<std::string, std::string> CsvRow(const std::string& csv) {
  std::vector<std::string> lines = absl::StrSplit(csv, '\n');
  EXPECT_EQ(lines.size(), 3u) << csv;  // header, row, "" after the last \n
  EXPECT_EQ(lines.back(), "");
  const std::vector<std::string> header = CsvFields(lines[0]);
  const std::vector<std::string> row = CsvFields(lines[1]);
  EXPECT_EQ(header.size(), row.size()) << csv;
  std::map<std::string, std::string> out;
  for (size_t i = 0; i < std::min(header.size(), row.size()); ++i) {
    out[header[i]] = row[i];
  }
  return out;
}

TEST(LoadReportCsv, HeaderAndOneRowWithTheSameColumns) {
  const std::string csv = LoadReportCsv(SampleReport());
  EXPECT_THAT(csv, StartsWith("phase,mode,server,clients,"));
  std::map<std::string, std::string> row = CsvRow(csv);
  EXPECT_EQ(row["phase"], "publish");
  EXPECT_EQ(row["mode"], "unary");
  EXPECT_EQ(row["events_per_s"], "500");
  EXPECT_EQ(row["matches_per_event"], "2.500");
  EXPECT_EQ(row["latency_count"], "1000");
  EXPECT_EQ(row["max_us"], "1000.0");
  EXPECT_EQ(row["errors"], "4");
  EXPECT_EQ(row["rejections"], "3");
  EXPECT_EQ(row["error_codes"], "RESOURCE_EXHAUSTED=3;UNAVAILABLE=1");
  EXPECT_EQ(row["subscriptions"], "2000");
  EXPECT_EQ(row["subscriptions_per_s"], "4000");
  for (const char* p : {"p50_us", "p90_us", "p99_us", "p999_us"}) {
    EXPECT_FALSE(row[p].empty()) << p;
  }
}

TEST(LoadReportCsv, QuotesFieldsWithCommasAndQuotes) {
  LoadReport r;
  r.options.server = "dns:///a,b\"c";
  std::map<std::string, std::string> row = CsvRow(LoadReportCsv(r));
  EXPECT_EQ(row["server"], "dns:///a,b\"c");
  EXPECT_THAT(LoadReportCsv(r), HasSubstr(",\"dns:///a,b\"\"c\","));
}

TEST(LoadReportCsv, SubscribeColumnsAreEmptyWithoutASubscribePhase) {
  LoadReport r;
  std::map<std::string, std::string> row = CsvRow(LoadReportCsv(r));
  EXPECT_EQ(row["phase"], "load");
  EXPECT_EQ(row["subscriptions"], "");
  EXPECT_EQ(row["subscriptions_per_s"], "");
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(WriteLoadReport, FormatFollowsTheFileNameEnding) {
  const std::string dir = ::testing::TempDir();
  const LoadReport r = SampleReport();
  ASSERT_TRUE(WriteLoadReport(r, dir + "/r.json").ok());
  EXPECT_EQ(ReadFile(dir + "/r.json"), LoadReportJson(r));
  ASSERT_TRUE(WriteLoadReport(r, dir + "/r.csv").ok());
  EXPECT_EQ(ReadFile(dir + "/r.csv"), LoadReportCsv(r));
  EXPECT_EQ(WriteLoadReport(r, dir + "/r.txt").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteLoadReport(r, dir + "/no/such/dir/r.json").code(),
            absl::StatusCode::kDataLoss);
}

TEST(FormatText, PublishSummaryNamesPercentilesAndErrors) {
  const std::string text = FormatPublishText(SampleReport());
  EXPECT_THAT(text, HasSubstr("1000 events in 2.0 s = 500 events/s"));
  EXPECT_THAT(text, HasSubstr("2.50 matches/event"));
  EXPECT_THAT(text, HasSubstr("p99.9"));
  EXPECT_THAT(text, HasSubstr("rejections 3"));
  EXPECT_THAT(text, HasSubstr("RESOURCE_EXHAUSTED=3 UNAVAILABLE=1"));
  EXPECT_THAT(FormatSubscribeText(SampleReport().subscribe),
              HasSubstr("2000 subscriptions in 0.50 s = 4000 subscriptions/s"));
}

// ---------------------------------------------------------------------------
// Options.

TEST(LoadOptions, PublishModeNamesRoundTrip) {
  for (PublishMode mode :
       {PublishMode::kNone, PublishMode::kStream, PublishMode::kUnary}) {
    absl::StatusOr<PublishMode> parsed =
        ParsePublishMode(PublishModeName(mode));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, mode);
  }
  EXPECT_EQ(ParsePublishMode("udp").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(LoadOptions, ValidationNamesTheBadField) {
  EXPECT_TRUE(ValidateLoadOptions(LoadOptions()).ok());
  LoadOptions o;
  o.clients = 0;
  EXPECT_THAT(ValidateLoadOptions(o).message(), HasSubstr("clients (0)"));
  o = LoadOptions();
  o.subscribe_in_flight = 0;
  EXPECT_THAT(ValidateLoadOptions(o).message(),
              HasSubstr("subscribe_in_flight (0)"));
  o = LoadOptions();
  o.duration_s = 0;
  EXPECT_THAT(ValidateLoadOptions(o).message(), HasSubstr("duration_s"));
  o = LoadOptions();
  o.rate = -1;
  EXPECT_THAT(ValidateLoadOptions(o).message(), HasSubstr("rate"));
}

// ---------------------------------------------------------------------------
// RunLoad against a real server.

class RunLoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<service::CohortServer>> server =
        service::CohortServer::Start(service::testing::LocalServerOptions());
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    absl::StatusOr<workload::Workload> workload =
        workload::LoadOrGenerate("", "fabret-1m", kSubscriptions, 64);
    ASSERT_TRUE(workload.ok()) << workload.status();
    workload_ = std::move(*workload);
  }

  // Short runs: enough requests to measure, fast under ASan.
  LoadOptions Options(PublishMode mode) const {
    LoadOptions o;
    o.server = absl::StrCat("127.0.0.1:", server_->port());
    o.mode = mode;
    o.subscribe_batch = 128;  // several batches
    o.clients = 2;
    o.batch = 1;
    o.warmup_s = 0.1;
    o.duration_s = 0.5;
    o.drain_s = 5;
    return o;
  }

  // 2,000 fabret-1m subscriptions give about 5 matches per event.
  static constexpr int64_t kSubscriptions = 2000;
  std::unique_ptr<service::CohortServer> server_;
  workload::Workload workload_;
};

void ExpectHealthyPublish(const LoadReport& r) {
  EXPECT_TRUE(r.published);
  EXPECT_GT(r.publish.events, 0u);
  EXPECT_GT(r.EventsPerSecond(), 0);
  EXPECT_GT(r.MatchesPerEvent(), 0);
  EXPECT_GT(r.publish.latency.count(), 0u);
  EXPECT_TRUE(r.publish.errors.empty());
  EXPECT_EQ(r.publish.unanswered, 0u);
  EXPECT_TRUE(r.publish.before.ok()) << r.publish.before.status();
  EXPECT_TRUE(r.publish.after.ok()) << r.publish.after.status();
}

TEST_F(RunLoadTest, SubscribesEverythingReportingProgressThenClosedLoop) {
  std::vector<SubscribeProgress> progress;
  bool subscribed_called = false;
  LoadCallbacks callbacks;
  callbacks.on_progress = [&](const SubscribeProgress& p) {
    progress.push_back(p);
  };
  callbacks.on_subscribed = [&](const LoadReport& r) {
    subscribed_called = true;
    EXPECT_EQ(r.subscribe.subscribed, static_cast<uint64_t>(kSubscriptions));
  };
  absl::StatusOr<LoadReport> r =
      RunLoad(workload_, Options(PublishMode::kUnary), callbacks);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(subscribed_called);
  EXPECT_TRUE(r->subscribed);
  EXPECT_EQ(r->subscribe.subscribed, static_cast<uint64_t>(kSubscriptions));
  EXPECT_EQ(r->subscribe.failed, 0u);
  EXPECT_TRUE(r->subscribe.errors.empty());
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.back().done, progress.back().total);
  EXPECT_EQ(progress.back().total, static_cast<uint64_t>(kSubscriptions));
  ExpectHealthyPublish(*r);
  ASSERT_TRUE(r->publish.after.ok());
  EXPECT_EQ(r->publish.after->subscriptions(),
            static_cast<uint64_t>(kSubscriptions));
}

TEST_F(RunLoadTest, OpenLoopSendsTheOfferedRate) {
  LoadOptions o = Options(PublishMode::kUnary);
  o.rate = 400;  // 200 events in the measured 0.5 s
  absl::StatusOr<LoadReport> r = RunLoad(workload_, o);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectHealthyPublish(*r);
  // Latency counts requests due in the interval: exactly rate * duration.
  EXPECT_EQ(r->publish.latency.count(), 200u);
  EXPECT_NEAR(r->EventsPerSecond(), 400, 100);  // loaded machines stall
}

TEST_F(RunLoadTest, StreamModeWithReturnIds) {
  LoadOptions o = Options(PublishMode::kStream);
  o.batch = 8;
  o.return_ids = true;
  absl::StatusOr<LoadReport> r = RunLoad(workload_, o);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectHealthyPublish(*r);
}

TEST_F(RunLoadTest, SkipLoadAndModeNoneDoNothing) {
  LoadOptions o = Options(PublishMode::kNone);
  o.subscribe = false;
  absl::StatusOr<LoadReport> r = RunLoad(workload_, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->subscribed);
  EXPECT_FALSE(r->published);
}

TEST(RunLoad, UnreachableServerIsUnavailable) {
  absl::StatusOr<workload::Workload> workload =
      workload::LoadOrGenerate("", "fabret-1m", 10, 10);
  ASSERT_TRUE(workload.ok());
  LoadOptions o;
  o.server = "127.0.0.1:1";
  o.control_timeout = absl::Seconds(2);
  EXPECT_EQ(RunLoad(*workload, o).status().code(),
            absl::StatusCode::kUnavailable);
  o.clients = 0;
  EXPECT_EQ(RunLoad(*workload, o).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace client
}  // namespace cohort
