// locality_probe: what the cores of a P-core server do while matching, as a
// single-threaded program: bench/partition_work.sh times it (the work
// model), and experiment 4 of bench/experiment.sh runs it under valgrind's
// callgrind for simulated cache misses and instructions per event.
//
//   valgrind --tool=callgrind --cache-sim=yes --instr-atstart=no
//     --LL=4194304,16,64 locality_probe --preset=fabret-1m
//     --subscriptions=100000 --events=2000 --partitions=4
//     --layout=partitioned --cohort_max=64 --all_cores
//
// (one command line).
//
// Layouts:
//   partitioned     the staged server's default (matcher::PartitionedIndex):
//                   one predicate table for all cores, phase 1 once per
//                   cohort split over the cores (--phase1_split), phase 2 of
//                   partition p on core p;
//   sharded_phase1  the earlier layout: each core's own index of
//                   the subscriptions it owns (every P-th, as cohortd places
//                   them), phase 1 and 2 for every event in cohorts
//                   (Index::MatchCohort);
//   replicated      the whole index, each core matching every P-th event in
//                   cohorts;
//   threaded        the thread-per-request worker: the whole index, every
//                   P-th event one at a time (Index::MatchEvent).
// What runs:
//   - sharded_phase1, replicated, threaded: core --core's share alone;
//   - partitioned (the cores share one index, so the probe builds all of
//     it): every piece of every cohort timed, and each core's share under
//     each phase-1 split added up (bench/work_model.h), with each cohort
//     also matched whole on a one-partition index beside it (--baseline);
//   - partitioned --threads: matching for real on P pinned threads
//     scheduled by the server's CohortPipeline (cohorts formed once,
//     phase-1 tasks taken by idle threads in batches, phase 2 per
//     partition), without gRPC or replies; it reports where the threads'
//     time went (thread_seconds_next: waiting for and taking work;
//     _form, _task, _match: the work; _report: telling the pipeline it is
//     done, which is the lock alone);
//   - --all_cores, any layout (for callgrind): every core's share in turn,
//     the simulated caches scrubbed before each, so each core starts cold
//     and sees only its own accesses, as in its own caches; the counts are
//     the whole machine's. For partitioned, every cohort's masks are
//     computed first, outside instrumentation, so the masks other cores
//     wrote are cold in each core's pass.
// Only the matching work runs under callgrind instrumentation
// (CALLGRIND_START/STOP_INSTRUMENTATION around it; a no-op outside
// valgrind); `match_seconds` is its wall time. The probe prints one JSON
// object; `cores_per_event` (P where core --core alone ran and every core
// sees every event, else 1) turns the cost per event it saw into the
// machine's cost per published event. With --ready_file and --go_file,
// bench/partition_work.sh starts the matching loops of P probes at once
// (--concurrent).
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include <valgrind/callgrind.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "bench/work_model.h"
#include "matcher/index.h"
#include "matcher/partitioned_index.h"
#include "service/observability/stage_profile.h"
#include "service/stages/cohort_pipeline.h"
#include "service/stages/engine_options.h"
#include "service/stages/placement.h"
#include "workload/typed_workload.h"
#include "workload/workload.h"

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
ABSL_FLAG(int64_t, spread_rows, -1,
          "partitioned: rows an access predicate's list holds in its home "
          "partition before it spreads (0: place rows by id instead; -1: "
          "matcher::SpreadRows(P), as the server does).");
ABSL_FLAG(std::string, phase1_split, "tasks",
          "partitioned: how phase 1 falls on the cores for --all_cores: "
          "tasks, cohorts or attributes (bench/work_model.h).");
ABSL_FLAG(bool, all_cores, false,
          "For callgrind: do every core's matching in turn under "
          "instrumentation, the simulated caches scrubbed between cores, "
          "instead of core --core's alone (or, partitioned, timing every "
          "piece); the counts are then the whole machine's.");
ABSL_FLAG(bool, threads, false,
          "partitioned: match for real on --partitions threads, thread p "
          "pinned to the p-th usable CPU, scheduled by the server's "
          "CohortPipeline (bench/partition_work.sh --concurrent); "
          "match_seconds is the wall time of the whole run.");
ABSL_FLAG(uint32_t, copies, 1,
          "partitioned --threads: G copies of the index, each split over "
          "P / G of the threads with a pipeline of its own; the events are "
          "dealt to the copies in turn (the server's --index_copies). G "
          "must divide P.");
