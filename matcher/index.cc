#include "matcher/index.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "matcher/growth.h"

namespace cohort {
namespace matcher {

using internal::kPrefetchAhead;
using internal::Location;
using internal::PrefetchPredicates;
using internal::PredicateId;

Index::Index() { masks_.set_serial(true); }
Index::~Index() = default;

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
  internal::RowPlan& plan = plan_;
  if (absl::Status s = planner_.Plan(predicates, &table_, &plan); !s.ok()) {
    return s;
  }
  if (lists_.size() <= plan.access) {
    internal::ResizeGrowingByQuarter(lists_, plan.access + 1, List{});
  }
  List& list = lists_[plan.access];
  ++list.rows;
  clusters_.AddRow(&list.head, plan.access, id, plan.columns, plan.bounds(),
                   plan.lead, [&](SubscriptionId row, Location to) {
                     locations_.Slot(row) = to;
                   });
  ++size_;
  return absl::OkStatus();
}

std::vector<absl::Status> Index::AddBatch(
    absl::Span<const NewSubscription> batch) {
  std::vector<absl::Status> statuses;
  statuses.reserve(batch.size());
  table_.BeginBulk();
  clusters_.BeginBulk();
  for (size_t i = 0; i < batch.size(); ++i) {
    if (i + kPrefetchAhead < batch.size()) {
      PrefetchPredicates(batch[i + kPrefetchAhead].predicates);
    }
    statuses.push_back(Add(batch[i].id, batch[i].predicates));
  }
  clusters_.EndBulk([&](SubscriptionId row, Location to) {
    locations_.Slot(row) = to;
  });
  table_.EndBulk();
  return statuses;
}

absl::Status Index::Remove(SubscriptionId id) {
  const Location* found = static_cast<const Index*>(this)->Find(id);
  if (found == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("subscription id ", id, " not found"));
  }
  const Location at = *found;
  const PredicateId access = clusters_.Access(at.cluster);
  std::vector<uint32_t> columns;
  std::vector<internal::LeadRange> bounds;
  clusters_.AppendEntries(at, &columns, &bounds);
  const std::optional<internal::LeadRange> lead = clusters_.Lead(at);
  clusters_.RemoveRow(
      &lists_[access].head, at,
      [&](SubscriptionId moved, Location to) {
        locations_.Slot(moved) = to;
      });
  locations_.Slot(id) = Location{};
  --lists_[access].rows;
  planner_.Release(access, columns, bounds, lead, &table_);
  --size_;
  return absl::OkStatus();
}

const Location* Index::Find(SubscriptionId id) const {
  const Location* at = locations_.Find(id);
  return at == nullptr || at->cluster == internal::kNoCluster ? nullptr : at;
}

bool Index::Contains(SubscriptionId id) const { return Find(id) != nullptr; }

void Index::MatchCohort(absl::Span<const EventView> events,
                        std::vector<std::vector<SubscriptionId>>* matches) {
  MatchCohort(events, &pairs_);
  pairs_.ToLists(matches);
}

void Index::MatchCohort(absl::Span<const EventView> events,
                        CohortMatches* matches) {
  matches->Reset(events.size());
  for (size_t base = 0; base < events.size();
       base += internal::kMaxCohortChunk) {
    MatchChunk(events.subspan(base, internal::kMaxCohortChunk), base, matches);
  }
}

void Index::MatchChunk(absl::Span<const EventView> events, size_t base,
                       CohortMatches* out) {
  out->BeginChunk(base);
  if (events.size() == 1 && keep_ != internal::CohortKeep::kMasks) {
    // A lone event is kept per event (CohortKeep): it is MatchEvent's case.
    MatchEachAlone(events, out);
    return;
  }
  internal::CohortKeep keep = keep_;
  Verdict* verdict = nullptr;
  if (keep_ == internal::CohortKeep::kCheaper &&
      events.size() <= internal::kMaxCheaperPerEvent) {
    verdict = &verdicts_[events.size()];
    if (verdict->left > 0) {
      --verdict->left;
      if (verdict->per_event) {
        MatchEachAlone(events, out);
        counters_.chunks_remembered_per_event += 1;
        return;
      }
      keep = internal::CohortKeep::kMasks;
      verdict = nullptr;
    }
  }
  table_.BeginCohort(
      events, &masks_, [this](PredicateId id) { return RowsUnder(id); },
      keep);
  if (verdict != nullptr) {
    counters_.chunks_weighed += 1;
    *verdict = {masks_.per_event(), kVerdictCohorts};
  }
  uint64_t rows = 0, lists = 0, visited = 0, found = 0;
  const absl::Span<const internal::TouchedAccess> touched =
      masks_.touched_access();
  if (masks_.per_event()) {
    // Serial masks (the constructor): each event's bits are filled by its
    // task, then its lists are checked, before the next event's task.
    size_t t = 0;
    std::vector<SubscriptionId>* ids = out->event_ids();
    for (size_t e = 0; e < events.size(); ++e) {
      table_.RunTask(e, &masks_);
      const size_t before = ids->size();
      t = MatchTouchedOfEvent(masks_, t, e, ids, &lists, &visited, &rows);
      found += ids->size() - before;
      out->EndEvent(e);
    }
  } else {
    for (size_t t = 0; t < masks_.tasks(); ++t) table_.RunTask(t, &masks_);
    std::vector<std::vector<internal::AccessVisit>>& by_partition =
        masks_.visits();
    by_partition.resize(1);
    std::vector<internal::AccessVisit>& visits = by_partition[0];
    visits.clear();
    AppendVisits(touched, &visits);
    const size_t first = out->pairs();
    clusters_.MatchVisits(visits, masks_, table_.slots(),
                          internal::AppendToMatches(out), &lists, &visited,
                          &rows);
    found = out->MatchesFrom(first);
  }
  counters_.events += events.size();
  counters_.chunks += 1;
  counters_.cluster_lists += lists;
  counters_.rows_checked += rows;
  counters_.clusters_checked += visited;
  counters_.matches += found;
}

