// The load driver's reports: JSON, CSV and text, and the server's stage
// profile over the publish phase (GetStats after minus before).
#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "service/observability/latency_histogram.h"
#include "client/load.h"
#include "proto/cohort/v1/pubsub.pb.h"

namespace cohort {
namespace client {
namespace {

// One stage over the publish phase: counters are after - before.
struct StageSummary {
  std::string name;
  uint64_t batches = 0;
  uint64_t events = 0;
  uint64_t matches = 0;
  double mean_batch = 0;  // from the batch_sizes histogram
  // events / batches: exact where a batch holds events (a partition's
  // cohorts), unlike the histogram estimate, whose buckets are wide.
  double events_per_batch = 0;
  const v1::StageStats* stats = nullptr;  // the "after" snapshot
};

// Mean batch size from the batch_sizes histogram difference: each bucket
// counts at its midpoint (previous listed bound + 1 ... its bound); the
// overflow bucket at its lower end.
double HistogramMean(const v1::StageStats& after,
                     const v1::StageStats* before) {
  std::map<uint64_t, int64_t> counts;
  for (const v1::HistogramBucket& b : after.batch_sizes()) {
    counts[b.upper_bound()] += b.count();
  }
  if (before != nullptr) {
    for (const v1::HistogramBucket& b : before->batch_sizes()) {
      counts[b.upper_bound()] -= b.count();
    }
  }
  double sum = 0, n = 0;
  uint64_t lower = 1;
  for (const auto& [bound, count] : counts) {
    const double mid = bound == UINT64_MAX ? lower : (lower + bound) / 2.0;
    sum += mid * count;
    n += count;
    lower = bound + 1;
  }
  return n == 0 ? 0 : sum / n;
}

std::vector<StageSummary> SummarizeStages(const v1::Stats& before,
                                          const v1::Stats& after) {
  absl::flat_hash_map<std::string, const v1::StageStats*> old;
  for (const v1::StageStats& s : before.stages()) old[s.name()] = &s;
  std::vector<StageSummary> out;
  for (const v1::StageStats& s : after.stages()) {
    auto it = old.find(s.name());
    const v1::StageStats* b = it == old.end() ? nullptr : it->second;
    StageSummary sum;
    sum.name = s.name();
    sum.batches = s.batches() - (b ? b->batches() : 0);
    sum.events = s.events() - (b ? b->events() : 0);
    sum.matches = s.matches() - (b ? b->matches() : 0);
    sum.mean_batch = HistogramMean(s, b);
    if (sum.batches > 0) {
      sum.events_per_batch = static_cast<double>(sum.events) / sum.batches;
    }
    sum.stats = &s;
    out.push_back(sum);
  }
  return out;
}

// ---------------------------------------------------------------------------
// JSON.

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppendFormat(&out, "\\u%04x", c);
    } else {
      out.push_back(c);
    }
  }
  return out + "\"";
}

std::string ErrorsJson(const ErrorCounts& errors) {
  std::string out = "{";
  for (const auto& [code, n] : errors) {
    absl::StrAppend(&out, out.size() > 1 ? ", " : "", JsonString(code), ": ",
                    n);
  }
  return out + "}";
}

std::string LatencyJson(const service::LatencyHistogram& h) {
  auto us = [](double ns) { return ns / 1000.0; };
  return absl::StrFormat(
      "{\"count\": %d, \"p50\": %.1f, \"p90\": %.1f, \"p99\": %.1f, "
      "\"p999\": %.1f, \"max\": %.1f, \"mean\": %.1f}",
      h.count(), us(h.Percentile(0.50)), us(h.Percentile(0.90)),
      us(h.Percentile(0.99)), us(h.Percentile(0.999)), us(static_cast<double>(h.max_ns())),
      us(h.mean_ns()));
}

std::string SubscribeJson(const LoadReport& r) {
  if (!r.subscribed) return "null";
  const SubscribeResult& s = r.subscribe;
  return absl::StrFormat(
      "{\"subscriptions\": %d, \"failed\": %d, \"seconds\": %.3f, "
      "\"subscriptions_per_s\": %.0f, \"errors\": %s}",
      s.subscribed, s.failed, s.seconds, s.PerSecond(), ErrorsJson(s.errors));
}

