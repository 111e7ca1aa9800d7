// The gRPC front of cohortd: cohort.v1.PubSub on the callback API.
//
// Each handler is the front stage for its request: it validates
// (validation.h), interns names, builds the compact event records and hands
// the request to the Engine, then returns without waiting; the engine's
// threads complete the RPC (gRPC allows Finish/StartWrite from any thread).
// No handler blocks on matching.
//
// Streams:
//   - PublishStream keeps at most `stream_window` requests in flight and
//     stops reading when the window is full or the engine has no room, so a
//     fast publisher is slowed by gRPC flow control; responses are written
//     in request order.
//   - Listen registers a DeliverySink whose queue holds at most
//     `listener_queue_limit` deliveries; a full queue drops the delivery or
//     disconnects the listener with RESOURCE_EXHAUSTED (`slow_listener`).
//   - At most `max_streams` streams (both kinds) are open at once; more get
//     RESOURCE_EXHAUSTED.
//
// Cluster mode (set_log; docs/DESIGN.md section 11): Subscribe and
// Unsubscribe are validated here, appended to the subscription log and
// answered once this node has applied them; ApplyLogRecord applies every
// node's records in log order (interning, lowering, ids). Publish waits for
// min_log_position (or, with --cluster_read=latest, the log's last position)
// before its events are built, and every PubSub call but GetStats,
// ParseFilter and Listen is UNAVAILABLE while the node is not serving.
//
// Thread safety: gRPC calls the handlers on its threads; the service's own
// state is the atomic stream count. Reactors guard their state with a mutex.
// ApplyLogRecord is called by the log's reader thread only.
#ifndef COHORT_SERVICE_API_PUBSUB_SERVICE_H_
#define COHORT_SERVICE_API_PUBSUB_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "google/protobuf/arena.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/message_allocator.h"
#include "proto/cohort/v1/pubsub.grpc.pb.h"
#include "service/cluster/cluster_deliveries.h"
#include "service/cluster/snapshot_exchange.h"
#include "service/cluster/subscription_log.h"
#include "service/model/interner.h"
#include "service/model/validation.h"
#include "service/stages/engine.h"

namespace cohort {
namespace service {

enum class SlowListenerPolicy { kDrop, kDisconnect };

struct StreamOptions {
  uint64_t listener_queue_limit = 1024;
  SlowListenerPolicy slow_listener = SlowListenerPolicy::kDrop;
  uint32_t max_streams = 1024;
  uint32_t stream_window = 16;
};

// absl::Status -> grpc::Status with the same code and message.
grpc::Status ToGrpc(const absl::Status& status);

// The number of events (field 1) in the serialized PublishRequest `bytes`,
// found by skipping over its top-level fields without parsing them; nullopt
// if the top level is not well-formed (a bad tag or a field cut short).
// Where the bytes parse, the count is the parsed events_size(). What
// unary Publish admits a request by.
std::optional<uint64_t> CountPublishEvents(const grpc::ByteBuffer& bytes);

// Answers a unary call at once with `status` (the refusals of the service
// and of the auth layer in front of it).
grpc::ServerUnaryReactor* FinishNow(grpc::CallbackServerContext* context,
                                    const absl::Status& status);

// A stream (a reactor of type `Base`) refused before it started: it ends at
// once with `status` and deletes itself when gRPC is done with it.
template <typename Base>
class RefusedStream final : public Base {
 public:
  explicit RefusedStream(const absl::Status& status) {
    this->Finish(ToGrpc(status));
  }
  void OnDone() override { delete this; }
};

// Told of each subscription change just before it is answered, so that a
// client that holds an id finds it recorded (the auth layer keeps each id's
// owner this way: auth_service.h). Called on engine threads; must not block.
class SubscriptionObserver {
 public:
  virtual ~SubscriptionObserver() = default;
  // ids[i] now exists, owned by subscriber id subscribers[i].
  virtual void Subscribed(absl::Span<const uint64_t> ids,
                          absl::Span<const uint32_t> subscribers) = 0;
  // `ids` were removed.
  virtual void Unsubscribed(absl::Span<const uint64_t> ids) = 0;
  // Cluster mode, when a log record of an Unsubscribe made as `subscriber`
  // (its id here; nullopt if never named) is applied: OK if it may remove
  // `ids`, else the error it is answered with (decided in log order, so
  // alike on every node). Called on the log's reader thread.
  virtual absl::Status MayUnsubscribe(absl::Span<const uint64_t> ids,
                                      std::optional<uint32_t> subscriber) {
    return absl::OkStatus();
  }
};

// Unary requests and responses in a protobuf Arena of their own per call
// (gRPC's MessageAllocator, set for Subscribe): a Subscribe request is
// thousands of small messages (subscriptions, predicates, strings), each a
// heap block to allocate while parsing and to free after, one by one; in
// an arena they are carved from a few blocks freed at once when gRPC
// releases the call. Thread-safe (each call's holder is its own).
template <typename Request, typename Response>
class ArenaMessages final : public grpc::MessageAllocator<Request, Response> {
 public:
  grpc::MessageHolder<Request, Response>* AllocateMessages() override {
    return new Holder;
  }

