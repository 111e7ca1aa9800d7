#include "client/client.h"

#include <arpa/inet.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "proto/cohort/v1/pubsub.grpc.pb.h"
#include "proto/cohort/v1/pubsub.pb.h"

namespace cohort {
namespace client {
namespace {

// Stats and ParseFilter, which change nothing, are retried on UNAVAILABLE:
// three attempts ride out a server that is briefly unreachable (a restart,
// a dropped connection) without making a caller that cannot reach the
// server wait long.
constexpr int kIdempotentAttempts = 3;
// Pause before the first retry, doubled for the next: short, since Stats is
// interactive (the CLI) and the whole call stays within the deadline.
constexpr absl::Duration kIdempotentBackoff = absl::Milliseconds(50);
// Attempts of a change (or a refused Publish) against a cluster: enough to
// get past a node going down, within the call's deadline.
constexpr int kClusterAttempts = 6;

// The longest token the server accepts (service/api/auth.h CheckToken).
constexpr size_t kMaxTokenBytes = 4096;

void SetDeadline(absl::Time deadline, grpc::ClientContext* context) {
  context->set_deadline(absl::ToChronoTime(deadline));
}

absl::Status CheckOptions(const ClientOptions& options) {
  if (options.target.empty()) {
    return absl::InvalidArgumentError("ClientOptions.target is empty");
  }
  if (options.deadline <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("ClientOptions.deadline must be > 0");
  }
  if (options.subscribe_batch < 1) {
    return absl::InvalidArgumentError(
        "ClientOptions.subscribe_batch must be >= 1");
  }
  if (options.max_in_flight < 1) {
    return absl::InvalidArgumentError(
        "ClientOptions.max_in_flight must be >= 1");
  }
  return CheckSecurity(options.security);
}

// WaitForReady() drives `channel` to READY. A failed attempt puts the channel
// in TRANSIENT_FAILURE, where gRPC would retry only after its reconnection
// backoff (a second or more); a CLI or a test wants the answer now.
absl::Status WaitForReady(grpc::Channel* channel, const std::string& target,
                          bool tls, absl::Duration timeout) {
  const auto deadline = absl::ToChronoTime(absl::Now() + timeout);
  for (;;) {
    const grpc_connectivity_state state =
        channel->GetState(/*try_to_connect=*/true);
    if (state == GRPC_CHANNEL_READY) return absl::OkStatus();
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE ||
        state == GRPC_CHANNEL_SHUTDOWN) {
      return absl::UnavailableError(absl::StrCat(
          "cannot connect to ", target,
          tls ? ": connection or TLS handshake failed (is the server's "
                "certificate signed by the CA given, does it name the host, "
                "does the server want a client certificate?)"
              : ": connection failed (no server there, or it wants TLS?)"));
    }
    if (!channel->WaitForStateChange(state, deadline)) {
      return absl::UnavailableError(
          absl::StrCat("cannot connect to ", target, ": not ready within ",
                       absl::FormatDuration(timeout)));
    }
  }
}

// BatchError() explains the failure `error` of request `index` (0-based) of
// `count` sent by `rpc`, which carried `noun` [first, last); `earlier` says
// what the earlier requests did (it stays done).
absl::Status BatchError(const absl::Status& error, absl::string_view rpc,
                        absl::string_view noun, size_t index, size_t count,
                        size_t first, size_t last, absl::string_view earlier) {
  return absl::Status(
      error.code(), absl::StrCat(rpc, " request ", index + 1, " of ", count,
                                 " (", noun, " ", first, " to ", last - 1,
                                 ") failed; ", earlier, ": ", error.message()));
}

// StreamPublisher: Client::Publisher on the callback API.
//
// Writes: gRPC allows one outstanding write, so accepted requests wait in
// `unsent_` and each write's completion starts the next; the half-close goes
// after the last. Reads: one read is always outstanding; each response
// answers the oldest entry of `unanswered_` (responses come in request order).
//
// Lifetime: a hold keeps the call from finishing while a caller's thread may
// still start an operation on it. It is released once no caller will (after
// the half-close, once the stream broke, or in the destructor) and no caller
// is between choosing an operation and starting it (`user_starts_`). gRPC may
// run a reaction inline inside a Start* call, so none is called under `mu_`.
// The destructor waits for OnDone, whose last action is `finished_.Notify()`.
class StreamPublisher final
    : public Client::Publisher,
      public grpc::ClientBidiReactor<v1::PublishRequest, v1::PublishResponse> {
 public:
  StreamPublisher(std::shared_ptr<grpc::Channel> channel, int max_in_flight,
                  std::shared_ptr<std::atomic<uint64_t>> log_position)
      : channel_(std::move(channel)),
        max_in_flight_(static_cast<size_t>(max_in_flight)),
        log_position_(std::move(log_position)) {}
  ~StreamPublisher() override;

  // Start() opens the stream; called once, before anything else.
  void Start(v1::PubSub::Stub* stub, const ClientSecurity& security);

  absl::Status Publish(v1::PublishRequest request, DoneCallback done) override;
  absl::Status Finish() override;

  void OnWriteDone(bool ok) override;
  void OnReadDone(bool ok) override;
  void OnDone(const grpc::Status& status) override;

 private:
  enum class Op { kNone, kWrite, kWritesDone };

  // NextOpLocked() picks the write operation to start now, if any, and
  // records it as started.
  Op NextOpLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StartOp(Op op);
  // StartOpFromCaller() starts `op`, counted in user_starts_ by the caller,
  // on a caller's thread.
  void StartOpFromCaller(Op op);
  // ReleaseHoldLocked() is true if the caller must now call RemoveHold().
  bool ReleaseHoldLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // MarkBroken() records that no further operation may be started.
  void MarkBroken();

  // Keeps the channel referenced at least as long as the call's context.
  const std::shared_ptr<grpc::Channel> channel_;
  const size_t max_in_flight_;
  const std::shared_ptr<std::atomic<uint64_t>> log_position_;
  grpc::ClientContext context_;
  // The outstanding write; set under mu_ when writing_ becomes true, then
  // read by gRPC until OnWriteDone.
  v1::PublishRequest write_;
  // The outstanding read; touched by reactions only.
  v1::PublishResponse response_;
  // The stream's final status: written by OnDone before finished_ is
  // notified, read only after.
  grpc::Status status_;
  absl::Notification finished_;

  absl::Mutex mu_;
  std::deque<v1::PublishRequest> unsent_ ABSL_GUARDED_BY(mu_);
  // One entry per accepted request not yet answered, in request order.
  std::deque<DoneCallback> unanswered_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;      // a write is outstanding
  bool closing_ ABSL_GUARDED_BY(mu_) = false;      // Finish() was called
  bool writes_done_ ABSL_GUARDED_BY(mu_) = false;  // half-close started
  bool broken_ ABSL_GUARDED_BY(mu_) = false;       // an op failed, or ended
  bool abandoned_ ABSL_GUARDED_BY(mu_) = false;    // being destroyed
  bool hold_released_ ABSL_GUARDED_BY(mu_) = false;
  int user_starts_ ABSL_GUARDED_BY(mu_) = 0;
};

void StreamPublisher::Start(v1::PubSub::Stub* stub,
                            const ClientSecurity& security) {
  AddToken(security, &context_);
  stub->async()->PublishStream(&context_, this);
  AddHold();
  StartRead(&response_);
  StartCall();
}

StreamPublisher::~StreamPublisher() {
  bool release;
  {
    absl::MutexLock lock(&mu_);
    closing_ = true;
    abandoned_ = true;
    release = ReleaseHoldLocked();
  }
  if (!finished_.HasBeenNotified()) context_.TryCancel();
  if (release) RemoveHold();
  finished_.WaitForNotification();
}

StreamPublisher::Op StreamPublisher::NextOpLocked() {
  if (writing_ || broken_ || abandoned_) return Op::kNone;
  if (!unsent_.empty()) {
    write_ = std::move(unsent_.front());
    unsent_.pop_front();
    writing_ = true;
    return Op::kWrite;
  }
  if (closing_ && !writes_done_) {
    writes_done_ = true;
    return Op::kWritesDone;
  }
  return Op::kNone;
}

void StreamPublisher::StartOp(Op op) {
  if (op == Op::kWrite) StartWrite(&write_);
  if (op == Op::kWritesDone) StartWritesDone();
}

void StreamPublisher::StartOpFromCaller(Op op) {
  StartOp(op);
  bool release;
  {
    absl::MutexLock lock(&mu_);
    --user_starts_;
    release = ReleaseHoldLocked();
  }
  if (release) RemoveHold();
}

bool StreamPublisher::ReleaseHoldLocked() {
  if (hold_released_ || user_starts_ > 0) return false;
  if (!broken_ && !writes_done_ && !abandoned_) return false;
  hold_released_ = true;
  return true;
}

void StreamPublisher::MarkBroken() {
  bool release;
  {
    absl::MutexLock lock(&mu_);
    broken_ = true;
    release = ReleaseHoldLocked();
  }
  if (release) RemoveHold();
}

absl::Status StreamPublisher::Publish(v1::PublishRequest request,
                                      DoneCallback done) {
  bool ended;
  Op op = Op::kNone;
  {
    absl::MutexLock lock(&mu_);
    auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return unanswered_.size() < max_in_flight_ || broken_ || closing_;
    };
    mu_.Await(absl::Condition(&ready));
    if (closing_) {
      return absl::FailedPreconditionError(
          "Publisher::Publish called after Finish");
    }
    ended = broken_;
    if (!ended) {
      // Read your writes: the client's highest log position.
      const uint64_t position = log_position_->load();
      if (position > request.min_log_position()) {
        request.set_min_log_position(position);
      }
      unsent_.push_back(std::move(request));
      unanswered_.push_back(std::move(done));
      op = NextOpLocked();
      if (op != Op::kNone) ++user_starts_;
    }
  }
  if (ended) {
    // The status follows promptly: the hold is released once broken.
    finished_.WaitForNotification();
    return status_.ok() ? absl::InternalError(
                              "PublishStream ended before Finish was called")
                        : FromGrpc(status_);
  }
  if (op != Op::kNone) StartOpFromCaller(op);
  return absl::OkStatus();
}

absl::Status StreamPublisher::Finish() {
  Op op;
  {
    absl::MutexLock lock(&mu_);
    closing_ = true;
    // With a write outstanding, OnWriteDone half-closes after the last one.
    op = NextOpLocked();
    if (op != Op::kNone) ++user_starts_;
  }
  if (op != Op::kNone) StartOpFromCaller(op);
  finished_.WaitForNotification();
  return FromGrpc(status_);
}

void StreamPublisher::OnWriteDone(bool ok) {
  Op op;
  bool release;
  {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (!ok) broken_ = true;
    op = NextOpLocked();
    release = ReleaseHoldLocked();
  }
  // A reaction may start operations whether or not the hold is still held.
  StartOp(op);
  if (release) RemoveHold();
}

void StreamPublisher::OnReadDone(bool ok) {
  if (!ok) {  // the server ended the stream; OnDone follows
    MarkBroken();
    return;
  }
  DoneCallback done;
  {
    absl::MutexLock lock(&mu_);
    if (!unanswered_.empty()) {  // else the server answered too often
      done = std::move(unanswered_.front());
      unanswered_.pop_front();
    }
  }
  // `done` runs before the next read is started, so the callbacks of one
  // stream never overlap and keep request order.
  if (done) done(std::move(response_));
  response_.Clear();
  StartRead(&response_);
}

void StreamPublisher::OnDone(const grpc::Status& status) {
  status_ = status;
  std::deque<DoneCallback> orphans;
  {
    absl::MutexLock lock(&mu_);
    broken_ = true;
    orphans.swap(unanswered_);
    unsent_.clear();
  }
  const absl::Status error =
      status.ok() ? absl::InternalError(
                        "PublishStream ended without answering this request")
                  : FromGrpc(status);
  for (DoneCallback& done : orphans) {
    if (done) done(error);
  }
  orphans.clear();
  finished_.Notify();  // the last touch of *this: it may be destroyed now
}

// StreamListening: Client::Listening on the callback API. One read is
// outstanding at a time and `on_delivery` runs before the next is started,
// so deliveries are handled one at a time, in order. Operations are started
// only by reactions (and before StartCall), so no hold is needed.
class StreamListening final : public Client::Listening,
                              public grpc::ClientReadReactor<v1::Delivery> {
 public:
  StreamListening(std::shared_ptr<grpc::Channel> channel,
                  const std::string& subscriber,
                  std::function<void(const v1::Delivery&)> on_delivery)
      : channel_(std::move(channel)), on_delivery_(std::move(on_delivery)) {
    request_.set_subscriber(subscriber);
  }
  ~StreamListening() override {
    context_.TryCancel();
    finished_.WaitForNotification();
  }

  // Start() opens the stream; called once, before anything else.
  void Start(v1::PubSub::Stub* stub, const ClientSecurity& security) {
    AddToken(security, &context_);
    stub->async()->Listen(&context_, &request_, this);
    StartRead(&delivery_);
    StartCall();
  }

  void Stop() override { context_.TryCancel(); }
  absl::Status Wait() override {
    finished_.WaitForNotification();
    return FromGrpc(status_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // the stream ended; OnDone follows
    if (on_delivery_) on_delivery_(delivery_);
    delivery_.Clear();
    StartRead(&delivery_);
  }
  void OnDone(const grpc::Status& status) override {
    status_ = status;
    finished_.Notify();  // the last touch of *this: it may be destroyed now
  }

 private:
  // Keeps the channel referenced at least as long as the call's context.
  const std::shared_ptr<grpc::Channel> channel_;
  const std::function<void(const v1::Delivery&)> on_delivery_;
  grpc::ClientContext context_;
  v1::ListenRequest request_;
  v1::Delivery delivery_;  // the outstanding read; reactions only
  // Written by OnDone before finished_ is notified, read only after.
  grpc::Status status_;
  absl::Notification finished_;
};

}  // namespace

absl::Status FromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

absl::Status CheckSecurity(const ClientSecurity& security) {
  if (!security.tls &&
      (!security.tls_ca_pem.empty() || !security.tls_cert_pem.empty() ||
       !security.tls_key_pem.empty() || !security.tls_server_name.empty())) {
    return absl::InvalidArgumentError(
        "ClientSecurity: tls_ca_pem, tls_cert_pem, tls_key_pem and "
        "tls_server_name need tls");
  }
  if (security.tls_cert_pem.empty() != security.tls_key_pem.empty()) {
    return absl::InvalidArgumentError(
        "ClientSecurity: tls_cert_pem and tls_key_pem go together (mutual "
        "TLS needs both)");
  }
  if (security.token.size() > kMaxTokenBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ClientSecurity.token is longer than ", kMaxTokenBytes, " characters"));
  }
  for (char c : security.token) {
    // gRPC sends only printable ASCII in text metadata.
    if (c <= ' ' || c > '~') {
      return absl::InvalidArgumentError(
          "ClientSecurity.token has a blank, control or non-ASCII character");
    }
  }
  return absl::OkStatus();
}

std::shared_ptr<grpc::Channel> NewSecureChannel(const std::string& target,
                                                const ClientSecurity& security,
                                                grpc::ChannelArguments args) {
  if (!security.tls) {
    return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(),
                                     args);
  }
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = security.tls_ca_pem;
  ssl.pem_cert_chain = security.tls_cert_pem;
  ssl.pem_private_key = security.tls_key_pem;
  if (!security.tls_server_name.empty()) {
    args.SetSslTargetNameOverride(security.tls_server_name);
  }
  return grpc::CreateCustomChannel(target, grpc::SslCredentials(ssl), args);
}

