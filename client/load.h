// The load driver behind `cohort load`: loads a
// Fabret workload's subscriptions into a running cohortd with batched
// Subscribe calls, publishes the workload's events for a fixed time from N
// concurrent clients, and reports throughput, matches per event, latency
// percentiles (service/observability/latency_histogram.h), errors by gRPC status code
// and the server's per-stage profile (GetStats before and after).
//
//   LoadOptions options;
//   options.server = "127.0.0.1:50051";
//   options.mode = PublishMode::kUnary;
//   options.rate = 2000;  // open loop, 2,000 events/s in total
//   absl::StatusOr<LoadReport> report = RunLoad(workload, options);
//   std::cout << FormatPublishText(*report) << LoadReportJson(*report);
//
// Publish modes. kStream: each client keeps one PublishStream with up to
// `window` requests unanswered. kUnary, rate 0: closed loop, each client
// sends its next Publish when the previous one returns (as in the
// StagedServer paper). kUnary, rate > 0: open loop, the clients together
// send `rate` events/s on a fixed schedule whether or not earlier requests
// returned, and latency runs from each request's intended send time, so a
// server that falls behind is charged for the queueing it causes (no
// coordinated omission).
//
// Measurement. A publish run lasts warmup_s + duration_s; no request is sent
// after that. Throughput counts the events whose response arrived inside the
// measured interval (after the warmup). Latency is recorded for every request
// sent (open loop: due) inside the measured interval, each waited for up to
// drain_s after the interval, so the slow tail at the end is not dropped.
// Requests still unanswered after the drain are cancelled and counted as
// "unanswered". Server counters are the difference between a GetStats before
// and after the publish phase; the server's latency summaries cover its
// lifetime.
//
// Threads. RunLoad blocks its caller. Each publishing client has its own
// thread and its own channel (its own TCP connection, connected, waiting at
// most control_timeout, before it publishes); gRPC's callback
// threads run every completion. `LoadCallbacks` run on the caller's thread.
// Channels (and the unary clients whose completions use them) are kept until
// the process exits: a callback-API call's context holds a channel reference
// and is destroyed on a gRPC thread, and dropping a channel's last reference
// there crashes gRPC. Each RunLoad therefore leaks a few kilobytes per client.
#ifndef COHORT_CLIENT_LOAD_H_
#define COHORT_CLIENT_LOAD_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "proto/cohort/v1/pubsub.pb.h"
#include "service/observability/latency_histogram.h"
#include "workload/workload.h"

namespace cohort {
namespace client {

enum class PublishMode {
  kNone,    // load the subscriptions only
  kStream,  // PublishStream with a window of unanswered requests
  kUnary,   // unary Publish, closed loop (rate 0) or open loop (rate > 0)
};

// ParsePublishMode() accepts "none", "stream" and "unary".
absl::StatusOr<PublishMode> ParsePublishMode(absl::string_view name);
// PublishModeName() is the inverse: "none", "stream" or "unary".
absl::string_view PublishModeName(PublishMode mode);

struct LoadOptions {
  // The server's address, host:port (any gRPC target string).
  std::string server = "127.0.0.1:50051";
  // TLS and the bearer token of every connection and call. With cohortd
  // --auth_tokens the subscribe phase needs a token for each of the
  // workload's subscribers ("s0" ... "s999"), which one token is not: load
  // with --skip_load (publish only) there.
  ClientSecurity security;
  // Subscribe the workload's subscriptions first; false publishes against
  // what the server already holds.
  bool subscribe = true;
  // Subscriptions per Subscribe request (at most the server's --max_batch).
  int subscribe_batch = 5000;
  // Subscribe requests in flight at once. The default hides the round trip
  // without queueing much more than a batch per partition; more, with small
  // batches, is how many concurrent subscribers the server sees (e.g. how
  // the journal's group commit gathers them).
  int subscribe_in_flight = 4;
  PublishMode mode = PublishMode::kStream;
  // Concurrent publishers: streams, closed-loop callers or open-loop pacers.
  int clients = 1;
  // Events per PublishRequest.
  int batch = 64;
  // kStream: requests a stream may have sent and not yet had answered.
  int window = 4;
  // kUnary: 0 = closed loop; > 0 = open loop at this many events/s in total.
  // Ignored by kStream.
  double rate = 0;
  // Open loop: requests one client may have outstanding; beyond it the pacer
  // waits (the wait counts in latency). Bounds client memory.
  int max_outstanding = 10000;
  double warmup_s = 2;      // publishing before the measured interval
  double duration_s = 10;   // the measured interval
  double drain_s = 10;      // waiting for answers after it
  bool return_ids = false;  // PublishRequest.return_ids
  // How long to wait for the connection, and the deadline of GetStats.
  absl::Duration control_timeout = absl::Seconds(10);
};

// ValidateLoadOptions() returns InvalidArgument naming the first bad field:
// clients, batch, window, subscribe_batch, subscribe_in_flight,
// max_outstanding must be >= 1,
// duration_s > 0, warmup_s, drain_s and rate >= 0, control_timeout > 0.
absl::Status ValidateLoadOptions(const LoadOptions& options);

// Failed calls by status code name as the API documents it, e.g.
// "RESOURCE_EXHAUSTED" -> 3.
using ErrorCounts = std::map<std::string, uint64_t>;

// The subscribe phase.
struct SubscribeResult {
  uint64_t subscribed = 0;  // ids returned
  uint64_t failed = 0;      // subscriptions in batches that finally failed
  double seconds = 0;
  ErrorCounts errors;  // every failed attempt, retried or not
  double PerSecond() const { return seconds > 0 ? subscribed / seconds : 0; }
};

// Where the subscribe phase stands: `done` of `total` subscriptions answered
// (created or finally failed) after `seconds`.
struct SubscribeProgress {
  uint64_t done = 0;
  uint64_t total = 0;
  double seconds = 0;
};

// The publish phase, merged over clients.
struct PublishResult {
  service::LatencyHistogram latency;  // requests sent in the measured interval
  uint64_t requests = 0;     // answered in the measured interval
  uint64_t events = 0;       // answered in the measured interval
  uint64_t matches = 0;      // sum of match_count over those events
  uint64_t unanswered = 0;   // requests abandoned (stream broke, cancelled)
  ErrorCounts errors;
  // GetStats just before and just after publishing.
  absl::StatusOr<v1::Stats> before = absl::UnknownError("not fetched");
  absl::StatusOr<v1::Stats> after = absl::UnknownError("not fetched");
};

struct LoadReport {
  LoadOptions options;
  bool subscribed = false;  // the subscribe phase ran
  SubscribeResult subscribe;
  bool published = false;  // the publish phase ran
  PublishResult publish;

