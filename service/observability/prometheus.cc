#include "service/observability/prometheus.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/types/span.h"
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

// An unlabelled metric: its family and its one sample.
struct Scalar {
  const char* name;
  const char* type;
  const char* help;
  std::string value;
};

void RenderScalars(absl::Span<const Scalar> scalars, Exposition& out) {
  for (const Scalar& s : scalars) {
    out.Family(s.name, s.type, s.help);
    out.Sample(s.name, "", s.value);
  }
}

// Cluster mode only (docs/DESIGN.md section 11): the node's view of the
// subscription log and its cross-node deliveries.
void RenderCluster(const v1::ClusterStats& cluster, Exposition& out) {
  out.Family("cohort_cluster_info", "gauge",
             "Constant 1, in cluster mode; the labels are this node's name "
             "(--cluster_node) and the log stream (--cluster_stream).");
  out.Sample("cohort_cluster_info",
             WithLabel(Label("node", cluster.node()), "stream",
                       cluster.stream()),
             "1");
  const uint64_t known =
      std::max(cluster.known_position(), cluster.applied_position());
  const Scalar scalars[] = {
      {"cohort_cluster_serving", "gauge",
       "1 while this node serves (caught up with the subscription log and "
       "in contact with it), 0 while it is NOT_SERVING.",
       cluster.serving() ? "1" : "0"},
      {"cohort_cluster_log_applied_position", "gauge",
       "The last subscription log position this node has applied.",
       absl::StrCat(cluster.applied_position())},
      {"cohort_cluster_log_known_position", "gauge",
       "The log's last position as this node last learned it.",
       absl::StrCat(known)},
      {"cohort_cluster_log_lag", "gauge",
       "Log records this node knows of and has not applied yet.",
       absl::StrCat(known - cluster.applied_position())},
      {"cohort_cluster_log_appended_total", "counter",
       "Changes this node appended to the subscription log.",
       absl::StrCat(cluster.appended())},
      {"cohort_cluster_log_applied_total", "counter",
       "Subscription log records this node applied (every node's).",
       absl::StrCat(cluster.applied())},
      {"cohort_cluster_log_duplicates_total", "counter",
       "Appends answered as duplicates of an earlier request_id.",
       absl::StrCat(cluster.duplicates())},
      {"cohort_cluster_deliveries_sent_total", "counter",
       "Deliveries sent through NATS to listeners on other nodes.",
       absl::StrCat(cluster.deliveries_sent())},
      {"cohort_cluster_deliveries_received_total", "counter",
       "Deliveries received through NATS for this node's listeners.",
       absl::StrCat(cluster.deliveries_received())},
      {"cohort_cluster_delivery_gaps_total", "counter",
       "Delivery messages from other nodes found missing; each shows as a "
       "gap in the affected Listen streams' sequence.",
       absl::StrCat(cluster.delivery_gaps())},
      {"cohort_cluster_log_first_position", "gauge",
       "The log's first position as this node last saw it (1: never "
       "trimmed); the log is trimmed behind shared snapshots.",
       absl::StrCat(std::max<uint64_t>(1, cluster.log_first_position()))},
      {"cohort_cluster_snapshot_position", "gauge",
       "Log position of the newest shared snapshot this node published or "
       "saw published (0: none).",
       absl::StrCat(cluster.snapshot_position())},
      {"cohort_cluster_snapshots_published_total", "counter",
       "Shared snapshots this node published (nodes with --data_dir).",
       absl::StrCat(cluster.snapshots_published())},
      {"cohort_cluster_snapshot_failures_total", "counter",
       "Shared snapshot publications (or the log trims after them) of this "
       "node that failed; each is reported on stderr.",
       absl::StrCat(cluster.snapshot_failures())},
  };
  RenderScalars(scalars, out);
}

