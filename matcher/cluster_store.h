// Clusters: phase 2 of the Fabret index.
//
// Every subscription lives in exactly one *cluster*: the set of subscriptions
// that share one *access predicate* (see index.h for how it is chosen) and
// the same class of the number of remaining entries (WidthClass: 0, 1, 2,
// 3-4, 5-8, ...), the widest of which is the cluster's *width*; a shorter
// row is padded with an entry that always holds (kPadEntry). A cluster stores
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
// The per-event path (`MatchListsForEvent`) checks one event's rows against
// a predicate bit vector instead (the classic Fabret phase 2): it streams
// the columns the same way, keeping a list of the rows still alive.
//
// Both paths walk a cohort's (or an event's) cluster lists as one sequence
// of clusters (WalkLists), asking for each cluster's header two clusters
// before its check and for its first cache lines one cluster before: a
// cohort visits thousands of short clusters (fabret-1m: 91 an event, of 17
// rows on average), and each used to wait for its header, then for its
// columns, one after the other.
//
// Rows under a "present" access predicate (subscriptions without an
// equality) also hold their lead range (cohort_masks.h, LeadRange) before
// their ids: `capacity` lower bounds, then `capacity` upper bounds, each
// an int64 in two words. Their check starts from the lead: per event, the
// event's value against the bounds; per cohort, the events whose values
// lie within the bounds (LeadValues). Such a cluster keeps its rows sorted
// by lead, but for an unsorted tail of recent rows that is merged in once
// it passes a fraction of the sorted part, in runs by the lead's shape
// (LeadRun): leads with lo INT64_MIN (LT, LE) in order of hi, then those
// with both bounds finite (BETWEEN) in order of lo, then those with hi
// INT64_MAX (GT, GE) in order of lo. The finite ones get their middle run
// only where they are many and narrow (kMidRunRows, kMidRunSpan); else
// they sort by lo with the last run. For a value (per cohort, the
// smallest and the largest), each run's rows that may hold are one window
// of it: hi >= value in the first run, lo <= value in the others, and in
// the middle one also lo >= value - the run's widest range. Only the
// windows are visited: on ranges-1m, where a BETWEEN lead's rows used to
// be read from lo INT64_MIN on, 115,000 rows an event instead of 254,000
// (bench/README.md, issue 18 step 13). A cohort finds the events within
// each lead by walking the sorted values alongside a run's rows instead of
// searching them.
//
// Removal leaves a tombstone (id kDeadRow, first entry the false
// predicate; a lead row keeps its lead, for the order, and is skipped by
// its id); a cluster is compacted when tombstones pass a quarter of its
// rows.
//
// Stage: owned by one partition (one ClusterStore per partition of a
// PartitionedIndex); single-threaded by contract.
// Thread safety: const methods only read the store, so any number of threads
// may call them at once, provided no thread calls a non-const method
// meanwhile. Non-const methods need exclusive access.
#ifndef COHORT_MATCHER_CLUSTER_STORE_H_
#define COHORT_MATCHER_CLUSTER_STORE_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "absl/types/span.h"
#include "matcher/cohort_masks.h"
#include "matcher/cohort_matches.h"
#include "matcher/huge_pages.h"
#include "matcher/predicate_table.h"
#include "matcher/types.h"
#include "matcher/word_arena.h"

namespace cohort {
namespace matcher {
namespace internal {

inline constexpr SubscriptionId kDeadRow = UINT32_MAX;

// Where a subscription lives: cluster index and row.
struct Location {
  uint32_t cluster = kNoCluster;
  uint32_t row = 0;
};

namespace lead_internal {
class SortedLeadMasks;
}  // namespace lead_internal

// An emit for ClusterStore::MatchVisits that appends (id, mask) to a
// cohort's flat buffer (the caller counts the matches after, with
// CohortMatches::MatchesFrom).
class AppendToMatches {
 public:
  explicit AppendToMatches(CohortMatches* out) : out_(out) {}
  void operator()(SubscriptionId id, uint64_t mask) const {
    out_->Add(id, mask);
  }
  void AddBlock(const SubscriptionId* ids, const uint64_t* masks,
                size_t n) const {
    out_->AddBlock(ids, masks, n);
  }

