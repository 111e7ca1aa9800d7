// How a subscription becomes a cluster row (Fabret et al.): shared by Index
// and PartitionedIndex.
//
// `Plan` normalises a subscription into entries (see predicate_table.h),
// interns them, and picks its *access predicate* — the equality or set
// (IN) entry least likely to be satisfied by an event, estimated from
// value-frequency statistics of the subscriptions seen so far. A
// subscription with no equality or set predicate gets "attribute present"
// on the attribute of its most selective entry (its *per-attribute
// list*), and that entry leads its columns; one whose every entry is
// negated (NOT_EXISTS alone) gets the predicate that always holds (kTrue),
// so its row is checked for every event. The remaining entries become
// the row's columns, most selective first, so that rows fail in their
// first columns; a BETWEEN among them whose halves are both interned
// already becomes those two columns (SplitIfShared). A range unlikely to
// be shared is kept inline instead, as its bounds in the row (InlineRanges
// says when; cluster_store.h), and such columns come first. `Release`
// undoes a Plan when the row is removed.
//
// Stage: the predicate stage (it writes the shared predicate table); no
// threads. Thread safety: none; callers serialise Plan and Release with
// everything else that writes or reads the table.
#ifndef COHORT_MATCHER_ROW_PLANNER_H_
#define COHORT_MATCHER_ROW_PLANNER_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "matcher/predicate_table.h"
#include "matcher/prefetch.h"
#include "matcher/types.h"

namespace cohort {
namespace matcher {

// Upper bound on predicates in one subscription (the service enforces a
// smaller, configurable limit); keeps a cluster's width small.
inline constexpr size_t kMaxPredicatesPerSubscription = 1024;

namespace internal {

// Which range entries of a row are kept inline, as their bounds
// (cluster_store.h), instead of as predicates of the table:
// kAuto: a positive range (LT, LE, GT, GE, BETWEEN) not interned already
//   and not split into shared halves, on an attribute whose ranges are
//   likely distinct: once the attribute has kInlineMinRanges range entries
//   (so that a young index's statistics decide nothing), the span of its
//   constants seen so far is at least kInlineSpanPerRange times its range
//   entries. ranges-1m: a span of 1,000,000 over about 234,000 ranges an
//   attribute; selective-1m: 100,000 over about 14,000; fabret-1m: 1,000
//   over up to 37,000, where ranges are shared (taking its first rows'
//   ranges inline while the counts were young cost it 0.85x at cohort 64
//   and 9 bytes a subscription); or, where the span does not hold that
//   many, its one-sided ranges fit the span that way and its two-sided ones
//   (BETWEEN) are at least kInlineMinRanges, each with
//   kInlineFormsPerTwoSidedRange forms of its width within the span to
//   itself: events-1m's prices, 175,000 ranges 100 to 10,000 wide over a
//   span of 110,000 (fabret-1m's BETWEENs have that many forms on its
//   less popular attributes, but its one-sided ranges outnumber the span
//   on every attribute, so nothing changes there);
// kAlways: every positive range but "present" (tests and measurements);
// kNever: none, as before inline ranges (tests and measurements).
enum class InlineRanges { kAuto, kAlways, kNever };
inline constexpr double kInlineSpanPerRange = 1.0;
inline constexpr int64_t kInlineMinRanges = 1024;
inline constexpr double kInlineFormsPerTwoSidedRange = 16.0;
// At most this many inline columns a row (a cluster's bounds count is a
// byte); further ranges stay predicates.
inline constexpr size_t kMaxInlineColumns = 32;

// A planned row: its access predicate, its columns (predicate ids, with
// flag bits: cohort_masks.h), in the order they are checked, and its lead
// range if the access predicate is "present" (see LeadRange).
struct RowPlan {
  PredicateId access = kFalsePredicate;
  // How many of the first columns are inline ranges (IsInline); their
  // bounds are bounds(). Beside `access`, in what would be padding.
  uint8_t inline_count = 0;
  // The length of inline_bounds' block, >= inline_count: Plan reuses a
  // block that is long enough (a caller that plans into one RowPlan
  // again and again allocates it once).
  uint8_t bounds_room = 0;
  // Inline up to kInlineColumns: a server's recovery plans every row at
  // once and holds the plans until they are applied, and a heap block per
  // row was most of its fresh memory (fabret-10m: 10M of them).
  static constexpr size_t kInlineColumns = 7;
  absl::InlinedVector<uint32_t, kInlineColumns> columns;
  // The bounds of the inline ranges, in order: a block of inline_count of
  // them (8 bytes a plan where there are none; a vector was 24, which
  // fabret-10m's recovery, holding every plan, paid 240 MB for).
  std::unique_ptr<LeadRange[]> inline_bounds;
  std::optional<LeadRange> lead;

  absl::Span<const LeadRange> bounds() const {
    return {inline_bounds.get(), inline_count};
  }

  RowPlan() = default;
  RowPlan(RowPlan&&) = default;
  RowPlan& operator=(RowPlan&&) = default;
  RowPlan(const RowPlan& other)
      : access(other.access),
        inline_count(other.inline_count),
        bounds_room(other.inline_count),
        columns(other.columns),
        lead(other.lead) {
    CopyBounds(other);
  }
  RowPlan& operator=(const RowPlan& other) {
    if (this == &other) return *this;
    access = other.access;
    inline_count = other.inline_count;
    bounds_room = other.inline_count;
    columns = other.columns;
    lead = other.lead;
    CopyBounds(other);
    return *this;
  }

