// Clusters: phase 2 of the Fabret index.
//
// Every subscription lives in exactly one *cluster*: the set of subscriptions
// that share one *access predicate* (see index.h for how it is chosen) and
// the same number of remaining entries, the cluster's *width*. A cluster stores
// its rows column-wise in one array: `capacity` subscription ids, then `width`
// columns of `capacity` entries each (an entry is a predicate id with flag
// bits: cohort_masks.h). Clusters of one access predicate form a singly linked
// list whose head the predicate table keeps.
//
// Checking a cluster for a cohort starts from the access predicate's cohort
// mask and streams the columns, ANDing each entry's mask into a per-row
// accumulator, in blocks so the accumulators stay in L1 and a block whose
// rows have all failed stops early. One visit serves every event of the
// cohort, so a cluster is pulled into cache once per cohort.
//
// The per-event path (`MatchListForEvent`) checks one event's rows against
// a predicate bit vector instead (the classic Fabret phase 2): it streams
// the columns the same way, keeping a list of the rows still alive.
//
// Removal leaves a tombstone (id kDeadRow, first entry the false predicate);
// a cluster is compacted when tombstones pass a quarter of its rows.
//
// Stage: owned by one partition (one ClusterStore per partition of a
// PartitionedIndex); single-threaded by contract.
// Thread safety: const methods only read the store, so any number of threads
// may call them at once, provided no thread calls a non-const method
// meanwhile. Non-const methods need exclusive access.
#ifndef COHORT_MATCHER_CLUSTER_STORE_H_
#define COHORT_MATCHER_CLUSTER_STORE_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "matcher/predicate_table.h"
#include "matcher/types.h"

namespace cohort {
namespace matcher {
namespace internal {

inline constexpr SubscriptionId kDeadRow = UINT32_MAX;

// Where a subscription lives: cluster index and row.
struct Location {
  uint32_t cluster = kNoCluster;
  uint32_t row = 0;
};

class ClusterStore {
 public:
  // Appends a row for `id` with `entries` to the cluster of (`access`,
  // entries.size()) whose list head is `*head`, creating the cluster if
  // needed. Returns where the row went.
  Location AddRow(uint32_t* head, PredicateId access, SubscriptionId id,
                  absl::Span<const uint32_t> entries);

  // The entries of a row and its access predicate.
  PredicateId Access(uint32_t cluster) const {
    return clusters_[cluster].access;
  }
  uint32_t Width(uint32_t cluster) const { return clusters_[cluster].width; }
  uint32_t Entry(Location at, uint32_t column) const;

  // Tombstones the row at `at`. If the cluster becomes empty it is unlinked
  // from the list at `*head` and freed; if tombstones pass a quarter of the
  // rows it is compacted. `moved(id, new_location)` is called for each row
  // that moves.
  template <typename Moved>
  void RemoveRow(uint32_t* head, Location at, Moved&& moved);

  // Phase 2: checks every cluster on the list starting at `head` against
  // cohort mask `access_mask` and calls `emit(id, mask)` for each row whose
  // mask of satisfied events is non-zero. An entry's mask is
  // words[slots[entry id]] (PredicateTable::slots(), CohortMasks::words()).
  // Adds the clusters and rows checked to `*clusters` and `*rows`.
  template <typename Emit>
  void MatchList(uint32_t head, uint64_t access_mask, const uint32_t* slots,
                 const uint64_t* words, Emit&& emit, uint64_t* clusters,
                 uint64_t* rows) const;

  // Phase 2 of the per-event path: appends to `*matches` the id of every
  // live row on the list starting at `head` whose entries all hold in `bits`
  // (PredicateBits::Holds; a negated entry holds when its bit is clear). The
  // access predicate is taken to hold. Adds the clusters and rows checked to
  // `*clusters` and `*rows`. REQUIRES: bits can hold every entry's slot.
  void MatchListForEvent(uint32_t head, const uint32_t* slots,
                         const PredicateBits& bits,
                         std::vector<SubscriptionId>* matches,
                         uint64_t* clusters, uint64_t* rows) const;

  size_t clusters() const { return clusters_.size() - free_.size(); }
  size_t MemoryBytes() const;

 private:
  struct Cluster {
    std::vector<uint32_t> data;  // ids[capacity], then width columns
    uint32_t rows = 0;
    uint32_t capacity = 0;
    uint32_t dead = 0;
    uint32_t width = 0;
    uint32_t next = kNoCluster;
    PredicateId access = kFalsePredicate;

