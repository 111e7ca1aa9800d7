#include "matcher/index.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace cohort {
namespace matcher {

using internal::FromInterval;
using internal::Kind;
using internal::kNegatedBit;
using internal::Location;
using internal::NormalPredicate;
using internal::PredicateId;

namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// 4096 locations (32 KiB) per page: big enough that the page table stays
// small for a million ids, small enough that a sparse id wastes little.
constexpr size_t kPageBits = 12;
constexpr size_t kPageSize = size_t{1} << kPageBits;

}  // namespace

// Value-frequency statistics used to estimate how likely an event satisfies
// a predicate. Fed by the subscriptions themselves (Fabret's assumption:
// events and subscriptions draw values from similar distributions):
//   P(attribute a present)  ~ share of all entries that are on a
//   P(x == v | a present)   ~ references to EQ(a, v) / EQ references on a
//   P(x in [lo, hi] | a)    ~ overlap of [lo, hi] with the span of constants
//                             seen on a, assuming values spread evenly
// Only the ranking within one subscription matters, so the estimates need
// not be calibrated.
class Index::Statistics {
 public:
  void Count(const NormalPredicate& p, int delta) {
    if (p.kind == Kind::kFalse) return;
    if (p.attribute >= attributes_.size()) attributes_.resize(p.attribute + 1);
    PerAttribute& a = attributes_[p.attribute];
    a.entries += delta;
    total_ += delta;
    if (p.kind == Kind::kEq) a.eq_entries += delta;
    if (delta > 0) {
      for (int64_t bound : {p.lo, p.hi}) {
        if (bound == kMin || bound == kMax) continue;
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
    if (p.kind == Kind::kEq) {
      const double eq = references / (a.eq_entries + 1.0);
      return present * (negated ? 1.0 - eq : eq);
    }
    if (a.min > a.max) return present;  // nothing known about the values
    const long double lo = std::max<long double>(p.lo, a.min);
    const long double hi = std::min<long double>(p.hi, a.max);
    const long double span = static_cast<long double>(a.max) - a.min + 1;
    const long double covered = hi < lo ? 0.5L : hi - lo + 1;
    return present * static_cast<double>(std::min(1.0L, covered / span));
  }

  size_t MemoryBytes() const {
    return attributes_.capacity() * sizeof(PerAttribute);
  }

 private:
  struct PerAttribute {
    int64_t entries = 0;
    int64_t eq_entries = 0;
    int64_t min = kMax;
    int64_t max = kMin;
  };
  std::vector<PerAttribute> attributes_;
  int64_t total_ = 0;
};

// A subscription normalised into entries, before interning.
struct Index::Plan {
  struct Entry {
    NormalPredicate predicate;
    bool negated = false;
  };
  std::vector<Entry> entries;
};

Index::Index() : stats_(std::make_unique<Statistics>()) {}
Index::~Index() = default;

absl::Status Index::Normalise(absl::Span<const Predicate> predicates,
                              Plan* plan) const {
  if (predicates.empty()) {
    return absl::InvalidArgumentError(
        "predicates: a subscription needs at least 1 predicate");
  }
  if (predicates.size() > kMaxPredicatesPerSubscription) {
    return absl::InvalidArgumentError(
        absl::StrCat("predicates: ", predicates.size(),
                     " exceeds the limit of ", kMaxPredicatesPerSubscription));
  }
  auto add = [&](NormalPredicate p, bool negated = false) {
    plan->entries.push_back({p, negated});
  };
  for (size_t i = 0; i < predicates.size(); ++i) {
    const Predicate& p = predicates[i];
    const AttributeId a = p.attribute;
    const int64_t v = p.value;
    switch (p.op) {
      case Op::kEq:
        add(FromInterval(a, v, v));
        break;
      case Op::kNe:  // present, and not equal
        add(FromInterval(a, kMin, kMax));
        add(FromInterval(a, v, v), /*negated=*/true);
        break;
      case Op::kLt:
        add(v == kMin ? NormalPredicate{} : FromInterval(a, kMin, v - 1));
        break;
      case Op::kLe:
        add(FromInterval(a, kMin, v));
        break;
      case Op::kGt:
        add(v == kMax ? NormalPredicate{} : FromInterval(a, v + 1, kMax));
        break;
      case Op::kGe:
        add(FromInterval(a, v, kMax));
        break;
      case Op::kBetween:
        if (v > p.upper) {
          return absl::InvalidArgumentError(absl::StrCat(
              "predicates[", i, "]: BETWEEN needs value <= upper, got ", v,
              " > ", p.upper));
        }
        add(FromInterval(a, v, p.upper));
        break;
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("predicates[", i, "].op: unknown operator ",
                         static_cast<int>(p.op)));
    }
  }
  auto& e = plan->entries;
  for (const Plan::Entry& entry : e) {
    if (entry.predicate.kind == Kind::kFalse) {  // the conjunction is false
      e.assign(1, Plan::Entry{});
      return absl::OkStatus();
    }
  }
  auto key = [](const Plan::Entry& x) {
    return std::make_tuple(x.predicate.kind, x.predicate.attribute,
                           x.predicate.lo, x.predicate.hi, x.negated);
  };
  std::sort(e.begin(), e.end(),
            [&](const auto& x, const auto& y) { return key(x) < key(y); });
  e.erase(std::unique(
              e.begin(), e.end(),
              [&](const auto& x, const auto& y) { return key(x) == key(y); }),
          e.end());
  return absl::OkStatus();
}

// An entry of a subscription being added: predicate id (with kNegatedBit)
// and its estimated selectivity.
struct Index::Ranked {
  uint32_t entry;
  bool positive_eq;
  double selectivity;
};

// Access predicate: the positive equality least likely satisfied (Fabret).
// Without one, the subscription goes to the per-attribute list of the
// attribute of its most selective entry: the access predicate is "present"
// on that attribute, and the entry itself stays a column (it leads them).
// Lists of a few large clusters stream well; clustering under range
// predicates scattered these subscriptions over thousands of one-row
// clusters, each a cache miss, because most range predicates hold for most
// events (measured 2.2-2.4x slower on fabret-1m).
PredicateId Index::ChooseAccess(std::vector<Ranked>* ranked) {
  std::sort(ranked->begin(), ranked->end(),
            [](const Ranked& a, const Ranked& b) {
              if (a.positive_eq != b.positive_eq) return a.positive_eq;
              return a.selectivity < b.selectivity;
            });
  const Ranked& first = ranked->front();
  if (first.positive_eq || first.entry == internal::kFalsePredicate) {
    const PredicateId access = first.entry;
    ranked->erase(ranked->begin());
    return access;
  }
  auto lead = ranked->begin();  // most selective positive entry
  while (lead->entry & kNegatedBit) ++lead;
  const NormalPredicate present =
      FromInterval(table_.Get(lead->entry).attribute, kMin, kMax);
  const PredicateId access = table_.Acquire(present);
  auto same = std::find_if(ranked->begin(), ranked->end(),
                           [&](const Ranked& r) { return r.entry == access; });
  if (same != ranked->end()) {
    table_.Release(access);  // already one of the entries: take it out
    ranked->erase(same);
  } else {
    stats_->Count(present, +1);  // released with the others on Remove
  }
  return access;
}

absl::Status Index::Add(SubscriptionId id,
                        absl::Span<const Predicate> predicates) {
  if (id > kMaxSubscriptionId) {
    return absl::InvalidArgumentError(absl::StrCat(
        "subscription id ", id, " exceeds the limit of ", kMaxSubscriptionId));
  }
  if (Contains(id)) {
    return absl::AlreadyExistsError(
        absl::StrCat("subscription id ", id, " already exists"));
  }
  Plan plan;
  if (absl::Status s = Normalise(predicates, &plan); !s.ok()) return s;

  std::vector<Ranked> ranked;
  ranked.reserve(plan.entries.size());
  for (const Plan::Entry& e : plan.entries) {
    const PredicateId pid = table_.Acquire(e.predicate);
    stats_->Count(e.predicate, +1);
    ranked.push_back({pid | (e.negated ? kNegatedBit : 0u),
                      e.predicate.kind == Kind::kEq && !e.negated, 0.0});
  }
  for (size_t i = 0; i < ranked.size(); ++i) {
    const PredicateId pid = ranked[i].entry & ~kNegatedBit;
    ranked[i].selectivity =
        stats_->Selectivity(plan.entries[i].predicate, table_.References(pid),
                            plan.entries[i].negated);
  }
  const PredicateId access = ChooseAccess(&ranked);
  // The other entries become columns, most selective first, so that rows
  // fail in the first columns.
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const Ranked& a, const Ranked& b) {
                     return a.selectivity < b.selectivity;
                   });
  std::vector<uint32_t> columns;
  columns.reserve(ranked.size());
  for (const Ranked& r : ranked) columns.push_back(r.entry);
  Slot(id) = clusters_.AddRow(table_.AccessHead(access), access, id, columns);
  ++size_;
  return absl::OkStatus();
}