std::string StatsJson(const v1::Stats& after,
                      const std::vector<StageSummary>& stages) {
  std::string out = absl::StrFormat(
      "{\"mode\": %s, \"partitions\": %d, \"cohort_max\": %d, "
      "\"cohort_wait_us\": %d, \"subscriptions\": %d, \"stages\": [",
      JsonString(after.mode()), after.partitions(), after.cohort_max(),
      after.cohort_wait_us(), after.subscriptions());
  for (size_t i = 0; i < stages.size(); ++i) {
    const StageSummary& s = stages[i];
    absl::StrAppendFormat(
        &out,
        "%s{\"name\": %s, \"batches\": %d, \"events\": %d, \"matches\": %d, "
        "\"mean_batch_size\": %.2f, \"events_per_batch\": %.2f, \"wait_us\": "
        "{\"p50\": %.1f, \"p99\": "
        "%.1f}, \"service_us\": {\"p50\": %.1f, \"p99\": %.1f}, "
        "\"rejections\": %d}",
        i == 0 ? "" : ", ", JsonString(s.name), s.batches, s.events, s.matches,
        s.mean_batch, s.events_per_batch, s.stats->wait().p50_us(),
        s.stats->wait().p99_us(), s.stats->service().p50_us(),
        s.stats->service().p99_us(), s.stats->rejections());
  }
  return out + "]}";
}

// ---------------------------------------------------------------------------
// CSV.

// CsvField() quotes `s` if it holds a comma, a quote or a line end (RFC 4180).
std::string CsvField(absl::string_view s) {
  if (s.find_first_of(",\"\r\n") == absl::string_view::npos) {
    return std::string(s);
  }
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  return out + "\"";
}

std::string ErrorsText(const ErrorCounts& errors) {
  if (errors.empty()) return " none";
  std::string out;
  for (const auto& [code, n] : errors) absl::StrAppend(&out, " ", code, "=", n);
  return out;
}

}  // namespace

double LoadReport::EventsPerSecond() const {
  return publish.events / options.duration_s;
}

double LoadReport::MatchesPerEvent() const {
  return publish.events == 0
             ? 0.0
             : static_cast<double>(publish.matches) / publish.events;
}

uint64_t LoadReport::Rejections() const {
  auto it = publish.errors.find("RESOURCE_EXHAUSTED");
  return it == publish.errors.end() ? 0 : it->second;
}

uint64_t LoadReport::ErrorCount() const {
  uint64_t n = 0;
  for (const auto& [code, count] : publish.errors) n += count;
  return n;
}

std::string LoadReportJson(const LoadReport& r) {
  const LoadOptions& o = r.options;
  const PublishResult& p = r.publish;
  std::string stats = "null";
  if (r.published && p.before.ok() && p.after.ok()) {
    stats = StatsJson(*p.after, SummarizeStages(*p.before, *p.after));
  }
  return absl::StrFormat(
      "{\"phase\": %s, \"mode\": %s, \"server\": %s, \"clients\": %d, "
      "\"batch\": %d, \"window\": %d, \"rate\": %.0f, \"return_ids\": %s, "
      "\"warmup_s\": %.3f, \"duration\": %.3f, \"requests\": %d, "
      "\"events\": %d, \"events_per_s\": %.0f, \"matches_per_event\": %.3f, "
      "\"latency_us\": %s, \"unanswered\": %d, \"errors\": %s, "
      "\"rejections\": %d, \"load\": %s, \"stats\": %s}\n",
      JsonString(r.published ? "publish" : "load"),
      JsonString(PublishModeName(o.mode)), JsonString(o.server), o.clients,
      o.batch, o.window, o.rate, o.return_ids ? "true" : "false", o.warmup_s,
      o.duration_s, p.requests, p.events, r.EventsPerSecond(),
      r.MatchesPerEvent(), LatencyJson(p.latency), p.unanswered,
      ErrorsJson(p.errors), r.Rejections(), SubscribeJson(r), stats);
}

