// The staged server's index layout (docs/DESIGN.md section 4): one predicate
// table shared by P cluster partitions. Phase 1 is done once per cohort for
// the whole index, cut into tasks that any threads may run; phase 2 is done
// per partition, each over its own ClusterStore, reading the cohort's masks.
// The clusters hold almost all of the index's memory and almost all of
// phase 2's work, and they are what the partitions divide; the predicate
// table is stored once.
//
// Placement. Every subscription's row lives in exactly one partition. Rows
// are placed by access predicate, so that a cluster list is not cut into P
// small lists (visiting a cluster costs about as much for one row as for a
// hundred): an access predicate gets a *home* partition when it first heads
// a row (the partition then holding the fewest rows of its class), and its
// first spread_rows rows go there. The two classes are equality lists and
// per-attribute "present" lists (subscriptions without an equality), whose
// rows every event carrying the attribute checks and which produce most
// matches; balancing each class on its own keeps the present lists from
// piling up in a few partitions. (Homes chosen by all rows alike left
// fabret-1m's busiest of 16 partitions with 1.28x the mean rows checked,
// 1.62x the mean matches and 1.30x the mean phase-2 time; by class, 1.11x,
// 1.41x and 1.10x.)
// From then on row r (counting every row ever placed under it) goes to
// partition (home + r / spread_rows) % P, so the long lists that most
// events visit — per-attribute "present" lists, popular equalities — are
// spread over every partition in runs of spread_rows, and the partitions'
// work stays even. spread_rows is SpreadRows(P) unless given; with
// spread_rows = 0, rows go by id instead (id % P, the sharded layout's
// placement), for comparison.
//
// Two ways to use it:
//   - Whole: Add, Remove and MatchCohort on one thread (tests, the work
//     model, cachegrind).
//   - Split, as the staged server does: a subscription change in steps, so
//     that partition p's rows are written by the thread that owns p; and a
//     cohort's phase 1 in tasks and its phase 2 per partition, on whatever
//     threads the caller chooses.
//
// Thread safety (the caller orders the steps; nothing here locks):
//   - Add, AddBatch, Remove, PlanAdd, BeginPlans, EndPlans, FinishRemove:
//     exclusive (no other call at all).
//   - ApplyRow, ApplyRows and RemoveRow: concurrently with each other for
//     distinct partitions; nothing else meanwhile.
//   - BeginCohort, RunTask, MatchPartition, and the other const methods:
//     any number of threads at once, while none of the above runs. Each
//     CohortMasks is begun by one thread, each of its tasks is run once, and
//     MatchPartition(p, masks) may start once all its tasks have finished.
// Invariants: a planned row is applied before the next cohort begins; rows
// of one access predicate in partition p hang from one head, which only p's
// ApplyRow and RemoveRow write.
// Memory: partition p's clusters are allocated by the thread that calls
// ApplyRow and RemoveRow for p (the staged server: p's pinned thread, so
// they come from its NUMA node); everything else by the exclusive caller.
#ifndef COHORT_MATCHER_PARTITIONED_INDEX_H_
#define COHORT_MATCHER_PARTITIONED_INDEX_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "matcher/cluster_store.h"
#include "matcher/cohort_masks.h"
#include "matcher/cohort_matches.h"
#include "matcher/index.h"
#include "matcher/paged_array.h"
#include "matcher/predicate_table.h"
#include "matcher/row_planner.h"
#include "matcher/types.h"

