#include "matcher/row_planner.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace cohort {
namespace matcher {
namespace internal {

// Value-frequency statistics used to estimate how likely an event satisfies
// a predicate. Fed by the subscriptions themselves (Fabret's assumption:
// events and subscriptions draw values from similar distributions):
//   P(attribute a present)  ~ share of all entries that are on a
//   P(x == v | a present)   ~ references to EQ(a, v) / EQ references on a
//   P(x in S | a present)   ~ the sum of that over v in S, each counted
//                             once more for every row using S itself
//                             (a set's values count as equality
//                             references on a)
//   P(x in [lo, hi] | a)    ~ overlap of [lo, hi] with the span of constants
//                             seen on a, assuming values spread evenly
// Only the ranking within one subscription matters, so the estimates need
// not be calibrated.
class RowPlanner::Statistics {
 public:
  void Count(const NormalPredicate& p, int delta) {
    if (p.kind == Kind::kFalse || p.kind == Kind::kTrue) return;
    if (p.attribute >= attributes_.size()) attributes_.resize(p.attribute + 1);
    PerAttribute& a = attributes_[p.attribute];
    a.entries += delta;
    total_ += delta;
    if (p.kind == Kind::kEq) a.eq_entries += delta;
    if (p.kind == Kind::kIn) {
      a.eq_entries += delta * static_cast<int64_t>(p.set.size());
      if (delta > 0) {
        a.min = std::min(a.min, p.set.front());
        a.max = std::max(a.max, p.set.back());
      }
      return;
    }
    if (p.kind == Kind::kRange) {
      a.two_sided += delta;
      a.two_sided_width += delta * Width(p.lo, p.hi);
    }
    if (delta > 0) {
      for (int64_t bound : {p.lo, p.hi}) {
        if (bound == kMinValue || bound == kMaxValue) continue;
        a.min = std::min(a.min, bound);
        a.max = std::max(a.max, bound);
      }
    }
  }

  double Selectivity(const NormalPredicate& p, uint32_t references,
                     bool negated) const {
    if (p.kind == Kind::kFalse) return 0;
    const PerAttribute& a = attributes_[p.attribute];
    const double present = (a.entries + 1.0) / (total_ + 1.0);
    if (EqualityLike(p.kind)) {
      const double eq = std::min(1.0, references / (a.eq_entries + 1.0));
      return present * (negated ? 1.0 - eq : eq);
    }
    if (a.min > a.max) return present;  // nothing known about the values
    // Differences in uint64 (exact: hi >= lo), the ratio in double (long
    // double, x87 arithmetic, was a tenth of Plan's own time in a bulk
    // load).
    const int64_t lo = std::max(p.lo, a.min);
    const int64_t hi = std::min(p.hi, a.max);
    const double covered = hi < lo ? 0.5 : Width(lo, hi);
    return present * std::min(1.0, covered / Width(a.min, a.max));
  }

  // Whether the ranges on `attribute` are likely distinct
  // (InlineRanges::kAuto).
  bool SparseRanges(AttributeId attribute) const {
    if (attribute >= attributes_.size()) return false;
    const PerAttribute& a = attributes_[attribute];
    const int64_t ranges = a.entries - a.eq_entries;
    if (ranges < kInlineMinRanges || a.min > a.max) return false;
    const double span = Width(a.min, a.max);
    if (span >= kInlineSpanPerRange * static_cast<double>(ranges)) {
      return true;
    }
    // A two-sided range has more forms than its bounds' values: about
    // (span - width + 1) places times `width` widths, at the mean width.
    // events-1m's prices (BETWEEN p AND p + 100..10,000, p up to 99,999)
    // are 175,000 ranges over a span of 110,000, nearly all distinct: by
    // the span alone the last 75,000 became predicates, which phase 1
    // walked every cohort.
    const int64_t one_sided = ranges - a.two_sided;
    if (a.two_sided < kInlineMinRanges ||
        span < kInlineSpanPerRange * static_cast<double>(one_sided)) {
      return false;
    }
    const double width =
        std::min(span, a.two_sided_width / static_cast<double>(a.two_sided));
    return (span - width + 1.0) * width >=
           kInlineFormsPerTwoSidedRange * static_cast<double>(a.two_sided);
  }

  size_t MemoryBytes() const {
    return attributes_.capacity() * sizeof(PerAttribute);
  }