 private:
  class Holder final : public grpc::MessageHolder<Request, Response> {
   public:
    Holder() : arena_(Options()) {
      this->set_request(
          google::protobuf::Arena::CreateMessage<Request>(&arena_));
      this->set_response(
          google::protobuf::Arena::CreateMessage<Response>(&arena_));
    }
    void Release() override { delete this; }

   private:
    static google::protobuf::ArenaOptions Options() {
      google::protobuf::ArenaOptions options;
      options.start_block_size = 4096;
      options.max_block_size = 1 << 20;
      return options;
    }
    google::protobuf::Arena arena_;
  };
};

// cohort.v1.PubSub on the callback API, with unary Publish on the request's
// bytes (PubSubService::Publish says why).
using PubSubCallbackService =
    v1::PubSub::WithRawCallbackMethod_Publish<v1::PubSub::CallbackService>;

class PubSubService final : public PubSubCallbackService {
 public:
  // All pointers must outlive the service.
  PubSubService(Engine* engine, TypedAttributes* attributes,
                Interner* subscribers, const Limits& limits,
                const StreamOptions& streams);

  grpc::ServerUnaryReactor* Subscribe(grpc::CallbackServerContext* context,
                                      const v1::SubscribeRequest* request,
                                      v1::SubscribeResponse* response) override;
  grpc::ServerUnaryReactor* Unsubscribe(
      grpc::CallbackServerContext* context,
      const v1::UnsubscribeRequest* request,
      v1::UnsubscribeResponse* response) override;
  // Cluster mode, with --auth_tokens: an Unsubscribe made as `subscriber`,
  // whose ownership of the ids is checked when the log record is applied
  // (SubscriptionObserver::MayUnsubscribe), not against this node's view
  // when it arrives. REQUIRES: in_cluster().
  grpc::ServerUnaryReactor* UnsubscribeAs(
      grpc::CallbackServerContext* context,
      const v1::UnsubscribeRequest* request,
      v1::UnsubscribeResponse* response, const std::string& subscriber);
  bool in_cluster() const { return log_ != nullptr; }
  // Publish takes the request as bytes, so that admission refuses before
  // parsing: a request is hundreds of small messages (events, attributes,
  // names), and under overload most requests are refused, so a refusal must
  // cost little next to the matching it saves (SEDA's lesson). The events
  // are counted by a walk over the top-level fields; an admitted request is
  // parsed onto a protobuf arena of the call's own, freed in one piece when
  // the call is done. Bytes that are not a PublishRequest get
  // INVALID_ARGUMENT.
  grpc::ServerUnaryReactor* Publish(grpc::CallbackServerContext* context,
                                    const grpc::ByteBuffer* request,
                                    grpc::ByteBuffer* response) override;
  grpc::ServerBidiReactor<v1::PublishRequest, v1::PublishResponse>*
  PublishStream(grpc::CallbackServerContext* context) override;
  grpc::ServerWriteReactor<v1::Delivery>* Listen(
      grpc::CallbackServerContext* context,
      const v1::ListenRequest* request) override;
  grpc::ServerUnaryReactor* GetStats(grpc::CallbackServerContext* context,
                                     const v1::GetStatsRequest* request,
                                     v1::Stats* response) override;
  grpc::ServerUnaryReactor* ParseFilter(
      grpc::CallbackServerContext* context,
      const v1::ParseFilterRequest* request,
      v1::ParseFilterResponse* response) override;