    uint32_t* ids() { return data.data(); }
    const uint32_t* ids() const { return data.data(); }
    uint32_t* column(uint32_t c) { return data.data() + (c + 1) * capacity; }
    const uint32_t* column(uint32_t c) const {
      return data.data() + (c + 1) * capacity;
    }
  };

  uint32_t NewCluster(uint32_t* head, PredicateId access, uint32_t width);
  void Unlink(uint32_t* head, uint32_t index);
  static void Resize(Cluster& c, uint32_t capacity);
  template <typename Emit>
  size_t MatchCluster(const Cluster& c, uint64_t access_mask,
                      const uint32_t* slots, const uint64_t* words,
                      Emit& emit) const;
  static void MatchClusterForEvent(const Cluster& c, const uint32_t* slots,
                                   const PredicateBits& bits,
                                   std::vector<SubscriptionId>* matches);

  std::vector<Cluster> clusters_;
  std::vector<uint32_t> free_;
};

// Rows are checked in blocks of this many so the accumulators (2 KiB) stay in
// L1 beside the column data being streamed.
inline constexpr uint32_t kMatchBlock = 256;

template <typename Moved>
void ClusterStore::RemoveRow(uint32_t* head, Location at, Moved&& moved) {
  Cluster& c = clusters_[at.cluster];
  c.ids()[at.row] = kDeadRow;
  if (c.width > 0) c.column(0)[at.row] = kFalsePredicate;
  ++c.dead;
  if (c.dead == c.rows) {
    Unlink(head, at.cluster);
    return;
  }
  // Compact at a quarter dead: tombstones cost a column read each per visit.
  if (c.dead * 4 <= c.rows || c.dead < 8) return;
  uint32_t out = 0;
  for (uint32_t row = 0; row < c.rows; ++row) {
    const SubscriptionId id = c.ids()[row];
    if (id == kDeadRow) continue;
    if (out != row) {
      c.ids()[out] = id;
      for (uint32_t col = 0; col < c.width; ++col) {
        c.column(col)[out] = c.column(col)[row];
      }
      moved(id, Location{at.cluster, out});
    }
    ++out;
  }
  c.rows = out;
  c.dead = 0;
  if (c.capacity > 2 * c.rows) Resize(c, c.rows);
}

template <typename Emit>
void ClusterStore::MatchList(uint32_t head, uint64_t access_mask,
                             const uint32_t* slots, const uint64_t* words,
                             Emit&& emit, uint64_t* clusters,
                             uint64_t* rows) const {
  for (uint32_t i = head; i != kNoCluster; i = clusters_[i].next) {
    *rows += MatchCluster(clusters_[i], access_mask, slots, words, emit);
    ++*clusters;
  }
}

template <typename Emit>
size_t ClusterStore::MatchCluster(const Cluster& c, uint64_t access_mask,
                                  const uint32_t* slots, const uint64_t* words,
                                  Emit& emit) const {
  const uint32_t* ids = c.ids();
  if (c.width == 0) {
    for (uint32_t row = 0; row < c.rows; ++row) {
      if (ids[row] != kDeadRow) emit(ids[row], access_mask);
    }
    return c.rows;
  }
  uint64_t acc[kMatchBlock];
  for (uint32_t start = 0; start < c.rows; start += kMatchBlock) {
    const uint32_t n = std::min(kMatchBlock, c.rows - start);
    const uint32_t* col = c.column(0) + start;
    uint64_t any = 0;
    for (uint32_t j = 0; j < n; ++j) {
      const uint32_t e = col[j];
      // ~mask for a negated entry, without a branch.
      const uint64_t flip = -static_cast<uint64_t>(e >> 31);
      acc[j] = access_mask & (words[slots[e & kEntryIdMask]] ^ flip);
      any |= acc[j];
    }
    for (uint32_t k = 1; k < c.width && any != 0; ++k) {
      col = c.column(k) + start;
      any = 0;
      for (uint32_t j = 0; j < n; ++j) {
        if (acc[j] == 0) continue;
        const uint32_t e = col[j];
        const uint64_t flip = -static_cast<uint64_t>(e >> 31);
        acc[j] &= words[slots[e & kEntryIdMask]] ^ flip;
        any |= acc[j];
      }
    }
    if (any == 0) continue;
    for (uint32_t j = 0; j < n; ++j) {
      if (acc[j] != 0) emit(ids[start + j], acc[j]);
    }
  }
  return c.rows;
}

}  // namespace internal
}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_CLUSTER_STORE_H_
