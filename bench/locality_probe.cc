// locality_probe: what one core of a P-core server does while matching, as a
// single-threaded program to run under valgrind's cachegrind (experiment 4 of
// bench/experiment.sh: simulated cache misses and instructions per event).
//
//   valgrind --tool=cachegrind --cache-sim=yes --LL=4194304,16,64 \
//     locality_probe --preset=fabret-1m --subscriptions=100000 --events=2000 \
//     --partitions=4 --layout=partitioned --cohort_max=64
//
// Layouts, for core 0 of P:
//   partitioned  the staged server's partition 0: an index of the
//                subscriptions it owns (every P-th, as cohortd places them),
//                matching every event in cohorts of --cohort_max
//                (Index::MatchCohort);
//   replicated   the staged server without partitioning: the whole index,
//                matching every P-th event in cohorts (MatchCohort);
//   threaded     the thread-per-request server's worker: the whole index,
//                matching every P-th event one at a time (Index::MatchEvent).
// Cachegrind counts the whole process, index construction included, so the
// experiment runs each configuration twice, with --match and --nomatch, and
// takes the difference: the cost of matching alone. The probe prints one
// JSON object; `cores_per_event` (P for partitioned, else 1) turns core 0's
// cost per event it matched into the machine's cost per published event, and
// `match_seconds` is the wall time of the matching loop (outside cachegrind:
// one core's share of the work, for bench/partition_work.sh, which also runs
// P probes at once, one per core, their loops started together through
// --ready_file and --go_file).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/workload.h"
#include "matcher/index.h"

ABSL_FLAG(std::string, preset, "fabret-1m",
          "Workload preset to generate in memory; ignored with --workload.");
ABSL_FLAG(std::string, workload, "",
          "Read the workload from this file instead of generating --preset.");
ABSL_FLAG(int64_t, subscriptions, -1,
          "Override the preset's subscription count (-1: preset value).");
ABSL_FLAG(int64_t, events, -1,
          "Override the preset's event count (-1: preset value).");
ABSL_FLAG(uint32_t, partitions, 4, "P, the cores of the simulated server.");
ABSL_FLAG(uint32_t, core, 0,
          "Which core of the P to play (0..P-1); summed over all cores, every "
          "layout finds the same matches.");
ABSL_FLAG(std::string, layout, "partitioned",
          "partitioned, replicated or threaded (see the file comment).");
ABSL_FLAG(uint32_t, cohort_max, 64,
          "Events per MatchCohort call (partitioned and replicated).");
ABSL_FLAG(std::string, ready_file, "",
          "Create this file once the index is built (before matching).");
ABSL_FLAG(std::string, go_file, "",
          "Wait until this file exists before matching: with --ready_file, "
          "lets a script start the matching loops of P probes together "
          "(bench/partition_work.sh --concurrent).");
ABSL_FLAG(bool, match, true,
          "Match the events; --nomatch builds everything and stops, the "
          "baseline to subtract.");