void AddToken(const ClientSecurity& security, grpc::ClientContext* context) {
  if (security.token.empty()) return;
  context->AddMetadata("authorization",
                       absl::StrCat("Bearer ", security.token));
}

namespace {

// Runs `call` (one attempt, on the context it is given) until it succeeds,
// fails with a status `retryable` refuses, or `attempts` attempts or
// options.deadline are used up; returns the last attempt's status. The
// backoff doubles from kIdempotentBackoff up to 500 ms.
template <typename Call, typename Retryable>
absl::Status CallWithRetries(const ClientOptions& options, int attempts,
                             Call call, Retryable retryable) {
  const absl::Time deadline = absl::Now() + options.deadline;
  absl::Duration backoff = kIdempotentBackoff;
  for (int attempt = 1;; ++attempt) {
    grpc::ClientContext context;
    SetDeadline(deadline, &context);
    AddToken(options.security, &context);
    const absl::Status status = call(&context);
    if (status.ok() || !retryable(status) || attempt >= attempts ||
        absl::Now() + backoff >= deadline) {
      return status;
    }
    absl::SleepFor(backoff);
    backoff = std::min(backoff * 2, absl::Milliseconds(500));
  }
}

bool IsUnavailableStatus(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable;
}

// For calls that change nothing: retried on UNAVAILABLE.
template <typename Call>
absl::Status CallIdempotent(const ClientOptions& options, Call call) {
  return CallWithRetries(options, kIdempotentAttempts, call,
                         IsUnavailableStatus);
}

// A fresh request_id: 128 random bits in hex.
std::string NewRequestId() {
  thread_local std::mt19937_64 random{std::random_device{}()};
  return absl::StrCat(absl::Hex(random(), absl::kZeroPad16),
                      absl::Hex(random(), absl::kZeroPad16));
}

// A call against a cluster (`retry`) is retried while `retryable` says so
// (the same request, so a change keeps its request_id); otherwise it is
// tried once.
template <typename Call, typename Retryable>
absl::Status CallCluster(const ClientOptions& options, bool retry, Call call,
                         Retryable retryable) {
  return CallWithRetries(options, retry ? kClusterAttempts : 1, call,
                         retryable);
}

// A Publish may be retried only if the node refused it before matching: a
// retry after a lost answer would deliver the events twice.
bool PublishRetryable(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable &&
         absl::StartsWith(status.message(), "not serving");
}

void NoteLogPosition(std::atomic<uint64_t>* seen, uint64_t position) {
  uint64_t old = seen->load();
  while (position > old && !seen->compare_exchange_weak(old, position)) {
  }
}

}  // namespace

