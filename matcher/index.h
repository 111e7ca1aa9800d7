// The Fabret subscription index (Fabret et al., SIGMOD 2001) with cohort
// matching, as one single-threaded object: the index of a threaded server's
// workers, of a replicated or sharded_phase1 partition, and of tests. The
// staged server's default layout splits the same parts over its cores
// instead (partitioned_index.h).
//
// `Add` plans a subscription's row (row_planner.h: interning, the access
// predicate, column order) and appends it to the cluster of its access
// predicate and width (cluster_store.h).
//
// `MatchCohort` matches a batch of events: phase 1 computes a cohort mask
// per satisfied predicate (PredicateTable::BeginCohort and its tasks: one
// walk of each range group for the whole batch, not one run per event),
// phase 2 visits each cluster whose access predicate some event satisfied
// once for all events of the batch. A cohort of one event is the per-event
// path. Batches over 64 events are matched in chunks of 64. Its results are
// a flat buffer of (id, event mask) pairs (cohort_matches.h), or, for
// callers that want them so, each event's ids.
//
// `MatchEvent` is the classic Fabret per-event path, kept for the threaded
// baseline: phase 1 sets the satisfied predicates' bits in a predicate bit
// vector held by the caller's MatchScratch, phase 2 checks the clusters of
// the satisfied access predicates against it. It is const: it writes
// nothing in the Index (no scratch state, no counters).
//
// Stage: one instance per partition (replicated, sharded_phase1) or per
// server (threaded); no threads, no gRPC.
// Thread safety: not synchronised. Const methods, `MatchEvent` included, may
// be called from several threads at once as long as no thread calls a
// non-const method (`Add`, `AddBatch`, `Remove`, and `MatchCohort`, which
// uses scratch state inside the index) at the same time; a readers/writer
// lock gives that. Otherwise one thread at a time: the service confines
// each Index to its partition thread.
// Memory: all memory is owned by the Index and allocated by the thread that
// calls its non-const methods; a MatchScratch is owned by its caller.
#ifndef COHORT_MATCHER_INDEX_H_
#define COHORT_MATCHER_INDEX_H_

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "matcher/cluster_store.h"
#include "matcher/cohort_masks.h"
#include "matcher/cohort_matches.h"
#include "matcher/paged_array.h"
#include "matcher/predicate_table.h"
#include "matcher/row_planner.h"
#include "matcher/types.h"

namespace cohort {
namespace matcher {

// Counters since construction, for benchmarks and the stage profile.
struct IndexCounters {
  uint64_t events = 0;            // events matched
  uint64_t chunks = 0;            // phase-1/phase-2 rounds (<= 64 events each)
  uint64_t cluster_lists = 0;     // access predicates visited in phase 2
  uint64_t clusters_checked = 0;  // clusters visited in phase 2
  uint64_t rows_checked = 0;      // cluster rows checked in phase 2
  uint64_t matches = 0;           // (event, subscription) matches emitted
  // Chunks whose way of keeping (per event or masks) the cost model weighed,
  // and chunks matched event by event on a remembered verdict (Index).
  uint64_t chunks_weighed = 0;
  uint64_t chunks_remembered_per_event = 0;
};

// Per-thread scratch for Index::MatchEvent: the predicate bit vector and the
// access cluster lists to visit. Reuse one across calls to avoid allocation;
// it grows with the index's predicate ids and is all clear between calls.
// Thread safety: none; each thread needs its own.
class MatchScratch {
 public:
  MatchScratch() = default;
  MatchScratch(const MatchScratch&) = delete;
  MatchScratch& operator=(const MatchScratch&) = delete;

  // Heap bytes held.
  size_t MemoryBytes() const {
    return bits_.MemoryBytes() + open_.MemoryBytes() +
           access_.capacity() * sizeof(internal::AccessHit);
  }