 private:
  // hi - lo + 1 values. REQUIRES: lo <= hi.
  static double Width(int64_t lo, int64_t hi) {
    return static_cast<double>(static_cast<uint64_t>(hi) -
                               static_cast<uint64_t>(lo)) +
           1.0;
  }

  struct PerAttribute {
    int64_t entries = 0;
    int64_t eq_entries = 0;
    int64_t two_sided = 0;         // kRange entries
    double two_sided_width = 0;    // the sum of their widths
    int64_t min = kMaxValue;
    int64_t max = kMinValue;
  };
  std::vector<PerAttribute> attributes_;
  int64_t total_ = 0;
};

// One entry of a subscription being normalised, before interning.
struct RowPlanner::Entry {
  NormalPredicate predicate;
  bool negated = false;
  // An LT's or GT's kLow or kHigh (cluster_entry.h, kOpenBit).
  bool open = false;
};

// An entry of a subscription being planned: its index among the normalised
// entries and its estimated selectivity.
struct RowPlanner::Ranked {
  uint32_t entry;
  bool positive_eq;
  double selectivity;
};

namespace {

// std::stable_sort's order. A row's entries are few (at most
// kMaxPredicatesPerSubscription), and std::stable_sort took a temporary
// buffer from the heap for each call, twice a row: insertion sort for up
// to kInsertionSortMax of them.
inline constexpr size_t kInsertionSortMax = 32;
template <typename T, typename Less>
void StableSort(std::vector<T>& v, Less less) {
  if (v.size() > kInsertionSortMax) {
    std::stable_sort(v.begin(), v.end(), less);
    return;
  }
  for (size_t i = 1; i < v.size(); ++i) {
    T x = v[i];
    size_t j = i;
    for (; j > 0 && less(x, v[j - 1]); --j) v[j] = v[j - 1];
    v[j] = x;
  }
}

// An LT's or GT's interval [lo, hi] (lo INT64_MIN or hi INT64_MAX). At the
// int64 ends it stays a kLow or kHigh, not the equality [v, v]: x < INT64_MIN
// + 1 holds for a number in (INT64_MIN, INT64_MIN + 1), x == INT64_MIN does
// not (and likewise x > INT64_MAX - 1). Written into *p field by field,
// as SetInterval; OpenInterval returns it.
void SetOpenInterval(AttributeId a, int64_t lo, int64_t hi,
                     NormalPredicate* p) {
  SetInterval(a, lo, hi, p);
  if (p->kind == Kind::kEq) {
    p->kind = lo == kMinValue ? Kind::kLow : Kind::kHigh;
  }
}

NormalPredicate OpenInterval(AttributeId a, int64_t lo, int64_t hi) {
  NormalPredicate p;
  SetOpenInterval(a, lo, hi, &p);
  return p;
}

}  // namespace

RowPlanner::RowPlanner() : stats_(std::make_unique<Statistics>()) {}
RowPlanner::~RowPlanner() = default;

namespace {

// Sorts *e by `less`, which orders entries first by (kind, attribute).
// Entries are 48 bytes and a row's are few, with (kind, attribute) most
// often distinct: so keys of (kind, attribute, position) are sorted
// instead, runs of equal (kind, attribute) then by `less`, and the entries
// are moved once, through *sorted (a bulk load's std::sort of the entries
// was a tenth of its time). *order and *sorted are scratch.
template <typename Entry, typename Less>
void SortEntries(Less less, std::vector<Entry>* e,
                 std::vector<uint64_t>* order, std::vector<Entry>* sorted) {
  const size_t n = e->size();
  if (n > 255) {
    std::sort(e->begin(), e->end(), less);
    return;
  }
  order->resize(n);
  uint64_t* keys = order->data();
  for (size_t i = 0; i < n; ++i) {
    const auto& p = (*e)[i].predicate;
    keys[i] = uint64_t{static_cast<uint8_t>(p.kind)} << 40 |
              uint64_t{p.attribute} << 8 | i;
  }
  for (size_t i = 1; i < n; ++i) {  // insertion sort: n is small
    const uint64_t k = keys[i];
    size_t j = i;
    for (; j > 0 && k < keys[j - 1]; --j) keys[j] = keys[j - 1];
    keys[j] = k;
  }
  // Runs of one (kind, attribute): by `less`, which needs the entries.
  for (size_t from = 0, to; from < n; from = to) {
    for (to = from + 1; to < n && keys[to] >> 8 == keys[from] >> 8; ++to) {
    }
    if (to - from < 2) continue;
    std::sort(keys + from, keys + to, [&](uint64_t a, uint64_t b) {
      return less((*e)[a & 0xff], (*e)[b & 0xff]);
    });
  }
  sorted->clear();
  for (size_t i = 0; i < n; ++i) sorted->push_back((*e)[keys[i] & 0xff]);
  e->swap(*sorted);
}

}  // namespace

absl::Status RowPlanner::Normalise(absl::Span<const Predicate> predicates,
                                   std::vector<std::vector<int64_t>>* sets,
                                   std::vector<Entry>* e,
                                   std::vector<uint64_t>* order,
                                   std::vector<Entry>* sorted) {
  if (predicates.empty()) {
    return absl::InvalidArgumentError(
        "predicates: a subscription needs at least 1 predicate");
  }
  if (predicates.size() > kMaxPredicatesPerSubscription) {
    return absl::InvalidArgumentError(
        absl::StrCat("predicates: ", predicates.size(),
                     " exceeds the limit of ", kMaxPredicatesPerSubscription));
  }
  // Each entry is written where it lies (SetInterval).
  auto add = [&](AttributeId a, int64_t lo, int64_t hi, bool negated = false) {
    Entry& x = e->emplace_back();
    SetInterval(a, lo, hi, &x.predicate);
    x.negated = negated;
  };
  // LT and GT: the interval of LE v - 1 and GE v + 1, shared with them,
  // open for a number with a fraction (cluster_entry.h; OpenInterval).
  auto add_open = [&](AttributeId a, int64_t lo, int64_t hi) {
    Entry& x = e->emplace_back();
    SetOpenInterval(a, lo, hi, &x.predicate);
    x.open = true;
  };
  auto add_set = [&](AttributeId a, absl::Span<const int64_t> set,
                     bool negated) {
    Entry& x = e->emplace_back();
    x.predicate = FromSet(a, set);
    x.negated = negated;
  };
  auto add_false = [&] { e->emplace_back(); };
  // The entries' sets point into *sets, which must not reallocate.
  sets->clear();
  sets->reserve(predicates.size());
  for (size_t i = 0; i < predicates.size(); ++i) {
    const Predicate& p = predicates[i];
    const AttributeId a = p.attribute;
    const int64_t v = p.value;
    switch (p.op) {
      case Op::kEq:
        add(a, v, v);
        break;
      case Op::kNe:  // present, and not equal
        add(a, kMinValue, kMaxValue);
        add(a, v, v, /*negated=*/true);
        break;
      case Op::kLt:
        if (v == kMinValue) {
          add_false();
        } else {
          add_open(a, kMinValue, v - 1);
        }
        break;
      case Op::kLe:
        add(a, kMinValue, v);
        break;
      case Op::kGt:
        if (v == kMaxValue) {
          add_false();
        } else {
          add_open(a, v + 1, kMaxValue);
        }
        break;
      case Op::kGe:
        add(a, v, kMaxValue);
        break;
      case Op::kBetween:
        if (v > p.upper) {
          return absl::InvalidArgumentError(absl::StrCat(
              "predicates[", i, "]: BETWEEN needs value <= upper, got ", v,
              " > ", p.upper));
        }
        add(a, v, p.upper);
        break;
      case Op::kIn:
      case Op::kNotIn: {
        if (p.values.empty()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "predicates[", i, "].values: ", OpName(p.op),
              " needs at least 1 value"));
        }
        std::vector<int64_t>& set = sets->emplace_back(p.values);
        std::sort(set.begin(), set.end());
        set.erase(std::unique(set.begin(), set.end()), set.end());
        if (p.op == Op::kIn) {
          add_set(a, set, /*negated=*/false);
        } else {  // present, and in none of them
          add(a, kMinValue, kMaxValue);
          add_set(a, set, /*negated=*/true);
        }
        break;
      }
      case Op::kExists:
        add(a, kMinValue, kMaxValue);
        break;
      case Op::kNotExists:
        add(a, kMinValue, kMaxValue, /*negated=*/true);
        break;
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("predicates[", i, "].op: unknown operator ",
                         static_cast<int>(p.op)));
    }
  }
  for (const Entry& entry : *e) {
    if (entry.predicate.kind == Kind::kFalse) {  // the conjunction is false
      e->assign(1, Entry{});
      return absl::OkStatus();
    }
  }
  // Ordered by (kind, attribute, lo, hi, negated); sets with equal keys (a
  // hash collision) by their values. An LT's or GT's entry comes after an
  // LE's or GE's on the same interval, which implies it (for a number with
  // a fraction too) and is the one kept.
  auto same_key = [](const Entry& x, const Entry& y) {
    return x.predicate.kind == y.predicate.kind &&
           x.predicate.attribute == y.predicate.attribute &&
           x.predicate.lo == y.predicate.lo &&
           x.predicate.hi == y.predicate.hi && x.negated == y.negated;
  };
  auto less = [](const Entry& x, const Entry& y) {
    const NormalPredicate& a = x.predicate;
    const NormalPredicate& b = y.predicate;
    if (a.kind != b.kind) return a.kind < b.kind;
    if (a.attribute != b.attribute) return a.attribute < b.attribute;
    if (a.lo != b.lo) return a.lo < b.lo;
    if (a.hi != b.hi) return a.hi < b.hi;
    if (x.negated != y.negated) return y.negated;
    if (x.open != y.open) return y.open;
    return std::lexicographical_compare(a.set.begin(), a.set.end(),
                                        b.set.begin(), b.set.end());
  };
  SortEntries(less, e, order, sorted);
  e->erase(std::unique(e->begin(), e->end(),
                       [&](const Entry& x, const Entry& y) {
                         return same_key(x, y) &&
                                x.predicate.set == y.predicate.set;
                       }),
           e->end());
  return absl::OkStatus();
}