bool Client::IsClusterTarget(const std::string& target) {
  return absl::StrContains(target, ',') || absl::StartsWith(target, "dns:");
}

void Client::AddClusterArguments(grpc::ChannelArguments* args) {
  args->SetServiceConfigJSON(
      R"({"loadBalancingConfig": [{"round_robin": {}}],)"
      R"( "healthCheckConfig": {"serviceName": "cohort.v1.PubSub"}})");
}

absl::StatusOr<std::string> Client::ChannelTarget(const std::string& target) {
  if (!absl::StrContains(target, ',')) return target;
  std::vector<std::string> parts = absl::StrSplit(target, ',');
  bool v4 = true, v6 = true;
  for (const std::string& part : parts) {
    const size_t colon = part.rfind(':');
    std::string host = colon == std::string::npos ? "" : part.substr(0, colon);
    unsigned char buf[16];
    const bool is_v6 = host.size() > 2 && host.front() == '[' &&
                       host.back() == ']' &&
                       inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(),
                                 buf) == 1;
    const bool is_v4 = inet_pton(AF_INET, host.c_str(), buf) == 1;
    v4 = v4 && is_v4;
    v6 = v6 && is_v6;
    if (!is_v4 && !is_v6) {
      return absl::InvalidArgumentError(absl::StrCat(
          "target: '", part,
          "' in a list of several targets must be an IP address and port; "
          "for host names use dns:///NAME:PORT"));
    }
  }
  if (!v4 && !v6) {
    return absl::InvalidArgumentError(
        absl::StrCat("target: '", target, "' mixes IPv4 and IPv6 addresses"));
  }
  return absl::StrCat(v4 ? "ipv4:" : "ipv6:", absl::StrJoin(parts, ","));
}

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(
    const ClientOptions& options) {
  if (absl::Status status = CheckOptions(options); !status.ok()) {
    return status;
  }
  absl::StatusOr<std::string> target = ChannelTarget(options.target);
  if (!target.ok()) return target.status();
  grpc::ChannelArguments args;
  // Responses with return_ids can exceed gRPC's 4 MiB default.
  args.SetMaxReceiveMessageSize(-1);
  if (IsClusterTarget(options.target)) AddClusterArguments(&args);
  std::shared_ptr<grpc::Channel> channel =
      NewSecureChannel(*target, options.security, args);
  if (absl::Status status =
          WaitForReady(channel.get(), options.target, options.security.tls,
                       options.deadline);
      !status.ok()) {
    return status;
  }
  return std::unique_ptr<Client>(new Client(options, std::move(channel)));
}