ABSL_FLAG(std::string, preemption, "",
          "Comma-separated configurations, each run --rounds times in turn "
          "over indexes built once (bench/preemption.sh on 2 CPUs, "
          "bench/device_scaling.sh copies): pN is N threads on the server's "
          "pipeline, partitioned; -cG splits them into G index copies (c2: "
          "p2-c2, the replicated layout on 2 threads); -hog adds a thread "
          "spinning on this process's second CPU during the match; "
          "-nosteal turns phase-2 stealing off; -uK cuts each share into "
          "K steal units (--steal_units); -wakeall has a hand-off wake "
          "every thread it has work for, not only as many as there are "
          "CPUs free (the server's rule); -nobatch keeps threads that "
          "outnumber the CPUs off SCHED_BATCH (the server's rule puts them "
          "on it). Prints the events/s of "
          "every round.");
ABSL_FLAG(uint32_t, rounds, 9, "--preemption: rounds of every configuration.");
ABSL_FLAG(bool, steal, true,
          "partitioned --threads: idle threads may match a partition whose "
          "thread is behind (the server's --phase2_stealing).");
ABSL_FLAG(uint32_t, steal_units, 0,
          "partitioned: steal units, the runs each partition's share of a "
          "cohort is cut into (the server's --steal_units; 0: its default "
          "for the partitions of a copy). --threads runs them; the work "
          "model, above 1, times them beside the whole shares and adds "
          "core_seconds_phase2_units, the phase-2 stealing schedule by "
          "unit.");
ABSL_FLAG(uint64_t, task_batch_positions,
          cohort::service::kPhase1BatchPositions,
          "partitioned (--threads, and the work model): phase-1 tasks are "
          "handed out in batches of at least this many positions, as the "
          "server's predicate stage does (1: every task alone).");
ABSL_FLAG(uint32_t, cohorts_in_flight, 0,
          "partitioned: the server's --cohorts_in_flight, the mask buffers "
          "of --threads' pipeline and those the work model counts with the "
          "index's memory; 0: the server's default for --partitions.");
ABSL_FLAG(bool, baseline, true,
          "partitioned work model: also build the index in one partition and "
          "match every cohort on it right beside its pieces, so that T(1) "
          "and the cores' shares are timed in one run (baseline_seconds).");
ABSL_FLAG(std::string, ready_file, "",
          "Create this file once the index is built (before matching).");
ABSL_FLAG(std::string, go_file, "",
          "Wait until this file exists before matching: with --ready_file, "
          "lets a script start the matching loops of P probes together "
          "(bench/partition_work.sh --concurrent).");

namespace cohort {
namespace bench {

using workload::LoadOrGenerateAny;
using workload::Workload;
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

// Empties the simulated caches between two cores' work under callgrind
// (with collection off: the scrub is not counted): each core's pass starts
// cold, as its own caches would, and sees only its own accesses.
void ScrubSimulatedCaches() {
  // Four times the largest last-level cache experiment.sh simulates.
  static std::vector<uint64_t>* scrub =
      new std::vector<uint64_t>((size_t{16} << 20) / sizeof(uint64_t));
  CALLGRIND_TOGGLE_COLLECT;
  for (size_t i = 0; i < scrub->size(); i += 64 / sizeof(uint64_t)) {
    (*scrub)[i] += i;
  }
  CALLGRIND_TOGGLE_COLLECT;
}

// --all_cores for the partitioned layout: every cohort's masks computed
// first (not instrumented), then each core's pieces in turn — the cohorts
// it forms (on a scratch buffer), its phase-1 tasks under `split` (which
// rewrite the same masks), its partition's phase 2 — instrumented, with the
// simulated caches scrubbed before each core. Masks other cores computed
// are therefore cold, as they would be in this core's own caches. Adds the
// matches to *matches; false if the --go_file handshake failed.
bool RunAllCoreShares(const matcher::PartitionedIndex& index,
                      absl::Span<const matcher::EventView> events,
                      size_t chunk, Phase1Split split, uint64_t* matches,
                      double* seconds) {
  using matcher::internal::CohortMasks;
  const uint32_t p = index.partitions();
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
  // kAttributes: LPT by positions walked (deterministic, unlike seconds).
  const std::vector<uint32_t> attribute_core =
      AttributeCores(attribute_positions, p);
  if (!ReadyThenWaitForGo()) return false;
  CohortMasks scratch;
  matcher::CohortMatches out;
  std::vector<uint64_t> counts(chunk);
  matcher::IndexCounters counters;
  const auto start = Clock::now();
  CALLGRIND_START_INSTRUMENTATION;
  for (uint32_t core = 0; core < p; ++core) {
    const CoreShare mine{p, core, split, attribute_core};
    ScrubSimulatedCaches();
    for (size_t k = 0; k < masks.size(); ++k) {
      const auto cohort = events.subspan(k * chunk, chunk);
      if (mine.Begins(k)) index.BeginCohort(cohort, &scratch);
      for (size_t t = 0; t < masks[k]->tasks(); ++t) {
        if (mine.RunsTask(k, masks[k]->task_attribute(t),
                          masks[k]->task_part(t, p))) {
          index.RunTask(t, masks[k].get());
        }
      }
      out.Reset(cohort.size());
      out.BeginChunk(0);
      index.MatchPartition(core, *masks[k], &out, &counters);
      out.CountPerEvent(counts.data());
      for (size_t i = 0; i < cohort.size(); ++i) *matches += counts[i];
    }
  }
  CALLGRIND_STOP_INSTRUMENTATION;
  *seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return true;
}

// Pins the calling thread, one of `count`, to the index-th CPU this process
// may use, as the server pins its partitions (placement.h): only if there
// are at least `count` CPUs, else none is pinned and the kernel spreads
// them (false).
bool PinToCpu(uint32_t index, uint32_t count) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return false;
  if (static_cast<uint32_t>(CPU_COUNT(&allowed)) < count) return false;
  uint32_t seen = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed) || seen++ != index) continue;
    cpu_set_t mine;
    CPU_ZERO(&mine);
    CPU_SET(cpu, &mine);
    return pthread_setaffinity_np(pthread_self(), sizeof(mine), &mine) == 0;
  }
  return false;
}