// Access predicate: the positive equality least likely satisfied (Fabret).
// Without one, the subscription goes to the per-attribute list of the
// attribute of its most selective positive entry, its *lead*: the access
// predicate is "present" on that attribute, and the lead range is kept in
// the row (LeadRange) rather than interned, so that the rows' first check
// compares two bounds with the event's value. Lists of a few large
// clusters stream well; clustering under range predicates scattered these
// subscriptions over thousands of one-row clusters, each a cache miss,
// because most range predicates hold for most events (measured 2.2-2.4x
// slower on fabret-1m).
// Sorts *ranked by selectivity; removes the entry that became the access
// predicate (or the lead, which it sets in *lead), and, under "present",
// an entry that is "present" itself (the access predicate implies it).
// Returns the access predicate, not yet interned.
NormalPredicate RowPlanner::ChooseAccess(const std::vector<Entry>& entries,
                                         std::vector<Ranked>* ranked,
                                         std::optional<LeadRange>* lead) {
  StableSort(*ranked, [](const Ranked& a, const Ranked& b) {
    if (a.positive_eq != b.positive_eq) return a.positive_eq;
    return a.selectivity < b.selectivity;
  });
  const Entry& first = entries[ranked->front().entry];
  if (ranked->front().positive_eq || first.predicate.kind == Kind::kFalse) {
    ranked->erase(ranked->begin());
    return first.predicate;
  }
  // Every entry negated (NOT_EXISTS alone): listed for every event.
  if (std::all_of(ranked->begin(), ranked->end(),
                  [&](const Ranked& r) { return entries[r.entry].negated; })) {
    return TruePredicate();
  }
  auto it = ranked->begin();  // most selective positive entry
  while (entries[it->entry].negated) ++it;
  const NormalPredicate& leading = entries[it->entry].predicate;
  *lead = LeadRange{leading.lo, leading.hi, entries[it->entry].open};
  const NormalPredicate present = FromInterval(leading.attribute, kMinValue, kMaxValue);
  ranked->erase(it);
  // Count "present" once: as an entry if it is one, else for itself.
  bool counted = leading == present;
  ranked->erase(
      std::remove_if(ranked->begin(), ranked->end(),
                     [&](const Ranked& r) {
                       const Entry& e = entries[r.entry];
                       const bool same = !e.negated && e.predicate == present;
                       counted |= same;
                       return same;
                     }),
      ranked->end());
  if (!counted) stats_->Count(present, +1);
  return present;
}