Client::Client(const ClientOptions& options,
               std::shared_ptr<grpc::Channel> channel)
    : options_(options),
      cluster_(IsClusterTarget(options.target)),
      channel_(std::move(channel)),
      stub_(v1::PubSub::NewStub(channel_)) {}

Client::~Client() = default;

absl::StatusOr<std::vector<uint64_t>> Client::Subscribe(
    absl::Span<const v1::SubscriptionSpec> specs) {
  const size_t batch = options_.subscribe_batch;
  const size_t count = (specs.size() + batch - 1) / batch;
  std::vector<uint64_t> ids;
  ids.reserve(specs.size());
  for (size_t i = 0; i < count; ++i) {
    const absl::Span<const v1::SubscriptionSpec> part =
        specs.subspan(i * batch, batch);
    v1::SubscribeRequest request;
    request.mutable_subscriptions()->Reserve(static_cast<int>(part.size()));
    for (const v1::SubscriptionSpec& spec : part) {
      *request.add_subscriptions() = spec;
    }
    if (cluster_) request.set_request_id(NewRequestId());
    v1::SubscribeResponse response;
    absl::Status status = CallCluster(
        options_, cluster_,
        [&](grpc::ClientContext* context) {
          response.Clear();
          return FromGrpc(stub_->Subscribe(context, request, &response));
        },
        // A request_id: any UNAVAILABLE may be retried, the log applies
        // the request once.
        IsUnavailableStatus);
    if (status.ok()) NoteLogPosition(log_position_.get(), response.log_position());
    if (status.ok() &&
        static_cast<size_t>(response.subscription_ids_size()) != part.size()) {
      status = absl::InternalError(
          absl::StrCat("Subscribe answered ", response.subscription_ids_size(),
                       " ids for ", part.size(), " specs"));
    }
    if (!status.ok()) {
      if (count == 1) return status;
      return BatchError(
          status, "Subscribe", "specs", i, count, i * batch,
          i * batch + part.size(),
          absl::StrCat(ids.size(),
                       " subscriptions created by earlier requests remain"));
    }
    ids.insert(ids.end(), response.subscription_ids().begin(),
               response.subscription_ids().end());
  }
  return ids;
}