 private:
  friend class Index;
  internal::PredicateBits bits_;
  internal::PredicateBits open_;  // PredicateTable::MarkSatisfied's
  std::vector<internal::AccessHit> access_;
};

class Index {
 public:
  Index();
  Index(const Index&) = delete;
  Index& operator=(const Index&) = delete;
  ~Index();

  // Adds subscription `id` with the conjunction `predicates`.
  // Errors: INVALID_ARGUMENT if id > kMaxSubscriptionId, predicates is empty
  // or longer than kMaxPredicatesPerSubscription, or a BETWEEN has
  // value > upper; ALREADY_EXISTS if id is present; RESOURCE_EXHAUSTED if
  // the index's distinct predicates would pass internal::kMaxPredicates
  // (about 10^9). On error nothing changes.
  absl::Status Add(SubscriptionId id, absl::Span<const Predicate> predicates);

  // One subscription of a batch (AddBatch).
  struct NewSubscription {
    SubscriptionId id = 0;
    absl::Span<const Predicate> predicates;
  };
  // Adds each subscription of `batch`, in order, as Add would, and returns
  // one status per subscription, Add's (a subscription that fails is not
  // added; the others are). The bulk load path (recovery, batched
  // Subscribe): the predicate table's upkeep (sorting range groups, laying
  // out mask slots) and the lead clusters' (merging their sorted parts
  // with the rows added) is done once at the end of the batch instead of
  // whenever a tail grows. Leaves the index as Adds in a loop would, but
  // for the order of rows within a cluster and of mask slots, which no
  // result depends on.
  std::vector<absl::Status> AddBatch(absl::Span<const NewSubscription> batch);

  // Removes subscription `id`. NOT_FOUND if absent (nothing changes).
  absl::Status Remove(SubscriptionId id);

  bool Contains(SubscriptionId id) const;

  // Matches `events` into *matches (Reset to events.size() first): a
  // (subscription id, event mask) pair per matched row of each chunk of up
  // to 64 events (cohort_matches.h). The form the service's stages read.
  // REQUIRES: each event's attributes are distinct.
  void MatchCohort(absl::Span<const EventView> events,
                   CohortMatches* matches);
  // As above, then sets (*matches)[i] to the ids of the subscriptions event
  // i matches, in no particular order. `matches` is resized to
  // events.size(); inner vectors are reused to avoid allocation.
  void MatchCohort(absl::Span<const EventView> events,
                   std::vector<std::vector<SubscriptionId>>* matches);

  // Matches one event without touching the index's own scratch state or
  // counters: phase 1 sets the satisfied predicates' bits in scratch's
  // predicate bit vector (cleared lazily: only the set bits), phase 2 visits
  // the clusters of satisfied access predicates and checks their columns
  // against that bit vector. Safe to call from several threads at once on
  // the same Index as long as no thread calls a non-const method at the same
  // time; each thread passes its own scratch. Appends nothing: *matches is
  // cleared, then filled with the ids matched (no particular order).
  // REQUIRES: the event's attributes are distinct; no other thread uses
  // `scratch` meanwhile.
  void MatchEvent(EventView event, MatchScratch* scratch,
                  std::vector<SubscriptionId>* matches) const;

  // Number of subscriptions.
  size_t size() const { return size_; }
  // Distinct interned predicates (shared between subscriptions).
  size_t predicates() const { return table_.size(); }
  size_t clusters() const { return clusters_.clusters(); }
  // Heap bytes held by the index (all structures, including slack).
  size_t MemoryBytes() const;
  const IndexCounters& counters() const { return counters_; }

  // Rows listed under access predicate `access` (what BeginCohort's cost
  // model weighs).
  uint32_t RowsUnder(internal::PredicateId access) const {
    return access < lists_.size() ? lists_[access].rows : 0;
  }
  // How MatchCohort keeps its cohorts (default kCheaper); the others are
  // for measuring the crossover (matcher_bench --keep) and for tests.
  void set_cohort_keep(internal::CohortKeep keep) {
    keep_ = keep;
    verdicts_.fill(Verdict{});
  }
  // Which ranges the rows added from now on keep inline (default kAuto;
  // RowPlanner); the others are for measurements and tests.
  void set_inline_ranges(internal::InlineRanges mode) {
    planner_.set_inline_ranges(mode);
  }