namespace cohort {
namespace matcher {

// Rows an access predicate places in its home partition before its list is
// spread, and the length of each partition's run after that, at 4 or more
// partitions. Smaller runs balance the partitions better but cut lists into
// more clusters, each visited separately, and a lone event visits every
// partition's part of a spread list. On fabret-1m at P = 16 (the work
// model, bench/locality_probe --spread_rows, two runs each, 2026-11-26):
// runs of 256 bounded cohorts of 64 at 13.6-14.0x one core and cost a lone
// event 1.34-1.36x its work on one index; 1024 bounded them at 14.1-14.2x
// and cost 1.06-1.09x; 2048 at 13.5-13.6x. At P = 8, 512 and 1024 bound
// cohorts alike (6.8-7.0x), 1024 costing a lone event 1.05-1.08x against
// 1.15-1.17x. (An earlier measurement, before present lists were balanced
// as a class of their own, had 512 and 1024 leave the partitions uneven at
// P = 16, and chose 256.)
inline constexpr uint32_t kSpreadRows = 1024;

// The spread_rows PartitionedIndex uses with P partitions: kSpreadRows x 4
// / P, at least kSpreadRows. With fewer partitions each holds a larger
// share of the work, so longer runs balance it as well, and every list
// that spreads costs clusters (each of its widths gets a cluster in every
// partition): on fabret-1m at P = 2, runs of 256 checked 7% more clusters
// than one partition and spent 5% more in phase 2, while with 2,048 no
// list spreads and homes alone keep the partitions within 1% of each
// other's rows checked (bench/locality_probe --spread_rows).
constexpr uint32_t SpreadRows(uint32_t partitions) {
  return partitions >= 4 ? kSpreadRows : kSpreadRows * 4 / partitions;
}

class PartitionedIndex {
 public:
  // A subscription's row, planned by PlanAdd for `partition`.
  struct PendingRow {
    SubscriptionId id = 0;
    uint32_t partition = 0;
    internal::RowPlan plan;
  };
  // What RemoveRow took out and FinishRemove releases: per row, its access
  // predicate, its lead range (if any) and its columns (widths[i] entries of
  // `columns` in order).
  struct RemovedRows {
    std::vector<internal::PredicateId> access;
    std::vector<std::optional<internal::LeadRange>> leads;
    std::vector<uint32_t> widths;
    std::vector<uint32_t> columns;
    // The bounds of the inline columns (IsInline) among `columns`, in order.
    std::vector<internal::LeadRange> bounds;
  };

  // REQUIRES: partitions >= 1. spread_rows: see the file comment.
  explicit PartitionedIndex(uint32_t partitions)
      : PartitionedIndex(partitions, SpreadRows(partitions)) {}
  PartitionedIndex(uint32_t partitions, uint32_t spread_rows);
  PartitionedIndex(const PartitionedIndex&) = delete;
  PartitionedIndex& operator=(const PartitionedIndex&) = delete;
  ~PartitionedIndex();

  uint32_t partitions() const { return partitions_; }

  // Whole use: as Index::Add, Index::AddBatch, Index::Remove,
  // Index::MatchCohort.
  absl::Status Add(SubscriptionId id, absl::Span<const Predicate> predicates);
  std::vector<absl::Status> AddBatch(
      absl::Span<const Index::NewSubscription> batch);
  absl::Status Remove(SubscriptionId id);
  void MatchCohort(absl::Span<const EventView> events,
                   CohortMatches* matches);
  void MatchCohort(absl::Span<const EventView> events,
                   std::vector<std::vector<SubscriptionId>>* matches);

  bool Contains(SubscriptionId id) const;

  // Split use, subscribing. PlanAdd checks and plans the row of `id` (errors
  // as Index::Add; on error nothing changes), and from then on id counts as
  // present; ApplyRow then adds the row to row.partition's clusters.
  absl::Status PlanAdd(SubscriptionId id,
                       absl::Span<const Predicate> predicates,
                       PendingRow* row);
  void ApplyRow(const PendingRow& row);
  // Split use, subscribing in bulk (batched Subscribe, recovery), as
  // Index::AddBatch does it: PlanAdd calls between BeginPlans and EndPlans
  // leave the predicate table's upkeep to EndPlans
  // (PredicateTable::BeginBulk), and ApplyRows adds partition p's rows with
  // its lead clusters' merges done once, at the end (ClusterStore::
  // BeginBulk). BeginPlans and EndPlans are exclusive, as PlanAdd; no
  // cohort begins between them. ApplyRows is as ApplyRow.
  // REQUIRES: every row's partition is `partition`.
  void BeginPlans() { table_.BeginBulk(); }
  void EndPlans() { table_.EndBulk(); }
  void ApplyRows(uint32_t partition, absl::Span<const PendingRow> rows);

  // Split use, unsubscribing. PartitionOf tells where `id` lives (NOT_FOUND
  // if absent). RemoveRow takes id's row out of `partition`'s clusters and
  // appends it to *removed; FinishRemove then releases the predicates of
  // every row in `removed`. REQUIRES: PartitionOf(id) == partition, and id
  // is in one RemoveRow per change.
  absl::StatusOr<uint32_t> PartitionOf(SubscriptionId id) const;
  void RemoveRow(uint32_t partition, SubscriptionId id, RemovedRows* removed);
  void FinishRemove(const RemovedRows& removed);

  // How BeginCohort keeps its cohorts (default kCheaper); the others are
  // for measurements and tests. Exclusive, as Add.
  void set_cohort_keep(internal::CohortKeep keep) { keep_ = keep; }
  // Which ranges the rows planned from now on keep inline (default kAuto;
  // RowPlanner); the others are for measurements and tests. Exclusive, as
  // Add.
  void set_inline_ranges(internal::InlineRanges mode) {
    planner_.set_inline_ranges(mode);
  }