 private:
  CohortMatches* out_;
};

// Whether an emit for ClusterStore::MatchVisits takes a block of rows at
// once (AddBlock(ids, masks, n): the rows whose mask is not 0), rather
// than one call per matched row.
template <typename Emit, typename = void>
struct EmitsBlocks : std::false_type {};
template <typename Emit>
struct EmitsBlocks<Emit, std::void_t<decltype(&Emit::AddBlock)>>
    : std::true_type {};

// One cluster list of the per-event path (ClusterStore::MatchListsForEvent):
// its head, the event's value of the access predicate's attribute, the
// event's satisfied predicates, and where the ids matched go.
struct EventList {
  uint32_t head;
  int64_t value;
  const PredicateBits* bits;
  std::vector<SubscriptionId>* matches;
};

// Words a lead cluster keeps after its arrays: where its sorted runs end,
// and the middle run's widest lead (Cluster::meta).
inline constexpr uint32_t kLeadMetaWords = 3;
// A lead cluster's finite leads get a middle run of their own
// (Cluster::sorted) when the widest is narrower than this fraction of the
// spread of their lower bounds...
inline constexpr uint64_t kMidRunSpan = 4;
// ... and when they are at least this many.
inline constexpr uint32_t kMidRunRows = 1024;

// Pads a row that is narrower than its cluster: the false predicate,
// negated, which holds for every event (the false predicate's bit and mask
// are always clear). No subscription has it.
inline constexpr uint32_t kPadEntry = kNegatedBit | kFalsePredicate;

// A list keeps one cluster per width class rather than per width: widths
// 0, 1 and 2 each, then 3-4, 5-8, 9-16 and so on. An event visits fewer,
// longer clusters; each visit costs a header, a prefetch and, in a lead
// cluster, the window searches. On ranges-1m's first 20,000 subscriptions
// (5-10 ranges each) an event visited 190 lead clusters of about 100 rows,
// and the clusters' own costs were a fifth of its time: MatchEvent 1.24x
// there, ranges-1m 1.26x. On fabret-1m (91 clusters an event, 17 rows on
// average) 183,502 clusters became 122,596, MatchEvent 1.02-1.10x and
// cohort 64 1.06-1.20x. One cluster a lead list (every width padded to the
// widest) did 1.42x on the 20,000 but cost fabret-1m 14%: most of its
// matches come from lead rows, and a row that matches reads all its
// padding (bench/README.md, issue 18 step 14).
inline uint32_t WidthClass(uint32_t width) {
  if (width <= 2) return width;
  uint32_t c = 3;  // widths (2^(c-2), 2^(c-1)]
  while ((1u << (c - 1)) < width) ++c;
  return c;
}

class ClusterStore {
 public:
  ClusterStore() = default;
  ClusterStore(const ClusterStore&) = delete;
  ClusterStore& operator=(const ClusterStore&) = delete;
  ClusterStore(ClusterStore&&) = default;
  ClusterStore& operator=(ClusterStore&&) = default;
  ~ClusterStore();

  // Appends a row for `id` with `entries` (and `lead`, if any) to the
  // cluster of (`access`, WidthClass(entries.size())) whose list head is
  // `*head`, widening it if it is narrower and creating it if needed.
  // `moved(id, location)` is called with where the new row went, and for
  // each row that moved (a lead cluster merging its tail).
  // REQUIRES: all rows of one list have a lead, or none.
  template <typename Moved>
  void AddRow(uint32_t* head, PredicateId access, SubscriptionId id,
              absl::Span<const uint32_t> entries,
              const std::optional<LeadRange>& lead, Moved&& moved);