absl::Status RowPlanner::Plan(absl::Span<const Predicate> predicates,
                              PredicateTable* table, RowPlan* plan) {
  std::vector<Entry>& entries = entries_;
  entries.clear();
  if (absl::Status s = Normalise(predicates, &sets_, &entries,
                                 &entry_order_, &sorted_entries_);
      !s.ok()) {
    return s;
  }
  // Each entry and the access predicate may intern a new predicate, and a
  // predicate id must fit a cluster entry (kEntryIdMask).
  if (table->size() + entries.size() + 2 >= kMaxPredicates) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "predicates: the index holds ", table->size(),
        " distinct predicates; the limit is ", kMaxPredicates - 2));
  }
  // Rank before interning, so that the lead, which is not interned, never
  // enters the table. An equality's estimate counts this row's reference.
  for (const Entry& e : entries) stats_->Count(e.predicate, +1);
  std::vector<Ranked>& ranked = ranked_;
  ranked.clear();
  ranked.reserve(entries.size());
  for (uint32_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    uint32_t references = 0;
    if (e.predicate.kind == Kind::kEq) {
      references = table->References(e.predicate) + 1;
    } else if (e.predicate.kind == Kind::kIn) {
      // Each value counts its equalities' references and, once per row
      // that uses this very set, the set's: a list many subscriptions
      // share (["error", "timeout"]) is as likely as its values are
      // common, not as rare as equalities on them are.
      const uint32_t set_rows = table->References(e.predicate) + 1;
      for (int64_t v : e.predicate.set) {
        references += table->References(FromInterval(
                          e.predicate.attribute, v, v)) + set_rows;
      }
    }
    // Field by field where it lies (as Normalise's entries).
    Ranked& r = ranked.emplace_back();
    r.entry = i;
    r.positive_eq = EqualityLike(e.predicate.kind) && !e.negated;
    r.selectivity = stats_->Selectivity(e.predicate, references, e.negated);
  }
  plan->lead.reset();
  plan->access = table->Acquire(ChooseAccess(entries, &ranked, &plan->lead));
  table->AddAccessUse(plan->access);
  StableSort(ranked, [](const Ranked& a, const Ranked& b) {
    return a.selectivity < b.selectivity;
  });
  plan->columns.resize(0);  // (clear() would free a heap block)
  plan->columns.reserve(ranked.size());
  std::vector<LeadRange>& bounds = bounds_;
  bounds.clear();
  // Inline ranges first (cluster_store.h), in the order of the rest; each
  // is decided before any entry is interned, as the next row will see it.
  absl::InlinedVector<bool, RowPlan::kInlineColumns> inline_at(ranked.size());
  for (size_t i = 0; i < ranked.size(); ++i) {
    const Entry& e = entries[ranked[i].entry];
    if (bounds.size() == kMaxInlineColumns ||
        !KeepInline(
            e,
            [&] {
              return SplitIfShared(e, *table, /*unlikely=*/true).has_value();
            },
            *table)) {
      continue;
    }
    inline_at[i] = true;
    plan->columns.push_back(
        InlineEntry(e.predicate.attribute, e.open, e.negated));
    bounds.push_back({e.predicate.lo, e.predicate.hi, e.open});
    table->AddInlineUse(e.predicate.attribute);
  }
  // An inline NE holds only where its attribute is present: the row's
  // "present" on that attribute (the NE's own) is dropped, uncounted.
  auto implied = [&](const Entry& e) {
    if (e.negated || e.predicate.kind != Kind::kLow ||
        e.predicate.lo != kMinValue || e.predicate.hi != kMaxValue) {
      return false;
    }
    for (size_t i = 0; i < ranked.size(); ++i) {
      const Entry& other = entries[ranked[i].entry];
      if (inline_at[i] && other.negated &&
          other.predicate.attribute == e.predicate.attribute) {
        return true;
      }
    }
    return false;
  };
  for (size_t i = 0; i < ranked.size(); ++i) {
    if (inline_at[i]) continue;
    const Entry& e = entries[ranked[i].entry];
    if (!bounds.empty() && implied(e)) {
      stats_->Count(e.predicate, -1);
      continue;
    }
    if (const std::optional<SplitRange> split = SplitIfShared(e, *table)) {
      // Counted as its two halves, as Release will forget them.
      stats_->Count(e.predicate, -1);
      for (const NormalPredicate& half : {split->low, split->high}) {
        stats_->Count(half, +1);
        plan->columns.push_back(
            table->EntryOf(table->Acquire(half), /*negated=*/false));
      }
      continue;
    }
    plan->columns.push_back(
        table->EntryOf(table->Acquire(e.predicate), e.negated, e.open));
  }
  plan->inline_count = static_cast<uint8_t>(bounds.size());
  if (bounds.size() > plan->bounds_room) {
    plan->inline_bounds = std::make_unique<LeadRange[]>(bounds.size());
    plan->bounds_room = plan->inline_count;
  }
  if (!bounds.empty()) {
    std::copy(bounds.begin(), bounds.end(), plan->inline_bounds.get());
  }
  return absl::OkStatus();
}