// The server's cohorts in flight at P partitions (--cohorts_in_flight).
uint32_t CohortsInFlight(uint32_t p) {
  return service::CohortPipeline::BuffersFor(
      p, absl::GetFlag(FLAGS_cohorts_in_flight));
}

// The staged server's matching on P threads (see --threads): returns the
// matches found, and the wall time from the first cohort to the last match.
// Where the P threads' time went, summed over them (--threads): waiting
// for and taking work (Next), the work of each kind, and reporting it
// (Formed, TaskDone, MatchDone), in seconds; and the pieces of work.
struct ThreadTimes {
  enum Part { kNext, kForm, kTask, kMatch, kReport, kParts };
  static constexpr const char* kNames[kParts] = {"next", "form", "task",
                                                 "match", "report"};
  std::array<int64_t, kParts> ns{};
  std::array<uint64_t, kParts> count{};
  void Add(const ThreadTimes& o) {
    for (int i = 0; i < kParts; ++i) {
      ns[i] += o.ns[i];
      count[i] += o.count[i];
    }
  }
};

// With G = copies.size() copies, thread t works for copy t / (P / G) as
// its partition t % (P / G), and event n goes to copy n % G.
uint64_t RunThreads(
    const std::vector<std::unique_ptr<matcher::PartitionedIndex>>& copies,
    const Workload& workload, uint32_t threads, size_t chunk, bool steal,
    uint32_t units, bool wake_all, bool batch, double* seconds, bool* pinned,
    ThreadTimes* times, service::CohortPipeline::Counts* counts) {
  using service::CohortPipeline;
  using service::PublishJob;
  const uint32_t g = static_cast<uint32_t>(copies.size());
  const uint32_t p = threads / g;  // partitions of each copy
  // One job per event: only the events' values matter here.
  std::vector<std::unique_ptr<PublishJob>> jobs;
  for (const auto& event : workload.events) {
    jobs.push_back(std::make_unique<PublishJob>());
    jobs.back()->events.push_back(event);
  }
  struct Cohort {
    std::vector<matcher::EventView> views;
    matcher::internal::CohortMasks masks;
    std::vector<uint32_t> batch_bounds;
    std::vector<uint32_t> preferred;
  };
  struct Copy {
    Copy(uint32_t p, size_t chunk, bool steal, uint32_t units, uint32_t cpus)
        : pipeline(p, static_cast<uint32_t>(chunk), /*cohort_wait_ns=*/0,
                   CohortsInFlight(p), /*in_server=*/nullptr,
                   CohortPipeline::SoloCohortsFor(p),
                   steal ? CohortPipeline::kStealAfterNs
                         : CohortPipeline::kNoStealing,
                   CohortPipeline::UnitsFor(p, units), cpus),
          cohorts(pipeline.slots()) {}
    CohortPipeline pipeline;
    std::vector<Cohort> cohorts;
  };
  // As the server: the usable CPUs shared out over the copies, so that a
  // hand-off wakes no more threads than there are CPUs to run them.
  const uint32_t cpus = wake_all ? 0 : service::UsableCpusPerCopy(g);
  std::vector<std::unique_ptr<Copy>> states;
  for (uint32_t c = 0; c < g; ++c) {
    states.push_back(std::make_unique<Copy>(p, chunk, steal, units, cpus));
  }
  const uint64_t batch_positions = absl::GetFlag(FLAGS_task_batch_positions);
  std::atomic<uint64_t> matches{0};
  std::atomic<bool> all_pinned{true};
  std::mutex times_mu;
  // As the server's partition threads: SCHED_BATCH when they outnumber
  // the CPUs (service::SetBatch).
  const bool batch_threads = batch && service::OverSubscribed(threads);
  auto work = [&](uint32_t thread) {
    if (!PinToCpu(thread, threads)) all_pinned = false;
    if (batch_threads) service::SetBatch();
    const matcher::PartitionedIndex& index = *copies[thread / p];
    CohortPipeline& pipeline = states[thread / p]->pipeline;
    std::vector<Cohort>& cohorts = states[thread / p]->cohorts;
    const uint32_t t = thread % p;
    matcher::CohortMatches out;
    std::vector<uint64_t> counts(chunk);
    matcher::IndexCounters counters;
    uint64_t found = 0;
    CohortPipeline::Work w;
    ThreadTimes mine;
    int64_t last = service::MonotonicNanos();
    // Charges the time since the last mark to `part`.
    auto mark = [&](ThreadTimes::Part part) {
      const int64_t now = service::MonotonicNanos();
      mine.ns[part] += now - last;
      ++mine.count[part];
      last = now;
    };
    for (;;) {
      const bool more = pipeline.Next(t, &w);
      mark(ThreadTimes::kNext);
      if (!more) break;
      Cohort& c = cohorts[w.buffer];
      switch (w.kind) {
        case CohortPipeline::Work::Kind::kForm:
          c.views.clear();
          for (const service::QueuedEvent& e : w.events) {
            c.views.push_back(e.job->events[e.event]);
          }
          index.BeginCohort(c.views, &c.masks);
          c.preferred.clear();
          // As PredicateStage::Form, but a cohort of few positions is
          // handed out all the same.
          if (w.solo) {
            for (size_t t = 0; t < c.masks.tasks(); ++t) {
              index.RunTask(t, &c.masks);
            }
          } else {
            c.masks.BatchTasks(batch_positions, &c.batch_bounds);
            for (size_t b = 0; b + 1 < c.batch_bounds.size(); ++b) {
              c.preferred.push_back(c.masks.batch_part(
                  c.batch_bounds[b], c.batch_bounds[b + 1], p));
            }
          }
          mark(ThreadTimes::kForm);
          pipeline.Formed(w.buffer, c.preferred, c.views.size());
          mark(ThreadTimes::kReport);
          break;
        case CohortPipeline::Work::Kind::kTask:
          for (uint32_t t = c.batch_bounds[w.task];
               t < c.batch_bounds[w.task + 1]; ++t) {
            index.RunTask(t, &c.masks);
          }
          mark(ThreadTimes::kTask);
          pipeline.TaskDone(w.buffer);
          mark(ThreadTimes::kReport);
          break;
        case CohortPipeline::Work::Kind::kMatch: {
          // A solo cohort's match is every partition's whole, one after
          // another; a split one's, one unit of one partition (as
          // PartitionedEngine::Run and ClusterPartition::Match do it).
          const uint32_t units = w.all_partitions ? 1 : pipeline.units();
          const uint32_t first = w.all_partitions ? 0 : w.partition;
          const uint32_t end = w.all_partitions ? p : w.partition + 1;
          for (uint32_t q = first; q < end; ++q) {
            out.Reset(c.views.size());
            out.BeginChunk(0);
            index.MatchPartitionUnit(q, w.unit, units, c.masks, &out,
                                     &counters);
            out.CountPerEvent(counts.data());
            for (size_t i = 0; i < c.views.size(); ++i) found += counts[i];
          }
          mark(ThreadTimes::kMatch);
          pipeline.MatchDone(w.buffer, w.partition);
          mark(ThreadTimes::kReport);
          break;
        }
        default:  // no subscription changes here
          break;
      }
    }
    matches += found;
    std::lock_guard<std::mutex> lock(times_mu);
    times->Add(mine);
  };
  std::vector<std::thread> running;
  const auto start = Clock::now();
  for (uint32_t t = 0; t < threads; ++t) running.emplace_back(work, t);
  // Every event queued at once and the pipelines closed: cohorts of
  // `chunk` form back to back, as under a saturating load.
  for (size_t n = 0; n < jobs.size(); ++n) {
    states[n % g]->pipeline.PushEvents(jobs[n].get(), 0);
  }
  for (auto& copy : states) copy->pipeline.Close();
  for (std::thread& thread : running) thread.join();
  // The pipelines' counts over the run, summed over the copies.
  *counts = CohortPipeline::Counts();
  for (auto& copy : states) *counts += copy->pipeline.counts();
  *seconds = std::chrono::duration<double>(Clock::now() - start).count();
  *pinned = all_pinned;
  return matches;
}

