// Listen streams and the registry the reply stage delivers through.
//
// A `DeliverySink` is one open Listen stream (service/api/pubsub_service.cc
// implements it over gRPC; tests implement it in memory). The
// `ListenerRegistry` maps an interned subscriber id to the sinks listening for
// it. Partition stages ask `HasListeners` for every match, lock-free, so that
// matches of subscribers nobody listens to cost no delivery work; the reply
// stage (or a threaded-mode worker) calls `Deliver` once per (event,
// subscriber) with the subscriber's matched subscription ids.
//
// Memory crossing threads: a `PendingDelivery` shares the published event
// (`std::shared_ptr<const v1::Event>`) between all sinks it is offered to; the
// last sink to write or drop it frees it.
//
// Thread safety: every method of ListenerRegistry may be called from any
// thread. `HasListeners` is wait-free (one atomic load). DeliverySink::Offer
// is called with no registry lock held and must not block.
#ifndef COHORT_SERVICE_STAGES_LISTENERS_H_
#define COHORT_SERVICE_STAGES_LISTENERS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "proto/cohort/v1/pubsub.pb.h"

namespace cohort {
namespace service {

// One delivery waiting in a listener's queue. A delivery with a null event
// is a gap marker (cluster mode: a delivery from another node was lost on
// the way): it takes a sequence number and is not written, so the stream
// shows the loss as a gap.
struct PendingDelivery {
  std::shared_ptr<const v1::Event> event;
  std::vector<uint64_t> subscription_ids;  // ascending, non-empty
};

// Cluster mode (service/cluster/cluster_deliveries.h): where the matches of
// subscribers listened to on other nodes go.
class RemoteDeliveries {
 public:
  virtual ~RemoteDeliveries() = default;
  // One event's matches of such subscribers: (subscriber id, its matched
  // ids ascending), by subscriber id. Called by the stage that finishes
  // events; must not block.
  virtual void Deliver(
      const v1::Event& event,
      const std::vector<std::pair<uint32_t, std::vector<uint64_t>>>&
          matches) = 0;
};

// What happened to an offered delivery.
enum class OfferResult {
  kQueued,        // the sink will write it
  kDropped,       // the sink's queue was full; the delivery is lost
  kDisconnected,  // the sink's queue was full and the sink closed the stream
  kClosed,        // the sink is already closed; nothing was counted
};

// One Listen stream.
class DeliverySink {
 public:
  virtual ~DeliverySink() = default;
  // Queues `delivery` for writing. Must not block.
  virtual OfferResult Offer(PendingDelivery delivery) = 0;
  // Ends the stream with `status` (UNAVAILABLE at shutdown). Idempotent;
  // must not block.
  virtual void Close(const absl::Status& status) = 0;
};

// Subscriber id -> open sinks.
//
// Invariants: listener_count(s) equals the number of registered sinks of s,
// and HasListeners(s) == (listener_count(s) > 0) once Register/Unregister
// has returned.
class ListenerRegistry {
 public:
  // Subscriber ids must be below `max_subscribers` (the size of the
  // subscriber dictionary).
  explicit ListenerRegistry(uint32_t max_subscribers);
  ListenerRegistry(const ListenerRegistry&) = delete;
  ListenerRegistry& operator=(const ListenerRegistry&) = delete;
  ~ListenerRegistry();

  // Adds `sink` as a listener of `subscriber`; false (and nothing added)
  // after CloseAll.
  // REQUIRES: subscriber < max_subscribers.
  bool Register(uint32_t subscriber, std::shared_ptr<DeliverySink> sink);
  // Removes `sink`; a no-op if it is not registered.
  void Unregister(uint32_t subscriber, const DeliverySink* sink);

  // Whether `subscriber` has at least one open listener, here or (cluster
  // mode, SetRemote) on another node. Wait-free.
  bool HasListeners(uint32_t subscriber) const;
  // Cluster mode: whether another node listens to `subscriber` (as the last
  // SetRemote said). Wait-free.
  bool HasRemoteListeners(uint32_t subscriber) const;
  // Cluster mode: records whether another node listens to `subscriber`.
  // REQUIRES: subscriber < max_subscribers.
  void SetRemote(uint32_t subscriber, bool remote);
  // Offers a gap marker (PendingDelivery with no event) to every listener of
  // `subscriber` here.
  void DeliverGap(uint32_t subscriber);

  // Offers one delivery to every listener of `subscriber`. Counts the
  // deliveries queued to a stream, dropped, or that disconnected their
  // stream into *queued, *dropped and *disconnected.
  void Deliver(uint32_t subscriber,
               const std::shared_ptr<const v1::Event>& event,
               std::vector<uint64_t> subscription_ids, uint64_t* queued,
               uint64_t* dropped, uint64_t* disconnected);

  // Closes every sink with `status`; later Register calls fail (shutdown).
  void CloseAll(const absl::Status& status);

  // Open listeners here.
  uint64_t size() const { return size_.load(std::memory_order_relaxed); }
  // Whether any subscriber has a listener, here or on another node: when
  // not, the partitions skip looking up the subscribers of matches.
  bool AnyListeners() const {
    return size_.load(std::memory_order_relaxed) != 0 ||
           remote_subscribers_.load(std::memory_order_relaxed) != 0;
  }

 private:
  // Listener counts live in pages allocated on first use, so a registry for
  // millions of possible subscribers costs memory only for those that listen.
  static constexpr uint32_t kPageBits = 12;
  static constexpr uint32_t kPageSize = 1u << kPageBits;

  // A counter holds the local listener count, plus kRemote when another
  // node listens.
  static constexpr uint32_t kRemote = 1u << 31;

  std::atomic<uint32_t>* Counter(uint32_t subscriber) const;
  // Counter(subscriber), its page created if absent. REQUIRES: mu_ held.
  std::atomic<uint32_t>* CounterCreated(uint32_t subscriber)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint64_t PageCount() const {
    return (static_cast<uint64_t>(max_subscribers_) + kPageSize - 1) >>
           kPageBits;
  }

  const uint32_t max_subscribers_;
  // Page table; pages are created under mu_ and never freed before the
  // registry, so readers may load a page pointer without the lock.
  std::unique_ptr<std::atomic<std::atomic<uint32_t>*>[]> pages_;
  std::atomic<uint64_t> size_{0};
  std::atomic<uint64_t> remote_subscribers_{0};  // with kRemote set
  mutable std::mutex mu_;
  std::unordered_map<uint32_t, std::vector<std::shared_ptr<DeliverySink>>>
      sinks_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STAGES_LISTENERS_H_