absl::Status Index::Remove(SubscriptionId id) {
  const Location* found = static_cast<const Index*>(this)->Find(id);
  if (found == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("subscription id ", id, " not found"));
  }
  const Location at = *found;
  const PredicateId access = clusters_.Access(at.cluster);
  std::vector<uint32_t> entries{access};
  for (uint32_t col = 0; col < clusters_.Width(at.cluster); ++col) {
    entries.push_back(clusters_.Entry(at, col));
  }
  clusters_.RemoveRow(
      table_.AccessHead(access), at,
      [&](SubscriptionId moved, Location to) { Slot(moved) = to; });
  Slot(id) = Location{};
  for (uint32_t e : entries) {
    const PredicateId pid = e & ~kNegatedBit;
    stats_->Count(table_.Get(pid), -1);
    table_.Release(pid);
  }
  --size_;
  return absl::OkStatus();
}

const Location* Index::Find(SubscriptionId id) const {
  const size_t page = id >> kPageBits;
  if (page >= pages_.size() || pages_[page] == nullptr) return nullptr;
  const Location* at = &pages_[page][id & (kPageSize - 1)];
  return at->cluster == internal::kNoCluster ? nullptr : at;
}

bool Index::Contains(SubscriptionId id) const { return Find(id) != nullptr; }