// A range [lo, hi] is x >= lo AND x <= hi. Interned whole it takes a
// predicate, a mask slot in every cohort buffer and a position that phase 1
// walks, for itself alone when ranges are wide and distinct (fabret-1m's
// BETWEENs: 56% of its predicates). When both halves are live already (the
// one-sided predicates of other rows: on a domain of 1,000 values nearly
// all are), the row takes two columns on them instead and the range costs
// no predicate. Where the halves are not both there (wide domains: ranges-1m)
// the range stays whole, so splitting never adds a predicate.
std::optional<RowPlanner::SplitRange> RowPlanner::SplitIfShared(
    const Entry& e, const PredicateTable& table, bool unlikely) {
  if (e.negated || e.predicate.kind != Kind::kRange) return std::nullopt;
  SplitRange split{FromInterval(e.predicate.attribute, e.predicate.lo, kMaxValue),
                   FromInterval(e.predicate.attribute, kMinValue, e.predicate.hi)};
  const auto live = [&](const NormalPredicate& half) {
    return (unlikely ? table.ReferencesUnlikely(half)
                     : table.References(half)) != 0;
  };
  if (!live(split.low) || !live(split.high)) return std::nullopt;
  return split;
}

bool RowPlanner::KeepInline(const Entry& e,
                            absl::FunctionRef<bool()> split,
                            const PredicateTable& table) const {
  if (inline_ranges_ == InlineRanges::kNever) return false;
  const NormalPredicate& p = e.predicate;
  if (p.attribute > kInlineAttributeMask) return false;
  if (e.negated) {
    // An NE's equality (its "present" goes with it: Plan).
    if (p.kind != Kind::kEq) return false;
  } else if (p.kind != Kind::kLow && p.kind != Kind::kHigh &&
             p.kind != Kind::kRange) {
    return false;
  }
  // "present" holds for every value: phase 1 lists it per attribute anyway.
  if (p.lo == kMinValue && p.hi == kMaxValue) return false;
  if (inline_ranges_ == InlineRanges::kAlways) return true;
  // The statistics first: the table's lookups are cache misses. Where
  // ranges are sparse, most are not interned: the range filter answers
  // first (ranges-1m's bulk load asked 5.2M times and found 1,521).
  return stats_->SparseRanges(p.attribute) &&
         table.ReferencesUnlikely(p) == 0 && !split();
}

