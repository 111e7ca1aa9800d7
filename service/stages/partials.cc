#include "service/stages/partials.h"

#include <algorithm>

namespace cohort {
namespace service {

void FillPartial(const SubscriptionDirectory& directory,
                 const ListenerRegistry& listeners, uint32_t partition,
                 bool return_ids, const std::vector<uint32_t>& subscriber_of,
                 std::vector<matcher::SubscriptionId>* local,
                 PublishJob::Partial* partial) {
  if (directory.has_branches()) {
    // Branches go to or_ids, as their subscriptions (and deliveries).
    const bool listening = listeners.AnyListeners();
    auto plain = std::remove_if(
        local->begin(), local->end(), [&](matcher::SubscriptionId id) {
          if (!SubscriptionDirectory::IsBranch(id)) return false;
          const uint64_t owner = directory.BranchOwner(id);
          partial->or_ids.push_back(owner);
          if (listening) {
            const uint32_t subscriber = directory.BranchSubscriber(id);
            if (listeners.HasListeners(subscriber)) {
              partial->deliveries.emplace_back(subscriber, owner);
            }
          }
          return true;
        });
    local->erase(plain, local->end());
  }
  partial->count = local->size();
  if (return_ids) {
    // Local ids ascending give global ids ascending within a partition.
    std::sort(local->begin(), local->end());
    partial->ids.reserve(local->size());
    for (matcher::SubscriptionId id : *local) {
      partial->ids.push_back(directory.GlobalId(partition, id));
    }
  }
  // With nobody listening at all, a match's subscriber is not worth the
  // cache miss of looking it up (thousands per event on fabret-1m). A
  // listener that registers meanwhile gets deliveries from the next event
  // on, as with the per-match test.
  if (!listeners.AnyListeners()) return;
  for (matcher::SubscriptionId id : *local) {
    const uint32_t subscriber = subscriber_of[id];
    if (listeners.HasListeners(subscriber)) {
      partial->deliveries.emplace_back(subscriber,
                                       directory.GlobalId(partition, id));
    }
  }
}

void FillPartials(const SubscriptionDirectory& directory,
                  const ListenerRegistry& listeners, uint32_t partition,
                  const std::vector<uint32_t>& subscriber_of,
                  const matcher::CohortMatches& matches,
                  absl::Span<const PartialOut> outs,
                  PartialsScratch* scratch) {
  bool lists = listeners.AnyListeners();
  for (const PartialOut& out : outs) lists |= out.return_ids;
  if (lists) {
    matches.ToLists(&scratch->lists);
    for (size_t i = 0; i < outs.size(); ++i) {
      FillPartial(directory, listeners, partition, outs[i].return_ids,
                  subscriber_of, &scratch->lists[i], outs[i].partial);
    }
    return;
  }
  scratch->counts.resize(outs.size());
  matches.CountPerEvent(scratch->counts.data());
  if (directory.has_branches()) {
    // A branch counts as its subscription, once per event in the merge.
    matches.ForEachMatchFrom(
        kFirstBranchId, [&](size_t event, matcher::SubscriptionId id) {
          --scratch->counts[event];
          outs[event].partial->or_ids.push_back(directory.BranchOwner(id));
        });
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    outs[i].partial->count = scratch->counts[i];
  }
}

}  // namespace service
}  // namespace cohort