Location& Index::Slot(SubscriptionId id) {
  const size_t page = id >> kPageBits;
  if (page >= pages_.size()) pages_.resize(page + 1);
  if (pages_[page] == nullptr) {
    pages_[page] = std::make_unique<Location[]>(kPageSize);
    ++allocated_pages_;
  }
  return pages_[page][id & (kPageSize - 1)];
}

void Index::MatchCohort(absl::Span<const EventView> events,
                        std::vector<std::vector<SubscriptionId>>* matches) {
  matches->resize(events.size());
  for (auto& m : *matches) m.clear();
  for (size_t base = 0; base < events.size();
       base += internal::kMaxCohortChunk) {
    MatchChunk(events.subspan(base, internal::kMaxCohortChunk), base, matches);
  }
}

void Index::MatchChunk(absl::Span<const EventView> events, size_t base,
                       std::vector<std::vector<SubscriptionId>>* matches) {
  table_.AddCohort(events);
  const uint64_t* const* masks = table_.mask_pointers();
  std::vector<SubscriptionId>* out = matches->data() + base;
  uint64_t rows = 0, lists = 0, visited = 0, found = 0;
  auto emit = [&](SubscriptionId id, uint64_t mask) {
    do {
      out[__builtin_ctzll(mask)].push_back(id);
      ++found;
      mask &= mask - 1;
    } while (mask != 0);
  };
  table_.ForEachTouchedAccess([&](uint32_t head, uint64_t mask) {
    ++lists;
    clusters_.MatchList(head, mask, masks, emit, &visited, &rows);
  });
  table_.EndCohort();
  counters_.events += events.size();
  counters_.chunks += 1;
  counters_.cluster_lists += lists;
  counters_.rows_checked += rows;
  counters_.clusters_checked += visited;
  counters_.matches += found;
}

void Index::MatchEvent(EventView event, MatchScratch* scratch,
                       std::vector<SubscriptionId>* matches) const {
  matches->clear();
  // Predicates added since the scratch's last use may have larger ids.
  scratch->bits_.Resize(table_.id_limit());
  scratch->access_heads_.clear();
  table_.MarkSatisfied(event, &scratch->bits_, &scratch->access_heads_);
  // Each satisfied access predicate is reported once, so every cluster (and
  // so every subscription) is visited at most once.
  for (uint32_t head : scratch->access_heads_) {
    clusters_.MatchListForEvent(head, scratch->bits_, matches);
  }
  scratch->bits_.Clear();
}

size_t Index::MemoryBytes() const {
  return table_.MemoryBytes() + clusters_.MemoryBytes() +
         stats_->MemoryBytes() + pages_.capacity() * sizeof(pages_[0]) +
         allocated_pages_ * kPageSize * sizeof(Location);
}

}  // namespace matcher
}  // namespace cohort
