// locality_probe: what the cores of a P-core server do while matching, as a
// single-threaded program: bench/partition_work.sh times it (the work
// model), and experiment 4 of bench/experiment.sh runs it under valgrind's
// callgrind for simulated cache misses and instructions per event.
//
//   valgrind --tool=callgrind --cache-sim=yes --instr-atstart=no \
//     --LL=4194304,16,64 locality_probe --preset=fabret-1m \
//     --subscriptions=100000 --events=2000 --partitions=4 \
//     --layout=partitioned --cohort_max=64
//
// Layouts:
//   partitioned     the staged server's default (matcher::PartitionedIndex):
//                   one predicate table for all cores, phase 1 once per
//                   cohort split over the cores (--phase1_split), phase 2 of
//                   partition p on core p;
//   sharded_phase1  the earlier partitioned layout: core 0's own index of
//                   the subscriptions it owns (every P-th, as cohortd places
//                   them), phase 1 and 2 for every event in cohorts
//                   (Index::MatchCohort);
//   replicated      the whole index, matching every P-th event in cohorts;
//   threaded        the thread-per-request worker: the whole index, every
//                   P-th event one at a time (Index::MatchEvent).
// For the last three the probe plays core --core alone. For partitioned the
// cores share one index, so the probe builds all of it and then:
//   - by default times every piece of every cohort (bench/work_model.h) and
//     reports each core's share under each phase-1 split;
//   - with --core_share, computes every cohort's masks first (all pieces,
//     into one buffer per cohort), then does core --core's pieces alone:
//     the cohorts it forms (on a scratch buffer), its phase-1 tasks and its
//     partition's phase 2. Masks other cores computed are therefore cold,
//     as they would be in this core's own caches.
// Only the matching work is run under callgrind instrumentation
// (CALLGRIND_START/STOP_INSTRUMENTATION around it; a no-op outside
// valgrind); `match_seconds` is its wall time. The probe prints one JSON
// object; `cores_per_event` (P where a core sees every event, else 1) turns
// a core's cost per event it saw into the machine's cost per published
// event. With --ready_file and --go_file, bench/partition_work.sh starts
// the matching loops of P probes at once (--concurrent).
#include <unistd.h>
#include <valgrind/callgrind.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "bench/work_model.h"
#include "bench/workload.h"
#include "matcher/index.h"
#include "matcher/partitioned_index.h"

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
          "partitioned, sharded_phase1, replicated or threaded (see the file "
          "comment).");
ABSL_FLAG(uint32_t, cohort_max, 64,
          "Events per cohort (partitioned: at most 64; sharded_phase1 and "
          "replicated: per MatchCohort call).");
ABSL_FLAG(uint32_t, spread_rows, cohort::matcher::kSpreadRows,
          "partitioned: rows an access predicate's list holds in its home "
          "partition before it spreads (0: place rows by id instead).");
ABSL_FLAG(std::string, phase1_split, "tasks",
          "partitioned: how phase 1 falls on the cores for --core_share: "
          "tasks, cohorts or attributes (bench/work_model.h).");
ABSL_FLAG(bool, core_share, false,
          "partitioned: run only core --core's pieces (after computing every "
          "cohort's masks), for callgrind, instead of timing every piece.");
ABSL_FLAG(std::string, ready_file, "",
          "Create this file once the index is built (before matching).");
ABSL_FLAG(std::string, go_file, "",
          "Wait until this file exists before matching: with --ready_file, "
          "lets a script start the matching loops of P probes together "
          "(bench/partition_work.sh --concurrent).");

