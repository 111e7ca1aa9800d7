// Renders a cohort::v1::Stats snapshot (what GetStats returns, DESIGN.md
// section 6) in the Prometheus text exposition format, version 0.0.4, for the
// metrics endpoint (--metrics_port, see metrics_http.h).
//
// Every metric is prefixed `cohort_`. Service-wide values are unlabelled
// gauges and counters (cohort_subscriptions, cohort_events_published_total,
// cohort_uptime_seconds, ...); the execution mode is the label of
// `cohort_info{mode="staged"} 1`. Each stage instance contributes samples
// labelled `stage` and `name`, plus `partition` for partition instances, e.g.
//   cohort_stage_events_total{stage="partition",name="partition/0",partition="0"}
// Queue wait and service time are summaries in microseconds (quantiles 0.5,
// 0.99 and 1 = the maximum, with _sum and _count); batch (cohort) sizes are a
// histogram whose `le` buckets are the powers of two 1..4096 of
// stage_profile.h plus any other bound the snapshot carries, and +Inf; it has
// _count but no _sum (the snapshot does not carry one).
//
// All samples of a metric family are written together, after exactly one
// `# HELP` and one `# TYPE` line; a per-stage family is left out when the
// snapshot has no stages. Label values are escaped as the format requires.
//
// Thread safety: a pure function of its argument; safe from any thread.
#ifndef COHORT_SERVICE_OBSERVABILITY_PROMETHEUS_H_
#define COHORT_SERVICE_OBSERVABILITY_PROMETHEUS_H_

#include <string>

#include "absl/strings/string_view.h"
#include "proto/cohort/v1/pubsub.pb.h"

namespace cohort {
namespace service {

// RenderPrometheus returns `stats` as a Prometheus 0.0.4 text exposition
// (lines end in '\n'; serve as "text/plain; version=0.0.4; charset=utf-8").
std::string RenderPrometheus(const cohort::v1::Stats& stats);

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