void RenderServiceWide(const Stats& stats, Exposition& out) {
  out.Family("cohort_info", "gauge",
             "Constant 1; the labels are the execution mode (staged or "
             "threaded) and the index layout (--index; empty in threaded "
             "mode).");
  out.Sample("cohort_info",
             WithLabel(Label("mode", stats.mode()), "index_layout",
                       stats.index_layout()),
             "1");

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
      {"cohort_index_copies", "gauge",
       "Copies of the subscription set, each split over partitions / copies "
       "of the partition threads (--index_copies; 0 in the sharded_phase1 "
       "layout and threaded mode).",
       absl::StrCat(stats.index_copies())},
      {"cohort_stolen_matches_total", "counter",
       "Partitions' shares of cohorts matched by another partition's thread "
       "because their own was behind (--phase2_stealing).",
       absl::StrCat(stats.stolen_matches())},
      {"cohort_pipeline_sleeps_total", "counter",
       "Times a partition thread found nothing to do and slept.",
       absl::StrCat(stats.pipeline_sleeps())},
      {"cohort_pipeline_wakeups_total", "counter",
       "Sleeping partition threads woken by a hand-off (an event queued, a "
       "cohort ready for phase 2, a buffer freed).",
       absl::StrCat(stats.pipeline_wakeups())},
      {"cohort_cohort_max", "gauge",
       "Most events a partition runs as one cohort (--cohort_max).",
       absl::StrCat(stats.cohort_max())},
      {"cohort_cohort_wait_seconds", "gauge",
       "Longest wait for a cohort to fill (--cohort_wait_us).",
       internal::FormatDouble(static_cast<double>(stats.cohort_wait_us()) /
                              kMicrosPerSecond)},
  };
  RenderScalars(scalars, out);
  if (stats.has_cluster()) RenderCluster(stats.cluster(), out);
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
    {"cohort_stage_deliveries_total", "counter",
     "Deliveries queued to Listen streams (one per stream per matched "
     "event; dropped ones are counted apart).",
     [](const StageStats& s) { return absl::StrCat(s.deliveries()); }},
};

// One duration histogram's samples (in seconds) under `labels`.
void DurationSamples(absl::string_view name, absl::string_view labels,
                     const DurationBuckets& buckets, Exposition& out) {
  const std::string bucket_name = absl::StrCat(name, "_bucket");
  for (size_t b = 0; b < kDurationBucketSeconds.size(); ++b) {
    out.Sample(bucket_name,
               WithLabel(labels, "le",
                         internal::FormatDouble(kDurationBucketSeconds[b])),
               absl::StrCat(buckets.cumulative[b]));
  }
  out.Sample(bucket_name, WithLabel(labels, "le", "+Inf"),
             absl::StrCat(buckets.count));
  out.Sample(absl::StrCat(name, "_sum"), labels,
             internal::FormatDouble(buckets.sum_seconds));
  out.Sample(absl::StrCat(name, "_count"), labels,
             absl::StrCat(buckets.count));
}

void RenderStageDurations(const MetricsSnapshot& snapshot,
                          const std::vector<std::string>& stage_labels,
                          absl::string_view name, absl::string_view help,
                          DurationBuckets StageHistograms::*member,
                          Exposition& out) {
  out.Family(name, "histogram", help);
  for (size_t i = 0; i < snapshot.stages.size(); ++i) {
    DurationSamples(name, stage_labels[i], snapshot.stages[i].*member, out);
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

// With `with_sum`, snapshot.stages has one entry per stage.
void RenderBatchSizes(const MetricsSnapshot& snapshot,
                      const std::vector<std::string>& stage_labels,
                      bool with_sum, Exposition& out) {
  const Stats& stats = snapshot.stats;
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
    if (with_sum) {
      out.Sample("cohort_stage_batch_size_sum", labels,
                 absl::StrCat(snapshot.stages[i].batch_size_sum));
    }
    out.Sample("cohort_stage_batch_size_count", labels, absl::StrCat(total));
  }
}

void RenderStages(const MetricsSnapshot& snapshot, Exposition& out) {
  const Stats& stats = snapshot.stats;
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
  const bool histograms =
      snapshot.stages.size() == static_cast<size_t>(stats.stages_size());
  if (histograms) {
    out.Family("cohort_stage_queue_length", "summary",
               "Items queued (the batch included) each time the stage "
               "takes a batch; rate(_sum) / rate(_count) is the mean over a "
               "window.");
    for (int i = 0; i < stats.stages_size(); ++i) {
      out.Sample("cohort_stage_queue_length_sum", stage_labels[i],
                 absl::StrCat(snapshot.stages[i].queue_length_sum));
      out.Sample("cohort_stage_queue_length_count", stage_labels[i],
                 absl::StrCat(stats.stages(i).batches()));
    }
    RenderStageDurations(snapshot, stage_labels, "cohort_stage_wait_seconds",
                         "Time an item waits in the stage's queue.",
                         &StageHistograms::wait, out);
    RenderStageDurations(snapshot, stage_labels,
                         "cohort_stage_service_seconds",
                         "Time the stage spends on one batch (for a "
                         "partition: one cohort).",
                         &StageHistograms::service, out);
  }
  RenderBatchSizes(snapshot, stage_labels, histograms, out);
}

void RenderDurations(const MetricsSnapshot& snapshot, Exposition& out) {
  out.Family("cohort_publish_duration_seconds", "histogram",
             "Time from admitting a Publish request (or one request of a "
             "PublishStream) to its answer, whatever its status.");
  DurationSamples("cohort_publish_duration_seconds", "", snapshot.publish,
                  out);
  if (snapshot.journal_sync.has_value()) {
    out.Family("cohort_journal_fsync_duration_seconds", "histogram",
               "Time to make one journal group durable: its write and the "
               "fdatasync after it (the write alone with fsync off).");
    DurationSamples("cohort_journal_fsync_duration_seconds", "",
                    *snapshot.journal_sync, out);
  }
}

void RenderProcess(const ProcessMetrics& process, Exposition& out) {
  const Scalar scalars[] = {
      {"process_cpu_seconds_total", "counter",
       "User and system CPU time spent.",
       internal::FormatDouble(process.cpu_seconds)},
      {"process_resident_memory_bytes", "gauge", "Resident memory size.",
       absl::StrCat(process.resident_bytes)},
      {"process_virtual_memory_bytes", "gauge", "Virtual memory size.",
       absl::StrCat(process.virtual_bytes)},
      {"process_open_fds", "gauge", "Open file descriptors.",
       absl::StrCat(process.open_fds)},
      {"process_max_fds", "gauge",
       "Limit on open file descriptors (RLIMIT_NOFILE, soft).",
       absl::StrCat(process.max_fds)},
      {"process_start_time_seconds", "gauge",
       "Start time of the process since the Unix epoch.",
       internal::FormatDouble(process.start_time_seconds)},
  };
  RenderScalars(scalars, out);
}

// The boot time (btime in /proc/stat), in seconds since the Unix epoch;
// read once, since it does not change (and /proc/stat, with a line per CPU
// and per interrupt, is not free to read on every scrape).
std::optional<uint64_t> BootTimeSeconds() {
  static const std::optional<uint64_t> boot = []() -> std::optional<uint64_t> {
    std::ifstream proc_stat("/proc/stat");
    for (std::string line; std::getline(proc_stat, line);) {
      absl::string_view rest = line;
      uint64_t btime = 0;
      if (absl::ConsumePrefix(&rest, "btime ") &&
          absl::SimpleAtoi(rest, &btime)) {
        return btime;
      }
    }
    return std::nullopt;
  }();
  return boot;
}

}  // namespace