  // Phase 1: PredicateTable::BeginCohort, then masks->visits(p): the cluster
  // lists partition p checks. REQUIRES: as PredicateTable::BeginCohort.
  void BeginCohort(absl::Span<const EventView> events,
                   internal::CohortMasks* masks) const;
  void RunTask(size_t task, internal::CohortMasks* masks) const {
    table_.RunTask(task, masks);
  }

  // Phase 2 of partition p: appends to out's current chunk (bit i: event
  // i of the cohort) a pair per row of p's subscriptions that the cohort's
  // events match, and adds what it checked to *counters (events and chunks
  // are the caller's to count).
  // REQUIRES: every task of `masks` has run; out->BeginChunk was called.
  void MatchPartition(uint32_t p, const internal::CohortMasks& masks,
                      CohortMatches* out, IndexCounters* counters) const;
  // As MatchPartition, for unit `unit` of `units` of partition p's work
  // (a steal unit, CohortPipeline): the run of p's cluster lists from
  // visit n * unit / units to n * (unit + 1) / units, of n the cohort
  // visits in p. The units of p together match what MatchPartition does,
  // each row in exactly one unit; any number of them may run at once.
  // REQUIRES: as MatchPartition; unit < units.
  void MatchPartitionUnit(uint32_t p, uint32_t unit, uint32_t units,
                          const internal::CohortMasks& masks,
                          CohortMatches* out, IndexCounters* counters) const;

  size_t size() const { return size_; }
  size_t predicates() const { return table_.size(); }
  // Mask slots: the 64-bit words of a cohort's masks (live predicates,
  // their groups' room to grow, and slots wasted until a compaction).
  size_t mask_slots() const { return table_.slot_limit(); }
  // Clusters in partition p, and in all.
  size_t clusters(uint32_t p) const { return clusters_[p].clusters(); }
  size_t clusters() const;
  // Heap bytes held: the shared table, every partition's clusters, the
  // placement and location tables, and the mask buffer MatchCohort uses
  // (CohortMasks held by callers are theirs to count).
  size_t MemoryBytes() const;
  // Heap bytes of partition p's clusters alone.
  size_t PartitionBytes(uint32_t p) const { return clusters_[p].MemoryBytes(); }
  // Counters of MatchCohort (the whole use).
  const IndexCounters& counters() const { return counters_; }

 private:
  // Where an access predicate's rows go; see the file comment.
  struct Access {
    uint32_t placed = 0;  // rows ever placed under it
    uint32_t live = 0;    // rows now
    uint32_t home = 0;
    uint32_t row_class = 0;                // kEqualityRows or kPresentRows
    uint32_t head = internal::kNoCluster;  // while not spread: home's head
    uint32_t spread_at = kNotSpread;       // else: P heads in spread_heads_
  };
  // A subscription: its partition (kAbsent if none) and row there.
  struct Placed {
    internal::Location at;
    uint32_t partition = kAbsent;
  };
  static constexpr uint32_t kNotSpread = UINT32_MAX;
  static constexpr uint32_t kAbsent = UINT32_MAX;
  static constexpr uint32_t kNoAccess = UINT32_MAX;
  // Row classes (see the file comment), indexes of rows_in_.
  static constexpr uint32_t kEqualityRows = 0;
  static constexpr uint32_t kPresentRows = 1;

  // The partition row number `placed` under access predicate `a` goes to.
  uint32_t Choose(internal::PredicateId access, SubscriptionId id);
  uint32_t* Head(internal::PredicateId access, uint32_t partition);
  void Spread(Access& a);
  void Forget(internal::PredicateId access);

  const uint32_t partitions_;
  const uint32_t spread_rows_;
  internal::PredicateTable table_;
  internal::RowPlanner planner_;
  std::vector<internal::ClusterStore> clusters_;  // by partition
  std::vector<uint64_t> rows_in_[2];  // live rows, by class and partition
  std::vector<uint32_t> access_of_;               // by predicate id
  std::vector<Access> accesses_;
  std::vector<uint32_t> free_accesses_;
  std::vector<uint32_t> spread_heads_;
  std::vector<uint32_t> free_spreads_;
  internal::PagedArray<Placed> locations_;
  size_t size_ = 0;
  internal::CohortMasks masks_;  // MatchCohort's
  CohortMatches pairs_;  // the lists form of MatchCohort's, before ToLists
  IndexCounters counters_;
  internal::CohortKeep keep_ = internal::CohortKeep::kCheaper;
};

}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_PARTITIONED_INDEX_H_
