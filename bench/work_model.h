// The work model of the partitioned layout (matcher::PartitionedIndex): how
// a P-core staged server's matching work falls on its cores, measured on one
// thread (bench/partition_work.sh, bench/locality_probe).
//
// Every piece of a cohort's work is timed on its own: BeginCohort (the
// values gathered and sorted, the equality lookups), each phase-1 task, and
// each partition's phase 2. Phase 2 of partition p is core p's. Phase 1 is
// assigned to cores by one of three splits, the candidates issue #17 asks
// to compare:
//   kTasks       each batch of tasks (as the server hands them out:
//                CohortMasks::BatchTasks) on the core whose part of the
//                predicate table it walks (CohortMasks::batch_part), as the
//                staged server's predicate stage prefers, with no credit
//                for an idle core stealing another's batch;
//   kCohorts     all of cohort k's phase 1 on core k % P;
//   kAttributes  every task of attribute a on one core: attributes go to
//                cores largest first, each to the least-loaded core (LPT),
//                by their measured phase-1 time over the whole run — the
//                best static split by attribute.
// BeginCohort of cohort k is core k % P's under every split (the core that
// forms the cohort). A core's share is the sum of its pieces; with P cores
// working in parallel and nothing shared, the slowest core's share bounds
// the round.
//
// The static kTasks split credits the server's predicate stage with nothing
// for taking tasks from whichever core is idle. `stealing_seconds` models
// that too: cohort by cohort, its BeginCohort and then each batch go to the
// core with the least work so far (which by then includes its partition's
// phase 2 of the previous cohort, as in the server's pipeline), then every
// partition's phase 2 is added to its core.
//
// `phase2_stealing_seconds` adds the server's phase-2 stealing
// (CohortPipeline, --phase2_stealing) to that schedule: a partition's share
// of a cohort goes to its own core unless that core's work so far exceeds
// the least-loaded core's by more than `steal_after_seconds` (the
// pipeline's kStealAfterNs: the share would wait that long for its own
// thread), and then to the least-loaded core. A stolen share is charged
// the seconds it took on its own core: the model leaves out the misses a
// thief pays on another core's clusters (experiment 4 measures those).
//
// With `units` > 1, every share of a cohort is matched a second time, cut
// into that many steal units (the server's --steal_units:
// PartitionedIndex::MatchPartitionUnit), each timed on its own, and
// `phase2_units_seconds` is the phase-2 stealing schedule with a unit,
// not a share, as the piece that goes to its own core or a thief. The
// two passes over the shares take turns going first from cohort to
// cohort, since the second finds what the first left in the cache (run
// share by share, the units came out twice as fast as their share).
//
// With a `baseline` index (the same subscriptions in one partition), each
// cohort is also matched whole on it, right beside its pieces on `index`
// (which goes first alternates from cohort to cohort), so that T(1) and the
// slowest core's share are timed in one run, interleaved: the machine's
// drift between runs, which on a shared VM moves a run's time by 30% and
// more, does not enter their ratio.
//
// Single-threaded; no synchronisation.
#ifndef COHORT_BENCH_WORK_MODEL_H_
#define COHORT_BENCH_WORK_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "matcher/partitioned_index.h"
#include "matcher/types.h"

namespace cohort {
namespace bench {

enum class Phase1Split { kTasks, kCohorts, kAttributes };
inline constexpr Phase1Split kPhase1Splits[] = {
    Phase1Split::kTasks, Phase1Split::kCohorts, Phase1Split::kAttributes};

// "tasks", "cohorts", "attributes".
const char* Phase1SplitName(Phase1Split split);
// Parses a name above; false if unknown.
bool ParsePhase1Split(const std::string& name, Phase1Split* split);

struct SharedLayoutWork {
  uint32_t partitions = 0;
  uint64_t events = 0;
  uint64_t cohorts = 0;
  uint64_t tasks = 0;
  uint64_t matches = 0;
  std::vector<uint64_t> partition_matches;  // by partition
  // Cluster rows each partition checked: its phase-2 work, in a count that
  // does not depend on the machine's noise.
  std::vector<uint64_t> partition_rows;
  // Clusters each partition visited, and its phase-2 seconds.
  std::vector<uint64_t> partition_clusters;
  std::vector<double> partition_seconds;
  double begin_seconds = 0;   // every BeginCohort
  double task_seconds = 0;    // every phase-1 task
  double phase2_seconds = 0;  // every partition's phase 2
  // The baseline's whole matching, and its matches (0 without one).
  double baseline_seconds = 0;
  uint64_t baseline_matches = 0;
  // Seconds by core, for each split (indexed like kPhase1Splits), and with
  // tasks taken by the least-loaded core (see the file comment).
  std::vector<double> core_seconds[3];
  std::vector<double> stealing_seconds;
  std::vector<double> phase2_stealing_seconds;
  uint64_t stolen_shares = 0;  // in phase2_stealing_seconds
  // With units > 1 (see the file comment): the schedule by units, the
  // units stolen in it, every unit's seconds, and the units' matches (equal
  // to `matches`).
  uint32_t units = 1;
  std::vector<double> phase2_units_seconds;
  uint64_t stolen_units = 0;
  double phase2_unit_seconds = 0;
  uint64_t unit_matches = 0;
  matcher::IndexCounters counters;

  const std::vector<double>& Cores(Phase1Split split) const {
    return core_seconds[static_cast<int>(split)];
  }
  double SlowestCore(Phase1Split split) const;
};

// Matches `events` against `index` in cohorts of `cohort_max` (at most 64),
// timing every piece, and each cohort on `baseline` too unless it is null
// (see the file comment). REQUIRES: baseline, if given, has one partition.
// Phase-1 tasks are placed in the batches the server hands out
// (CohortMasks::BatchTasks of `batch_positions`; 1: every task alone): a
// batch's tasks all go to one core. `steal_after_seconds` is the phase-2
// stealing rule's wait (see the file comment; the caller passes the
// pipeline's CohortPipeline::kStealAfterNs); `units` (>= 1), the steal
// units of phase2_units_seconds.
SharedLayoutWork TimeSharedLayout(
    const matcher::PartitionedIndex& index,
    absl::Span<const matcher::EventView> events, size_t cohort_max,
    const matcher::PartitionedIndex* baseline, uint64_t batch_positions,
    double steal_after_seconds, uint32_t units = 1);

// The pieces of cohort k that core `core` does under `split`, for a caller
// that runs them itself (the cachegrind probe): whether it forms the
// cohort, and whether task t is its. attribute_core is only read for
// kAttributes (from TimeSharedLayout's LPT; see AttributeCores).
struct CoreShare {
  uint32_t partitions;
  uint32_t core;
  Phase1Split split;
  std::vector<uint32_t> attribute_core;  // by attribute id

  bool Begins(uint64_t cohort) const { return cohort % partitions == core; }
  // Task `task` of cohort `cohort`, of `attribute` and task_part `part`
  // (of `partitions` parts).
  bool RunsTask(uint64_t cohort, matcher::AttributeId attribute,
                uint32_t part) const;
};

// The kAttributes assignment: attribute ids (by total measured seconds
// `attribute_seconds`) to `partitions` cores, largest first onto the
// least-loaded core.
std::vector<uint32_t> AttributeCores(
    const std::vector<double>& attribute_seconds, uint32_t partitions);

}  // namespace bench
}  // namespace cohort

#endif  // COHORT_BENCH_WORK_MODEL_H_
