// Cluster mode's cross-node deliveries (docs/DESIGN.md section 11.4): a
// listener connected to any node receives the matches of its subscriber
// whichever node matched the event.
//
// Over core NATS, on the subscription log's connection:
//   - Interest: every node announces the subscriber names it has Listen
//     streams for on `cohort.<stream>.listeners`, at once when one appears
//     and every 500 ms in full (soft state: a node's announcement replaces
//     its previous one, and a node not heard from for 2 s is forgotten, so
//     a node that dies takes its interest with it). Every node marks the
//     subscribers some other node listens to in its ListenerRegistry
//     (SetRemote), so that its partitions record their matches.
//   - Deliveries: the node that matched an event sends one message per
//     bucket (FNV-1a of the subscriber name mod 1024) holding the event once
//     and each subscriber's ids, on `cohort.<stream>.deliver.<bucket>`. A
//     node subscribes to the buckets of its own listeners only, so listener
//     churn changes the servers' interest in at most 1,024 subjects.
//   - Order and loss: NATS keeps one publisher's messages on a subject in
//     order, so a listener gets one node's deliveries in that node's order.
//     Each message carries the sender's sequence number for its bucket; a
//     receiver that sees a number skipped (NATS dropped a message: a slow
//     consumer, a reconnect) offers a gap marker to the listeners of that
//     bucket, so the loss shows in Delivery.sequence, never silently.
//
// Thread safety: every public method may be called from any thread.
// Deliver runs on the engine's finishing stage and only queues a message in
// the NATS client; received messages are handled on libnats' threads.
#ifndef COHORT_SERVICE_CLUSTER_CLUSTER_DELIVERIES_H_
#define COHORT_SERVICE_CLUSTER_CLUSTER_DELIVERIES_H_

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/cohort/v1/pubsub.pb.h"
#include "service/model/interner.h"
#include "service/stages/listeners.h"

namespace cohort {
namespace service {

class ClusterDeliveries final : public RemoteDeliveries {
 public:
  static constexpr uint32_t kBuckets = 1024;

  // `connection`: a natsConnection* that outlives this object (the
  // subscription log's). `subscribers`, `registry`: the node's, outliving
  // it. Starts the announcer.
  static absl::StatusOr<std::unique_ptr<ClusterDeliveries>> Start(
      void* connection, const std::string& stream, const std::string& node,
      Interner* subscribers, ListenerRegistry* registry);
  ~ClusterDeliveries() override;

  // The bucket of a subscriber name (the same on every node).
  static uint32_t BucketOf(absl::string_view subscriber);

  // A Listen stream for `subscriber` (its interned id) opened or closed
  // here.
  void LocalListenerAdded(uint32_t subscriber);
  void LocalListenerRemoved(uint32_t subscriber);

  // RemoteDeliveries.
  void Deliver(const v1::Event& event,
               const std::vector<std::pair<uint32_t, std::vector<uint64_t>>>&
                   matches) override;

  void FillStats(v1::ClusterStats* stats) const;

  // Stops announcing and receiving. Idempotent.
  void Shutdown();

 private:
  ClusterDeliveries(void* connection, const std::string& stream,
                    const std::string& node, Interner* subscribers,
                    ListenerRegistry* registry);

  void Announce();
  void AnnounceLoop();
  void OnAnnouncement(absl::string_view data);
  void OnDelivery(uint32_t bucket, absl::string_view data);
  // Recomputes the remote flags from the live announcements.
  void UpdateRemote() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Subscribes to or unsubscribes from a bucket's subject.
  void WatchBucket(uint32_t bucket, bool watch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // The closure of one bucket's NATS subscription.
  struct BucketClosure {
    ClusterDeliveries* self;
    uint32_t bucket;
  };

  void* const connection_;
  std::array<BucketClosure, kBuckets> closures_;
  const std::string prefix_;  // cohort.<stream>.
  const std::string self_;    // node name and a random incarnation
  Interner* const subscribers_;
  ListenerRegistry* const registry_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Local Listen streams per subscriber id, and per bucket.
  std::unordered_map<uint32_t, uint32_t> local_ ABSL_GUARDED_BY(mu_);
  std::array<uint32_t, kBuckets> bucket_listeners_ ABSL_GUARDED_BY(mu_) = {};
  std::array<void*, kBuckets> bucket_subs_ ABSL_GUARDED_BY(mu_) = {};
  // Other nodes: their last announcement (names) and when it came.
  struct Peer {
    std::set<std::string> names;
    int64_t heard_ns = 0;
  };
  std::map<std::string, Peer> peers_ ABSL_GUARDED_BY(mu_);
  std::set<uint32_t> remote_ ABSL_GUARDED_BY(mu_);  // flagged in registry_
  // Last sequence number seen per (sender, bucket).
  std::map<std::pair<std::string, uint32_t>, uint64_t> received_seq_
      ABSL_GUARDED_BY(mu_);
  void* announcements_sub_ = nullptr;

  std::mutex send_mu_;  // orders sequence numbers with sends
  std::array<uint64_t, kBuckets> sent_seq_ ABSL_GUARDED_BY(send_mu_) = {};

  std::atomic<uint64_t> sent_{0};
  std::atomic<uint64_t> received_{0};
  std::atomic<uint64_t> gaps_{0};
  std::thread announcer_;
  bool shut_down_ = false;
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_CLUSTER_CLUSTER_DELIVERIES_H_
