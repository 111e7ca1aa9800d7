// The matches of one cohort in one flat buffer.
//
// Phase 2 of a cohort finds rows, and a row matches a set of the cohort's
// events at once: its accumulated 64-bit mask. Writing such a row as one
// (subscription id, event mask) pair costs one append, where splitting it
// into per-event lists costs one append per event matched (fabret-1m's
// cohorts of 64: 2,529 matches an event, from about 406 rows an event, so
// six appends to six growing vectors saved per row). What a consumer needs
// from the pairs it takes from them in one pass:
//   - the number of matches of each event (CountPerEvent), with a bit-sliced
//     counter: a row costs a few word operations whatever its events;
//   - each event's ids (ToLists, ForEachMatch), where a reply returns ids
//     or a listener waits for deliveries.
//
// A buffer holds the matches of one call for up to any number of events,
// cut into chunks of at most 64 (kMaxCohortChunk): a pair's mask is over
// its chunk's events, bit i standing for event base + i.
//
// Stage: the matcher's output, read by the partition and reply stages.
// Thread safety: none; a buffer is written by one thread and read once the
// writer is done (the caller's queue or barrier orders the two).
#ifndef COHORT_MATCHER_COHORT_MATCHES_H_
#define COHORT_MATCHER_COHORT_MATCHES_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "matcher/cluster_entry.h"
#include "matcher/types.h"

namespace cohort {
namespace matcher {

class CohortMatches {
 public:
  // Empties the buffer for the matches of `events` events.
  void Reset(size_t events);

  // Pairs appended from now on are over the events [base, base + 64) (bit
  // i: event base + i), until the next BeginChunk.
  // REQUIRES: base < events(); chunks are begun in increasing base order.
  void BeginChunk(size_t base);

  // Appends a row matched by the events of `mask` (within the current
  // chunk). REQUIRES: mask != 0; BeginChunk was called since Reset.
  void Add(SubscriptionId id, uint64_t mask) {
    if (pairs_ == ids_.size()) Grow(1);
    ids_[pairs_] = id;
    masks_[pairs_++] = mask;
  }
  // Appends (ids[j], masks[j]) for every j < n with masks[j] != 0,
  // without a branch per row (phase 2 emits a block of rows at a time, a
  // quarter of them matched on fabret-1m: a branch on each mispredicted
  // about as often). REQUIRES: BeginChunk was called since Reset.
  void AddBlock(const SubscriptionId* ids, const uint64_t* masks, size_t n) {
    if (pairs_ + n > ids_.size()) Grow(n);
    SubscriptionId* to_ids = ids_.data() + pairs_;
    uint64_t* to_masks = masks_.data() + pairs_;
    size_t k = 0;
    for (size_t j = 0; j < n; ++j) {
      // A lead row's flag off (cluster_entry.h).
      to_ids[k] = ids[j] & internal::kRowIdMask;
      to_masks[k] = masks[j];
      k += masks[j] != 0;
    }
    pairs_ += k;
  }
  // For the per-event paths, which append one event's ids to a vector: the
  // ids appended to *event_ids() since the last EndEvent are event i's of
  // the current chunk at EndEvent(i). They are kept as a run, with no mask
  // per id, so that a cohort matched event by event costs what the
  // per-event lists did.
  std::vector<SubscriptionId>* event_ids() { return &run_ids_; }
  void EndEvent(size_t i) {
    const size_t from = runs_.empty() ? 0 : runs_.back().to;
    if (run_ids_.size() > from) {
      runs_.push_back({chunks_.back().base + i, from, run_ids_.size()});
    }
  }

  size_t events() const { return events_; }
  // Pairs held (rows matched, per chunk), and ids held in events' runs.
  size_t pairs() const { return pairs_; }
  size_t run_ids() const { return run_ids_.size(); }
  // Matches in all: the pairs' event bits and the runs' ids.
  uint64_t matches() const;
  // The event bits of pairs [first, pairs()).
  uint64_t MatchesFrom(size_t first) const;

  // Sets counts[i] to the matches of event i, for every event.
  // REQUIRES: counts has room for events() values.
  void CountPerEvent(uint64_t* counts) const;

  // Calls f(event, id) for every match: pair by pair (events interleaved),
  // then run by run.
  template <typename F>
  void ForEachMatch(F&& f) const;

  // Calls f(event, id) for every match whose id is `min` or more: one pass
  // over the ids, whose event bits are read only for those ids (cheap
  // when few are).
  template <typename F>
  void ForEachMatchFrom(SubscriptionId min, F&& f) const;

  // Sets (*lists)[i] to event i's ids, in no particular order; resizes
  // *lists to events() and reuses its inner vectors.
  void ToLists(std::vector<std::vector<SubscriptionId>>* lists) const;

  // Heap bytes held.
  size_t MemoryBytes() const;

 private:
  struct Chunk {
    size_t from;  // first pair
    size_t base;  // first event
  };
  struct Run {
    size_t event;
    size_t from, to;  // [from, to) of run_ids_
  };
  // Room for at least `more` pairs past pairs_.
  void Grow(size_t more);
  // One past chunk c's last pair.
  size_t ChunkEnd(size_t c) const {
    return c + 1 < chunks_.size() ? chunks_[c + 1].from : pairs_;
  }
  // f(event, id) for every match of the pairs (the runs not included).
  template <typename F>
  void ForEachPairMatch(F&& f) const;

  // The pairs: [0, pairs_) of ids_ and masks_, whose sizes are the room.
  std::vector<SubscriptionId> ids_;
  std::vector<uint64_t> masks_;
  size_t pairs_ = 0;
  std::vector<Chunk> chunks_;
  std::vector<SubscriptionId> run_ids_;
  std::vector<Run> runs_;
  size_t events_ = 0;
};

template <typename F>
void CohortMatches::ForEachPairMatch(F&& f) const {
  for (size_t c = 0; c < chunks_.size(); ++c) {
    const size_t base = chunks_[c].base;
    for (size_t k = chunks_[c].from, end = ChunkEnd(c); k < end; ++k) {
      uint64_t mask = masks_[k];
      while (mask != 0) {
        f(base + static_cast<size_t>(__builtin_ctzll(mask)), ids_[k]);
        mask &= mask - 1;
      }
    }
  }
}

template <typename F>
void CohortMatches::ForEachMatch(F&& f) const {
  ForEachPairMatch(f);
  for (const Run& run : runs_) {
    for (size_t k = run.from; k < run.to; ++k) f(run.event, run_ids_[k]);
  }
}

template <typename F>
void CohortMatches::ForEachMatchFrom(SubscriptionId min, F&& f) const {
  for (size_t c = 0; c < chunks_.size(); ++c) {
    const size_t base = chunks_[c].base;
    for (size_t k = chunks_[c].from, end = ChunkEnd(c); k < end; ++k) {
      if (ids_[k] < min) continue;
      uint64_t mask = masks_[k];
      while (mask != 0) {
        f(base + static_cast<size_t>(__builtin_ctzll(mask)), ids_[k]);
        mask &= mask - 1;
      }
    }
  }
  for (const Run& run : runs_) {
    for (size_t k = run.from; k < run.to; ++k) {
      if (run_ids_[k] >= min) f(run.event, run_ids_[k]);
    }
  }
}

}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_COHORT_MATCHES_H_