// Adds every subscription of `workload` to *index; 0, or Fail's code.
int BuildIndex(const Workload& workload, matcher::PartitionedIndex* index) {
  for (size_t n = 0; n < workload.subscriptions.size(); ++n) {
    absl::Status s = index->Add(static_cast<matcher::SubscriptionId>(n),
                                workload.subscriptions[n]);
    if (!s.ok()) {
      return Fail(absl::StrCat("subscription ", n, ": ", s.ToString()));
    }
  }
  return 0;
}

int RunPartitioned(const Workload& workload, uint32_t p, uint32_t core,
                   size_t chunk, Result* r) {
  Phase1Split split;
  if (!ParsePhase1Split(absl::GetFlag(FLAGS_phase1_split), &split)) {
    return Fail("--phase1_split: use tasks, cohorts or attributes", 2);
  }
  const int64_t spread = absl::GetFlag(FLAGS_spread_rows);
  const uint32_t copies = absl::GetFlag(FLAGS_copies);
  if (copies == 0 || p % copies != 0 ||
      (copies > 1 && !absl::GetFlag(FLAGS_threads))) {
    return Fail("--copies: 1 or more, dividing --partitions, with --threads",
                2);
  }
  // Each copy's partitions.
  const uint32_t per_copy = p / copies;
  auto make_index = [&] {
    return std::make_unique<matcher::PartitionedIndex>(
        per_copy, spread < 0 ? matcher::SpreadRows(per_copy)
                             : static_cast<uint32_t>(spread));
  };
  std::vector<std::unique_ptr<matcher::PartitionedIndex>> built;
  built.push_back(make_index());
  matcher::PartitionedIndex& index = *built[0];
  if (const int rc = BuildIndex(workload, &index); rc != 0) return rc;
  const std::vector<matcher::EventView> events(workload.events.begin(),
                                               workload.events.end());
  r->subscriptions = index.size();
  r->events = events.size();
  r->cores_per_event = per_copy;
  if (absl::GetFlag(FLAGS_threads)) {
    for (uint32_t c = 1; c < copies; ++c) {
      built.push_back(make_index());
      if (const int rc = BuildIndex(workload, built.back().get()); rc != 0) {
        return rc;
      }
    }
    if (!ReadyThenWaitForGo()) return 1;
    bool pinned = false;
    ThreadTimes times;
    service::CohortPipeline::Counts counts;
    r->matches =
        RunThreads(built, workload, p, chunk, absl::GetFlag(FLAGS_steal),
                   absl::GetFlag(FLAGS_steal_units), /*wake_all=*/false,
                   /*batch=*/true,
                   &r->match_seconds, &pinned, &times, &counts);
    r->index_bytes = 0;
    for (const auto& copy : built) r->index_bytes += copy->MemoryBytes();
    absl::StrAppend(&r->extra, ", \"threads\": ", p,
                    ", \"copies\": ", copies, ", \"steals\": ", counts.steals,
                    ", \"sleeps\": ", counts.sleeps,
                    ", \"wakeups\": ", counts.wakeups,
                    ", \"cohorts_in_flight\": ", CohortsInFlight(per_copy),
                    ", \"pinned\": ",
                    pinned ? "true" : "false");
    // The threads' seconds by part, summed over the threads, and the
    // pieces of each (next: calls of Next; report: of Formed, TaskDone
    // and MatchDone).
    for (int i = 0; i < ThreadTimes::kParts; ++i) {
      absl::StrAppend(&r->extra, ", \"thread_seconds_",
                      ThreadTimes::kNames[i], "\": ",
                      absl::StrFormat("%.6f", times.ns[i] * 1e-9),
                      ", \"thread_calls_", ThreadTimes::kNames[i], "\": ",
                      times.count[i]);
    }
    return 0;
  }
  if (absl::GetFlag(FLAGS_all_cores)) {
    if (!RunAllCoreShares(index, events, chunk, split, &r->matches,
                          &r->match_seconds)) {
      return 1;
    }
    r->cores_per_event = 1;  // the counts are every core's already
    r->index_bytes = index.MemoryBytes();
    absl::StrAppend(&r->extra, ", \"phase1_split\": \"",
                    Phase1SplitName(split), "\", \"all_cores\": true");
    return 0;
  }
  std::unique_ptr<matcher::PartitionedIndex> baseline;
  if (absl::GetFlag(FLAGS_baseline)) {
    baseline = std::make_unique<matcher::PartitionedIndex>(1);
    if (const int rc = BuildIndex(workload, baseline.get()); rc != 0) {
      return rc;
    }
  }
  if (!ReadyThenWaitForGo()) return 1;
  const SharedLayoutWork w =
      TimeSharedLayout(index, events, chunk, baseline.get(),
                       absl::GetFlag(FLAGS_task_batch_positions),
                       service::CohortPipeline::kStealAfterNs * 1e-9,
                       service::CohortPipeline::UnitsFor(
                           p, absl::GetFlag(FLAGS_steal_units)));
  if (baseline != nullptr && w.baseline_matches != w.matches) {
    return Fail(absl::StrCat("the baseline found ", w.baseline_matches,
                             " matches, the partitions ", w.matches));
  }
  if (w.units > 1 && w.unit_matches != w.matches) {
    return Fail(absl::StrCat("the steal units found ", w.unit_matches,
                             " matches, the partitions ", w.matches));
  }
  // The staged server keeps CohortsInFlight(p) mask buffers (cohorts in
  // phase 1 while earlier ones are in phase 2); count them with the index.
  matcher::internal::CohortMasks masks;
  index.BeginCohort(absl::MakeConstSpan(events).subspan(0, chunk), &masks);
  r->index_bytes =
      index.MemoryBytes() + CohortsInFlight(p) * masks.MemoryBytes();
  r->matches = w.partition_matches[core];
  r->match_seconds = w.Cores(split)[core];
  absl::StrAppend(
      &r->extra, ", \"phase1_split\": \"", Phase1SplitName(split),
      "\", \"clusters\": ", index.clusters(),
      ", \"mask_buffer_bytes\": ", masks.MemoryBytes(),
      ", \"predicates\": ", index.predicates(),
      ", \"mask_slots\": ", index.mask_slots(),
      ", \"cohorts_in_flight\": ", CohortsInFlight(p),
      ", \"all_matches\": ", w.matches, ", \"cohorts\": ", w.cohorts,
      ", \"tasks\": ", w.tasks,
      absl::StrFormat(", \"begin_seconds\": %.6f, \"task_seconds\": %.6f, "
                      "\"phase2_seconds\": %.6f",
                      w.begin_seconds, w.task_seconds, w.phase2_seconds),
      baseline == nullptr
          ? ""
          : absl::StrFormat(", \"baseline_seconds\": %.6f", w.baseline_seconds),
      ", \"rows_checked\": ", w.counters.rows_checked,
      ", \"partition_rows_checked\": [", absl::StrJoin(w.partition_rows, ", "),
      "]", ", \"partition_clusters_checked\": [",
      absl::StrJoin(w.partition_clusters, ", "), "]",
      ", \"partition_matches\": [", absl::StrJoin(w.partition_matches, ", "),
      "]", ", \"partition_seconds\": ", JsonList(w.partition_seconds),
      ", \"clusters_checked\": ", w.counters.clusters_checked);
  for (Phase1Split s : kPhase1Splits) {
    absl::StrAppend(&r->extra, ", \"core_seconds_", Phase1SplitName(s),
                    "\": ", JsonList(w.Cores(s)));
  }
  absl::StrAppend(&r->extra, ", \"core_seconds_stealing\": ",
                  JsonList(w.stealing_seconds),
                  ", \"core_seconds_phase2_stealing\": ",
                  JsonList(w.phase2_stealing_seconds),
                  ", \"stolen_shares\": ", w.stolen_shares);
  if (w.units > 1) {
    absl::StrAppend(&r->extra, ", \"steal_units\": ", w.units,
                    ", \"core_seconds_phase2_units\": ",
                    JsonList(w.phase2_units_seconds),
                    ", \"stolen_units\": ", w.stolen_units,
                    absl::StrFormat(", \"phase2_unit_seconds\": %.6f",
                                    w.phase2_unit_seconds));
  }
  return 0;
}