void RowPlanner::Forget(uint32_t entry, PredicateTable* table) {
  const PredicateId pid = entry & kEntryIdMask;
  stats_->Count(table->Get(pid), -1);
  table->Release(pid);
}

void RowPlanner::Release(PredicateId access,
                         absl::Span<const uint32_t> columns,
                         absl::Span<const LeadRange> bounds,
                         const std::optional<LeadRange>& lead,
                         PredicateTable* table) {
  if (lead.has_value()) {
    const AttributeId a = table->Get(access).attribute;
    stats_->Count(lead->open ? OpenInterval(a, lead->lo, lead->hi)
                             : FromInterval(a, lead->lo, lead->hi),
                  -1);
  }
  table->DropAccessUse(access);
  Forget(access, table);
  size_t next_bounds = 0;
  for (uint32_t e : columns) {
    if (!IsInline(e)) {
      Forget(e, table);
      continue;
    }
    const AttributeId a = InlineAttribute(e);
    const LeadRange& r = bounds[next_bounds++];
    // (An NE's bounds are its value twice: its equality, as counted.)
    stats_->Count(r.open ? OpenInterval(a, r.lo, r.hi)
                         : FromInterval(a, r.lo, r.hi),
                  -1);
    table->DropInlineUse(a);
  }
  assert(next_bounds == bounds.size());
}

size_t RowPlanner::MemoryBytes() const {
  return stats_->MemoryBytes() +
         (entries_.capacity() + sorted_entries_.capacity()) * sizeof(Entry) +
         entry_order_.capacity() * sizeof(uint64_t) +
         sets_.capacity() * sizeof(std::vector<int64_t>) +
         ranked_.capacity() * sizeof(Ranked) +
         bounds_.capacity() * sizeof(LeadRange);
}

}  // namespace internal
}  // namespace matcher
}  // namespace cohort
