// The load driver's options, connection handling and subscribe phase, and
// RunLoad, which strings the phases together. The publish phase is in
// load_publish.cc, the reports in load_report.cc.
#include "client/load.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "client/load_internal.h"
#include "grpcpp/grpcpp.h"
#include "proto/cohort/v1/pubsub.grpc.pb.h"
#include "proto/cohort/v1/pubsub.pb.h"
#include "workload/typed_workload.h"
#include "workload/workload.h"

namespace cohort {
namespace client {
namespace internal {

std::string CodeName(grpc::StatusCode code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

void KeepUntilExit(std::shared_ptr<void> object) {
  // Intentionally leaked, so that nothing here is destroyed at exit either.
  static absl::Mutex* keep_mu = new absl::Mutex;
  static auto* keep = new std::vector<std::shared_ptr<void>>;
  absl::MutexLock lock(keep_mu);
  keep->push_back(std::move(object));
}

std::shared_ptr<grpc::Channel> NewChannel(const std::string& target,
                                          const ClientSecurity& security) {
  grpc::ChannelArguments args;
  // Channels with equal arguments share connections; a local subchannel pool
  // gives each client its own TCP connection, as separate publishers have.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  // Responses with return_ids can exceed gRPC's 4 MiB default.
  args.SetMaxReceiveMessageSize(-1);
  // A cluster target (several addresses, dns:): every node, round robin,
  // skipping those that are NOT_SERVING, as Client::Connect does.
  absl::StatusOr<std::string> channel_target = Client::ChannelTarget(target);
  if (Client::IsClusterTarget(target)) Client::AddClusterArguments(&args);
  std::shared_ptr<grpc::Channel> channel = NewSecureChannel(
      channel_target.ok() ? *channel_target : target, security, args);
  // A callback-API call's context holds a channel reference and is destroyed
  // on gRPC's callback thread; if that were the last reference, gRPC would
  // tear down its callback completion queue from that very thread and crash
  // (seen at the end of a load phase).
  KeepUntilExit(channel);
  return channel;
}

namespace {

// Subscriptions are spread over this many subscriber names ("s0" ... "s999"),
// so Listen experiments find a realistic number of subscribers.
constexpr size_t kSubscriberNames = 1000;

// Event `i` of the workload, with its derived payload (a typed workload's
// as the API states it).
void FillEvent(const workload::Workload& w, size_t i, v1::Event* event) {
  if (w.typed != nullptr) {
    *event = w.typed->events[i];
    event->set_payload(workload::EventPayload(w.options, i));
    return;
  }
  for (const matcher::AttributeValue& a : w.events[i]) {
    v1::Attribute* out = event->add_attributes();
    out->set_name(w.attribute_names[a.attribute]);
    out->set_value(a.value);
  }
  event->set_payload(workload::EventPayload(w.options, i));
}

}  // namespace

RequestPool BuildRequestPool(const workload::Workload& w, int batch,
                             bool return_ids) {
  const size_t n = workload::EventCount(w);
  RequestPool pool((n + batch - 1) / batch);
  for (size_t k = 0; k < pool.size(); ++k) {
    pool[k].set_return_ids(return_ids);
    for (int j = 0; j < batch; ++j) {
      FillEvent(w, (k * batch + j) % n, pool[k].add_events());
    }
  }
  return pool;
}

namespace {

// A Subscribe batch refused with RESOURCE_EXHAUSTED is retried up to this
// many times, after kRetryBackoff doubled per attempt (the API asks clients
// to back off).
constexpr int kMaxSubscribeAttempts = 8;
constexpr auto kRetryBackoff = std::chrono::milliseconds(10);

// Subscription `i` of the workload as a SubscriptionSpec (matcher::Op and
// cohort.v1.Op are numbered alike).
void FillSubscription(const workload::Workload& w, size_t i,
                      v1::SubscriptionSpec* spec) {
  if (w.typed != nullptr) {
    *spec = w.typed->subscriptions[i];
    spec->set_subscriber(absl::StrCat("s", i % kSubscriberNames));
    return;
  }
  spec->set_subscriber(absl::StrCat("s", i % kSubscriberNames));
  for (const matcher::Predicate& p : w.subscriptions[i]) {
    v1::Predicate* out = spec->add_predicates();
    out->set_attribute(w.attribute_names[p.attribute]);
    out->set_op(static_cast<v1::Op>(p.op));
    out->set_value(p.value);
    if (p.op == matcher::Op::kBetween) out->set_upper(p.upper);
  }
}

// SubscribeLoader: sends the workload's subscriptions in batches with at most
// `in_flight` in flight, retrying batches refused as overloaded.
// Run() is called once, from one thread, which also runs the progress
// callback; completions run on gRPC threads.
class SubscribeLoader {
 public:
  SubscribeLoader(v1::PubSub::Stub* stub, const ClientSecurity& security,
                  const workload::Workload& workload, int batch, int in_flight)
      : stub_(stub),
        security_(security),
        workload_(workload),
        batch_(batch),
        max_in_flight_(in_flight) {}

  SubscribeResult Run(
      const std::function<void(const SubscribeProgress&)>& on_progress);

 private:
  struct Call {
    grpc::ClientContext context;
    v1::SubscribeRequest request;
    v1::SubscribeResponse response;
    int attempt = 0;
  };

  // NextCall() blocks for a free slot; returns the next batch to send (a
  // retry first), or null when everything has been answered.
  std::unique_ptr<Call> NextCall();
  void Issue(std::unique_ptr<Call> call);
  void Complete(Call* call, const grpc::Status& status);
  SubscribeProgress Progress(Clock::time_point start);

  v1::PubSub::Stub* const stub_;
  const ClientSecurity& security_;
  const workload::Workload& workload_;
  const int batch_;
  const int max_in_flight_;
  size_t next_ = 0;  // next subscription to send; Run()'s thread only
  absl::Mutex mu_;
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<std::unique_ptr<Call>> retries_ ABSL_GUARDED_BY(mu_);
  SubscribeResult result_ ABSL_GUARDED_BY(mu_);
};

std::unique_ptr<SubscribeLoader::Call> SubscribeLoader::NextCall() {
  const size_t n = workload::SubscriptionCount(workload_);
  std::unique_ptr<Call> call;
  {
    absl::MutexLock lock(&mu_);
    auto ready = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return in_flight_ < max_in_flight_ &&
             (!retries_.empty() || next_ < n || in_flight_ == 0);
    };
    mu_.Await(absl::Condition(&ready));
    if (!retries_.empty()) {
      call = std::move(retries_.front());
      retries_.pop_front();
    } else if (next_ >= n) {
      return nullptr;
    }
    ++in_flight_;
  }
  if (call != nullptr) {
    std::this_thread::sleep_for(kRetryBackoff * (1 << (call->attempt - 1)));
    return call;
  }
  call = std::make_unique<Call>();
  const size_t end = std::min(n, next_ + batch_);
  for (; next_ < end; ++next_) {
    FillSubscription(workload_, next_, call->request.add_subscriptions());
  }
  return call;
}

void SubscribeLoader::Issue(std::unique_ptr<Call> call) {
  Call* raw = call.release();
  AddToken(security_, &raw->context);
  stub_->async()->Subscribe(&raw->context, &raw->request, &raw->response,
                            [this, raw](grpc::Status status) {
                              Complete(raw, status);
                              delete raw;
                            });
}

void SubscribeLoader::Complete(Call* call, const grpc::Status& status) {
  absl::MutexLock lock(&mu_);
  --in_flight_;
  if (status.ok()) {
    result_.subscribed += call->response.subscription_ids_size();
    return;
  }
  ++result_.errors[CodeName(status.error_code())];
  if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
      call->attempt + 1 < kMaxSubscribeAttempts) {
    auto retry = std::make_unique<Call>();
    retry->request = std::move(call->request);
    retry->attempt = call->attempt + 1;
    retries_.push_back(std::move(retry));
    return;
  }
  result_.failed += call->request.subscriptions_size();
}

SubscribeProgress SubscribeLoader::Progress(Clock::time_point start) {
  SubscribeProgress progress;
  progress.total = workload::SubscriptionCount(workload_);
  progress.seconds = Seconds(Clock::now() - start);
  absl::MutexLock lock(&mu_);
  progress.done = result_.subscribed + result_.failed;
  return progress;
}

SubscribeResult SubscribeLoader::Run(
    const std::function<void(const SubscribeProgress&)>& on_progress) {
  const Clock::time_point start = Clock::now();
  const auto interval = absl::ToChronoNanoseconds(kProgressInterval);
  Clock::time_point next_report = start + interval;
  while (std::unique_ptr<Call> call = NextCall()) {
    Issue(std::move(call));
    if (on_progress && Clock::now() >= next_report) {
      on_progress(Progress(start));
      next_report = Clock::now() + interval;
    }
  }
  if (on_progress) on_progress(Progress(start));
  absl::MutexLock lock(&mu_);
  result_.seconds = Seconds(Clock::now() - start);
  return result_;
}

// PublishPhase() publishes the workload's events and fetches the server's
// stats around it. REQUIRES: !workload.events.empty(), mode != kNone.
PublishResult PublishPhase(const workload::Workload& workload,
                           const LoadOptions& options, Client* control) {
  const RequestPool pool =
      BuildRequestPool(workload, options.batch, options.return_ids);
  PublishResult result;
  result.before = control->Stats();
  RunPublish(options, pool, &result);
  result.after = control->Stats();
  return result;
}

}  // namespace
}  // namespace internal

absl::StatusOr<PublishMode> ParsePublishMode(absl::string_view name) {
  if (name == "none") return PublishMode::kNone;
  if (name == "stream") return PublishMode::kStream;
  if (name == "unary") return PublishMode::kUnary;
  return absl::InvalidArgumentError(absl::StrCat(
      "publish mode \"", name, "\": expected stream, unary or none"));
}

absl::string_view PublishModeName(PublishMode mode) {
  switch (mode) {
    case PublishMode::kNone:
      return "none";
    case PublishMode::kStream:
      return "stream";
    case PublishMode::kUnary:
      return "unary";
  }
  return "unknown";
}

absl::Status ValidateLoadOptions(const LoadOptions& o) {
  const std::pair<const char*, int> at_least_one[] = {
      {"clients", o.clients},
      {"batch", o.batch},
      {"window", o.window},
      {"subscribe_batch", o.subscribe_batch},
      {"subscribe_in_flight", o.subscribe_in_flight},
      {"max_outstanding", o.max_outstanding},
  };
  for (const auto& [name, value] : at_least_one) {
    if (value < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, " (", value, ") must be >= 1"));
    }
  }
  if (!(o.duration_s > 0)) {
    return absl::InvalidArgumentError("duration_s must be > 0");
  }
  if (!(o.warmup_s >= 0) || !(o.drain_s >= 0) || !(o.rate >= 0)) {
    return absl::InvalidArgumentError(
        "warmup_s, drain_s and rate must be >= 0");
  }
  if (o.control_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("control_timeout must be > 0");
  }
  if (o.server.empty()) return absl::InvalidArgumentError("server is empty");
  return absl::OkStatus();
}