 private:
  void CopyBounds(const RowPlan& other) {
    inline_bounds.reset();
    if (other.inline_count == 0) return;
    inline_bounds = std::make_unique<LeadRange[]>(other.inline_count);
    std::copy(other.inline_bounds.get(),
              other.inline_bounds.get() + other.inline_count,
              inline_bounds.get());
  }
};

// A bulk load plans subscriptions one after another, and the first read of
// each one's predicates (a heap block of its own, wherever the caller built
// it) stalled Plan more than any other line. Bulk callers prefetch the
// predicates kPrefetchAhead subscriptions ahead: the lines of the block,
// at most kPrefetchLines (none for an empty one, whose data may be null).
inline constexpr size_t kPrefetchAhead = 4;
inline constexpr size_t kPrefetchLines = 8;  // 10 predicates of 48 bytes
inline void PrefetchPredicates(absl::Span<const Predicate> predicates) {
  if (predicates.empty()) return;
  const uintptr_t first = reinterpret_cast<uintptr_t>(predicates.data());
  const uintptr_t last = first + predicates.size() * sizeof(Predicate) - 1;
  const uintptr_t lines =
      std::min<uintptr_t>((last >> 6) - (first >> 6) + 1, kPrefetchLines);
  for (uintptr_t line = 0; line < lines; ++line) {
    PrefetchLine(reinterpret_cast<const void*>(((first >> 6) + line) << 6));
  }
}

class RowPlanner {
 public:
  RowPlanner();
  ~RowPlanner();
  RowPlanner(const RowPlanner&) = delete;
  RowPlanner& operator=(const RowPlanner&) = delete;

  // Plans the row of a subscription with the conjunction `predicates`,
  // taking references in *table to its access predicate and columns.
  // Errors: INVALID_ARGUMENT if predicates is empty or longer than
  // kMaxPredicatesPerSubscription, a BETWEEN has value > upper, or an IN
  // or NOT_IN has no values;
  // RESOURCE_EXHAUSTED if the table could not intern them within
  // kMaxPredicates. On error nothing changes.
  absl::Status Plan(absl::Span<const Predicate> predicates,
                    PredicateTable* table, RowPlan* plan);

  // Drops what Plan took for a row: its access predicate, its columns (the
  // inline ones with `bounds`, in order) and its lead (counted in the
  // statistics only).
  void Release(PredicateId access, absl::Span<const uint32_t> columns,
               absl::Span<const LeadRange> bounds,
               const std::optional<LeadRange>& lead, PredicateTable* table);

  // Which ranges Plan keeps inline (default kAuto). Rows planned before a
  // change keep what they had.
  void set_inline_ranges(InlineRanges mode) { inline_ranges_ = mode; }
  InlineRanges inline_ranges() const { return inline_ranges_; }

  // Heap bytes held (the statistics).
  size_t MemoryBytes() const;

 private:
  class Statistics;
  struct Entry;
  struct Ranked;
  // The halves x >= lo and x <= hi of a range [lo, hi].
  struct SplitRange {
    NormalPredicate low;
    NormalPredicate high;
  };

  // The halves of entry `e` when it is a range whose halves are both live
  // in `table`, so that its row can check them instead of interning it.
  // `unlikely`: the halves are likely not live (KeepInline asks of
  // distinct ranges), so the table's range filter is asked first
  // (PredicateTable::ReferencesUnlikely).
  static std::optional<SplitRange> SplitIfShared(const Entry& e,
                                                 const PredicateTable& table,
                                                 bool unlikely = false);
  // Whether entry `e` is kept inline (InlineRanges), given whether it
  // would be split (asked only if it matters).
  bool KeepInline(const Entry& e, absl::FunctionRef<bool()> split,
                  const PredicateTable& table) const;

  // The entries of kIn predicates point into *sets. *order and *sorted
  // are scratch.
  static absl::Status Normalise(absl::Span<const Predicate> predicates,
                                std::vector<std::vector<int64_t>>* sets,
                                std::vector<Entry>* entries,
                                std::vector<uint64_t>* order,
                                std::vector<Entry>* sorted);
  NormalPredicate ChooseAccess(const std::vector<Entry>& entries,
                               std::vector<Ranked>* ranked,
                               std::optional<LeadRange>* lead);
  void Forget(uint32_t entry, PredicateTable* table);

  std::unique_ptr<Statistics> stats_;
  InlineRanges inline_ranges_ = InlineRanges::kAuto;
  // Plan's scratch, kept between calls (a bulk load plans millions of rows,
  // and three allocations a row were a tenth of ranges-1m's).
  std::vector<Entry> entries_;
  std::vector<Entry> sorted_entries_;  // Normalise's
  std::vector<uint64_t> entry_order_;  // Normalise's
  std::vector<std::vector<int64_t>> sets_;
  std::vector<Ranked> ranked_;
  std::vector<LeadRange> bounds_;
};

}  // namespace internal
}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_ROW_PLANNER_H_
