// Renders what the metrics endpoint (--metrics_port, see metrics_http.h)
// serves: a MetricsSnapshot (the GetStats snapshot, docs/DESIGN.md section 6,
// plus the duration histograms and process figures that GetStats does not
// carry) in the Prometheus text exposition format, version 0.0.4. Every metric
// is listed, with its meaning, in service/README.md ("Metrics").
//
// Conventions: every metric of the service is prefixed `cohort_`, the
// process's are the standard `process_*` ones; counters end in `_total`;
// units are in the names (`_seconds`, `_bytes`); durations are histograms
// in seconds over the fixed buckets kDurationBucketSeconds (10 us to 10 s,
// stage_profile.h) with _sum and _count. Service-wide values are unlabelled
// (cohort_subscriptions, cohort_events_published_total,
// cohort_publish_duration_seconds, ...); the execution mode and index layout
// are the labels of `cohort_info{mode="staged",index_layout="partitioned"}
// 1`. Each stage instance contributes samples labelled `stage` and `name`,
// plus `partition` for partition instances, e.g.
//   cohort_stage_events_total{stage="partition",name="partition/0",partition="0"}
// Batch (cohort) sizes are a histogram whose `le` buckets are the powers of
// two 1..4096 of stage_profile.h plus any other bound the snapshot carries,
// and +Inf; the queue length seen as each batch is taken is a summary
// without quantiles (_sum, _count).
//
// All samples of a metric family are written together, after exactly one
// `# HELP` and one `# TYPE` line; a per-stage family is left out when the
// snapshot has no stages, the per-stage histograms and the queue-length
// summary when it has no StageHistograms for them, the journal's when
// there is no journal, and the process's when /proc could not be read.
// Label values are escaped as the format requires.
//
// Thread safety: pure functions of their arguments (ReadProcessMetrics
// reads /proc); safe from any thread.
#ifndef COHORT_SERVICE_OBSERVABILITY_PROMETHEUS_H_
#define COHORT_SERVICE_OBSERVABILITY_PROMETHEUS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "proto/cohort/v1/pubsub.pb.h"
#include "service/observability/stage_profile.h"

namespace cohort {
namespace service {

// The standard process metrics of a Prometheus client, for this process.
struct ProcessMetrics {
  double cpu_seconds = 0.0;  // user + system CPU time
  uint64_t resident_bytes = 0;
  uint64_t virtual_bytes = 0;
  uint64_t open_fds = 0;
  uint64_t max_fds = 0;             // the soft RLIMIT_NOFILE
  double start_time_seconds = 0.0;  // since the Unix epoch
};

// ReadProcessMetrics reads this process's figures from /proc/self (Linux);
// nullopt if /proc/self/stat cannot be read or parsed.
std::optional<ProcessMetrics> ReadProcessMetrics();

// Everything one scrape renders.
struct MetricsSnapshot {
  cohort::v1::Stats stats;
  // One per stats.stages() entry, in order (Engine::FillStats); empty: the
  // per-stage histograms and queue-length summary are left out.
  std::vector<StageHistograms> stages;
  // Admission-to-answer times of Publish requests (Engine).
  DurationBuckets publish;
  // The journal's group write-and-sync times; nullopt without a journal.
  std::optional<DurationBuckets> journal_sync;
  std::optional<ProcessMetrics> process;
};

// RenderPrometheus returns `snapshot` as a Prometheus 0.0.4 text exposition
// (lines end in '\n'; serve as "text/plain; version=0.0.4; charset=utf-8").
std::string RenderPrometheus(const MetricsSnapshot& snapshot);

namespace internal {

// EscapeLabelValue escapes a label value: backslash, double quote and line
// feed become \\, \" and \n.
std::string EscapeLabelValue(absl::string_view value);

// FormatDouble writes `value` as a Prometheus sample value: the shortest of
// %.15g / %.17g that reads back exactly, or NaN, +Inf, -Inf.
std::string FormatDouble(double value);

}  // namespace internal
}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_OBSERVABILITY_PROMETHEUS_H_
