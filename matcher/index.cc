#include "matcher/index.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace cohort {
namespace matcher {

using internal::Location;
using internal::PredicateId;

Index::Index() = default;
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
  internal::RowPlan plan;
  if (absl::Status s = planner_.Plan(predicates, &table_, &plan); !s.ok()) {
    return s;
  }
  if (heads_.size() < table_.id_limit()) {
    heads_.resize(table_.id_limit(), internal::kNoCluster);
  }
  locations_.Slot(id) =
      clusters_.AddRow(&heads_[plan.access], plan.access, id, plan.columns);
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
  std::vector<uint32_t> columns;
  for (uint32_t col = 0; col < clusters_.Width(at.cluster); ++col) {
    columns.push_back(clusters_.Entry(at, col));
  }
  clusters_.RemoveRow(
      &heads_[access], at,
      [&](SubscriptionId moved, Location to) {
        locations_.Slot(moved) = to;
      });
  locations_.Slot(id) = Location{};
  planner_.Release(access, columns, &table_);
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
  matches->resize(events.size());
  for (auto& m : *matches) m.clear();
  for (size_t base = 0; base < events.size();
       base += internal::kMaxCohortChunk) {
    MatchChunk(events.subspan(base, internal::kMaxCohortChunk), base, matches);
  }
}

void Index::MatchChunk(absl::Span<const EventView> events, size_t base,
                       std::vector<std::vector<SubscriptionId>>* matches) {
  table_.ComputeCohort(events, &masks_);
  std::vector<SubscriptionId>* out = matches->data() + base;
  uint64_t rows = 0, lists = 0, visited = 0, found = 0;
  auto emit = [&](SubscriptionId id, uint64_t mask) {
    do {
      out[__builtin_ctzll(mask)].push_back(id);
      ++found;
      mask &= mask - 1;
    } while (mask != 0);
  };
  for (const internal::TouchedAccess& t : masks_.touched_access()) {
    const uint32_t head = Head(t.id);
    if (head == internal::kNoCluster) continue;
    ++lists;
    if (masks_.per_event()) {
      const int e = __builtin_ctzll(t.mask);
      const size_t before = out[e].size();
      clusters_.MatchListForEvent(head, table_.slots(), masks_.event_bits(e),
                                  &out[e], &visited, &rows);
      found += out[e].size() - before;
    } else {
      clusters_.MatchList(head, t.mask, table_.slots(), masks_.words(), emit,
                          &visited, &rows);
    }
  }
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
  scratch->bits_.Resize(table_.id_limit(), table_.slot_limit());
  scratch->access_.clear();
  table_.MarkSatisfied(event, &scratch->bits_, &scratch->access_);
  // Each satisfied access predicate is reported once, so every cluster (and
  // so every subscription) is visited at most once.
  uint64_t clusters = 0, rows = 0;  // MatchEvent keeps no counters
  for (PredicateId id : scratch->access_) {
    const uint32_t head = Head(id);
    if (head != internal::kNoCluster) {
      clusters_.MatchListForEvent(head, table_.slots(), scratch->bits_, matches,
                                  &clusters, &rows);
    }
  }
  scratch->bits_.Clear();
}

size_t Index::MemoryBytes() const {
  return table_.MemoryBytes() + clusters_.MemoryBytes() +
         planner_.MemoryBytes() + heads_.capacity() * sizeof(uint32_t) +
         masks_.MemoryBytes() + locations_.MemoryBytes();
}

}  // namespace matcher
}  // namespace cohort