  // The entries of a row, its lead range and its access predicate.
  PredicateId Access(uint32_t cluster) const {
    return access_[cluster];
  }
  // The row's own entries (Entry's columns 0 .. RowWidth - 1): its
  // cluster's width, less the row's padding.
  uint32_t RowWidth(Location at) const;
  uint32_t Entry(Location at, uint32_t column) const;
  std::optional<LeadRange> Lead(Location at) const;

  // Bulk loading (Index::AddBatch): between BeginBulk and EndBulk, AddRow
  // merges no lead cluster's tail; EndBulk merges, once, each tail that
  // the batch made due (however many merges its rows would have made one
  // by one), calling moved(id, location) for each row that moved.
  // REQUIRES between the two: no phase 2 (a tail is checked row by row, so
  // it would be correct, but as long as the batch).
  void BeginBulk() { bulk_ = true; }
  template <typename Moved>
  void EndBulk(Moved&& moved);

  // Tombstones the row at `at`. If the cluster becomes empty it is unlinked
  // from the list at `*head` and freed; if tombstones pass a quarter of the
  // rows it is compacted. `moved(id, new_location)` is called for each row
  // that moves.
  template <typename Moved>
  void RemoveRow(uint32_t* head, Location at, Moved&& moved);

  // Phase 2 of a cohort kept in masks: checks every cluster on the lists of
  // `visits`, in order (AccessVisit: a list's head, its access predicate's
  // cohort mask, and its lead values, masks.lead_values(lead)), walked as
  // one sequence of clusters (WalkLists), and calls `emit(id, mask)` for
  // each row whose mask of satisfied events is non-zero: the access mask
  // ANDed with each entry's mask, masks.words()[slots[entry id]] (slots:
  // PredicateTable::slots()), and with a lead range's, LeadMask. Adds the
  // non-empty lists, the clusters and the rows checked to `*lists`,
  // `*clusters` and `*rows`.
  // REQUIRES: !masks.per_event().
  template <typename Emit>
  void MatchVisits(absl::Span<const AccessVisit> visits,
                   const CohortMasks& masks, const uint32_t* slots,
                   Emit&& emit, uint64_t* lists, uint64_t* clusters,
                   uint64_t* rows) const;

  // Phase 2 of the per-event path, for the lists list_of(0), ...,
  // list_of(n - 1) (EventList), walked as one sequence of clusters as
  // MatchVisits walks them: appends to `*list.matches` the id of every live
  // row of the list whose lead range, if it has one, holds `list.value`
  // (the event's value of the access predicate's attribute) and whose
  // entries all hold in `*list.bits` (PredicateBits::Holds; a negated
  // entry holds when its bit is clear). The access predicate is taken to
  // hold. Counts as MatchVisits counts. REQUIRES: the bits can hold every
  // entry's slot.
  template <typename ListOf>
  void MatchListsForEvent(size_t n, ListOf&& list_of, const uint32_t* slots,
                          uint64_t* lists, uint64_t* clusters,
                          uint64_t* rows) const;

  size_t clusters() const { return clusters_.size() - free_.size(); }
  size_t MemoryBytes() const;

 private:
  struct Cluster {
    // With a lead: lo[capacity] and hi[capacity] (an int64 in two words
    // each); then ids[capacity], then width columns. `capacity` words an
    // array: arrays() of them.
    uint32_t* data = nullptr;  // from the store's arena_; words() of them
    uint32_t rows = 0;
    uint32_t capacity = 0;
    uint32_t dead = 0;
    // Lead clusters: rows [0, sorted) are in order, in three runs by the
    // shape of their lead (LeadRun): [0, sorted_low) with lo INT64_MIN, by
    // hi; [sorted_low, sorted_mid) with both bounds finite, by lo;
    // [sorted_mid, sorted) with hi INT64_MAX, by lo. mid_width bounds
    // hi - lo over the middle run (UINT32_MAX: not bounded), so that a
    // value v needs only its rows with lo >= v - mid_width. The three are
    // kept after the arrays (meta), not here: this header is read on every
    // visit of every cluster, and most clusters have no lead.
    uint32_t sorted = 0;
    uint16_t width = 0;   // at most kMaxPredicatesPerSubscription
    uint16_t lead = 0;    // 1: rows have lead ranges
    uint32_t next = kNoCluster;