std::string LoadReportCsv(const LoadReport& r) {
  static constexpr absl::string_view kHeader =
      "phase,mode,server,clients,batch,window,rate,return_ids,warmup_s,"
      "duration_s,requests,events,events_per_s,matches_per_event,"
      "latency_count,p50_us,p90_us,p99_us,p999_us,max_us,mean_us,unanswered,"
      "errors,rejections,error_codes,subscriptions,subscribe_failed,"
      "subscribe_seconds,subscriptions_per_s\n";
  const LoadOptions& o = r.options;
  const PublishResult& p = r.publish;
  const service::LatencyHistogram& h = p.latency;
  auto us = [](double ns) { return ns / 1000.0; };
  std::vector<std::string> codes;
  for (const auto& [code, n] : p.errors)
    codes.push_back(absl::StrCat(code, "=", n));
  std::string row = absl::StrFormat(
      "%s,%s,%s,%d,%d,%d,%.0f,%s,%.3f,%.3f,%d,%d,%.0f,%.3f,%d,%.1f,%.1f,%.1f,"
      "%.1f,%.1f,%.1f,%d,%d,%d,%s,",
      r.published ? "publish" : "load", PublishModeName(o.mode),
      CsvField(o.server), o.clients, o.batch, o.window, o.rate,
      o.return_ids ? "true" : "false", o.warmup_s, o.duration_s, p.requests,
      p.events, r.EventsPerSecond(), r.MatchesPerEvent(), h.count(),
      us(h.Percentile(0.50)), us(h.Percentile(0.90)), us(h.Percentile(0.99)),
      us(h.Percentile(0.999)), us(static_cast<double>(h.max_ns())), us(h.mean_ns()), p.unanswered,
      r.ErrorCount(), r.Rejections(), CsvField(absl::StrJoin(codes, ";")));
  if (r.subscribed) {
    const SubscribeResult& s = r.subscribe;
    absl::StrAppendFormat(&row, "%d,%d,%.3f,%.0f", s.subscribed, s.failed,
                          s.seconds, s.PerSecond());
  } else {
    row += ",,,";
  }
  return absl::StrCat(kHeader, row, "\n");
}

absl::Status WriteLoadReport(const LoadReport& report,
                             const std::string& path) {
  std::string text;
  if (absl::EndsWith(path, ".json")) {
    text = LoadReportJson(report);
  } else if (absl::EndsWith(path, ".csv")) {
    text = LoadReportCsv(report);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": the name must end in .json or .csv"));
  }
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return absl::DataLossError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

std::string FormatSubscribeText(const SubscribeResult& s) {
  return absl::StrFormat(
      "load: %d subscriptions in %.2f s = %.0f subscriptions/s; %d failed; "
      "errors:%s\n",
      s.subscribed, s.seconds, s.PerSecond(), s.failed, ErrorsText(s.errors));
}

std::string FormatPublishText(const LoadReport& r) {
  const LoadOptions& o = r.options;
  const PublishResult& p = r.publish;
  const service::LatencyHistogram& h = p.latency;
  return absl::StrFormat(
      "publish: mode %s, %d clients, batch %d, window %d, rate %.0f, "
      "return_ids %s\n"
      "  %d events in %.1f s = %.0f events/s (%d requests), %.2f "
      "matches/event\n"
      "  latency us: p50 %.0f  p90 %.0f  p99 %.0f  p99.9 %.0f  max %.0f  "
      "mean %.0f  (%d requests)\n"
      "  unanswered %d; rejections %d; errors:%s\n",
      PublishModeName(o.mode), o.clients, o.batch, o.window, o.rate,
      o.return_ids ? "true" : "false", p.events, o.duration_s,
      r.EventsPerSecond(), p.requests, r.MatchesPerEvent(),
      h.Percentile(0.5) / 1e3, h.Percentile(0.9) / 1e3,
      h.Percentile(0.99) / 1e3, h.Percentile(0.999) / 1e3, static_cast<double>(h.max_ns()) / 1e3,
      h.mean_ns() / 1e3, h.count(), p.unanswered, r.Rejections(),
      ErrorsText(p.errors));
}

std::string FormatServerText(const LoadReport& r) {
  const PublishResult& p = r.publish;
  if (!p.before.ok() || !p.after.ok()) {
    return absl::StrCat(
        "stats: GetStats failed: ",
        (p.before.ok() ? p.after : p.before).status().ToString(), "\n");
  }
  const v1::Stats& a = *p.after;
  std::string out = absl::StrFormat(
      "server: mode %s, %d partitions, cohort_max %d, %d subscriptions; "
      "stages over the publish phase (wait/service: since server start):\n",
      a.mode(), a.partitions(), a.cohort_max(), a.subscriptions());
  for (const StageSummary& s : SummarizeStages(*p.before, a)) {
    absl::StrAppendFormat(
        &out,
        "  %-12s batches %8d  events %9d  mean batch %5.1f (events/batch "
        "%5.1f)  wait p50/p99 "
        "%7.0f/%7.0f us  service p50/p99 %7.0f/%7.0f us\n",
        s.name, s.batches, s.events, s.mean_batch, s.events_per_batch,
        s.stats->wait().p50_us(), s.stats->wait().p99_us(),
        s.stats->service().p50_us(), s.stats->service().p99_us());
  }
  return out;
}

}  // namespace client
}  // namespace cohort
