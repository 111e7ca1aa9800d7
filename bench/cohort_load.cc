// cohort_load: the load driver for a running cohortd with the flags that
// bench/service_bench.sh and bench/latency_sweep.sh use. It loads a Fabret
// workload's subscriptions into the server (Subscribe), publishes the
// workload's events for a fixed time through PublishStream or unary Publish
// (closed or open loop), and reports throughput, latency, errors by gRPC
// status code and the server's per-stage profile (GetStats). The driver
// itself, and what it measures, is client/load.h; `cohort load` is the same
// driver with the CLI's flags.
//
//   cohort_load --server=127.0.0.1:50051 --preset=fabret-1m --mode=stream
//       --clients=4 --batch=64 --window=4 --duration_s=10 --json=/tmp/r.json
//   cohort_load --skip_load --mode=unary --rate=50000 --clients=4
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "bench/workload.h"
#include "client/load.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051",
          "cohortd address, host:port.");
ABSL_FLAG(std::string, preset, "fabret-1m",
          "Workload preset to generate in memory (fabret-1m, fabret-uniform); "
          "ignored when --workload is set.");
ABSL_FLAG(std::string, workload, "",
          "Read the workload from this file (cohort-workload v1 text) instead "
          "of generating --preset.");
ABSL_FLAG(int64_t, subscriptions, -1,
          "Override the preset's subscription count (-1: preset value).");
ABSL_FLAG(int64_t, events, -1,
          "Override the preset's event count (-1: preset value).");
ABSL_FLAG(bool, skip_load, false,
          "Do not subscribe; publish against the subscriptions the server "
          "already holds.");
ABSL_FLAG(int, subscribe_batch, 5000,
          "Subscriptions per Subscribe request in the load phase (at most the "
          "server's --max_batch).");
ABSL_FLAG(std::string, mode, "stream",
          "Publish phase: stream (PublishStream), unary (Publish), or none "
          "(load only).");
ABSL_FLAG(int, clients, 1,
          "Concurrent publishers, each with its own channel: streams in "
          "stream mode, callers (closed loop) or pacers (open loop) in unary "
          "mode.");
ABSL_FLAG(int, batch, 64, "Events per PublishRequest.");
ABSL_FLAG(int, window, 4,
          "Stream mode: PublishRequests a stream may have sent and not yet "
          "had answered.");
ABSL_FLAG(double, rate, 0,
          "Unary mode: 0 = closed loop (each client sends its next request "
          "when the previous returns); > 0 = open loop at this many events/s "
          "in total, latency measured from each request's intended send "
          "time.");
ABSL_FLAG(int, max_outstanding, 10000,
          "Open loop: requests one client may have outstanding; beyond it the "
          "pacer waits (the wait counts in latency). Bounds client memory.");
ABSL_FLAG(double, duration_s, 10, "Measured publish interval, in seconds.");
ABSL_FLAG(double, warmup_s, 2,
          "Publishing before the measured interval, in seconds (not "
          "counted).");
ABSL_FLAG(double, drain_s, 10,
          "After the interval, how long to wait for outstanding requests "
          "before cancelling them.");
ABSL_FLAG(bool, return_ids, false, "Set PublishRequest.return_ids.");
ABSL_FLAG(std::string, json, "",
          "Also write the results as JSON to this file.");

namespace cohort {
namespace bench {
namespace {

absl::StatusOr<client::LoadOptions> OptionsFromFlags() {
  client::LoadOptions o;
  o.server = absl::GetFlag(FLAGS_server);
  absl::StatusOr<client::PublishMode> mode =
      client::ParsePublishMode(absl::GetFlag(FLAGS_mode));
  if (!mode.ok()) {
    return absl::InvalidArgumentError("--mode: stream, unary or none");
  }
  o.mode = *mode;
  o.subscribe = !absl::GetFlag(FLAGS_skip_load);
  o.subscribe_batch = absl::GetFlag(FLAGS_subscribe_batch);
  o.clients = absl::GetFlag(FLAGS_clients);
  o.batch = absl::GetFlag(FLAGS_batch);
  o.window = absl::GetFlag(FLAGS_window);
  o.rate = absl::GetFlag(FLAGS_rate);
  o.max_outstanding = std::max(1, absl::GetFlag(FLAGS_max_outstanding));
  o.warmup_s = absl::GetFlag(FLAGS_warmup_s);
  o.duration_s = absl::GetFlag(FLAGS_duration_s);
  o.drain_s = absl::GetFlag(FLAGS_drain_s);
  o.return_ids = absl::GetFlag(FLAGS_return_ids);
  if (absl::Status status = client::ValidateLoadOptions(o); !status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--", status.message()));
  }
  return o;
}

int Main() {
  absl::StatusOr<client::LoadOptions> options = OptionsFromFlags();
  if (!options.ok()) {
    std::cerr << "cohort_load: " << options.status().message() << "\n";
    return 2;
  }
  absl::StatusOr<Workload> workload = LoadOrGenerate(
      absl::GetFlag(FLAGS_workload), absl::GetFlag(FLAGS_preset),
      absl::GetFlag(FLAGS_subscriptions), absl::GetFlag(FLAGS_events));
  if (!workload.ok()) {
    std::cerr << "workload: " << workload.status().message() << "\n";
    return 2;
  }
  client::LoadCallbacks callbacks;
  callbacks.on_subscribed = [](const client::LoadReport& report) {
    std::fputs(client::FormatSubscribeText(report.subscribe).c_str(), stdout);
    std::fflush(stdout);
  };
  absl::StatusOr<client::LoadReport> report =
      client::RunLoad(*workload, *options, callbacks);
  if (!report.ok()) {
    std::cerr << "cohort_load: " << report.status().message() << "\n";
    return report.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  if (report->published) {
    std::fputs(client::FormatPublishText(*report).c_str(), stdout);
    std::fputs(client::FormatServerText(*report).c_str(), stdout);
  }
  std::fflush(stdout);
  if (const std::string path = absl::GetFlag(FLAGS_json); !path.empty()) {
    std::ofstream out(path);
    out << client::LoadReportJson(*report);
    out.close();
    if (!out) {
      std::cerr << "cohort_load: cannot write " << path << "\n";
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace bench
}  // namespace cohort

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Load driver for cohortd: subscribes a Fabret workload, publishes its "
      "events (PublishStream or unary Publish, closed or open loop) and "
      "reports events/s, latency, errors and the server's stage profile.\n"
      "  cohort_load --server=127.0.0.1:50051 --preset=fabret-1m "
      "--mode=stream --clients=4 --json=/tmp/r.json");
  absl::ParseCommandLine(argc, argv);
  return cohort::bench::Main();
}