  // For microbenchmarks of the two phases only; not for production use.
  const internal::PredicateTable& table_for_benchmark() const {
    return table_;
  }
  // Phase 2 of the cohort whose masks `masks` holds (computed by
  // table_for_benchmark().ComputeCohort): calls emit(id, mask) per match.
  template <typename Emit>
  void MatchMasksForBenchmark(const internal::CohortMasks& masks,
                              Emit&& emit) const;

 private:
  // One chunk of up to 64 events, the first of which is event `base` of
  // *matches.
  void MatchChunk(absl::Span<const EventView> events, size_t base,
                  CohortMatches* matches);
  // The per-event path: appends event's matches to *matches and adds what
  // it checked to *counters.
  void MatchOne(EventView event, MatchScratch* scratch,
                std::vector<SubscriptionId>* matches,
                IndexCounters* counters) const;
  // Matches each of `events` alone, by MatchEvent's path (MatchOne),
  // into out's current chunk, and counts them as one chunk.
  void MatchEachAlone(absl::Span<const EventView> events,
                      CohortMatches* out);
  // Phase 2 of event e of a cohort kept per event: the lists of
  // masks.touched_access() from `first` on that are e's (an event's
  // entries lie together, in event order), checked against e's bits;
  // appends the ids matched to *matches, adds what it checked to the
  // counts, and returns where the next event's entries begin.
  size_t MatchTouchedOfEvent(const internal::CohortMasks& masks, size_t first,
                             size_t e, std::vector<SubscriptionId>* matches,
                             uint64_t* lists, uint64_t* clusters,
                             uint64_t* rows) const;
  // Appends to *visits the lists of `touched` that have clusters (their
  // heads, leads and masks), asking for list entries a few ahead: each is a
  // miss on a large index, and phase 2 then walks the lists as one
  // pipelined sequence (ClusterStore::MatchVisits).
  void AppendVisits(absl::Span<const internal::TouchedAccess> touched,
                    std::vector<internal::AccessVisit>* visits) const;
  // Phase 2 of one event kept per event: the cluster lists of access
  // predicates id_of(0), ..., id_of(n - 1), with the event's value of each
  // one's attribute value_of(v), checked against `bits`; appends the ids
  // matched to *matches and adds what it checked to the counters.
  template <typename IdOf, typename ValueOf>
  void MatchEventLists(EventView event, size_t n, IdOf id_of,
                       ValueOf value_of,
                       const internal::PredicateBits& bits,
                       const internal::PredicateBits& open,
                       std::vector<SubscriptionId>* matches, uint64_t* lists,
                       uint64_t* clusters, uint64_t* rows) const;
  const internal::Location* Find(SubscriptionId id) const;
  // The head of the cluster list of access predicate `id`, or kNoCluster.
  uint32_t Head(internal::PredicateId id) const {
    return id < lists_.size() ? lists_[id].head : internal::kNoCluster;
  }
  // Asks for the list entry of access predicate `id` (its head and rows).
  void PrefetchList(internal::PredicateId id) const {
    if (id < lists_.size()) __builtin_prefetch(&lists_[id]);
  }