namespace cohort {
namespace bench {
namespace {

int Run() {
  const uint32_t p = absl::GetFlag(FLAGS_partitions);
  const std::string layout = absl::GetFlag(FLAGS_layout);
  const uint32_t cohort_max = absl::GetFlag(FLAGS_cohort_max);
  const uint32_t core = absl::GetFlag(FLAGS_core);
  if (p == 0 || cohort_max == 0) {
    std::fprintf(stderr,
                 "locality_probe: --partitions and --cohort_max must "
                 "be at least 1\n");
    return 2;
  }
  if (core >= p) {
    std::fprintf(stderr,
                 "locality_probe: --core must be below --partitions "
                 "(%u)\n",
                 p);
    return 2;
  }
  if (layout != "partitioned" && layout != "replicated" &&
      layout != "threaded") {
    std::fprintf(stderr,
                 "locality_probe: --layout: unknown layout \"%s\"; use "
                 "partitioned, replicated or threaded\n",
                 layout.c_str());
    return 2;
  }
  absl::StatusOr<Workload> workload = LoadOrGenerate(
      absl::GetFlag(FLAGS_workload), absl::GetFlag(FLAGS_preset),
      absl::GetFlag(FLAGS_subscriptions), absl::GetFlag(FLAGS_events));
  if (!workload.ok()) {
    std::fprintf(stderr, "locality_probe: %s\n",
                 workload.status().ToString().c_str());
    return 1;
  }
  const bool partitioned = layout == "partitioned";

  // The core's subscriptions: as SubscriptionDirectory places them, the n-th
  // (n = 0, 1, ...) goes to partition n % P.
  matcher::Index index;
  const size_t total = workload->subscriptions.size();
  for (size_t n = partitioned ? core : 0; n < total; n += partitioned ? p : 1) {
    absl::Status s = index.Add(static_cast<matcher::SubscriptionId>(n),
                               workload->subscriptions[n]);
    if (!s.ok()) {
      std::fprintf(stderr, "locality_probe: subscription %zu: %s\n", n,
                   s.ToString().c_str());
      return 1;
    }
  }
  // The core's events: all of them when partitioned, else every P-th.
  std::vector<matcher::EventView> events;
  for (size_t k = partitioned ? 0 : core; k < workload->events.size();
       k += partitioned ? 1 : p) {
    events.push_back(workload->events[k]);
  }

  if (const std::string ready = absl::GetFlag(FLAGS_ready_file);
      !ready.empty()) {
    std::FILE* f = std::fopen(ready.c_str(), "w");
    if (f == nullptr || std::fclose(f) != 0) {
      std::fprintf(stderr, "locality_probe: --ready_file: cannot create %s\n",
                   ready.c_str());
      return 1;
    }
  }
  if (const std::string go = absl::GetFlag(FLAGS_go_file); !go.empty()) {
    // Polling keeps the probe dependency-free; 1 ms is far below the
    // matching loop's length. Give up after 10 minutes (a dead script).
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::minutes(10);
    while (access(go.c_str(), F_OK) != 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        std::fprintf(stderr,
                     "locality_probe: --go_file: %s did not appear "
                     "within 10 minutes\n",
                     go.c_str());
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  uint64_t matches = 0;
  const auto match_start = std::chrono::steady_clock::now();
  if (absl::GetFlag(FLAGS_match)) {
    if (layout == "threaded") {
      matcher::MatchScratch scratch;
      std::vector<matcher::SubscriptionId> out;
      for (matcher::EventView event : events) {
        index.MatchEvent(event, &scratch, &out);
        matches += out.size();
      }
    } else {
      std::vector<std::vector<matcher::SubscriptionId>> out;
      for (size_t at = 0; at < events.size(); at += cohort_max) {
        const size_t n = std::min<size_t>(cohort_max, events.size() - at);
        index.MatchCohort(absl::MakeConstSpan(events).subspan(at, n), &out);
        for (size_t i = 0; i < n; ++i) matches += out[i].size();
      }
    }
  }
  const double match_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                    match_start)
          .count();
  std::printf(
      "{\"layout\": \"%s\", \"partitions\": %u, \"core\": %u, "
      "\"cohort_max\": %u, \"match\": %s, \"subscriptions\": %zu, \"events\": "
      "%zu, "
      "\"matches\": %llu, \"cores_per_event\": %u, \"index_bytes\": %zu, "
      "\"match_seconds\": %.6f}\n",
      layout.c_str(), p, core, layout == "threaded" ? 1 : cohort_max,
      absl::GetFlag(FLAGS_match) ? "true" : "false", index.size(),
      events.size(), static_cast<unsigned long long>(matches),
      partitioned ? p : 1, index.MemoryBytes(), match_seconds);
  return 0;
}

}  // namespace
}  // namespace bench
}  // namespace cohort

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Matches like core 0 of a P-core server, for cachegrind; see "
      "bench/locality_probe.cc.");
  absl::ParseCommandLine(argc, argv);
  return cohort::bench::Run();
}
