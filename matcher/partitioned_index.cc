#include "matcher/partitioned_index.h"

#include <algorithm>
#include <cassert>
#include <utility>

#include "absl/strings/str_cat.h"
#include "matcher/growth.h"

namespace cohort {
namespace matcher {

using internal::CohortMasks;
using internal::kNoCluster;
using internal::Location;
using internal::PredicateId;

PartitionedIndex::PartitionedIndex(uint32_t partitions, uint32_t spread_rows)
    : partitions_(partitions),
      spread_rows_(spread_rows),
      clusters_(partitions),
      rows_in_{std::vector<uint64_t>(partitions, 0),
               std::vector<uint64_t>(partitions, 0)} {}

PartitionedIndex::~PartitionedIndex() = default;

bool PartitionedIndex::Contains(SubscriptionId id) const {
  const Placed* placed = locations_.Find(id);
  return placed != nullptr && placed->partition != kAbsent;
}

absl::StatusOr<uint32_t> PartitionedIndex::PartitionOf(
    SubscriptionId id) const {
  const Placed* placed = locations_.Find(id);
  if (placed == nullptr || placed->partition == kAbsent) {
    return absl::NotFoundError(
        absl::StrCat("subscription id ", id, " not found"));
  }
  return placed->partition;
}

uint32_t PartitionedIndex::Choose(PredicateId access, SubscriptionId id) {
  if (access >= access_of_.size()) {
    internal::ResizeGrowingByQuarter(access_of_, access + 1, kNoAccess);
  }
  if (access_of_[access] == kNoAccess) {
    uint32_t k;
    if (!free_accesses_.empty()) {
      k = free_accesses_.back();
      free_accesses_.pop_back();
    } else {
      k = static_cast<uint32_t>(accesses_.size());
      internal::ReserveGrowingByQuarter(accesses_, accesses_.size() + 1);
      accesses_.emplace_back();
    }
    Access& fresh = accesses_[k];
    fresh = Access{};
    fresh.row_class = internal::EqualityLike(table_.Get(access).kind)
                          ? kEqualityRows
                          : kPresentRows;
    const std::vector<uint64_t>& rows = rows_in_[fresh.row_class];
    fresh.home = static_cast<uint32_t>(
        std::min_element(rows.begin(), rows.end()) - rows.begin());
    access_of_[access] = k;
  }
  Access& a = accesses_[access_of_[access]];
  const uint32_t r = a.placed++;
  ++a.live;
  uint32_t p = a.home;
  if (partitions_ == 1) {
    p = 0;
  } else if (spread_rows_ == 0) {  // by id: any partition may hold any list
    if (a.spread_at == kNotSpread) Spread(a);
    p = id % partitions_;
  } else if (r >= spread_rows_) {
    if (a.spread_at == kNotSpread) Spread(a);
    p = (a.home + r / spread_rows_) % partitions_;
  }
  ++rows_in_[a.row_class][p];
  return p;
}

void PartitionedIndex::Spread(Access& a) {
  if (!free_spreads_.empty()) {
    a.spread_at = free_spreads_.back();
    free_spreads_.pop_back();
  } else {
    a.spread_at = static_cast<uint32_t>(spread_heads_.size());
    spread_heads_.resize(spread_heads_.size() + partitions_, kNoCluster);
  }
  spread_heads_[a.spread_at + a.home] = a.head;
  a.head = kNoCluster;
}

uint32_t* PartitionedIndex::Head(PredicateId access, uint32_t partition) {
  Access& a = accesses_[access_of_[access]];
  return a.spread_at == kNotSpread ? &a.head
                                   : &spread_heads_[a.spread_at + partition];
}

void PartitionedIndex::Forget(PredicateId access) {
  const uint32_t k = access_of_[access];
  Access& a = accesses_[k];
  if (--a.live > 0) return;
  if (a.spread_at != kNotSpread) free_spreads_.push_back(a.spread_at);
  access_of_[access] = kNoAccess;
  free_accesses_.push_back(k);
}

absl::Status PartitionedIndex::PlanAdd(SubscriptionId id,
                                       absl::Span<const Predicate> predicates,
                                       PendingRow* row) {
  if (id > kMaxSubscriptionId) {
    return absl::InvalidArgumentError(absl::StrCat(
        "subscription id ", id, " exceeds the limit of ", kMaxSubscriptionId));
  }
  if (Contains(id)) {
    return absl::AlreadyExistsError(
        absl::StrCat("subscription id ", id, " already exists"));
  }
  if (absl::Status s = planner_.Plan(predicates, &table_, &row->plan);
      !s.ok()) {
    return s;
  }
  row->id = id;
  row->partition = Choose(row->plan.access, id);
  Placed& placed = locations_.Slot(id);
  placed.partition = row->partition;
  placed.at = Location{};
  ++size_;
  return absl::OkStatus();
}

void PartitionedIndex::ApplyRow(const PendingRow& row) {
  clusters_[row.partition].AddRow(
      Head(row.plan.access, row.partition), row.plan.access, row.id,
      row.plan.columns, row.plan.bounds(), row.plan.lead,
      [this](SubscriptionId id, Location to) {
        locations_.Existing(id).at = to;
      });
}

void PartitionedIndex::RemoveRow(uint32_t partition, SubscriptionId id,
                                 RemovedRows* removed) {
  internal::ClusterStore& store = clusters_[partition];
  Placed& placed = locations_.Existing(id);
  const Location at = placed.at;
  const PredicateId access = store.Access(at.cluster);
  --rows_in_[accesses_[access_of_[access]].row_class][partition];
  removed->access.push_back(access);
  removed->widths.push_back(
      store.AppendEntries(at, &removed->columns, &removed->bounds));
  removed->leads.push_back(store.Lead(at));
  store.RemoveRow(Head(access, partition), at,
                  [this](SubscriptionId moved, Location to) {
                    locations_.Existing(moved).at = to;
                  });
  placed.at = Location{};
  placed.partition = kAbsent;
}

void PartitionedIndex::FinishRemove(const RemovedRows& removed) {
  size_t next = 0, next_bounds = 0;
  for (size_t i = 0; i < removed.access.size(); ++i) {
    const PredicateId access = removed.access[i];
    Forget(access);
    const absl::Span<const uint32_t> columns =
        absl::MakeConstSpan(removed.columns).subspan(next, removed.widths[i]);
    const size_t inline_columns = static_cast<size_t>(std::count_if(
        columns.begin(), columns.end(), internal::IsInline));
    planner_.Release(access, columns,
                     absl::MakeConstSpan(removed.bounds)
                         .subspan(next_bounds, inline_columns),
                     removed.leads[i], &table_);
    next += removed.widths[i];
    next_bounds += inline_columns;
    --size_;
  }
}

void PartitionedIndex::ApplyRows(uint32_t partition,
                                 absl::Span<const PendingRow> rows) {
  internal::ClusterStore& store = clusters_[partition];
  store.BeginBulk();
  for (const PendingRow& row : rows) {
    assert(row.partition == partition);
    ApplyRow(row);
  }
  store.EndBulk([this](SubscriptionId id, Location to) {
    locations_.Existing(id).at = to;
  });
}

absl::Status PartitionedIndex::Add(SubscriptionId id,
                                   absl::Span<const Predicate> predicates) {
  PendingRow row;
  if (absl::Status s = PlanAdd(id, predicates, &row); !s.ok()) return s;
  ApplyRow(row);
  return absl::OkStatus();
}

std::vector<absl::Status> PartitionedIndex::AddBatch(
    absl::Span<const Index::NewSubscription> batch) {
  std::vector<absl::Status> statuses;
  statuses.reserve(batch.size());
  std::vector<std::vector<PendingRow>> rows(partitions_);
  BeginPlans();
  for (size_t i = 0; i < batch.size(); ++i) {
    if (i + internal::kPrefetchAhead < batch.size()) {
      internal::PrefetchPredicates(
          batch[i + internal::kPrefetchAhead].predicates);
    }
    const Index::NewSubscription& s = batch[i];
    PendingRow row;
    statuses.push_back(PlanAdd(s.id, s.predicates, &row));
    if (statuses.back().ok()) rows[row.partition].push_back(std::move(row));
  }
  EndPlans();
  for (uint32_t p = 0; p < partitions_; ++p) ApplyRows(p, rows[p]);
  return statuses;
}

absl::Status PartitionedIndex::Remove(SubscriptionId id) {
  absl::StatusOr<uint32_t> partition = PartitionOf(id);
  if (!partition.ok()) return partition.status();
  RemovedRows removed;
  RemoveRow(*partition, id, &removed);
  FinishRemove(removed);
  return absl::OkStatus();
}

void PartitionedIndex::BeginCohort(absl::Span<const EventView> events,
                                   CohortMasks* masks) const {
  table_.BeginCohort(
      events, masks,
      [this](PredicateId id) -> uint32_t {
        return id < access_of_.size() && access_of_[id] != kNoAccess
                   ? accesses_[access_of_[id]].live
                   : 0;
      },
      keep_);
  std::vector<std::vector<internal::AccessVisit>>& visits = masks->visits();
  visits.resize(partitions_);
  for (auto& v : visits) v.clear();
  for (const internal::TouchedAccess& t : masks->touched_access()) {
    if (t.id >= access_of_.size() || access_of_[t.id] == kNoAccess) continue;
    const Access& a = accesses_[access_of_[t.id]];
    if (a.spread_at == kNotSpread) {
      if (a.head != kNoCluster) {
        visits[a.home].push_back({a.head, t.lead, t.mask});
      }
      continue;
    }
    for (uint32_t p = 0; p < partitions_; ++p) {
      const uint32_t head = spread_heads_[a.spread_at + p];
      if (head != kNoCluster) visits[p].push_back({head, t.lead, t.mask});
    }
  }
}

void PartitionedIndex::MatchPartition(uint32_t p, const CohortMasks& masks,
                                      CohortMatches* out,
                                      IndexCounters* counters) const {
  MatchPartitionUnit(p, 0, 1, masks, out, counters);
}

void PartitionedIndex::MatchPartitionUnit(uint32_t p, uint32_t unit,
                                          uint32_t units,
                                          const CohortMasks& masks,
                                          CohortMatches* out,
                                          IndexCounters* counters) const {
  assert(units >= 1 && unit < units);
  uint64_t rows = 0, lists = 0, visited = 0, found = 0;
  const std::vector<internal::AccessVisit>& all = masks.visits(p);
  const absl::Span<const internal::AccessVisit> visits =
      absl::MakeConstSpan(all).subspan(
          all.size() * unit / units,
          all.size() * (unit + 1) / units - all.size() * unit / units);
  if (masks.per_event()) {
    // An event's visits lie together, in event order (BeginCohort keeps
    // touched_access's order): one walk per event's run of them.
    std::vector<SubscriptionId>* ids = out->event_ids();
    const size_t before = ids->size();
    for (size_t from = 0, to; from < visits.size(); from = to) {
      const int e = __builtin_ctzll(visits[from].mask);
      for (to = from + 1;
           to < visits.size() && __builtin_ctzll(visits[to].mask) == e;
           ++to) {
      }
      const internal::PredicateBits& bits = masks.event_bits(e);
      const internal::PredicateBits& open = masks.event_open_bits(e);
      clusters_[p].MatchListsForEvent(
          masks.event_view(e), to - from,
          [&](size_t i) {
            const internal::AccessVisit& v = visits[from + i];
            return internal::EventList{v.head, masks.event_value(v.lead),
                                       &bits, &open, ids};
          },
          table_.slots(), &lists, &visited, &rows);
      out->EndEvent(e);
    }
    found = ids->size() - before;
  } else {
    const size_t first = out->pairs();
    clusters_[p].MatchVisits(visits, masks, table_.slots(),
                             internal::AppendToMatches(out), &lists, &visited,
                             &rows);
    found = out->MatchesFrom(first);
  }
  counters->cluster_lists += lists;
  counters->rows_checked += rows;
  counters->clusters_checked += visited;
  counters->matches += found;
}

void PartitionedIndex::MatchCohort(
    absl::Span<const EventView> events,
    std::vector<std::vector<SubscriptionId>>* matches) {
  MatchCohort(events, &pairs_);
  pairs_.ToLists(matches);
}

void PartitionedIndex::MatchCohort(absl::Span<const EventView> events,
                                   CohortMatches* matches) {
  matches->Reset(events.size());
  for (size_t base = 0; base < events.size();
       base += internal::kMaxCohortChunk) {
    const absl::Span<const EventView> chunk =
        events.subspan(base, internal::kMaxCohortChunk);
    BeginCohort(chunk, &masks_);
    for (size_t t = 0; t < masks_.tasks(); ++t) RunTask(t, &masks_);
    matches->BeginChunk(base);
    for (uint32_t p = 0; p < partitions_; ++p) {
      MatchPartition(p, masks_, matches, &counters_);
    }
    counters_.events += chunk.size();
    counters_.chunks += 1;
  }
}

size_t PartitionedIndex::clusters() const {
  size_t n = 0;
  for (const internal::ClusterStore& c : clusters_) n += c.clusters();
  return n;
}

size_t PartitionedIndex::MemoryBytes() const {
  size_t bytes = table_.MemoryBytes() + planner_.MemoryBytes() +
                 clusters_.capacity() * sizeof(internal::ClusterStore) +
                 access_of_.capacity() * sizeof(uint32_t) +
                 accesses_.capacity() * sizeof(Access) +
                 free_accesses_.capacity() * sizeof(uint32_t) +
                 spread_heads_.capacity() * sizeof(uint32_t) +
                 free_spreads_.capacity() * sizeof(uint32_t) +
                 locations_.MemoryBytes() + masks_.MemoryBytes() +
                 pairs_.MemoryBytes();
  for (const internal::ClusterStore& c : clusters_) bytes += c.MemoryBytes();
  return bytes;
}

}  // namespace matcher
}  // namespace cohort