    uint32_t arrays() const { return width + 1u + (lead ? 4u : 0u); }
    // Words of data: the arrays, and a lead cluster's meta.
    size_t words() const {
      return size_t{capacity} * arrays() + (lead ? kLeadMetaWords : 0);
    }
    // REQUIRES for meta and the three below: lead, capacity > 0.
    uint32_t* meta() { return data + size_t{capacity} * arrays(); }
    const uint32_t* meta() const {
      return data + size_t{capacity} * arrays();
    }
    uint32_t sorted_low() const { return meta()[0]; }
    uint32_t sorted_mid() const { return meta()[1]; }
    uint32_t mid_width() const { return meta()[2]; }
    // Words before the ids: the lead ranges'.
    size_t lead_words() const { return lead ? size_t{4} * capacity : 0; }
    uint32_t* ids() { return data + lead_words(); }
    const uint32_t* ids() const { return data + lead_words(); }
    uint32_t* column(uint32_t c) { return ids() + (c + 1) * capacity; }
    const uint32_t* column(uint32_t c) const {
      return ids() + (c + 1) * capacity;
    }
    // REQUIRES for the rest: lead.
    const uint32_t* lead_lo() const { return data; }
    const uint32_t* lead_hi() const { return data + 2 * capacity; }
    int64_t lo(uint32_t row) const { return LoadInt64(lead_lo() + 2 * row); }
    int64_t hi(uint32_t row) const { return LoadInt64(lead_hi() + 2 * row); }
    LeadRange GetLead(uint32_t row) const { return {lo(row), hi(row)}; }
    void SetLead(uint32_t row, LeadRange r) {
      std::memcpy(data + 2 * row, &r.lo, sizeof(int64_t));
      std::memcpy(data + 2 * (capacity + row), &r.hi, sizeof(int64_t));
    }
    // The rows of the sorted part whose lead may hold for some value in
    // [smallest, largest], one window a run: of the leads with lo
    // INT64_MIN (in order of hi) those with hi < smallest are a prefix; of
    // the others (in order of lo) those with lo > largest are a suffix,
    // and of the finite ones those with lo < smallest - mid_width a
    // prefix.
    struct Window {
      uint32_t from;
      uint32_t to;
    };
    struct Windows {
      Window run[3];
    };
    Windows SortedWindows(int64_t smallest, int64_t largest) const;
  };
  static_assert(sizeof(Cluster) == 32, "a header a half cache line");
  static int64_t LoadInt64(const uint32_t* p) {
    int64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }

  // Calls visit(v, cluster) for each cluster of the lists whose heads are
  // head_of(0), ..., head_of(n - 1) (kNoCluster: an empty list), in order,
  // and returns how many of the lists were not empty. A cluster's header
  // is asked for two visits before it is checked, and its first lines
  // (PrefetchRows) one visit before.
  template <typename HeadOf, typename Visit>
  size_t WalkLists(size_t n, HeadOf&& head_of, Visit&& visit) const;
  // Asks for the first cache lines of each of c's arrays (all of them for a
  // small cluster); nothing for a lead cluster.
  static void PrefetchRows(const Cluster& c);

