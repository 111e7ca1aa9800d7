#include "service/stages/cluster_partition.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace cohort {
namespace service {

ClusterPartition::ClusterPartition(uint32_t partition, uint32_t stage,
                                   uint32_t units, uint64_t queue_limit,
                                   matcher::PartitionedIndex* index,
                                   const SubscriptionDirectory* directory,
                                   const ListenerRegistry* listeners,
                                   const std::vector<uint32_t>* subscriber_of,
                                   ReadyFn ready)
    : partition_(partition),
      units_(units),
      index_(index),
      directory_(directory),
      listeners_(listeners),
      subscriber_of_(subscriber_of),
      ready_(std::move(ready)),
      profile_(absl::StrCat("partition/", stage), "partition", stage,
               queue_limit) {}

void ClusterPartition::Match(const CohortPipeline::Work& work,
                             const PredicateStage::Cohort& cohort,
                             Scratch* scratch) {
  const int64_t start = MonotonicNanos();
  const size_t n = cohort.events.size();
  matcher::CohortMatches& matches = scratch->matches;
  matches.Reset(n);
  matches.BeginChunk(0);
  matcher::IndexCounters counters;
  // A solo cohort's match takes every unit at once, into the first unit's
  // partial (the others stay empty); else one unit, into its own.
  const bool whole = work.all_partitions || units_ == 1;
  const uint32_t unit = whole ? 0 : work.unit;
  if (whole) {
    index_->MatchPartition(partition_, cohort.masks, &matches, &counters);
  } else {
    index_->MatchPartitionUnit(partition_, unit, units_, cohort.masks,
                               &matches, &counters);
  }
  const size_t partial = size_t{partition_} * units_ + unit;
  scratch->outs.clear();
  for (const QueuedEvent& e : cohort.events) {
    scratch->outs.push_back({&e.job->state[e.event].partials[partial],
                             e.job->WantIds()});
  }
  // Matcher ids are global ids - 1: the directory's single id shard.
  FillPartials(*directory_, *listeners_, /*partition=*/0, *subscriber_of_,
               matches, scratch->outs, &scratch->partials);
  // Everything is recorded before the events are handed on, so a GetStats
  // that follows a reply includes this cohort.
  // The cohort's events and their waits count once, with its first unit.
  if (unit == 0) {
    profile_.AddEvents(n);
    scratch->waits.assign(n, start - work.ready_ns);
    profile_.RecordWaits(scratch->waits);
  }
  profile_.AddMatches(counters.matches);
  profile_.RecordBatch(work.queue_length, n, MonotonicNanos() - start);
  const uint32_t reported = whole ? units_ : 1;
  for (const QueuedEvent& e : cohort.events) {
    if (e.job->state[e.event].pending.fetch_sub(
            reported, std::memory_order_acq_rel) == reported) {
      ready_(e.job, e.event, work.finish_now);
    }
  }
}

void ClusterPartition::Apply(
    absl::Span<const matcher::PartitionedIndex::PendingRow> rows,
    absl::Span<const uint32_t> removes,
    matcher::PartitionedIndex::RemovedRows* removed) {
  index_->ApplyRows(partition_, rows);
  for (uint32_t id : removes) index_->RemoveRow(partition_, id, removed);
  profile_.AddUpdates(rows.size() + removes.size());
}

}  // namespace service
}  // namespace cohort
