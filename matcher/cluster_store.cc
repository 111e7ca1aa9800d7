#include "matcher/cluster_store.h"

#include <algorithm>
#include <cstring>

namespace cohort {
namespace matcher {
namespace internal {

uint32_t ClusterStore::NewCluster(uint32_t* head, PredicateId access,
                                  uint32_t width) {
  uint32_t index;
  if (!free_.empty()) {
    index = free_.back();
    free_.pop_back();
  } else {
    index = static_cast<uint32_t>(clusters_.size());
    clusters_.emplace_back();
  }
  Cluster& c = clusters_[index];
  c = Cluster{};
  c.width = width;
  c.access = access;
  c.next = *head;
  *head = index;
  return index;
}

void ClusterStore::Unlink(uint32_t* head, uint32_t index) {
  uint32_t* link = head;
  while (*link != index) link = &clusters_[*link].next;
  *link = clusters_[index].next;
  clusters_[index] = Cluster{};
  free_.push_back(index);
}

void ClusterStore::Resize(Cluster& c, uint32_t capacity) {
  std::vector<uint32_t> data(static_cast<size_t>(capacity) * (c.width + 1));
  for (uint32_t col = 0; col <= c.width && c.rows > 0; ++col) {
    std::memcpy(data.data() + static_cast<size_t>(col) * capacity,
                c.data.data() + static_cast<size_t>(col) * c.capacity,
                c.rows * sizeof(uint32_t));
  }
  c.data = std::move(data);
  c.capacity = capacity;
}

Location ClusterStore::AddRow(uint32_t* head, PredicateId access,
                              SubscriptionId id,
                              absl::Span<const uint32_t> entries) {
  const uint32_t width = static_cast<uint32_t>(entries.size());
  uint32_t index = *head;
  while (index != kNoCluster && clusters_[index].width != width) {
    index = clusters_[index].next;
  }
  if (index == kNoCluster) index = NewCluster(head, access, width);
  Cluster& c = clusters_[index];
  if (c.rows == c.capacity) {
    // Most clusters stay tiny, so grow from 1; by half again rather than
    // doubling, so unused capacity averages ~1/6 of a cluster instead of ~1/4
    // (it is most of the index's memory) at the price of more re-layouts.
    Resize(c, c.capacity + std::max<uint32_t>(1, c.capacity / 2));
  }
  const uint32_t row = c.rows++;
  c.ids()[row] = id;
  for (uint32_t col = 0; col < width; ++col) c.column(col)[row] = entries[col];
  return Location{index, row};
}

uint32_t ClusterStore::Entry(Location at, uint32_t column) const {
  return clusters_[at.cluster].column(column)[at.row];
}

void ClusterStore::MatchListForEvent(uint32_t head, const uint32_t* slots,
                                     const PredicateBits& bits,
                                     std::vector<SubscriptionId>* matches,
                                     uint64_t* clusters, uint64_t* rows) const {
  for (uint32_t i = head; i != kNoCluster; i = clusters_[i].next) {
    MatchClusterForEvent(clusters_[i], slots, bits, matches);
    *rows += clusters_[i].rows;
    ++*clusters;
  }
}

void ClusterStore::MatchClusterForEvent(const Cluster& c, const uint32_t* slots,
                                        const PredicateBits& bits,
                                        std::vector<SubscriptionId>* matches) {
  const uint32_t* ids = c.ids();
  if (c.width == 0) {  // no column to carry a tombstone: test the id
    for (uint32_t row = 0; row < c.rows; ++row) {
      if (ids[row] != kDeadRow) matches->push_back(ids[row]);
    }
    return;
  }
  // Rows of the block still alive, compacted without branches: each row is
  // written at the end of the list and kept only if its entry holds.
  // Tombstones die in column 0 (the false predicate's bit is never set).
  uint32_t alive[kMatchBlock];
  for (uint32_t start = 0; start < c.rows; start += kMatchBlock) {
    const uint32_t n = std::min(kMatchBlock, c.rows - start);
    const uint32_t* col = c.column(0) + start;
    uint32_t live = 0;
    for (uint32_t j = 0; j < n; ++j) {
      alive[live] = j;
      live += bits.Holds(col[j], slots);
    }
    for (uint32_t k = 1; k < c.width && live > 0; ++k) {
      col = c.column(k) + start;
      uint32_t kept = 0;
      for (uint32_t m = 0; m < live; ++m) {
        const uint32_t j = alive[m];
        alive[kept] = j;
        kept += bits.Holds(col[j], slots);
      }
      live = kept;
    }
    for (uint32_t m = 0; m < live; ++m) {
      matches->push_back(ids[start + alive[m]]);
    }
  }
}

size_t ClusterStore::MemoryBytes() const {
  size_t bytes = clusters_.capacity() * sizeof(Cluster) +
                 free_.capacity() * sizeof(uint32_t);
  for (const Cluster& c : clusters_)
    bytes += c.data.capacity() * sizeof(uint32_t);
  return bytes;
}

}  // namespace internal
}  // namespace matcher
}  // namespace cohort