  uint32_t NewCluster(uint32_t* head, PredicateId access, uint32_t width,
                      bool lead);
  // Finds or creates the cluster for a row and appends the row to it.
  Location AppendRow(uint32_t* head, PredicateId access, SubscriptionId id,
                     absl::Span<const uint32_t> entries,
                     const std::optional<LeadRange>& lead);
  // Lead clusters: whether the tail is due to be merged, and the merge:
  // sorts the live rows by lead (tombstones dropped) and lists in
  // moved_scratch_ the new row of each row that moved.
  static bool TailDue(const Cluster& c);
  void MergeTail(Cluster& c);
  // Copies row `from` of `c` to row `to` of `into` (same layout, any
  // capacity).
  static void CopyRow(const Cluster& c, uint32_t from, Cluster& into,
                      uint32_t to);
  void Unlink(uint32_t* head, uint32_t index);
  void Resize(Cluster& c, uint32_t capacity);
  // Gives cluster c `width` columns, padding every row.
  void Widen(Cluster& c, uint32_t width);
  // Returns the rows visited.
  template <typename Emit>
  size_t MatchCluster(const Cluster& c, uint64_t access_mask,
                      const LeadValues* lead, const uint32_t* slots,
                      const uint64_t* words, bool every_row,
                      Emit& emit) const;
  // Rows [start, start + n) of c; acc holds kMatchBlock words. every_row:
  // the columns after the first are read for every row of the block, dead
  // ones included, without a branch (MatchVisits says when).
  template <typename Emit>
  static void MatchBlock(const Cluster& c, uint32_t start, uint32_t n,
                         uint64_t access_mask, const LeadValues* lead,
                         lead_internal::SortedLeadMasks& sorted,
                         const uint32_t* slots, const uint64_t* words,
                         bool every_row, uint64_t* acc, Emit& emit);
  // Adds the rows visited to *visited.
  static void MatchClusterForEvent(const Cluster& c, int64_t value,
                                   const uint32_t* slots,
                                   const PredicateBits& bits,
                                   std::vector<SubscriptionId>* matches,
                                   uint64_t* visited);
  // Rows [start, start + n) of c; alive holds kMatchBlock entries.
  static void MatchBlockForEvent(const Cluster& c, uint32_t start, uint32_t n,
                                 int64_t value, const uint32_t* slots,
                                 const PredicateBits& bits, uint32_t* alive,
                                 std::vector<SubscriptionId>* matches);

  // Frees c's arrays (if any) back to arena_.
  void FreeData(Cluster& c);

  WordArena arena_;  // every cluster's arrays
  // Read at every cluster visited: on 2 MB pages where it is large. Its
  // headers are 32 bytes, so none straddles two cache lines (WalkLists
  // prefetches one line a header; with a 40-byte header, one in five was
  // a miss on its second line).
  std::vector<Cluster, HugePageAllocator<Cluster>> clusters_;
  // Each cluster's access predicate (read on removals only), by index.
  std::vector<PredicateId> access_;
  std::vector<uint32_t> free_;
  std::vector<uint32_t> order_scratch_;  // MergeTail's
  std::vector<uint32_t> moved_scratch_;  // MergeTail's: new rows that moved
  bool bulk_ = false;                    // between BeginBulk and EndBulk
  // Lead clusters added to in bulk (repeats allowed).
  std::vector<uint32_t> bulk_clusters_;
};

// The cohort mask of cluster entry `e`: its predicate's mask (read through
// the slot table), complemented, without a branch, for a negated entry.
inline uint64_t EntryMask(uint32_t e, const uint32_t* slots,
                          const uint64_t* words) {
  const uint64_t flip = -static_cast<uint64_t>(e >> 31);
  return words[slots[e & kEntryIdMask]] ^ flip;
}

// Which sorted run of a lead cluster a lead belongs in (Cluster::sorted):
// 0 with lo INT64_MIN, 2 with hi INT64_MAX (and lo above it), else 1.
inline int LeadRun(const LeadRange& r) {
  return r.lo == INT64_MIN ? 0 : r.hi == INT64_MAX ? 2 : 1;
}

// Rows are checked in blocks of this many so the accumulators (2 KiB) stay in
// L1 beside the column data being streamed.
inline constexpr uint32_t kMatchBlock = 256;

// A lead cluster merges its unsorted tail once the tail passes
// max(kMinLeadTail, sorted / kLeadTailDivisor) rows. The tail is checked
// row by row for every event (the sorted part only up to the value), so a
// short tail keeps events cheap; a merge sorts the whole cluster, so a tail
// that is a fixed fraction of it keeps adding a row at amortised
// O(kLeadTailDivisor log n).
inline constexpr uint32_t kMinLeadTail = 64;
inline constexpr uint32_t kLeadTailDivisor = 8;

namespace lead_internal {

// LeadMask for the rows of a sorted part, in order: lo never decreases, so
// the count of values below it only grows. The count up to hi needs no
// search for an unbounded hi, grows along the leading rows whose lo is
// INT64_MIN (in order of hi) and within runs of equal lo, and is searched
// for, from the count below lo, when hi drops.
class SortedLeadMasks {
 public:
  explicit SortedLeadMasks(const LeadValues& v) : v_(v) {}
  uint64_t Next(int64_t lo, int64_t hi) {
    while (below_ < v_.count && v_.values[below_] < lo) ++below_;
    uint32_t upto = v_.count;
    if (hi != INT64_MAX) {
      if (hi < hi_) {
        upto_ = below_ + CountUpTo<true>(v_.values + below_,
                                         v_.count - below_, hi);
      } else {
        if (upto_ < below_) upto_ = below_;
        while (upto_ < v_.count && v_.values[upto_] <= hi) ++upto_;
      }
      hi_ = hi;
      upto = upto_;
    }
    return upto <= below_ ? 0 : v_.prefix[upto] & ~v_.prefix[below_];
  }

