#include "service/observability/prometheus.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "service/observability/stage_profile.h"

namespace cohort {
namespace service {
namespace internal {

std::string EscapeLabelValue(absl::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string FormatDouble(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  // %.15g reads back exactly for most values and avoids the noise digits
  // (0.10000000000000001) that %.17g would print; fall back when it does not.
  std::string out = absl::StrFormat("%.15g", value);
  if (std::strtod(out.c_str(), nullptr) != value) {
    out = absl::StrFormat("%.17g", value);
  }
  return out;
}

}  // namespace internal

namespace {

using cohort::v1::Latency;
using cohort::v1::StageStats;
using cohort::v1::Stats;

constexpr double kMicrosPerSecond = 1e6;

// Accumulates the exposition; keeps HELP/TYPE and samples in one place.
class Exposition {
 public:
  void Family(absl::string_view name, absl::string_view type,
              absl::string_view help) {
    absl::StrAppend(&out_, "# HELP ", name, " ", help, "\n# TYPE ", name, " ",
                    type, "\n");
  }
  // `labels` is a comma-separated list of name="escaped value" pairs, or "".
  void Sample(absl::string_view name, absl::string_view labels,
              absl::string_view value) {
    out_.append(name.data(), name.size());
    if (!labels.empty()) absl::StrAppend(&out_, "{", labels, "}");
    absl::StrAppend(&out_, " ", value, "\n");
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

std::string Label(absl::string_view name, absl::string_view value) {
  return absl::StrCat(name, "=\"", internal::EscapeLabelValue(value), "\"");
}

std::string WithLabel(absl::string_view labels, absl::string_view name,
                      absl::string_view value) {
  if (labels.empty()) return Label(name, value);
  return absl::StrCat(labels, ",", Label(name, value));
}

std::string StageLabels(const StageStats& stage) {
  std::string labels = absl::StrCat(Label("stage", stage.stage()), ",",
                                    Label("name", stage.name()));
  if (stage.has_partition()) {
    labels = WithLabel(labels, "partition", absl::StrCat(stage.partition()));
  }
  return labels;
}

void RenderServiceWide(const Stats& stats, Exposition& out) {
  out.Family("cohort_info", "gauge",
             "Constant 1; the mode label is the execution mode.");
  out.Sample("cohort_info", Label("mode", stats.mode()), "1");

  struct Scalar {
    const char* name;
    const char* type;
    const char* help;
    std::string value;
  };
  const Scalar scalars[] = {
      {"cohort_subscriptions", "gauge", "Live subscriptions.",
       absl::StrCat(stats.subscriptions())},
      {"cohort_events_published_total", "counter",
       "Events accepted by Publish and PublishStream.",
       absl::StrCat(stats.events_published())},
      {"cohort_uptime_seconds", "gauge", "Time since the service started.",
       internal::FormatDouble(stats.uptime_us() / kMicrosPerSecond)},
      {"cohort_listeners", "gauge", "Open Listen streams.",
       absl::StrCat(stats.listeners())},
      {"cohort_open_streams", "gauge",
       "Open PublishStream and Listen streams (at most --max_streams).",
       absl::StrCat(stats.open_streams())},
      {"cohort_events_in_flight", "gauge",
       "Published events admitted and not yet answered.",
       absl::StrCat(stats.events_in_flight())},
      {"cohort_admission_limit", "gauge",
       "Limit on events in flight: --queue_limit, or adapted to "
       "--latency_target_us.",
       absl::StrCat(stats.admission_limit())},
      {"cohort_partitions", "gauge",
       "Number of partitions (0 in threaded mode).",
       absl::StrCat(stats.partitions())},
      {"cohort_cohort_max", "gauge",
       "Most events a partition runs as one cohort (--cohort_max).",
       absl::StrCat(stats.cohort_max())},
      {"cohort_cohort_wait_us", "gauge",
       "Longest wait for a cohort to fill, in microseconds (--cohort_wait_us).",
       absl::StrCat(stats.cohort_wait_us())},
  };
  for (const Scalar& s : scalars) {
    out.Family(s.name, s.type, s.help);
    out.Sample(s.name, "", s.value);
  }
}

// A per-stage gauge or counter read straight from StageStats.
struct StageScalar {
  const char* name;
  const char* type;
  const char* help;
  std::string (*value)(const StageStats&);
};

const StageScalar kStageScalars[] = {
    {"cohort_stage_queue_limit", "gauge",
     "Capacity of the stage's inbound queue in items (0: unbounded or none).",
     [](const StageStats& s) { return absl::StrCat(s.queue_limit()); }},
    {"cohort_stage_queue_length_mean", "gauge",
     "Mean queue length seen when the stage takes a batch.",
     [](const StageStats& s) {
       return internal::FormatDouble(s.queue_length_mean());
     }},
    {"cohort_stage_queue_length_max", "gauge",
     "Largest queue length seen when the stage takes a batch.",
     [](const StageStats& s) { return absl::StrCat(s.queue_length_max()); }},
    {"cohort_stage_batches_total", "counter",
     "Batches run (for a partition: cohorts).",
     [](const StageStats& s) { return absl::StrCat(s.batches()); }},
    {"cohort_stage_events_total", "counter", "Events processed.",
     [](const StageStats& s) { return absl::StrCat(s.events()); }},
    {"cohort_stage_matches_total", "counter",
     "(event, subscription) matches produced or merged.",
     [](const StageStats& s) { return absl::StrCat(s.matches()); }},
    {"cohort_stage_updates_total", "counter", "Subscription changes applied.",
     [](const StageStats& s) { return absl::StrCat(s.updates()); }},
    {"cohort_stage_rejections_total", "counter",
     "Requests rejected with RESOURCE_EXHAUSTED because the queue was full.",
     [](const StageStats& s) { return absl::StrCat(s.rejections()); }},
    {"cohort_stage_dropped_deliveries_total", "counter",
     "Deliveries dropped because a listener's queue was full.",
     [](const StageStats& s) { return absl::StrCat(s.dropped_deliveries()); }},
    {"cohort_stage_disconnected_listeners_total", "counter",
     "Listeners disconnected for falling behind.",
     [](const StageStats& s) {
       return absl::StrCat(s.disconnected_listeners());
     }},
    {"cohort_stage_expired_total", "counter",
     "Events skipped unmatched because their request's deadline had passed "
     "or its caller had cancelled it.",
     [](const StageStats& s) { return absl::StrCat(s.expired()); }},
};

void RenderSummary(const Stats& stats,
                   const std::vector<std::string>& stage_labels,
                   absl::string_view name, absl::string_view help,
                   const Latency& (StageStats::*latency)() const,
                   Exposition& out) {
  out.Family(name, "summary", help);
  const std::string sum_name = absl::StrCat(name, "_sum");
  const std::string count_name = absl::StrCat(name, "_count");
  for (int i = 0; i < stats.stages_size(); ++i) {
    const Latency& l = (stats.stages(i).*latency)();
    const std::string& labels = stage_labels[i];
    const std::pair<const char*, double> quantiles[] = {
        {"0.5", l.p50_us()}, {"0.99", l.p99_us()}, {"1", l.max_us()}};
    for (const auto& [q, value] : quantiles) {
      out.Sample(name, WithLabel(labels, "quantile", q),
                 internal::FormatDouble(value));
    }
    out.Sample(sum_name, labels,
               internal::FormatDouble(l.mean_us() * l.count()));
    out.Sample(count_name, labels, absl::StrCat(l.count()));
  }
}

// One stage's batch-size histogram as cumulative (le, count) pairs: the
// standard power-of-two bounds (so every scrape has the same series) plus any
// other finite bound in the snapshot.
std::vector<std::pair<uint64_t, uint64_t>> CumulativeBatchSizes(
    const StageStats& stage, uint64_t* total) {
  std::vector<std::pair<uint64_t, uint64_t>> buckets;  // (upper bound, count)
  std::vector<uint64_t> bounds(kBatchSizeBucketBounds.begin(),
                               kBatchSizeBucketBounds.end());
  for (const auto& b : stage.batch_sizes()) {
    buckets.emplace_back(b.upper_bound(), b.count());
    if (b.upper_bound() != kBatchSizeOverflowBound) {
      bounds.push_back(b.upper_bound());
    }
  }
  std::sort(buckets.begin(), buckets.end());
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());

  std::vector<std::pair<uint64_t, uint64_t>> cumulative;
  uint64_t running = 0;
  size_t next = 0;
  for (uint64_t le : bounds) {
    while (next < buckets.size() && buckets[next].first <= le) {
      running += buckets[next++].second;
    }
    cumulative.emplace_back(le, running);
  }
  while (next < buckets.size()) running += buckets[next++].second;
  *total = running;
  return cumulative;
}

void RenderBatchSizes(const Stats& stats,
                      const std::vector<std::string>& stage_labels,
                      Exposition& out) {
  constexpr absl::string_view kName = "cohort_stage_batch_size";
  out.Family(kName, "histogram",
             "Items per batch taken from the queue (for a partition: cohort "
             "size).");
  for (int i = 0; i < stats.stages_size(); ++i) {
    uint64_t total = 0;
    const auto cumulative = CumulativeBatchSizes(stats.stages(i), &total);
    const std::string& labels = stage_labels[i];
    for (const auto& [le, count] : cumulative) {
      out.Sample("cohort_stage_batch_size_bucket",
                 WithLabel(labels, "le", absl::StrCat(le)),
                 absl::StrCat(count));
    }
    out.Sample("cohort_stage_batch_size_bucket",
               WithLabel(labels, "le", "+Inf"), absl::StrCat(total));
    out.Sample("cohort_stage_batch_size_count", labels, absl::StrCat(total));
  }
}

void RenderStages(const Stats& stats, Exposition& out) {
  if (stats.stages_size() == 0) return;
  std::vector<std::string> stage_labels;
  stage_labels.reserve(stats.stages_size());
  for (const StageStats& stage : stats.stages()) {
    stage_labels.push_back(StageLabels(stage));
  }
  for (const StageScalar& metric : kStageScalars) {
    out.Family(metric.name, metric.type, metric.help);
    for (int i = 0; i < stats.stages_size(); ++i) {
      out.Sample(metric.name, stage_labels[i], metric.value(stats.stages(i)));
    }
  }
  RenderSummary(stats, stage_labels, "cohort_stage_wait_microseconds",
                "Time an item waits in the stage's queue.", &StageStats::wait,
                out);
  RenderSummary(stats, stage_labels, "cohort_stage_service_microseconds",
                "Time the stage spends on one batch.", &StageStats::service,
                out);
  RenderBatchSizes(stats, stage_labels, out);
}

}  // namespace

std::string RenderPrometheus(const Stats& stats) {
  Exposition out;
  RenderServiceWide(stats, out);
  RenderStages(stats, out);
  return out.Take();
}

}  // namespace service
}  // namespace cohort