absl::StatusOr<LoadReport> RunLoad(const workload::Workload& workload,
                                   const LoadOptions& options,
                                   const LoadCallbacks& callbacks) {
  if (absl::Status status = ValidateLoadOptions(options); !status.ok()) {
    return status;
  }
  ClientOptions client_options;
  client_options.target = options.server;
  client_options.deadline = options.control_timeout;
  client_options.security = options.security;
  absl::StatusOr<std::unique_ptr<Client>> connected =
      Client::Connect(client_options);
  if (!connected.ok()) return connected.status();
  // The subscribe phase's calls end on gRPC threads; see NewChannel.
  std::shared_ptr<Client> control = std::move(*connected);
  internal::KeepUntilExit(control);

  LoadReport report;
  report.options = options;
  if (options.subscribe) {
    report.subscribe = internal::SubscribeLoader(
                           control->stub(), options.security, workload,
                           options.subscribe_batch, options.subscribe_in_flight)
                           .Run(callbacks.on_progress);
    report.subscribed = true;
    if (callbacks.on_subscribed) callbacks.on_subscribed(report);
  }
  if (options.mode != PublishMode::kNone && !workload.events.empty()) {
    report.publish = internal::PublishPhase(workload, options, control.get());
    report.published = true;
  }
  return report;
}

}  // namespace client
}  // namespace cohort