  internal::PredicateTable table_;
  internal::RowPlanner planner_;
  // Add's plan, kept between calls so that its heap blocks are reused
  // (RowPlan::bounds_room).
  internal::RowPlan plan_;
  internal::ClusterStore clusters_;
  // The cluster list of each access predicate, by predicate id: its head
  // (kNoCluster: none) and its rows, side by side, so that BeginCohort's
  // look at the rows brings in the head that phase 2 reads next. Only as
  // long as the largest access predicate id: range predicates, which are
  // never access predicates, may have larger ids.
  struct List {
    uint32_t head = internal::kNoCluster;
    uint32_t rows = 0;
  };
  std::vector<List> lists_;
  internal::CohortKeep keep_ = internal::CohortKeep::kCheaper;
  internal::CohortMasks masks_;
  MatchScratch lone_scratch_;  // MatchCohort's, for events matched alone
  CohortMatches pairs_;  // the lists form of MatchCohort's, before ToLists
  internal::PagedArray<internal::Location> locations_;
  size_t size_ = 0;
  IndexCounters counters_;
  // The cost model's last verdict for each cohort size it weighs
  // (CohortKeep::kCheaper): per event or in masks, whichever it expects to
  // cost less (CohortMasks::per_event). The next kVerdictCohorts
  // cohorts of that size are kept the same way without weighing them, and
  // one kept per event is matched event by event, by MatchEvent's own
  // path. Weighing reads every access list's size and builds the cohort's
  // values by attribute before the choice: on selective-1m, cohorts of 4
  // and 16 ran at 0.94x and 0.92x of MatchEvent with it (bench/HISTORY.md,
  // issue 18 step 9). The ratio of one workload varies little from cohort
  // to cohort of one size (selective-1m at 16 events: 0.49-0.56; fabret-1m
  // at 8: 1.02-1.26), and every kVerdictCohorts + 1st cohort is weighed
  // again, so that a verdict follows the index as it changes. Verdicts
  // near 1 are remembered too (step 12): where the two ways tie, weighing
  // every cohort cost more than a wrong choice (fabret-1m's cohorts of 16
  // and selective-1m's of 32 ran at 0.94-0.98x and 0.92x of MatchEvent
  // weighed every time, 1.00x remembered, in paired rounds).
  struct Verdict {
    bool per_event = false;
    uint32_t left = 0;  // cohorts still kept by it
  };
  static constexpr uint32_t kVerdictCohorts = 63;
  std::array<Verdict, internal::kMaxCheaperPerEvent + 1> verdicts_{};
};

template <typename IdOf, typename ValueOf>
void Index::MatchEventLists(EventView event, size_t n, IdOf id_of,
                            ValueOf value_of,
                            const internal::PredicateBits& bits,
                            const internal::PredicateBits& open,
                            std::vector<SubscriptionId>* matches,
                            uint64_t* lists, uint64_t* clusters,
                            uint64_t* rows) const {
  // All the lists' entries are asked for first: each is a miss on a large
  // index, and the walk reads them one after another.
  for (size_t v = 0; v < n; ++v) PrefetchList(id_of(v));
  clusters_.MatchListsForEvent(
      event, n,
      [&](size_t v) {
        return internal::EventList{Head(id_of(v)), value_of(v), &bits,
                                   &open, matches};
      },
      table_.slots(), lists, clusters, rows);
}

template <typename Emit>
void Index::MatchMasksForBenchmark(const internal::CohortMasks& masks,
                                   Emit&& emit) const {
  // MatchChunk's phase 2, on masks computed elsewhere.
  uint64_t lists = 0, visited = 0, rows = 0;
  const absl::Span<const internal::TouchedAccess> touched =
      masks.touched_access();
  if (!masks.per_event()) {
    std::vector<internal::AccessVisit> visits;
    AppendVisits(touched, &visits);
    clusters_.MatchVisits(visits, masks, table_.slots(), emit, &lists,
                          &visited, &rows);
    return;
  }
  std::vector<SubscriptionId> found;
  for (size_t t = 0; t < touched.size();) {
    const size_t e = __builtin_ctzll(touched[t].mask);
    found.clear();
    t = MatchTouchedOfEvent(masks, t, e, &found, &lists, &visited, &rows);
    for (SubscriptionId id : found) emit(id, uint64_t{1} << e);
  }
}

}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_INDEX_H_
