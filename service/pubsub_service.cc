#include "service/pubsub_service.h"

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "service/listeners.h"

namespace cohort {
namespace service {

grpc::ServerUnaryReactor* FinishNow(grpc::CallbackServerContext* context,
                                    const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpc(status));
  return reactor;
}

namespace {

// A unary Publish: owns the job until the engine has answered.
class PublishReactor final : public grpc::ServerUnaryReactor {
 public:
  explicit PublishReactor(PublishJob* job) : job_(job) {
    job_->cancelled = &cancelled_;
  }
  // The engine skips the events it has not matched yet.
  void OnCancel() override { cancelled_.store(true, std::memory_order_relaxed); }
  void OnDone() override { delete this; }
  std::atomic<bool> cancelled_{false};
  std::unique_ptr<PublishJob> job_;
};

}  // namespace

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

PubSubService::PubSubService(Engine* engine, Interner* attributes,
                             Interner* subscribers, const Limits& limits,
                             const StreamOptions& streams)
    : engine_(engine),
      attributes_(attributes),
      subscribers_(subscribers),
      limits_(limits),
      streams_(streams) {}

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

void PubSubService::FillStats(v1::Stats* stats) const {
  engine_->FillStats(stats);
  stats->set_open_streams(open_streams_.load(std::memory_order_relaxed));
}

grpc::ServerUnaryReactor* PubSubService::Subscribe(
    grpc::CallbackServerContext* context, const v1::SubscribeRequest* request,
    v1::SubscribeResponse* response) {
  absl::Status status = ValidateSubscribe(*request, limits_);
  std::vector<SubscriptionInput> inputs;
  if (status.ok()) {
    status = BuildSubscriptions(*request, attributes_, subscribers_, &inputs);
  }
  if (!status.ok()) return FinishNow(context, status);
  std::vector<uint32_t> owners;
  if (observer_ != nullptr) {
    owners.reserve(inputs.size());
    for (const SubscriptionInput& input : inputs) {
      owners.push_back(input.subscriber);
    }
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  engine_->Subscribe(
      std::move(inputs), [this, reactor, response, owners = std::move(owners)](
                             absl::StatusOr<std::vector<uint64_t>> ids) {
        if (!ids.ok()) {
          reactor->Finish(ToGrpc(ids.status()));
          return;
        }
        if (observer_ != nullptr) observer_->Subscribed(*ids, owners);
        response->mutable_subscription_ids()->Add(ids->begin(), ids->end());
        reactor->Finish(grpc::Status::OK);
      });
  return reactor;
}

grpc::ServerUnaryReactor* PubSubService::Unsubscribe(
    grpc::CallbackServerContext* context,
    const v1::UnsubscribeRequest* request, v1::UnsubscribeResponse*) {
  absl::Status status = ValidateUnsubscribe(*request, limits_);
  if (!status.ok()) return FinishNow(context, status);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  engine_->Unsubscribe(
      std::vector<uint64_t>(request->subscription_ids().begin(),
                            request->subscription_ids().end()),
      [this, reactor, request](absl::Status s) {
        // The request lives until the call is finished.
        if (s.ok() && observer_ != nullptr) {
          observer_->Unsubscribed(request->subscription_ids());
        }
        reactor->Finish(ToGrpc(s));
      });
  return reactor;
}

absl::Status PubSubService::PreparePublish(const v1::PublishRequest& request,
                                           v1::PublishResponse* response,
                                           PublishJob* job) const {
  absl::Status status = ValidatePublish(request, limits_);
  if (!status.ok()) return status;
  BuildEvents(request, *attributes_, &job->events);
  job->request = &request;
  job->response = response;
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* PubSubService::Publish(
    grpc::CallbackServerContext* context, const v1::PublishRequest* request,
    v1::PublishResponse* response) {
  // Shed load before the work of validating and building the events.
  if (absl::Status room = engine_->CheckRoom(
          static_cast<uint64_t>(request->events_size()));
      !room.ok()) {
    return FinishNow(context, room);
  }
  auto job = std::make_unique<PublishJob>();
  absl::Status status = PreparePublish(*request, response, job.get());
  if (!status.ok()) return FinishNow(context, status);
  job->deadline_ns = DeadlineNanos(context->deadline());
  auto* reactor = new PublishReactor(job.release());
  reactor->job_->done = [reactor](absl::Status s) {
    reactor->Finish(ToGrpc(s));
  };
  status = engine_->Publish(reactor->job_.get());
  if (!status.ok()) reactor->Finish(ToGrpc(status));
  return reactor;
}

grpc::ServerUnaryReactor* PubSubService::GetStats(
    grpc::CallbackServerContext* context, const v1::GetStatsRequest*,
    v1::Stats* response) {
  FillStats(response);
  return FinishNow(context, absl::OkStatus());
}

}  // namespace service
}  // namespace cohort