void Index::MatchEachAlone(absl::Span<const EventView> events,
                           CohortMatches* out) {
  for (size_t e = 0; e < events.size(); ++e) {
    MatchOne(events[e], &lone_scratch_, out->event_ids(), &counters_);
    out->EndEvent(e);
  }
  counters_.events += events.size();
  counters_.chunks += 1;
}

size_t Index::MatchTouchedOfEvent(const internal::CohortMasks& masks,
                                  size_t first, size_t e,
                                  std::vector<SubscriptionId>* matches,
                                  uint64_t* lists, uint64_t* clusters,
                                  uint64_t* rows) const {
  const absl::Span<const internal::TouchedAccess> touched =
      masks.touched_access();
  size_t end = first;
  while (end < touched.size() &&
         static_cast<size_t>(__builtin_ctzll(touched[end].mask)) == e) {
    ++end;
  }
  MatchEventLists(
      masks.event_view(e), end - first,
      [&](size_t v) { return touched[first + v].id; },
      [&](size_t v) { return masks.event_value(touched[first + v].lead); },
      masks.event_bits(e), masks.event_open_bits(e), matches, lists, clusters,
      rows);
  return end;
}

void Index::AppendVisits(absl::Span<const internal::TouchedAccess> touched,
                         std::vector<internal::AccessVisit>* visits) const {
  constexpr size_t kAhead = 8;
  for (size_t i = 0; i < touched.size(); ++i) {
    if (i + kAhead < touched.size()) PrefetchList(touched[i + kAhead].id);
    const uint32_t head = Head(touched[i].id);
    if (head != internal::kNoCluster) {
      visits->push_back({head, touched[i].lead, touched[i].mask});
    }
  }
}

void Index::MatchEvent(EventView event, MatchScratch* scratch,
                       std::vector<SubscriptionId>* matches) const {
  matches->clear();
  IndexCounters unused;  // MatchEvent keeps no counters
  MatchOne(event, scratch, matches, &unused);
}

void Index::MatchOne(EventView event, MatchScratch* scratch,
                     std::vector<SubscriptionId>* matches,
                     IndexCounters* counters) const {
  // Predicates added since the scratch's last use may have larger ids.
  scratch->bits_.Resize(table_.id_limit(), table_.slot_limit());
  scratch->access_.clear();
  table_.MarkSatisfied(event, &scratch->bits_, &scratch->access_,
                       &scratch->open_);
  // Each satisfied access predicate is reported once, so every cluster (and
  // so every subscription) is visited at most once.
  const size_t before = matches->size();
  const std::vector<internal::AccessHit>& hits = scratch->access_;
  MatchEventLists(
      event, hits.size(), [&](size_t v) { return hits[v].id; },
      [&](size_t v) { return hits[v].value; }, scratch->bits_,
      scratch->open_, matches,
      &counters->cluster_lists, &counters->clusters_checked,
      &counters->rows_checked);
  counters->matches += matches->size() - before;
  scratch->bits_.Clear();
  scratch->open_.Clear();
}

size_t Index::MemoryBytes() const {
  return table_.MemoryBytes() + clusters_.MemoryBytes() +
         planner_.MemoryBytes() + lists_.capacity() * sizeof(List) +
         masks_.MemoryBytes() + lone_scratch_.MemoryBytes() +
         pairs_.MemoryBytes() +
         locations_.MemoryBytes();
}

}  // namespace matcher
}  // namespace cohort
