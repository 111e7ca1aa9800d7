#include "service/api/auth_service.h"

#include <iterator>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace cohort {
namespace service {
namespace {

// RFC 6750: "Bearer" followed by one space; the scheme name is
// case-insensitive.
constexpr absl::string_view kBearer = "bearer ";

absl::Status NoToken(absl::string_view what) {
  return absl::UnauthenticatedError(absl::StrCat(
      "no token: ", what,
      " (send the metadata \"authorization: Bearer <token>\"; the server "
      "runs with --auth_tokens)"));
}

std::string Whose(const Principal& principal) {
  return absl::StrCat("the token is ", RoleName(principal.role), " \"",
                      principal.name, "\"'s");
}

}  // namespace

void SubscriptionOwners::Subscribed(absl::Span<const uint64_t> ids,
                                    absl::Span<const uint32_t> subscribers) {
  absl::MutexLock lock(&mu_);
  for (size_t i = 0; i < ids.size() && i < subscribers.size(); ++i) {
    owner_[ids[i]] = subscribers[i];
  }
}

void SubscriptionOwners::Unsubscribed(absl::Span<const uint64_t> ids) {
  absl::MutexLock lock(&mu_);
  for (uint64_t id : ids) owner_.erase(id);
}

absl::Status SubscriptionOwners::Check(
    absl::Span<const uint64_t> ids, std::optional<uint32_t> subscriber) const {
  size_t first_unknown = ids.size();
  absl::MutexLock lock(&mu_);
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto it = owner_.find(ids[i]);
    if (it == owner_.end()) {
      if (first_unknown == ids.size()) first_unknown = i;
    } else if (!subscriber.has_value() || it->second != *subscriber) {
      return absl::PermissionDeniedError(
          absl::StrCat("subscription_ids[", i, "]: subscription ", ids[i],
                       " belongs to another subscriber; nothing was removed"));
    }
  }
  if (first_unknown < ids.size()) {
    // Worded as the engine words it, so that callers see one NOT_FOUND.
    return absl::NotFoundError(absl::StrCat(
        "subscription_ids[", first_unknown, "]: ", ids[first_unknown],
        " is not a live subscription; nothing was removed"));
  }
  return absl::OkStatus();
}

size_t SubscriptionOwners::size() const {
  absl::MutexLock lock(&mu_);
  return owner_.size();
}

AuthService::AuthService(PubSubService* inner, const Interner* subscribers,
                         TokenStore tokens, const Limits& limits)
    : inner_(inner),
      subscribers_(subscribers),
      tokens_(std::move(tokens)),
      limits_(limits) {
  SetMessageAllocatorFor_Subscribe(&subscribe_messages_);
  inner_->set_observer(&owners_);
}

absl::StatusOr<const Principal*> AuthService::Identify(
    const grpc::CallbackServerContext& context) const {
  const auto& metadata = context.client_metadata();
  const auto [first, last] = metadata.equal_range("authorization");
  if (first == last) return nullptr;
  if (std::next(first) != last) {
    return absl::UnauthenticatedError(
        "more than one \"authorization\" metadata entry");
  }
  const absl::string_view value(first->second.data(), first->second.size());
  if (value.size() <= kBearer.size() ||
      !absl::StartsWithIgnoreCase(value, kBearer)) {
    return absl::UnauthenticatedError(
        "the \"authorization\" metadata is not \"Bearer <token>\"");
  }
  const Principal* principal = tokens_.Find(value.substr(kBearer.size()));
  if (principal == nullptr) {
    return absl::UnauthenticatedError(
        "unknown token: it is not in the server's --auth_tokens file");
  }
  return principal;
}

absl::StatusOr<const Principal*> AuthService::RequireSubscriber(
    const grpc::CallbackServerContext& context, absl::string_view rpc) const {
  absl::StatusOr<const Principal*> principal = Identify(context);
  if (!principal.ok()) return principal.status();
  if (*principal == nullptr) {
    return NoToken(absl::StrCat(rpc, " needs a subscriber's token"));
  }
  if ((*principal)->role != Role::kSubscriber) {
    return absl::PermissionDeniedError(absl::StrCat(
        Whose(**principal), "; ", rpc, " needs a subscriber's token"));
  }
  return principal;
}