  // Events answered in the measured interval per second of it.
  double EventsPerSecond() const;
  // Matches per event answered in the measured interval; 0 if none.
  double MatchesPerEvent() const;
  // Publish calls the server refused as overloaded (RESOURCE_EXHAUSTED).
  uint64_t Rejections() const;
  // Publish errors of every code, rejections included.
  uint64_t ErrorCount() const;
};

// Called on RunLoad's thread; may print, must not call RunLoad.
struct LoadCallbacks {
  // During the subscribe phase, about every kProgressInterval, and once at
  // its end with done == total.
  std::function<void(const SubscribeProgress&)> on_progress;
  // After the subscribe phase (before publishing); `report` holds it.
  std::function<void(const LoadReport& report)> on_subscribed;
};

// How often on_progress is called while subscribing: often enough for a
// smooth progress bar, rarely enough to cost nothing.
inline constexpr absl::Duration kProgressInterval = absl::Milliseconds(200);

// RunLoad() connects to options.server, subscribes `workload`'s
// subscriptions (unless !options.subscribe) and publishes its events (unless
// options.mode is kNone or there are no events). Errors of individual calls
// are counted in the report, not returned; returns InvalidArgument for bad
// options and Unavailable when the server cannot be reached within
// options.control_timeout.
absl::StatusOr<LoadReport> RunLoad(const workload::Workload& workload,
                                   const LoadOptions& options,
                                   const LoadCallbacks& callbacks = {});

// ---------------------------------------------------------------------------
// Reports. Latencies are in microseconds.

// LoadReportJson() is one JSON object and a newline. Fields: phase ("load"
// or "publish"), mode, server, clients, batch, window, rate, return_ids,
// warmup_s, duration, requests, events, events_per_s, matches_per_event,
// latency_us {count, p50, p90, p99, p999, max, mean}, unanswered, errors
// {code: n}, rejections, load (null, or {subscriptions, failed, seconds,
// subscriptions_per_s, errors}), stats (null, or the server's mode,
// partitions, cohort_max, cohort_wait_us, subscriptions and per-stage
// counters over the publish phase). bench/*.sh and tools/service_report.py
// read these names: keep them.
std::string LoadReportJson(const LoadReport& report);

// LoadReportCsv() is a header line and one row (RFC 4180 quoting, "\n" line
// ends): the JSON's scalar fields, latency as p50_us ... mean_us, errors as
// a total and as "CODE=n;CODE=n", the subscribe phase as subscriptions,
// subscribe_failed, subscribe_seconds, subscriptions_per_s (empty if it did
// not run). No server stage profile.
std::string LoadReportCsv(const LoadReport& report);

// WriteLoadReport() writes LoadReportJson to `path` if it ends in ".json",
// LoadReportCsv if it ends in ".csv"; InvalidArgument for another ending,
// DataLoss if the file cannot be written.
absl::Status WriteLoadReport(const LoadReport& report, const std::string& path);

// Human-readable summaries, each ending in a newline: the subscribe phase
// (one line), the publish phase (events/s, matches/event, latency
// percentiles, errors), and the server's stage profile over it.
std::string FormatSubscribeText(const SubscribeResult& result);
std::string FormatPublishText(const LoadReport& report);
std::string FormatServerText(const LoadReport& report);

}  // namespace client
}  // namespace cohort

#endif  // COHORT_CLIENT_LOAD_H_