std::optional<ProcessMetrics> ReadProcessMetrics() {
  std::ifstream stat_file("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(stat_file)),
                   std::istreambuf_iterator<char>());
  // The command name (field 2) is in parentheses and may hold spaces; the
  // fields after its closing one are space-separated, field 3 first.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  const std::vector<absl::string_view> fields = absl::StrSplit(
      absl::string_view(stat).substr(close + 1), ' ', absl::SkipEmpty());
  // Fields 14, 15 (utime, stime), 22 (starttime), 23 (vsize), 24 (rss),
  // counted from 1; fields[0] is field 3.
  constexpr size_t kFirst = 3;
  if (fields.size() < 24 - kFirst + 1) return std::nullopt;
  uint64_t utime = 0, stime = 0, start_ticks = 0, vsize = 0, rss_pages = 0;
  if (!absl::SimpleAtoi(fields[14 - kFirst], &utime) ||
      !absl::SimpleAtoi(fields[15 - kFirst], &stime) ||
      !absl::SimpleAtoi(fields[22 - kFirst], &start_ticks) ||
      !absl::SimpleAtoi(fields[23 - kFirst], &vsize) ||
      !absl::SimpleAtoi(fields[24 - kFirst], &rss_pages)) {
    return std::nullopt;
  }
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  ProcessMetrics out;
  out.cpu_seconds = static_cast<double>(utime + stime) / ticks;
  out.virtual_bytes = vsize;
  out.resident_bytes = rss_pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  // Boot time plus the start in ticks since boot.
  if (const std::optional<uint64_t> boot = BootTimeSeconds();
      boot.has_value()) {
    out.start_time_seconds =
        static_cast<double>(*boot) + static_cast<double>(start_ticks) / ticks;
  }
  std::error_code error;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", error);
       !error && it != std::filesystem::directory_iterator();
       it.increment(error)) {
    ++out.open_fds;
  }
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) out.max_fds = limit.rlim_cur;
  return out;
}

std::string RenderPrometheus(const MetricsSnapshot& snapshot) {
  Exposition out;
  RenderServiceWide(snapshot.stats, out);
  RenderDurations(snapshot, out);
  RenderStages(snapshot, out);
  if (snapshot.process.has_value()) RenderProcess(*snapshot.process, out);
  return out.Take();
}

}  // namespace service
}  // namespace cohort