absl::Status AuthService::CheckPublisher(
    const grpc::CallbackServerContext& context) const {
  absl::StatusOr<const Principal*> principal = Identify(context);
  if (!principal.ok()) return principal.status();
  if (!tokens_.publishing_needs_token()) return absl::OkStatus();
  if (*principal == nullptr) {
    return NoToken(
        "publishing needs a publisher's token (the --auth_tokens file has "
        "publisher lines)");
  }
  if ((*principal)->role != Role::kPublisher) {
    return absl::PermissionDeniedError(
        absl::StrCat(Whose(**principal),
                     "; publishing needs a publisher's token (the "
                     "--auth_tokens file has publisher lines)"));
  }
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* AuthService::Subscribe(
    grpc::CallbackServerContext* context, const v1::SubscribeRequest* request,
    v1::SubscribeResponse* response) {
  absl::StatusOr<const Principal*> principal =
      RequireSubscriber(*context, "Subscribe");
  if (!principal.ok()) return FinishNow(context, principal.status());
  const std::string& name = (*principal)->name;
  for (int i = 0; i < request->subscriptions_size(); ++i) {
    if (request->subscriptions(i).subscriber() != name) {
      return FinishNow(context, absl::PermissionDeniedError(absl::StrCat(
                                    "subscriptions[", i,
                                    "].subscriber: ", Whose(**principal),
                                    ", which may subscribe only as \"", name,
                                    "\"; nothing was added")));
    }
  }
  return inner_->Subscribe(context, request, response);
}

grpc::ServerUnaryReactor* AuthService::Unsubscribe(
    grpc::CallbackServerContext* context, const v1::UnsubscribeRequest* request,
    v1::UnsubscribeResponse* response) {
  absl::StatusOr<const Principal*> principal =
      RequireSubscriber(*context, "Unsubscribe");
  if (!principal.ok()) return FinishNow(context, principal.status());
  // Validated first (the engine validates again): it bounds the ids looked
  // up under the owners' lock to --max_batch.
  absl::Status status = ValidateUnsubscribe(*request, limits_);
  if (inner_->in_cluster()) {
    // This node may not have applied the ids' Subscribe yet: ownership is
    // checked in log order, when the record is applied (alike everywhere).
    if (!status.ok()) return FinishNow(context, status);
    return inner_->UnsubscribeAs(context, request, response,
                                 (*principal)->name);
  }
  if (status.ok()) {
    status = owners_.Check(request->subscription_ids(),
                           subscribers_->Find((*principal)->name));
  }
  if (!status.ok()) return FinishNow(context, status);
  return inner_->Unsubscribe(context, request, response);
}

grpc::ServerUnaryReactor* AuthService::Publish(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  if (absl::Status status = CheckPublisher(*context); !status.ok()) {
    return FinishNow(context, status);
  }
  return inner_->Publish(context, request, response);
}

grpc::ServerBidiReactor<v1::PublishRequest, v1::PublishResponse>*
AuthService::PublishStream(grpc::CallbackServerContext* context) {
  if (absl::Status status = CheckPublisher(*context); !status.ok()) {
    return new RefusedStream<
        grpc::ServerBidiReactor<v1::PublishRequest, v1::PublishResponse>>(
        status);
  }
  return inner_->PublishStream(context);
}

grpc::ServerWriteReactor<v1::Delivery>* AuthService::Listen(
    grpc::CallbackServerContext* context, const v1::ListenRequest* request) {
  absl::StatusOr<const Principal*> principal =
      RequireSubscriber(*context, "Listen");
  absl::Status status = principal.status();
  if (status.ok() && request->subscriber() != (*principal)->name) {
    status = absl::PermissionDeniedError(absl::StrCat(
        "subscriber: ", Whose(**principal), ", which may listen only as \"",
        (*principal)->name, "\""));
  }
  if (!status.ok()) {
    return new RefusedStream<grpc::ServerWriteReactor<v1::Delivery>>(status);
  }
  return inner_->Listen(context, request);
}

grpc::ServerUnaryReactor* AuthService::GetStats(
    grpc::CallbackServerContext* context, const v1::GetStatsRequest* request,
    v1::Stats* response) {
  // Open, but a token that is sent must be valid: a client configured with a
  // wrong token learns it from its first call.
  absl::StatusOr<const Principal*> principal = Identify(*context);
  if (!principal.ok()) return FinishNow(context, principal.status());
  return inner_->GetStats(context, request, response);
}

grpc::ServerUnaryReactor* AuthService::ParseFilter(
    grpc::CallbackServerContext* context, const v1::ParseFilterRequest* request,
    v1::ParseFilterResponse* response) {
  // Open like GetStats, and a token that is sent must be valid.
  absl::StatusOr<const Principal*> principal = Identify(*context);
  if (!principal.ok()) return FinishNow(context, principal.status());
  return inner_->ParseFilter(context, request, response);
}

}  // namespace service
}  // namespace cohort
