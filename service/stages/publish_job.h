// One Publish request in flight through the engine (PublishJob), from the
// front stage that admits it to the stage that answers it.
//
// Memory crossing threads: a PublishJob is created by the front stage (the
// RPC handler), read and written by engine threads while in flight, and must
// be kept alive by its creator until `done` has been called. Engine threads
// write disjoint parts of it (partition p writes only partials[p], or with
// K steal units, unit u of its share only partials[p * K + u]); the
// hand-off is ordered by atomics and queues.
//
// Expiry: a job whose deadline has passed, or whose caller has cancelled it,
// is expired. The stage that matches an event checks this once per cohort
// (per job in threaded mode) and skips the events of expired jobs: they are
// not matched, not delivered, and the job ends with DEADLINE_EXCEEDED or
// CANCELLED. Events already matched when the job expires are delivered.
#ifndef COHORT_SERVICE_STAGES_PUBLISH_JOB_H_
#define COHORT_SERVICE_STAGES_PUBLISH_JOB_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "matcher/types.h"
#include "proto/cohort/v1/pubsub.pb.h"

namespace cohort {
namespace service {

struct PublishJob {
  // What one partition (or the one worker) found for one event.
  struct Partial {
    uint64_t count = 0;  // plain subscriptions matched
    std::vector<uint64_t> ids;  // global ids, ascending; only if return_ids
    // (subscriber, global id) for matched subscribers that have listeners.
    std::vector<std::pair<uint32_t, uint64_t>> deliveries;
    // The global ids of "or" subscriptions matched through their branches
    // (subscription_directory.h), once per branch matched, in no order:
    // not in `count` or `ids`; the merge counts each once.
    std::vector<uint64_t> or_ids;
  };
  struct EventState {
    std::atomic<uint32_t> pending{0};  // partitions (units) yet to report
    std::vector<Partial> partials;     // one per partition (unit)
    // Set by a partition that skipped the event because the job had
    // expired; read by the stage that finishes it.
    std::atomic<bool> skipped{false};
  };

  // Set by the creator. `request` and `response` must outlive `done`.
  const v1::PublishRequest* request = nullptr;
  v1::PublishResponse* response = nullptr;
  // Compact event records (validation.h BuildEvents): one per request
  // event, or, when some JSON event became several (one per combination of
  // its arrays' elements), `event_of` maps each record to its request
  // event (adjacent records, in request order). The engine matches
  // records; "event" below means a record.
  std::vector<std::vector<matcher::AttributeValue>> events;
  std::vector<uint32_t> event_of;
  // Called once: OK after `response` holds one result per event, or
  // DEADLINE_EXCEEDED / CANCELLED if some events were skipped (Expired).
  std::function<void(absl::Status)> done;
  // Optional, set by the creator: when the answer stops being useful. The
  // deadline is on the MonotonicNanos clock; `cancelled` (owned by the
  // creator, which outlives the job) becomes true when the caller goes away.
  int64_t deadline_ns = std::numeric_limits<int64_t>::max();
  const std::atomic<bool>* cancelled = nullptr;

  // Request events (the response's results): events.size() unless
  // event_of maps records to them.
  size_t RequestEvents() const {
    return event_of.empty() ? events.size() : size_t{event_of.back()} + 1;
  }
  // Whether partitions list matched ids: asked for, or needed to count a
  // subscription once over a request event's records.
  bool WantIds() const { return request->return_ids() || !event_of.empty(); }

  // True if the job's events should no longer be matched at `now_ns`.
  bool Expired(int64_t now_ns) const {
    return now_ns >= deadline_ns ||
           (cancelled != nullptr && cancelled->load(std::memory_order_relaxed));
  }

  // Engine state. `state[i].partials` has one entry per partition that
  // reports on the event: P / G for the partitioned layout with G index
  // copies (1 for the replicated one), times its steal units; P for
  // sharded_phase1, 1 for the threaded engine.
  std::unique_ptr<EventState[]> state;
  // With event_of: per request event, its records not yet finished.
  std::unique_ptr<std::atomic<uint32_t>[]> records_left;
  std::atomic<size_t> events_left{0};
  std::atomic<size_t> events_skipped{0};
  // When admission let the job in (MonotonicNanos): its sojourn, for the
  // latency target, ends when its events are released.
  int64_t admitted_ns = 0;
};

// The deadline of a gRPC call (system clock; time_point::max() for none) on
// the MonotonicNanos clock, for PublishJob::deadline_ns.
int64_t DeadlineNanos(std::chrono::system_clock::time_point deadline);

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STAGES_PUBLISH_JOB_H_