// sharded_phase1, replicated and threaded: core --core alone, or with
// --all_cores every core in turn (each with its own shard when sharded; the
// replicas are one index in memory, which the cache scrubs between cores
// make as good as P copies).
int RunOwnIndex(const Workload& workload, const std::string& layout,
                uint32_t p, uint32_t core, uint32_t cohort_max, Result* r) {
  const bool sharded = layout == "sharded_phase1";
  const bool all = absl::GetFlag(FLAGS_all_cores);
  std::vector<uint32_t> cores;
  for (uint32_t c = all ? 0 : core; c < (all ? p : core + 1); ++c) {
    cores.push_back(c);
  }
  // Core c's subscriptions: as SubscriptionDirectory places them, the n-th
  // (n = 0, 1, ...) goes to partition n % P.
  std::vector<std::unique_ptr<matcher::Index>> indexes;
  const size_t total = workload.subscriptions.size();
  for (uint32_t c : sharded ? cores : std::vector<uint32_t>{core}) {
    indexes.push_back(std::make_unique<matcher::Index>());
    for (size_t n = sharded ? c : 0; n < total; n += sharded ? p : 1) {
      absl::Status s = indexes.back()->Add(
          static_cast<matcher::SubscriptionId>(n), workload.subscriptions[n]);
      if (!s.ok()) {
        return Fail(absl::StrCat("subscription ", n, ": ", s.ToString()));
      }
    }
  }
  // Core c's events: all of them when sharded, else every P-th.
  std::vector<std::vector<matcher::EventView>> events;
  for (uint32_t c : cores) {
    events.emplace_back();
    for (size_t k = sharded ? 0 : c; k < workload.events.size();
         k += sharded ? 1 : p) {
      events.back().push_back(workload.events[k]);
    }
  }
  r->subscriptions = indexes[0]->size();
  r->events = all ? workload.events.size() : events[0].size();
  r->cores_per_event = sharded && !all ? p : 1;
  if (!ReadyThenWaitForGo()) return 1;
  const auto start = Clock::now();
  CALLGRIND_START_INSTRUMENTATION;
  for (size_t i = 0; i < cores.size(); ++i) {
    if (all) ScrubSimulatedCaches();
    matcher::Index& index = *indexes[sharded ? i : 0];
    const std::vector<matcher::EventView>& mine = events[i];
    if (layout == "threaded") {
      matcher::MatchScratch scratch;
      std::vector<matcher::SubscriptionId> out;
      for (matcher::EventView event : mine) {
        index.MatchEvent(event, &scratch, &out);
        r->matches += out.size();
      }
      continue;
    }
    matcher::CohortMatches out;
    std::vector<uint64_t> counts(cohort_max);
    for (size_t at = 0; at < mine.size(); at += cohort_max) {
      const size_t n = std::min<size_t>(cohort_max, mine.size() - at);
      index.MatchCohort(absl::MakeConstSpan(mine).subspan(at, n), &out);
      out.CountPerEvent(counts.data());
      for (size_t k = 0; k < n; ++k) r->matches += counts[k];
    }
  }
  CALLGRIND_STOP_INSTRUMENTATION;
  r->match_seconds =
      std::chrono::duration<double>(Clock::now() - start).count();
  r->index_bytes = indexes[0]->MemoryBytes();
  if (all) absl::StrAppend(&r->extra, ", \"all_cores\": true");
  return 0;
}

