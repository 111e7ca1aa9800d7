// How the engine behind cohortd is laid out and tuned (EngineOptions), and
// the names of its index layouts (--index). Set once from the server's flags
// (service/cohortd_main.cc) before the engine is created (create_engine.h),
// then read-only.
//
// Thread safety: plain values; copy freely.
#ifndef COHORT_SERVICE_STAGES_ENGINE_OPTIONS_H_
#define COHORT_SERVICE_STAGES_ENGINE_OPTIONS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cohort {
namespace service {

class Durability;  // service/storage/durability.h

// How the staged engine lays the index out over its partition stages
// (docs/DESIGN.md section 9). Each word names one layout only.
enum class IndexLayout {
  // The design and the default (PartitionedEngine): one predicate table for
  // the server, phase 1 once per cohort with its work split over the
  // partitions' cores; each partition owns a disjoint part of the clusters
  // (matcher::PartitionedIndex) and matches every cohort against it.
  kPartitioned,
  // The earlier layout (ShardedEngine), kept for comparison: each
  // partition owns a whole matcher::Index of a disjoint shard
  // (subscription n goes to partition n % P), forms its own cohorts and
  // runs phase 1 over its own predicate table for every event.
  kShardedPhase1,
  // Each partition holds a replica of the whole index and matches every
  // P-th event (ShardedEngine): the paper's "staged server without
  // partitioning", kept for the locality experiment (bench/experiment.sh).
  // P times the memory, and every Subscribe is applied P times.
  kReplicated,
};

// "partitioned", "sharded_phase1" or "replicated" (--index).
absl::StatusOr<IndexLayout> ParseIndexLayout(absl::string_view name);
absl::string_view IndexLayoutName(IndexLayout layout);

// EngineOptions' defaults for phase 1's hand-out (PredicateStage). Below
// 8,192 positions a cohort's tasks take about as long as waking another
// core. A batch of 16,384 positions is about 20 us of work at 1.4 ns a
// position: fabret-1m's cohorts of 64 walk about 85,000 positions in 96
// tasks of about 900 (a microsecond each), and each hand-off costs a
// claim, a count and, for a sleeping thread, a wake-up (chosen when it
// cost two trips through a lock every partition thread contended for,
// bench/reports/2026-11-27-xeon16-diagnosis; not measured again since
// issue 43 took the lock off).
inline constexpr uint64_t kPhase1InlinePositions = 8192;
inline constexpr uint64_t kPhase1BatchPositions = 16384;

struct EngineOptions {
  // Partition stages (staged mode). >= 1.
  uint32_t partitions = 1;
  IndexLayout index_layout = IndexLayout::kPartitioned;
  // Pin partition p to the p-th CPU this process may run on (only if there
  // are at least as many CPUs as partitions).
  bool pin_cores = false;
  // Allocate each pinned partition's memory on its CPU's NUMA node
  // (numa.h). No effect on unpinned partitions or in threaded mode.
  bool numa = false;
  // Cohort activation thresholds: run a cohort when `cohort_max` events wait
  // (0 = no limit) or the oldest has waited `cohort_wait_us` (0: run what is
  // queued as soon as a stage is free). The partitioned layout forms cohorts
  // of at most 64 events (one bit each in a mask), so there a cohort_max of
  // 0 or above 64 means 64.
  uint32_t cohort_max = 64;
  int64_t cohort_wait_us = 0;
  // Partitioned layout: copies of the subscription set, G, each split over
  // partitions / G of the partition threads with a front dispatch of its
  // own; a cohort goes to one copy, a change to all (PartitionedEngine).
  // 1: one index divided over every thread; `partitions`: a whole index
  // per thread (the replicated layout). REQUIRES: divides `partitions`.
  // 0 (--index_copies=0): the default rule (ResolveIndexCopies; the server
  // resolves it before the engine is created, counting what it recovered).
  uint32_t index_copies = 1;
  // What the copies may take together (--index_memory_budget_mb), for
  // DefaultIndexCopies; 0: half the machine's memory.
  uint64_t index_memory_budget_bytes = 0;
  // Partitioned layout: an idle partition thread may match another's share
  // of a cohort when that thread is behind (CohortPipeline).
  bool phase2_stealing = true;
  // Partitioned layout: steal units, the runs of its cluster lists each
  // partition's share of a cohort is cut into, claimed one at a time by
  // its thread or a thief (1 to CohortPipeline::kMaxUnits); 0: the
  // pipeline's default for the partitions of a copy
  // (CohortPipeline::DefaultUnits).
  uint32_t steal_units = 0;
  // Partitioned layout: cohorts in flight at once, each with its mask
  // buffer (1 to CohortPipeline::kMaxBuffers); 0: the pipeline's default
  // for the partition count (CohortPipeline::DefaultBuffers).
  uint32_t cohorts_in_flight = 0;
  // Partitioned layout, phase 1 of a cohort split over the partitions: the
  // forming thread runs it alone below `phase1_inline_positions` positions
  // (handing it out would cost about as much), else hands its tasks out in
  // batches of at least `phase1_batch_positions` (PredicateStage). Not
  // flags: tests lower them to hand out the small cohorts of small indexes.
  uint64_t phase1_inline_positions = kPhase1InlinePositions;
  uint64_t phase1_batch_positions = kPhase1BatchPositions;
  // Subscriptions Engine::Restore applies per change: recovery holds one
  // chunk's planned rows at a time. Not a flag: tests lower it to recover
  // in several chunks.
  size_t restore_chunk = size_t{1} << 20;
  // Most events admitted and not yet answered (bounds every queue).
  uint64_t queue_limit = 4096;
  // 0, or a target for the time from admission to answer: the limit on
  // events in flight then adapts, up to queue_limit (admission.h).
  int64_t latency_target_us = 0;
  // Worker threads (threaded mode). >= 1.
  uint32_t threads = 1;
  // Size of the subscriber dictionary (bounds subscriber ids).
  uint32_t max_subscribers = 1u << 24;
  // Not owned; null: nothing is journaled. With it, every change is logged
  // (ids assigned and records appended under one lock, so the journal's
  // order is the ids' order) and applied and acknowledged only once
  // durable; Shutdown closes it after the last change is applied.
  Durability* durability = nullptr;
};

// The most partition threads one index copy gets by default. On a 16-core
// Xeon, one index over 8 cores matched fabret-1m 4.31x one core, and over
// 16 only 4.84x, while 16 whole copies reached 9.79x (bench/RESULTS.md,
// xeon16-matcher): past 8 cores, a cohort's hand-offs and stragglers cost
// more than one index's memory saves. On 2 cores one index over both beat
// two copies by 1.10x (bench/RESULTS.md, preemption).
inline constexpr uint32_t kCoresPerCopy = 8;
// What the default rule counts a subscription's index memory at, per copy:
// fabret-1m takes 48.9 bytes (bench/RESULTS.md); the rest is headroom for
// wider subscriptions.
inline constexpr uint64_t kIndexBytesPerSubscription = 64;

// DefaultIndexCopies()
//
// The default --index_copies for `partitions` threads when the server
// starts with `subscriptions` (recovered; 0 on an empty or cluster start):
// the fewest copies, dividing `partitions`, that give no copy more than
// kCoresPerCopy threads, then fewer while the copies' estimated memory
// (copies x subscriptions x kIndexBytesPerSubscription) would exceed
// `budget_bytes` (0: half of `machine_bytes`). At least 1.
uint32_t DefaultIndexCopies(uint32_t partitions, uint64_t subscriptions,
                            uint64_t budget_bytes, uint64_t machine_bytes);

// The machine's physical memory in bytes (0 if unknown).
uint64_t MachineMemoryBytes();

// OK if `copies` (--index_copies; 0: the default rule) suits `partitions`,
// else INVALID_ARGUMENT naming both flags.
absl::Status CheckIndexCopies(uint32_t partitions, uint32_t copies);

// The index copies an engine of `options` runs when the server starts with
// `subscriptions`: `partitions` for the replicated layout, the default rule
// for --index_copies=0 (DefaultIndexCopies, this machine's memory), else
// `index_copies`.
uint32_t ResolveIndexCopies(const EngineOptions& options,
                            uint64_t subscriptions);

// The largest --latency_target_us.
inline constexpr int64_t kMaxLatencyTargetUs = 60'000'000;

// OK if `us` is a valid EngineOptions::latency_target_us (0 = off, at most
// kMaxLatencyTargetUs), else INVALID_ARGUMENT naming --latency_target_us.
absl::Status CheckLatencyTarget(int64_t us);

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STAGES_ENGINE_OPTIONS_H_
