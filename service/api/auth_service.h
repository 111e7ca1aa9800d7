// Per-subscriber authorization in front of PubSubService (--auth_tokens).
//
// AuthService is the cohort.v1.PubSub service cohortd registers when it runs
// with a token file (auth.h): it checks who the call's bearer token belongs
// to and what the request asks for, then hands the call to PubSubService,
// whose reactor answers it, or refuses it at once:
//
//   Subscribe    a subscriber's token; every subscriptions[i].subscriber
//                must be its subscriber.
//   Listen       a subscriber's token; ListenRequest.subscriber must be its
//                subscriber.
//   Unsubscribe  a subscriber's token; every id must be one of its
//                subscriber's subscriptions (rule below).
//   Publish, PublishStream
//                a publisher's token if the file has publisher lines; open
//                otherwise.
//   GetStats     open (the same counters as the unauthenticated /metrics).
//   ParseFilter  open (it reads nothing of the service's state).
//
// A call without a token where one is needed, or with a token the file does
// not have (or a malformed `authorization` header, anywhere), fails with
// UNAUTHENTICATED; a known token asking for what it may not do fails with
// PERMISSION_DENIED naming the field. Checks come before the request's own
// validation, so a refused request is never applied in part. Messages name
// subscribers but never a token or a hash. The health and reflection
// services are not behind this (probes need them).
//
// Unsubscribe ownership. SubscriptionOwners maps each live id to its
// subscriber: PubSubService reports every Subscribe just before answering it
// and every successful Unsubscribe (SubscriptionObserver), and the server
// adds the subscriptions it recovered. Ids are never reused, so an id's owner
// never changes and checking before the engine removes it cannot race with
// another client. For a request, in this order: an id owned by another
// subscriber -> PERMISSION_DENIED naming the first such
// `subscription_ids[i]` (even if the request also has unknown ids); else an
// id with no recorded owner (never assigned, removed, or its Subscribe not
// answered yet) -> NOT_FOUND naming the first, as the engine says it; else
// the engine decides (NOT_FOUND for an id of the caller's that a concurrent
// Unsubscribe removed first). Nothing is removed unless all checks pass.
//
// Thread safety: gRPC calls the handlers on its threads at once.
// SubscriptionOwners has one mutex; the TokenStore is immutable.
#ifndef COHORT_SERVICE_API_AUTH_SERVICE_H_
#define COHORT_SERVICE_API_AUTH_SERVICE_H_

#include <cstdint>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "grpcpp/grpcpp.h"
#include "proto/cohort/v1/pubsub.grpc.pb.h"
#include "service/api/auth.h"
#include "service/api/pubsub_service.h"
#include "service/model/interner.h"
#include "service/model/validation.h"

namespace cohort {
namespace service {

// Live subscription id -> the subscriber id (subscriber Interner) that owns
// it. Memory: one hash map entry (about 16 bytes) per live subscription.
class SubscriptionOwners final : public SubscriptionObserver {
 public:
  void Subscribed(absl::Span<const uint64_t> ids,
                  absl::Span<const uint32_t> subscribers) override;
  void Unsubscribed(absl::Span<const uint64_t> ids) override;
  absl::Status MayUnsubscribe(absl::Span<const uint64_t> ids,
                              std::optional<uint32_t> subscriber) override {
    return Check(ids, subscriber);
  }

  // Check()
  //
  // OK iff every id in `ids` is owned by `subscriber` (nullopt: a subscriber
  // that has never been named, so it owns nothing); else PERMISSION_DENIED
  // or NOT_FOUND as the header comment orders them.
  absl::Status Check(absl::Span<const uint64_t> ids,
                     std::optional<uint32_t> subscriber) const;

  size_t size() const;

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, uint32_t> owner_ ABSL_GUARDED_BY(mu_);
};

class AuthService final : public PubSubCallbackService {
 public:
  // Becomes `inner`'s observer. `inner` and `subscribers` (the subscriber
  // dictionary) must outlive the service.
  AuthService(PubSubService* inner, const Interner* subscribers,
              TokenStore tokens, const Limits& limits);

  // Owners of the subscriptions that existed before serving (recovered
  // from --data_dir). REQUIRES: before serving.
  SubscriptionOwners& owners() { return owners_; }
  const TokenStore& tokens() const { return tokens_; }

  grpc::ServerUnaryReactor* Subscribe(grpc::CallbackServerContext* context,
                                      const v1::SubscribeRequest* request,
                                      v1::SubscribeResponse* response) override;
  grpc::ServerUnaryReactor* Unsubscribe(
      grpc::CallbackServerContext* context,
      const v1::UnsubscribeRequest* request,
      v1::UnsubscribeResponse* response) override;
  // Checks the publisher's token, then hands the request's bytes to the
  // inner service (PubSubService::Publish).
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

 private:
  // Whose the call's bearer token is: null without an `authorization`
  // header; UNAUTHENTICATED if it is malformed or the token unknown.
  absl::StatusOr<const Principal*> Identify(
      const grpc::CallbackServerContext& context) const;
  // The subscriber the call's token names; UNAUTHENTICATED without one,
  // PERMISSION_DENIED for a publisher's token. `rpc` names the call.
  absl::StatusOr<const Principal*> RequireSubscriber(
      const grpc::CallbackServerContext& context, absl::string_view rpc) const;
  // OK iff the call may publish (see the header comment).
  absl::Status CheckPublisher(const grpc::CallbackServerContext& context) const;

  PubSubService* const inner_;
  const Interner* const subscribers_;
  const TokenStore tokens_;
  const Limits limits_;
  SubscriptionOwners owners_;
  // Subscribe's requests (ArenaMessages); set in the constructor.
  ArenaMessages<v1::SubscribeRequest, v1::SubscribeResponse>
      subscribe_messages_;
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_API_AUTH_SERVICE_H_
