#include "service/api/pubsub_service.h"

#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <openssl/evp.h>

#include "absl/base/thread_annotations.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/arena.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "service/stages/listeners.h"
#include "service/storage/journal_frame.h"

namespace cohort {
namespace service {

grpc::ServerUnaryReactor* FinishNow(grpc::CallbackServerContext* context,
                                    const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpc(status));
  return reactor;
}

namespace {

// A unary Publish: its request and response on an arena of their own, and
// its job until the engine has answered.
class PublishReactor final : public grpc::ServerUnaryReactor {
 public:
  PublishReactor()
      : request_(google::protobuf::Arena::CreateMessage<v1::PublishRequest>(
            &arena_)),
        response_(google::protobuf::Arena::CreateMessage<v1::PublishResponse>(
            &arena_)) {
    job_.cancelled = &cancelled_;
  }
  // The engine skips the events it has not matched yet.
  void OnCancel() override { cancelled_.store(true, std::memory_order_relaxed); }
  void OnDone() override { delete this; }

  google::protobuf::Arena arena_;
  v1::PublishRequest* const request_;
  v1::PublishResponse* const response_;
  std::atomic<bool> cancelled_{false};
  PublishJob job_;
};

// Subscription log records: a kind byte, then the request's bytes.
constexpr char kLogSubscribe = 1;
constexpr char kLogUnsubscribe = 2;
// An Unsubscribe made as a subscriber (--auth_tokens): a uint32 length and
// the subscriber name, then the request's bytes.
constexpr char kLogUnsubscribeAs = 3;
constexpr size_t kMaxRequestIdBytes = 128;

absl::Status CheckRequestId(const std::string& request_id) {
  if (request_id.size() <= kMaxRequestIdBytes) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("request_id: ", request_id.size(),
                   " bytes is over the limit of ", kMaxRequestIdBytes));
}

// The log message id of a record whose request names itself: the SHA-256 of
// the whole record (request_id included), so that a retry of the same
// request is a duplicate and another request that happens to reuse the id
// is not.
std::string MessageIdOf(const std::string& request_id,
                        const std::string& record) {
  if (request_id.empty()) return "";
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(record.data(), record.size(), digest, &length, EVP_sha256(),
             nullptr);
  return absl::StrCat(
      "r-", absl::BytesToHexString(absl::string_view(
                reinterpret_cast<const char*>(digest), length)));
}

absl::Status NotAPublishRequest() {
  return absl::InvalidArgumentError(
      "request: the bytes are not a cohort.v1.PublishRequest");
}

}  // namespace

std::optional<uint64_t> CountPublishEvents(const grpc::ByteBuffer& bytes) {
  using google::protobuf::internal::WireFormatLite;
  grpc::ByteBuffer view(bytes);  // shares the slices; the reader needs a
                                 // mutable buffer
  grpc::ProtoBufferReader stream(&view);
  google::protobuf::io::CodedInputStream input(&stream);
  uint64_t events = 0;
  while (const uint32_t tag = input.ReadTag()) {
    if (tag ==
        WireFormatLite::MakeTag(v1::PublishRequest::kEventsFieldNumber,
                                WireFormatLite::WIRETYPE_LENGTH_DELIMITED)) {
      ++events;
    }
    if (!WireFormatLite::SkipField(&input, tag)) return std::nullopt;
  }
  if (!input.ConsumedEntireMessage()) return std::nullopt;
  return events;
}

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

PubSubService::PubSubService(Engine* engine, TypedAttributes* attributes,
                             Interner* subscribers, const Limits& limits,
                             const StreamOptions& streams)
    : engine_(engine),
      attributes_(attributes),
      subscribers_(subscribers),
      limits_(limits),
      streams_(streams) {
  SetMessageAllocatorFor_Subscribe(&subscribe_messages_);
}