absl::Status Client::Unsubscribe(absl::Span<const uint64_t> ids) {
  const size_t batch = options_.subscribe_batch;
  const size_t count = (ids.size() + batch - 1) / batch;
  for (size_t i = 0; i < count; ++i) {
    const absl::Span<const uint64_t> part = ids.subspan(i * batch, batch);
    v1::UnsubscribeRequest request;
    request.mutable_subscription_ids()->Add(part.begin(), part.end());
    if (cluster_) request.set_request_id(NewRequestId());
    v1::UnsubscribeResponse response;
    const absl::Status status = CallCluster(
        options_, cluster_,
        [&](grpc::ClientContext* context) {
          response.Clear();
          return FromGrpc(stub_->Unsubscribe(context, request, &response));
        },
        // A request_id: any UNAVAILABLE may be retried, the log applies
        // the request once.
        IsUnavailableStatus);
    if (status.ok()) NoteLogPosition(log_position_.get(), response.log_position());
    if (!status.ok()) {
      if (count == 1) return status;
      return BatchError(
          status, "Unsubscribe", "ids", i, count, i * batch,
          i * batch + part.size(),
          absl::StrCat(i * batch,
                       " subscriptions removed by earlier requests stay "
                       "removed"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::PublishResponse> Client::Publish(
    const v1::PublishRequest& request) {
  const uint64_t position = log_position_->load();
  v1::PublishRequest positioned;
  const v1::PublishRequest* sent = &request;
  if (position > request.min_log_position()) {
    positioned = request;
    positioned.set_min_log_position(position);
    sent = &positioned;
  }
  v1::PublishResponse response;
  const absl::Status status = CallCluster(
      options_, cluster_,
      [&](grpc::ClientContext* context) {
        response.Clear();
        return FromGrpc(stub_->Publish(context, *sent, &response));
      },
      PublishRetryable);
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<v1::Stats> Client::Stats() {
  v1::Stats stats;
  const absl::Status status =
      CallIdempotent(options_, [&](grpc::ClientContext* context) {
        stats.Clear();
        return FromGrpc(
            stub_->GetStats(context, v1::GetStatsRequest(), &stats));
      });
  if (!status.ok()) return status;
  return stats;
}

absl::StatusOr<v1::SubscriptionSpec> Client::ParseFilterSpec(
    const std::string& filter) {
  v1::ParseFilterRequest request;
  request.set_filter(filter);
  v1::ParseFilterResponse response;
  const absl::Status status =
      CallIdempotent(options_, [&](grpc::ClientContext* context) {
        response.Clear();
        return FromGrpc(stub_->ParseFilter(context, request, &response));
      });
  if (!status.ok()) return status;
  v1::SubscriptionSpec spec;
  spec.mutable_predicates()->Swap(response.mutable_predicates());
  spec.mutable_any_of()->Swap(response.mutable_any_of());
  return spec;
}

absl::StatusOr<std::vector<v1::Predicate>> Client::ParseFilter(
    const std::string& filter) {
  absl::StatusOr<v1::SubscriptionSpec> spec = ParseFilterSpec(filter);
  if (!spec.ok()) return spec.status();
  if (spec->any_of_size() > 0) {
    return absl::InvalidArgumentError(
        "filter: it has \"or\" (the server answered any_of groups); "
        "ParseFilterSpec() reads them");
  }
  return std::vector<v1::Predicate>(spec->predicates().begin(),
                                    spec->predicates().end());
}

std::unique_ptr<Client::Publisher> Client::OpenPublisher() {
  auto publisher =
      std::make_unique<StreamPublisher>(channel_, options_.max_in_flight,
                                        log_position_);
  publisher->Start(stub_.get(), options_.security);
  return publisher;
}

std::unique_ptr<Client::Listening> Client::Listen(
    const std::string& subscriber,
    std::function<void(const v1::Delivery&)> on_delivery) {
  auto listening = std::make_unique<StreamListening>(channel_, subscriber,
                                                     std::move(on_delivery));
  listening->Start(stub_.get(), options_.security);
  return listening;
}

}  // namespace client
}  // namespace cohort