 private:
  const LeadValues v_;
  uint32_t below_ = 0;
  uint32_t upto_ = 0;
  int64_t hi_ = INT64_MIN;
};

}  // namespace lead_internal

template <typename Moved>
void ClusterStore::AddRow(uint32_t* head, PredicateId access,
                          SubscriptionId id,
                          absl::Span<const uint32_t> entries,
                          const std::optional<LeadRange>& lead,
                          Moved&& moved) {
  const Location at = AppendRow(head, access, id, entries, lead);
  moved(id, at);
  Cluster& c = clusters_[at.cluster];
  if (!c.lead) return;
  if (bulk_) {
    bulk_clusters_.push_back(at.cluster);
    return;
  }
  if (!TailDue(c)) return;
  MergeTail(c);
  for (uint32_t row : moved_scratch_) {
    moved(c.ids()[row], Location{at.cluster, row});
  }
}

template <typename Moved>
void ClusterStore::EndBulk(Moved&& moved) {
  bulk_ = false;
  std::sort(bulk_clusters_.begin(), bulk_clusters_.end());
  bulk_clusters_.erase(
      std::unique(bulk_clusters_.begin(), bulk_clusters_.end()),
      bulk_clusters_.end());
  for (uint32_t index : bulk_clusters_) {
    Cluster& c = clusters_[index];
    if (!TailDue(c)) continue;
    MergeTail(c);
    for (uint32_t row : moved_scratch_) {
      moved(c.ids()[row], Location{index, row});
    }
  }
  bulk_clusters_.clear();
  bulk_clusters_.shrink_to_fit();
}

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
  // In place and in order, so a lead cluster's sorted part stays sorted.
  const uint32_t old_low = c.lead ? c.sorted_low() : 0;
  const uint32_t old_mid = c.lead ? c.sorted_mid() : 0;
  uint32_t out = 0, sorted = 0, low = 0, mid = 0;
  for (uint32_t row = 0; row < c.rows; ++row) {
    const SubscriptionId id = c.ids()[row];
    if (id == kDeadRow) continue;
    if (out != row) {
      CopyRow(c, row, c, out);
      moved(id, Location{at.cluster, out});
    }
    ++out;
    if (row < c.sorted) sorted = out;
    if (row < old_low) low = out;
    if (row < old_mid) mid = out;
  }
  c.rows = out;
  c.sorted = sorted;
  if (c.lead) {
    c.meta()[0] = low;
    c.meta()[1] = mid;  // mid_width still bounds the middle run
  }
  c.dead = 0;
  if (c.capacity > 2 * c.rows) Resize(c, c.rows);
}

template <typename HeadOf, typename Visit>
size_t ClusterStore::WalkLists(size_t n, HeadOf&& head_of,
                               Visit&& visit) const {
  struct At {
    uint32_t cluster;  // kNoCluster: past the last list
    size_t list;
  };
  size_t lists = 0;  // non-empty lists found
  // The first cluster of lists [list, n).
  auto first_from = [&](size_t list) -> At {
    for (; list < n; ++list) {
      const uint32_t head = head_of(list);
      if (head != kNoCluster) {
        ++lists;
        return {head, list};
      }
    }
    return {kNoCluster, n};
  };
  // The cluster after `at` (whose header was asked for a visit ago): next
  // on its list, or the next list's head. Asks for that one's header and
  // for at's rows.
  auto after = [&](At at) -> At {
    const Cluster& c = clusters_[at.cluster];
    const At next =
        c.next != kNoCluster ? At{c.next, at.list} : first_from(at.list + 1);
    if (next.cluster != kNoCluster) __builtin_prefetch(&clusters_[next.cluster]);
    PrefetchRows(c);
    return next;
  };
  At now = first_from(0);
  if (now.cluster == kNoCluster) return lists;
  At next = after(now);
  while (true) {
    const At later = next.cluster == kNoCluster ? next : after(next);
    visit(now.list, clusters_[now.cluster]);
    if (next.cluster == kNoCluster) return lists;
    now = next;
    next = later;
  }
}

inline void ClusterStore::PrefetchRows(const Cluster& c) {
  // A lead cluster's check starts where its sorted windows do, found by
  // searches that need its meta (where the runs end) first: its first
  // lines are not what it reads first.
  if (c.lead) {
    if (c.capacity > 0) __builtin_prefetch(c.meta());
    return;
  }
  constexpr size_t kLine = 64 / sizeof(uint32_t);  // words per cache line
  const uint32_t* data = c.data;
  const size_t words = static_cast<size_t>(c.capacity) * c.arrays();
  if (words <= 8 * kLine) {
    for (size_t w = 0; w < words; w += kLine) __builtin_prefetch(data + w);
    return;
  }
  const uint32_t arrays = std::min<uint32_t>(c.arrays(), 8);
  for (uint32_t a = 0; a < arrays; ++a) {
    __builtin_prefetch(data + static_cast<size_t>(a) * c.capacity);
  }
}

template <typename Emit>
void ClusterStore::MatchVisits(absl::Span<const AccessVisit> visits,
                               const CohortMasks& masks,
                               const uint32_t* slots, Emit&& emit,
                               uint64_t* lists, uint64_t* clusters,
                               uint64_t* rows) const {
  const uint64_t* words = masks.words();
  // Once a block's first column has ANDed in, about half of fabret-1m's
  // rows are still alive, and a branch per row on whether it is
  // mispredicts about as often: reading every row's entry instead ran
  // cohorts of 64 at 1.05-1.08x. That pays only while the extra reads hit
  // the cache: with a slot table past kCachedSlots (ranges-1m: 5.9M
  // slots) every row's read cost 0.73x.
  const bool every_row = !SlotTableUncached(masks.slot_limit());
  *lists += WalkLists(
      visits.size(), [&](size_t v) { return visits[v].head; },
      [&](size_t v, const Cluster& c) {
        const LeadValues lead =
            c.lead ? masks.lead_values(visits[v].lead) : LeadValues{};
        *rows += MatchCluster(c, visits[v].mask, &lead, slots, words,
                              every_row, emit);
        ++*clusters;
      });
}

template <typename ListOf>
void ClusterStore::MatchListsForEvent(size_t n, ListOf&& list_of,
                                      const uint32_t* slots,
                                      uint64_t* lists, uint64_t* clusters,
                                      uint64_t* rows) const {
  *lists += WalkLists(
      n, [&](size_t v) { return list_of(v).head; },
      [&](size_t v, const Cluster& c) {
        const EventList list = list_of(v);
        MatchClusterForEvent(c, list.value, slots, *list.bits, list.matches,
                             rows);
        ++*clusters;
      });
}

template <typename Emit>
size_t ClusterStore::MatchCluster(const Cluster& c, uint64_t access_mask,
                                  const LeadValues* lead,
                                  const uint32_t* slots, const uint64_t* words,
                                  bool every_row, Emit& emit) const {
  const uint32_t* ids = c.ids();
  if (c.width == 0 && !c.lead) {
    for (uint32_t row = 0; row < c.rows; ++row) {
      if (ids[row] != kDeadRow) emit(ids[row], access_mask);
    }
    return c.rows;
  }
  uint64_t acc[kMatchBlock];
  // Four runs of rows: the sorted runs' windows for the cohort's values
  // (SortedWindows), and the tail (without a lead: one run, all rows).
  Cluster::Window runs[4] = {{0, 0}, {0, 0}, {0, 0}, {0, c.rows}};
  if (c.lead) {
    if (lead->count > 0) {
      const Cluster::Windows w =
          c.SortedWindows(lead->values[0], lead->values[lead->count - 1]);
      for (int r = 0; r < 3; ++r) runs[r] = w.run[r];
    }
    runs[3].from = c.sorted;
  }
  size_t visited = 0;
  for (const Cluster::Window& run : runs) {
    visited += run.to - run.from;
    // A sorted run's lo never decreases (SortedLeadMasks): one walk a run.
    lead_internal::SortedLeadMasks sorted(c.lead ? *lead : LeadValues{});
    for (uint32_t start = run.from, end; start < run.to; start = end) {
      end = std::min(start + kMatchBlock, run.to);
      MatchBlock(c, start, end - start, access_mask, lead, sorted, slots,
                 words, every_row, acc, emit);
    }
  }
  return visited;
}

template <typename Emit>
void ClusterStore::MatchBlock(const Cluster& c, uint32_t start, uint32_t n,
                              uint64_t access_mask, const LeadValues* lead,
                              lead_internal::SortedLeadMasks& sorted,
                              const uint32_t* slots, const uint64_t* words,
                              bool every_row, uint64_t* acc, Emit& emit) {
  const uint32_t* ids = c.ids();
  uint64_t any = 0;
  uint32_t k = 0;  // the first column not yet ANDed in
  if (c.lead && lead->rank != nullptr) {
    for (uint32_t j = 0; j < n; ++j) {
      const uint32_t row = start + j;
      const uint64_t live = ids[row] == kDeadRow ? 0 : access_mask;
      acc[j] = live & RankedLeadMask(*lead, c.lo(row), c.hi(row));
      any |= acc[j];
    }
  } else if (c.lead) {
    for (uint32_t j = 0; j < n; ++j) {
      const uint32_t row = start + j;
      const uint64_t live = ids[row] == kDeadRow ? 0 : access_mask;
      acc[j] = live & (row < c.sorted ? sorted.Next(c.lo(row), c.hi(row))
                                      : LeadMask(*lead, c.lo(row), c.hi(row)));
      any |= acc[j];
    }
  } else {
    const uint32_t* col = c.column(0) + start;
    for (uint32_t j = 0; j < n; ++j) {
      acc[j] = access_mask & EntryMask(col[j], slots, words);
      any |= acc[j];
    }
    k = 1;
  }
  for (; k < c.width && any != 0; ++k) {
    const uint32_t* col = c.column(k) + start;
    any = 0;
    if (every_row) {
      // A dead row's accumulator stays 0 whatever its entry holds.
      for (uint32_t j = 0; j < n; ++j) {
        acc[j] &= EntryMask(col[j], slots, words);
        any |= acc[j];
      }
      continue;
    }
    for (uint32_t j = 0; j < n; ++j) {
      if (acc[j] == 0) continue;
      acc[j] &= EntryMask(col[j], slots, words);
      any |= acc[j];
    }
  }
  if (any == 0) return;
  if constexpr (EmitsBlocks<Emit>::value) {
    emit.AddBlock(ids + start, acc, n);
  } else {
    for (uint32_t j = 0; j < n; ++j) {
      if (acc[j] != 0) emit(ids[start + j], acc[j]);
    }
  }
}

}  // namespace internal
}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_CLUSTER_STORE_H_