// --preemption: the configurations of bench/preemption.sh in turn, round
// after round, over indexes built once, so that each round's figures were
// taken within a second of each other on a noisy machine.
int RunPreemption(const Workload& workload) {
  struct Config {
    std::string name;
    uint32_t threads = 2;
    uint32_t copies = 1;
    bool hog = false;
    bool steal = true;
    uint32_t units = 0;  // 0: the pipeline's default
    bool wake_all = false;
    bool batch = true;
    std::vector<double> rates;
    std::vector<uint64_t> matches, steals, sleeps, wakeups;
  };
  std::vector<Config> configs;
  for (absl::string_view name :
       absl::StrSplit(absl::GetFlag(FLAGS_preemption), ',')) {
    Config c;
    c.name = std::string(name);
    // pN[-cG][-uK][-hog][-nosteal][-wakeall][-nobatch]; c2 is p2-c2.
    std::vector<std::string> parts = absl::StrSplit(name, '-');
    if (parts[0] == "c2") {
      parts[0] = "p2";
      parts.insert(parts.begin() + 1, "c2");
    }
    bool ok = parts[0].size() > 1 && parts[0][0] == 'p' &&
              absl::SimpleAtoi(parts[0].substr(1), &c.threads) &&
              c.threads > 0;
    for (size_t i = 1; ok && i < parts.size(); ++i) {
      if (parts[i] == "hog") {
        c.hog = true;
      } else if (parts[i] == "nosteal") {
        c.steal = false;
      } else if (parts[i] == "wakeall") {
        c.wake_all = true;
      } else if (parts[i] == "nobatch") {
        c.batch = false;
      } else if (parts[i].size() > 1 && parts[i][0] == 'u') {
        ok = absl::SimpleAtoi(parts[i].substr(1), &c.units) && c.units > 0 &&
             c.units <= service::CohortPipeline::kMaxUnits;
      } else {
        ok = parts[i].size() > 1 && parts[i][0] == 'c' &&
             absl::SimpleAtoi(parts[i].substr(1), &c.copies) &&
             c.copies > 0 && c.threads % c.copies == 0;
      }
    }
    if (!ok) {
      return Fail(absl::StrCat("--preemption: bad configuration \"", name,
                               "\" (pN[-cG][-uK][-hog][-nosteal][-wakeall]"
                               "[-nobatch], G dividing N, or c2)"),
                  2);
    }
    configs.push_back(std::move(c));
  }
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
    return Fail("--preemption: cannot read this process's CPUs", 1);
  }
  const uint32_t cpus = static_cast<uint32_t>(CPU_COUNT(&allowed));
  // The indexes, by (partitions of a copy, copies), built once.
  std::map<std::pair<uint32_t, uint32_t>,
           std::vector<std::unique_ptr<matcher::PartitionedIndex>>>
      built;
  for (const Config& c : configs) {
    auto& copies = built[{c.threads / c.copies, c.copies}];
    if (!copies.empty()) continue;
    for (uint32_t g = 0; g < c.copies; ++g) {
      copies.push_back(std::make_unique<matcher::PartitionedIndex>(
          c.threads / c.copies));
      if (const int rc = BuildIndex(workload, copies.back().get()); rc != 0) {
        return rc;
      }
    }
  }
  // The hog: a thread spinning on the second CPU while `hogging`.
  std::atomic<bool> hogging{false}, done{false};
  std::thread hog([&] {
    PinToCpu(std::min<uint32_t>(1, cpus - 1), cpus);
    while (!done.load(std::memory_order_relaxed)) {
      if (!hogging.load(std::memory_order_relaxed)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
  });
  const uint32_t rounds = absl::GetFlag(FLAGS_rounds);
  for (uint32_t round = 0; round < rounds; ++round) {
    for (Config& c : configs) {
      hogging = c.hog;
      if (c.hog) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      double seconds = 0;
      bool pinned = false;
      ThreadTimes times;
      service::CohortPipeline::Counts counts;
      const uint64_t matches = RunThreads(
          built[{c.threads / c.copies, c.copies}], workload, c.threads, 64,
          c.steal, c.units, c.wake_all, c.batch, &seconds, &pinned, &times,
          &counts);
      hogging = false;
      c.rates.push_back(workload.events.size() / seconds);
      c.matches.push_back(matches);
      c.steals.push_back(counts.steals);
      c.sleeps.push_back(counts.sleeps);
      c.wakeups.push_back(counts.wakeups);
    }
  }
  done = true;
  hog.join();
  std::string out = absl::StrCat(
      "{\"preemption\": true, \"subscriptions\": ",
      workload.subscriptions.size(), ", \"events\": ",
      workload.events.size(), ", \"rounds\": ", rounds, ", \"configs\": {");
  for (size_t i = 0; i < configs.size(); ++i) {
    const Config& c = configs[i];
    absl::StrAppend(
        &out, i > 0 ? ", " : "", "\"", c.name, "\": {\"events_per_s\": [",
        absl::StrJoin(c.rates, ", ",
                      [](std::string* o, double v) {
                        absl::StrAppend(o, absl::StrFormat("%.1f", v));
                      }),
        "], \"matches\": [", absl::StrJoin(c.matches, ", "),
        "], \"steals\": [", absl::StrJoin(c.steals, ", "),
        "], \"sleeps\": [", absl::StrJoin(c.sleeps, ", "),
        "], \"wakeups\": [", absl::StrJoin(c.wakeups, ", "), "]}");
  }
  std::printf("%s}}\n", out.c_str());
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
  absl::StatusOr<Workload> workload = LoadOrGenerateAny(
      absl::GetFlag(FLAGS_workload), absl::GetFlag(FLAGS_preset),
      absl::GetFlag(FLAGS_subscriptions), absl::GetFlag(FLAGS_events));
  if (!workload.ok()) return Fail(workload.status().ToString());
  if (!absl::GetFlag(FLAGS_preemption).empty()) {
    return RunPreemption(*workload);
  }
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