namespace cohort {
namespace bench {
namespace {

using Clock = std::chrono::steady_clock;

int Fail(const std::string& message, int code = 1) {
  std::fprintf(stderr, "locality_probe: %s\n", message.c_str());
  return code;
}

// The --ready_file / --go_file handshake; returns false (after saying why)
// if it cannot be done.
bool ReadyThenWaitForGo() {
  if (const std::string ready = absl::GetFlag(FLAGS_ready_file);
      !ready.empty()) {
    std::FILE* f = std::fopen(ready.c_str(), "w");
    if (f == nullptr || std::fclose(f) != 0) {
      Fail(absl::StrCat("--ready_file: cannot create ", ready));
      return false;
    }
  }
  if (const std::string go = absl::GetFlag(FLAGS_go_file); !go.empty()) {
    // Polling keeps the probe dependency-free; 1 ms is far below the
    // matching loop's length. Give up after 10 minutes (a dead script).
    const auto deadline = Clock::now() + std::chrono::minutes(10);
    while (access(go.c_str(), F_OK) != 0) {
      if (Clock::now() > deadline) {
        Fail(absl::StrCat("--go_file: ", go,
                          " did not appear within 10 minutes"));
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  return true;
}

struct Result {
  size_t subscriptions = 0;
  size_t events = 0;
  uint64_t matches = 0;
  uint32_t cores_per_event = 1;
  size_t index_bytes = 0;
  double match_seconds = 0;
  std::string extra;  // more JSON fields, each starting with ", "
};

std::string JsonList(const std::vector<double>& v) {
  return absl::StrCat(
      "[", absl::StrJoin(v, ", ", [](std::string* out, double x) {
        absl::StrAppend(out, absl::StrFormat("%.6f", x));
      }),
      "]");
}

// Core --core's pieces of every cohort, after all masks are computed; adds
// its matches to *matches. False if the --go_file handshake failed.
bool RunCoreShare(const matcher::PartitionedIndex& index,
                  absl::Span<const matcher::EventView> events, size_t chunk,
                  const CoreShare& share, uint64_t* matches, double* seconds) {
  using matcher::internal::CohortMasks;
  std::vector<std::unique_ptr<CohortMasks>> masks;
  std::vector<double> attribute_positions;
  for (size_t at = 0; at < events.size(); at += chunk) {
    masks.push_back(std::make_unique<CohortMasks>());
    index.BeginCohort(events.subspan(at, chunk), masks.back().get());
    for (size_t t = 0; t < masks.back()->tasks(); ++t) {
      index.RunTask(t, masks.back().get());
      const matcher::AttributeId a = masks.back()->task_attribute(t);
      if (a >= attribute_positions.size()) attribute_positions.resize(a + 1);
      attribute_positions[a] += masks.back()->task_positions(t);
    }
  }
  CoreShare mine = share;
  if (mine.split == Phase1Split::kAttributes) {
    // LPT by positions walked: deterministic, unlike measured seconds.
    mine.attribute_core = AttributeCores(attribute_positions, share.partitions);
  }
  if (!ReadyThenWaitForGo()) return false;
  CohortMasks scratch;
  std::vector<std::vector<matcher::SubscriptionId>> out(chunk);
  matcher::IndexCounters counters;
  const auto start = Clock::now();
  CALLGRIND_START_INSTRUMENTATION;
  for (size_t k = 0; k < masks.size(); ++k) {
    const auto cohort = events.subspan(k * chunk, chunk);
    if (mine.Begins(k)) index.BeginCohort(cohort, &scratch);
    for (size_t t = 0; t < masks[k]->tasks(); ++t) {
      if (mine.RunsTask(k, t, masks[k]->task_attribute(t))) {
        index.RunTask(t, masks[k].get());  // rewrites the same masks
      }
    }
    for (size_t i = 0; i < cohort.size(); ++i) out[i].clear();
    index.MatchPartition(mine.core, *masks[k], out.data(), &counters);
    for (size_t i = 0; i < cohort.size(); ++i) *matches += out[i].size();
  }
  CALLGRIND_STOP_INSTRUMENTATION;
  *seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return true;
}

int RunPartitioned(const Workload& workload, uint32_t p, uint32_t core,
                   size_t chunk, Result* r) {
  Phase1Split split;
  if (!ParsePhase1Split(absl::GetFlag(FLAGS_phase1_split), &split)) {
    return Fail("--phase1_split: use tasks, cohorts or attributes", 2);
  }
  matcher::PartitionedIndex index(p, absl::GetFlag(FLAGS_spread_rows));
  for (size_t n = 0; n < workload.subscriptions.size(); ++n) {
    absl::Status s = index.Add(static_cast<matcher::SubscriptionId>(n),
                               workload.subscriptions[n]);
    if (!s.ok()) {
      return Fail(absl::StrCat("subscription ", n, ": ", s.ToString()));
    }
  }
  const std::vector<matcher::EventView> events(workload.events.begin(),
                                               workload.events.end());
  r->subscriptions = index.size();
  r->events = events.size();
  r->cores_per_event = p;
  if (absl::GetFlag(FLAGS_core_share)) {
    if (!RunCoreShare(index, events, chunk, CoreShare{p, core, split, {}},
                      &r->matches, &r->match_seconds)) {
      return 1;
    }
    r->index_bytes = index.MemoryBytes();
    absl::StrAppend(&r->extra, ", \"phase1_split\": \"",
                    Phase1SplitName(split), "\"");
    return 0;
  }
  if (!ReadyThenWaitForGo()) return 1;
  const SharedLayoutWork w = TimeSharedLayout(index, events, chunk);
  // The staged server keeps two mask buffers (one cohort in phase 1 while
  // the previous one is in phase 2); count them with the index.
  matcher::internal::CohortMasks masks;
  index.BeginCohort(absl::MakeConstSpan(events).subspan(0, chunk), &masks);
  r->index_bytes = index.MemoryBytes() + 2 * masks.MemoryBytes();
  r->matches = w.partition_matches[core];
  r->match_seconds = w.Cores(split)[core];
  absl::StrAppend(
      &r->extra, ", \"phase1_split\": \"", Phase1SplitName(split),
      "\", \"clusters\": ", index.clusters(),
      ", \"mask_buffer_bytes\": ", masks.MemoryBytes(),
      ", \"all_matches\": ", w.matches, ", \"cohorts\": ", w.cohorts,
      ", \"tasks\": ", w.tasks,
      absl::StrFormat(", \"begin_seconds\": %.6f, \"task_seconds\": %.6f, "
                      "\"phase2_seconds\": %.6f",
                      w.begin_seconds, w.task_seconds, w.phase2_seconds),
      ", \"rows_checked\": ", w.counters.rows_checked,
      ", \"clusters_checked\": ", w.counters.clusters_checked);
  for (Phase1Split s : kPhase1Splits) {
    absl::StrAppend(&r->extra, ", \"core_seconds_", Phase1SplitName(s),
                    "\": ", JsonList(w.Cores(s)));
  }
  return 0;
}

// sharded_phase1, replicated and threaded: core --core alone.
int RunOwnIndex(const Workload& workload, const std::string& layout,
                uint32_t p, uint32_t core, uint32_t cohort_max, Result* r) {
  const bool sharded = layout == "sharded_phase1";
  // The core's subscriptions: as SubscriptionDirectory places them, the n-th
  // (n = 0, 1, ...) goes to partition n % P.
  matcher::Index index;
  const size_t total = workload.subscriptions.size();
  for (size_t n = sharded ? core : 0; n < total; n += sharded ? p : 1) {
    absl::Status s = index.Add(static_cast<matcher::SubscriptionId>(n),
                               workload.subscriptions[n]);
    if (!s.ok()) {
      return Fail(absl::StrCat("subscription ", n, ": ", s.ToString()));
    }
  }
  // The core's events: all of them when sharded, else every P-th.
  std::vector<matcher::EventView> events;
  for (size_t k = sharded ? 0 : core; k < workload.events.size();
       k += sharded ? 1 : p) {
    events.push_back(workload.events[k]);
  }
  r->subscriptions = index.size();
  r->events = events.size();
  r->cores_per_event = sharded ? p : 1;
  if (!ReadyThenWaitForGo()) return 1;
  const auto start = Clock::now();
  CALLGRIND_START_INSTRUMENTATION;
  if (layout == "threaded") {
    matcher::MatchScratch scratch;
    std::vector<matcher::SubscriptionId> out;
    for (matcher::EventView event : events) {
      index.MatchEvent(event, &scratch, &out);
      r->matches += out.size();
    }
  } else {
    std::vector<std::vector<matcher::SubscriptionId>> out;
    for (size_t at = 0; at < events.size(); at += cohort_max) {
      const size_t n = std::min<size_t>(cohort_max, events.size() - at);
      index.MatchCohort(absl::MakeConstSpan(events).subspan(at, n), &out);
      for (size_t i = 0; i < n; ++i) r->matches += out[i].size();
    }
  }
  CALLGRIND_STOP_INSTRUMENTATION;
  r->match_seconds =
      std::chrono::duration<double>(Clock::now() - start).count();
  r->index_bytes = index.MemoryBytes();
  return 0;
}

int Run() {
  const uint32_t p = absl::GetFlag(FLAGS_partitions);
  const std::string layout = absl::GetFlag(FLAGS_layout);
  const uint32_t cohort_max = absl::GetFlag(FLAGS_cohort_max);
  const uint32_t core = absl::GetFlag(FLAGS_core);
  if (p == 0 || cohort_max == 0) {
    return Fail("--partitions and --cohort_max must be at least 1", 2);
  }
  if (core >= p) {
    return Fail(absl::StrCat("--core must be below --partitions (", p, ")"),
                2);
  }
  if (layout != "partitioned" && layout != "sharded_phase1" &&
      layout != "replicated" && layout != "threaded") {
    return Fail(absl::StrCat("--layout: unknown layout \"", layout,
                             "\"; use partitioned, sharded_phase1, replicated "
                             "or threaded"),
                2);
  }
  if (layout == "partitioned" &&
      cohort_max > matcher::internal::kMaxCohortChunk) {
    return Fail("--cohort_max: at most 64 with --layout=partitioned", 2);
  }
  absl::StatusOr<Workload> workload = LoadOrGenerate(
      absl::GetFlag(FLAGS_workload), absl::GetFlag(FLAGS_preset),
      absl::GetFlag(FLAGS_subscriptions), absl::GetFlag(FLAGS_events));
  if (!workload.ok()) return Fail(workload.status().ToString());
  Result r;
  const int rc = layout == "partitioned"
                     ? RunPartitioned(*workload, p, core, cohort_max, &r)
                     : RunOwnIndex(*workload, layout, p, core, cohort_max, &r);
  if (rc != 0) return rc;
  std::printf(
      "{\"layout\": \"%s\", \"partitions\": %u, \"core\": %u, "
      "\"cohort_max\": %u, \"subscriptions\": %zu, \"events\": %zu, "
      "\"matches\": %llu, \"cores_per_event\": %u, \"index_bytes\": %zu, "
      "\"match_seconds\": %.6f%s}\n",
      layout.c_str(), p, core, layout == "threaded" ? 1 : cohort_max,
      r.subscriptions, r.events, static_cast<unsigned long long>(r.matches),
      r.cores_per_event, r.index_bytes, r.match_seconds, r.extra.c_str());
  return 0;
}

}  // namespace
}  // namespace bench
}  // namespace cohort

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Matches like the cores of a P-core server, for the work model and "
      "callgrind; see bench/locality_probe.cc.");
  absl::ParseCommandLine(argc, argv);
  return cohort::bench::Run();
}