bool PubSubService::OpenStream() {
  if (open_streams_.fetch_add(1, std::memory_order_relaxed) >=
      streams_.max_streams) {
    open_streams_.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  return true;
}

void PubSubService::CloseStream() {
  open_streams_.fetch_sub(1, std::memory_order_relaxed);
}

void PubSubService::FillStats(
    v1::Stats* stats, std::vector<StageHistograms>* histograms) const {
  engine_->FillStats(stats, histograms);
  if (log_ != nullptr) log_->FillStats(stats->mutable_cluster());
  if (snapshots_ != nullptr) snapshots_->FillStats(stats->mutable_cluster());
  if (deliveries_ != nullptr) deliveries_->FillStats(stats->mutable_cluster());
  stats->set_open_streams(open_streams_.load(std::memory_order_relaxed));
  attributes_->FillStats(stats);
}

grpc::ServerUnaryReactor* PubSubService::AppendToLog(
    grpc::CallbackServerContext* context, absl::Status status, char kind,
    const google::protobuf::Message& request, const std::string& request_id,
    bool empty, std::function<void(const LogOutcome&, uint64_t)> fill,
    absl::string_view owner) {
  if (status.ok()) status = CheckRequestId(request_id);
  if (status.ok()) status = log_->Serving();
  if (!status.ok() || empty) return FinishNow(context, status);
  std::string record(1, kind);
  if (kind == kLogUnsubscribeAs) {
    PutFixed32(static_cast<uint32_t>(owner.size()), &record);
    record.append(owner.data(), owner.size());
  }
  request.AppendToString(&record);
  std::string id = MessageIdOf(request_id, record);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  log_->Append(std::move(id), std::move(record),
               DeadlineNanos(context->deadline()),
               [reactor, fill = std::move(fill)](
                   absl::StatusOr<LogOutcome> outcome, uint64_t position) {
                 absl::Status s =
                     outcome.ok() ? outcome->status : outcome.status();
                 if (s.ok()) fill(*outcome, position);
                 reactor->Finish(ToGrpc(s));
               });
  return reactor;
}

grpc::ServerUnaryReactor* PubSubService::UnsubscribeAs(
    grpc::CallbackServerContext* context,
    const v1::UnsubscribeRequest* request, v1::UnsubscribeResponse* response,
    const std::string& subscriber) {
  return AppendToLog(
      context, ValidateUnsubscribe(*request, limits_), kLogUnsubscribeAs,
      *request, request->request_id(), request->subscription_ids().empty(),
      [response](const LogOutcome&, uint64_t position) {
        response->set_log_position(position);
      },
      subscriber);
}

grpc::ServerUnaryReactor* PubSubService::Subscribe(
    grpc::CallbackServerContext* context, const v1::SubscribeRequest* request,
    v1::SubscribeResponse* response) {
  absl::Status status = ValidateSubscribe(*request, limits_);
  if (log_ != nullptr) {
    return AppendToLog(
        context, status, kLogSubscribe, *request, request->request_id(),
        request->subscriptions().empty(),
        [response](const LogOutcome& outcome, uint64_t position) {
          for (uint32_t i = 0; i < outcome.count; ++i) {
            response->add_subscription_ids(outcome.first_id + i);
          }
          response->set_log_position(position);
        });
  }
  std::vector<SubscriptionInput> inputs;
  if (status.ok()) {
    status = BuildSubscriptions(*request, attributes_, subscribers_, &inputs);
  }
  if (!status.ok()) return FinishNow(context, status);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  SubscribeInEngine(std::move(inputs),
                    [reactor, response](absl::StatusOr<std::vector<uint64_t>> ids) {
                      if (!ids.ok()) {
                        reactor->Finish(ToGrpc(ids.status()));
                        return;
                      }
                      response->mutable_subscription_ids()->Add(ids->begin(),
                                                                ids->end());
                      reactor->Finish(grpc::Status::OK);
                    });
  return reactor;
}

void PubSubService::SubscribeInEngine(std::vector<SubscriptionInput> inputs,
                                      SubscribeCallback done) {
  std::vector<uint32_t> owners;
  if (observer_ != nullptr) {
    owners.reserve(inputs.size());
    for (const SubscriptionInput& input : inputs) {
      owners.push_back(input.subscriber);
    }
  }
  engine_->Subscribe(
      std::move(inputs), [this, done = std::move(done), owners = std::move(owners)](
                             absl::StatusOr<std::vector<uint64_t>> ids) {
        if (ids.ok() && observer_ != nullptr) {
          observer_->Subscribed(*ids, owners);
        }
        done(std::move(ids));
      });
}

void PubSubService::UnsubscribeInEngine(const v1::UnsubscribeRequest& request,
                                        StatusCallback done) {
  engine_->Unsubscribe(
      std::vector<uint64_t>(request.subscription_ids().begin(),
                            request.subscription_ids().end()),
      [this, &request, done = std::move(done)](absl::Status s) {
        if (s.ok() && observer_ != nullptr) {
          observer_->Unsubscribed(request.subscription_ids());
        }
        done(s);
      });
}

grpc::ServerUnaryReactor* PubSubService::Unsubscribe(
    grpc::CallbackServerContext* context,
    const v1::UnsubscribeRequest* request, v1::UnsubscribeResponse* response) {
  absl::Status status = ValidateUnsubscribe(*request, limits_);
  if (log_ != nullptr) {
    return AppendToLog(context, status, kLogUnsubscribe, *request,
                       request->request_id(),
                       request->subscription_ids().empty(),
                       [response](const LogOutcome&, uint64_t position) {
                         response->set_log_position(position);
                       });
  }
  if (!status.ok()) return FinishNow(context, status);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  // The request lives until the call is finished.
  UnsubscribeInEngine(*request,
                      [reactor](absl::Status s) { reactor->Finish(ToGrpc(s)); });
  return reactor;
}

absl::Status PubSubService::PreparePublish(const v1::PublishRequest& request,
                                           v1::PublishResponse* response,
                                           PublishJob* job) const {
  thread_local std::vector<JsonGroup> json;
  absl::Status status = ValidatePublishAndFlatten(request, limits_, &json);
  if (!status.ok()) return status;
  status = BuildEvents(request, json, *attributes_, limits_, &job->events,
                       &job->event_of);
  json.clear();
  if (!status.ok()) return status;
  job->request = &request;
  job->response = response;
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* PubSubService::Publish(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  // Shed load before the work of parsing, validating and building the
  // events.
  const std::optional<uint64_t> events = CountPublishEvents(*request);
  if (!events.has_value()) return FinishNow(context, NotAPublishRequest());
  if (absl::Status room = engine_->CheckRoom(*events); !room.ok()) {
    return FinishNow(context, room);
  }
  auto* reactor = new PublishReactor();
  grpc::ByteBuffer bytes(*request);  // shares the slices
  grpc::ProtoBufferReader stream(&bytes);
  if (!reactor->request_->ParseFromZeroCopyStream(&stream)) {
    reactor->Finish(ToGrpc(NotAPublishRequest()));
    return reactor;
  }
  const int64_t deadline_ns = DeadlineNanos(context->deadline());
  // In cluster mode the events are built only once the log position they
  // must see is applied: a subscription applied meanwhile may add the
  // attribute names they use.
  WhenReadable(
      *reactor->request_, deadline_ns,
      [this, reactor, response, deadline_ns](absl::Status status) {
        if (status.ok()) {
          status = PreparePublish(*reactor->request_, reactor->response_,
                                  &reactor->job_);
        }
        if (!status.ok()) {
          reactor->Finish(ToGrpc(status));
          return;
        }
        reactor->job_.deadline_ns = deadline_ns;
        reactor->job_.done = [reactor, response](absl::Status s) {
          grpc::Status answer = ToGrpc(s);
          if (answer.ok()) {
            bool own_buffer = false;
            answer = grpc::SerializationTraits<v1::PublishResponse>::Serialize(
                *reactor->response_, response, &own_buffer);
          }
          reactor->Finish(answer);
        };
        status = engine_->Publish(&reactor->job_);
        if (!status.ok()) reactor->Finish(ToGrpc(status));
      });
  return reactor;
}

void PubSubService::WhenReadable(
    const v1::PublishRequest& request, int64_t deadline_ns,
    std::function<void(absl::Status)> ready) const {
  if (log_ == nullptr) {
    ready(absl::OkStatus());
    return;
  }
  if (absl::Status serving = log_->Serving(); !serving.ok()) {
    ready(serving);
    return;
  }
  if (request.min_log_position() > 0) {
    if (log_->options().read_latest) {
      // Both: the position asked for, then the log's last one.
      log_->WhenApplied(
          request.min_log_position(), deadline_ns,
          [log = log_, deadline_ns, ready](absl::Status s) {
            if (!s.ok()) {
              ready(s);
              return;
            }
            log->ReadBarrier(deadline_ns, ready);
          });
      return;
    }
    log_->WhenApplied(request.min_log_position(), deadline_ns,
                      std::move(ready));
    return;
  }
  log_->ReadBarrier(deadline_ns, std::move(ready));
}

void PubSubService::ApplyLogRecord(uint64_t position, absl::string_view record,
                                   std::function<void(LogOutcome)> done) {
  const char kind = record.empty() ? 0 : record[0];
  const absl::string_view bytes =
      record.empty() ? record : record.substr(1);
  if (kind == kLogSubscribe) {
    auto request = std::make_shared<v1::SubscribeRequest>();
    absl::Status status =
        request->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))
            ? ValidateSubscribe(*request, limits_)
            : absl::DataLossError(absl::StrCat(
                  "log position ", position, ": not a SubscribeRequest"));
    std::vector<SubscriptionInput> inputs;
    if (status.ok()) {
      status = BuildSubscriptions(*request, attributes_, subscribers_, &inputs);
    }
    if (!status.ok()) {
      done(LogOutcome{status});
      return;
    }
    SubscribeInEngine(
        std::move(inputs),
        [done](absl::StatusOr<std::vector<uint64_t>> ids) {
          if (!ids.ok()) {
            done(LogOutcome{ids.status()});
            return;
          }
          LogOutcome outcome;
          outcome.count = static_cast<uint32_t>(ids->size());
          outcome.first_id = ids->empty() ? 0 : ids->front();
          done(outcome);
        });
    return;
  }
  if (kind == kLogUnsubscribe || kind == kLogUnsubscribeAs) {
    absl::string_view body = bytes;
    std::optional<std::string> owner;
    if (kind == kLogUnsubscribeAs) {
      const uint64_t n = body.size() < 4 ? 0 : LoadFixed(body.data(), 4);
      if (body.size() < 4 || body.size() - 4 < n) {
        done(LogOutcome{absl::DataLossError(absl::StrCat(
            "log position ", position, ": a cut Unsubscribe record"))});
        return;
      }
      owner = std::string(body.substr(4, n));
      body.remove_prefix(4 + n);
    }
    auto request = std::make_shared<v1::UnsubscribeRequest>();
    absl::Status status =
        request->ParseFromArray(body.data(), static_cast<int>(body.size()))
            ? ValidateUnsubscribe(*request, limits_)
            : absl::DataLossError(absl::StrCat(
                  "log position ", position, ": not an UnsubscribeRequest"));
    if (status.ok() && owner.has_value() && observer_ != nullptr) {
      status = observer_->MayUnsubscribe(request->subscription_ids(),
                                         subscribers_->Find(*owner));
    }
    if (!status.ok()) {
      done(LogOutcome{status});
      return;
    }
    // `request` lives in the callback until the change is answered.
    UnsubscribeInEngine(*request, [done, request](absl::Status s) {
      done(LogOutcome{s});
    });
    return;
  }
  done(LogOutcome{absl::DataLossError(absl::StrCat(
      "log position ", position, ": unknown record kind ",
      static_cast<int>(kind)))});
}

grpc::ServerUnaryReactor* PubSubService::GetStats(
    grpc::CallbackServerContext* context, const v1::GetStatsRequest*,
    v1::Stats* response) {
  FillStats(response);
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* PubSubService::ParseFilter(
    grpc::CallbackServerContext* context, const v1::ParseFilterRequest* request,
    v1::ParseFilterResponse* response) {
  absl::StatusOr<v1::SubscriptionSpec> spec =
      service::ParseFilter(*request, limits_);
  if (!spec.ok()) return FinishNow(context, spec.status());
  response->mutable_predicates()->Swap(spec->mutable_predicates());
  response->mutable_any_of()->Swap(spec->mutable_any_of());
  return FinishNow(context, absl::OkStatus());
}

}  // namespace service
}  // namespace cohort