  // Validates `request` and builds `job` for the engine (the front stage's
  // work for one publish request).
  absl::Status PreparePublish(const v1::PublishRequest& request,
                              v1::PublishResponse* response,
                              PublishJob* job) const;

  // Cluster mode: applies one subscription log record (see
  // SubscriptionLog::Applier): validates and builds it as the front stage
  // would, applies it to the engine, tells the observer, and reports the
  // outcome. Deterministic given the log, so every node gets the same
  // dictionaries, ids and NOT_FOUNDs, provided every node runs with the same
  // limits.
  void ApplyLogRecord(uint64_t position, absl::string_view record,
                      std::function<void(LogOutcome)> done);
  // Calls `ready` once `request` may be built and matched here: at once on
  // a single node; in cluster mode once min_log_position (or with
  // --cluster_read=latest, the log's last position) is applied, or with
  // the error (UNAVAILABLE: not serving; DEADLINE_EXCEEDED).
  void WhenReadable(const v1::PublishRequest& request, int64_t deadline_ns,
                    std::function<void(absl::Status)> ready) const;

  Engine* engine() const { return engine_; }
  const StreamOptions& stream_options() const { return streams_; }
  // Takes a stream slot; false if max_streams are open.
  bool OpenStream();
  void CloseStream();
  // Not owned; null (the default): nobody is told. REQUIRES: set before
  // serving.
  void set_observer(SubscriptionObserver* observer) { observer_ = observer; }
  // Cluster mode: not owned. REQUIRES: set before serving, and before the
  // log applies anything.
  void set_log(SubscriptionLog* log) { log_ = log; }
  // Cluster mode: not owned; for stats. REQUIRES: set before serving.
  void set_snapshots(SnapshotExchange* snapshots) { snapshots_ = snapshots; }
  // Cluster mode: not owned; told of every Listen stream opened and closed
  // here. REQUIRES: set before serving.
  void set_deliveries(ClusterDeliveries* deliveries) {
    deliveries_ = deliveries;
  }
  // A Listen stream of `subscriber` was registered here, or unregistered.
  void ListenerOpened(uint32_t subscriber) {
    if (deliveries_ != nullptr) deliveries_->LocalListenerAdded(subscriber);
  }
  void ListenerClosed(uint32_t subscriber) {
    if (deliveries_ != nullptr) deliveries_->LocalListenerRemoved(subscriber);
  }
  // What GetStats answers: the engine's stats and the open streams. With
  // `histograms`, also the stages' histograms for /metrics
  // (Engine::FillStats).
  void FillStats(v1::Stats* stats,
                 std::vector<StageHistograms>* histograms = nullptr) const;

 private:
  // Cluster mode's Subscribe and Unsubscribe: refuses with `status` (the
  // validation's) if not OK, answers an `empty` request at once, else
  // appends `request` (which names itself `request_id`) as a record of
  // `kind` (after `owner`, the acting
  // subscriber, for kLogUnsubscribeAs) and answers once this node has
  // applied it, `fill` completing the response.
  grpc::ServerUnaryReactor* AppendToLog(
      grpc::CallbackServerContext* context, absl::Status status, char kind,
      const google::protobuf::Message& request, const std::string& request_id,
      bool empty, std::function<void(const LogOutcome&, uint64_t)> fill,
      absl::string_view owner = "");
  // Applies built subscriptions (or an Unsubscribe) to the engine and tells
  // the observer before `done`: the single node's path and the log's.
  // `request` must live until `done` is called.
  void SubscribeInEngine(std::vector<SubscriptionInput> inputs,
                         SubscribeCallback done);
  void UnsubscribeInEngine(const v1::UnsubscribeRequest& request,
                           StatusCallback done);

  Engine* const engine_;
  TypedAttributes* const attributes_;
  Interner* const subscribers_;
  const Limits limits_;
  const StreamOptions streams_;
  std::atomic<uint32_t> open_streams_{0};
  SubscriptionObserver* observer_ = nullptr;
  SubscriptionLog* log_ = nullptr;
  ClusterDeliveries* deliveries_ = nullptr;
  SnapshotExchange* snapshots_ = nullptr;
  // Subscribe's requests (ArenaMessages); set in the constructor.
  ArenaMessages<v1::SubscribeRequest, v1::SubscribeResponse>
      subscribe_messages_;
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_API_PUBSUB_SERVICE_H_
