// The two streaming RPCs of PubSubService: PublishStream and Listen.
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "service/api/pubsub_service.h"
#include "service/stages/admission.h"

namespace cohort {
namespace service {
namespace {

using PublishBidi =
    grpc::ServerBidiReactor<v1::PublishRequest, v1::PublishResponse>;

absl::Status TooManyStreams(uint32_t limit) {
  return absl::ResourceExhaustedError(
      absl::StrCat("too many open streams: the limit is ", limit,
                   " (--max_streams); close a stream or retry later"));
}

// PublishStream: reads a request, admits it, reads the next once admitted
// (and while fewer than stream_window are in flight), writes responses in
// request order as the engine completes them.
//
// Every request's job carries the stream's deadline and the gone_ flag, so
// once the client cancels (or a write fails) the engine skips the events it
// has not matched yet and the stream finishes as soon as those jobs end.
//
// Invariants: at most one read and one write outstanding; slots_ holds the
// admitted or admitting requests in request order; Finish is called once,
// when nothing is outstanding and no job can still call back.
class PublishStreamReactor final : public PublishBidi {
 public:
  PublishStreamReactor(PubSubService* service, int64_t deadline_ns)
      : service_(service), deadline_ns_(deadline_ns) {
    std::lock_guard<std::mutex> lock(mu_);
    MaybeRead();
  }

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override {
    gone_.store(true, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    MaybeFinish();
  }
  void OnDone() override {
    service_->CloseStream();
    delete this;
  }

 private:
  struct Slot {
    std::unique_ptr<v1::PublishRequest> request;
    v1::PublishResponse response;
    PublishJob job;
    bool done = false;
    absl::Status status;  // the job's, once done
  };

  // The request read last may be built and matched now (or not: the error).
  void OnReadable(const absl::Status& readable);
  void OnAdmitted(Slot* slot, const absl::Status& status);
  void OnJobDone(Slot* slot, const absl::Status& status);
  void MaybeRead() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MaybeWrite() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MaybeFinish() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  PubSubService* const service_;
  const int64_t deadline_ns_;  // the stream's, on the MonotonicNanos clock
  std::atomic<bool> gone_{false};  // nobody will read the responses
  std::mutex mu_;
  std::unique_ptr<v1::PublishRequest> read_buffer_ ABSL_GUARDED_BY(mu_);
  std::deque<std::unique_ptr<Slot>> slots_ ABSL_GUARDED_BY(mu_);
  bool reading_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool admitting_ ABSL_GUARDED_BY(mu_) = false;
  bool reads_done_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool discarding_ ABSL_GUARDED_BY(mu_) = false;  // an expired job was met
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
};

void PublishStreamReactor::MaybeRead() {
  if (reading_ || admitting_ || reads_done_ || cancelled_ ||
      slots_.size() >= service_->stream_options().stream_window) {
    return;
  }
  reading_ = true;
  read_buffer_ = std::make_unique<v1::PublishRequest>();
  StartRead(read_buffer_.get());
}

void PublishStreamReactor::OnReadDone(bool ok) {
  v1::PublishRequest* request = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    reading_ = false;
    if (!ok || reads_done_) {  // reads_done_: an earlier job failed
      reads_done_ = true;
      MaybeFinish();
      return;
    }
    // No further read until this request is admitted (or refused).
    admitting_ = true;
    request = read_buffer_.get();
  }
  // In cluster mode, wait for the log position the request must see.
  service_->WhenReadable(*request, deadline_ns_,
                         [this](absl::Status s) { OnReadable(s); });
}

void PublishStreamReactor::OnReadable(const absl::Status& readable) {
  Slot* slot = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!readable.ok()) {
      admitting_ = false;
      error_ = readable;
      reads_done_ = true;
      MaybeFinish();
      return;
    }
    auto owned = std::make_unique<Slot>();
    owned->request = std::move(read_buffer_);
    absl::Status status = service_->PreparePublish(
        *owned->request, &owned->response, &owned->job);
    if (!status.ok()) {
      admitting_ = false;
      error_ = status;
      reads_done_ = true;
      MaybeFinish();
      return;
    }
    slot = owned.get();
    slot->job.done = [this, slot](absl::Status s) { OnJobDone(slot, s); };
    slot->job.deadline_ns = deadline_ns_;
    slot->job.cancelled = &gone_;
    slots_.push_back(std::move(owned));
  }
  service_->engine()->PublishWhenAdmitted(
      &slot->job,
      [this, slot](absl::Status status) { OnAdmitted(slot, status); });
}

void PublishStreamReactor::OnAdmitted(Slot* slot, const absl::Status& status) {
  std::lock_guard<std::mutex> lock(mu_);
  admitting_ = false;
  if (!status.ok()) {
    // The slot is the newest: nothing is read while one is admitting.
    slots_.pop_back();
    (void)slot;
    error_ = status;
    reads_done_ = true;
    MaybeFinish();
    return;
  }
  MaybeRead();
}

void PublishStreamReactor::OnJobDone(Slot* slot, const absl::Status& status) {
  std::lock_guard<std::mutex> lock(mu_);
  slot->done = true;
  slot->status = status;
  if (!status.ok()) {
    // The job expired (the stream's deadline): its response would be
    // incomplete, so the stream ends with the job's status after the
    // responses before it.
    if (error_.ok()) error_ = status;
    reads_done_ = true;
  }
  MaybeWrite();
  MaybeFinish();
}

void PublishStreamReactor::MaybeWrite() {
  if (writing_) return;
  // After a failed write, a cancel or an expired job, finished responses
  // are discarded.
  while (!slots_.empty() && slots_.front()->done &&
         (cancelled_ || discarding_ || !slots_.front()->status.ok())) {
    if (!slots_.front()->status.ok()) discarding_ = true;
    slots_.pop_front();
  }
  if (slots_.empty() || !slots_.front()->done) return;
  writing_ = true;
  StartWrite(&slots_.front()->response);
}

void PublishStreamReactor::OnWriteDone(bool ok) {
  std::lock_guard<std::mutex> lock(mu_);
  writing_ = false;
  slots_.pop_front();
  if (!ok) {
    gone_.store(true, std::memory_order_relaxed);
    cancelled_ = true;
  }
  MaybeWrite();
  MaybeRead();
  MaybeFinish();
}

void PublishStreamReactor::MaybeFinish() {
  if (finished_ || reading_ || writing_ || admitting_ ||
      !(reads_done_ || cancelled_)) {
    return;
  }
  if (!cancelled_) MaybeWrite();
  if (writing_) return;
  for (const auto& slot : slots_) {
    if (!slot->done) return;  // an admitted job will still call back
  }
  finished_ = true;
  if (cancelled_) {
    Finish(grpc::Status::CANCELLED);
  } else {
    Finish(ToGrpc(error_));
  }
}

class ListenReactor;

// The Listen stream's side of the registry. Lives as long as the registry or
// the reactor holds it; forgets the reactor when the reactor is done.
class ListenSink final : public DeliverySink {
 public:
  ListenSink(ListenReactor* reactor, const StreamOptions& options)
      : reactor_(reactor), options_(options) {}

  OfferResult Offer(PendingDelivery delivery) override;
  void Close(const absl::Status& status) override;
  // Called by the reactor.
  void OnWriteDone(bool ok);
  void OnCancel();
  void Detach();

 private:
  void StartNext() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FinishLocked(const absl::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::mutex mu_;
  ListenReactor* reactor_ ABSL_GUARDED_BY(mu_);
  const StreamOptions options_;
  std::deque<std::pair<PendingDelivery, uint64_t>> queue_ ABSL_GUARDED_BY(mu_);
  v1::Delivery message_ ABSL_GUARDED_BY(mu_);
  uint64_t sequence_ ABSL_GUARDED_BY(mu_) = 0;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status final_status_ ABSL_GUARDED_BY(mu_);
};

class ListenReactor final : public grpc::ServerWriteReactor<v1::Delivery> {
 public:
  ListenReactor(PubSubService* service, uint32_t subscriber)
      : service_(service), subscriber_(subscriber) {
    sink_ = std::make_shared<ListenSink>(this, service->stream_options());
    registered_ = service_->engine()->listeners().Register(subscriber_, sink_);
    if (registered_) {
      service_->ListenerOpened(subscriber_);
    } else {
      sink_->Close(ShuttingDownError());
    }
  }
  void OnWriteDone(bool ok) override { sink_->OnWriteDone(ok); }
  void OnCancel() override { sink_->OnCancel(); }
  void OnDone() override {
    sink_->Detach();
    service_->engine()->listeners().Unregister(subscriber_, sink_.get());
    if (registered_) service_->ListenerClosed(subscriber_);
    service_->CloseStream();
    delete this;
  }

 private:
  PubSubService* const service_;
  const uint32_t subscriber_;
  std::shared_ptr<ListenSink> sink_;
  bool registered_ = false;
};

OfferResult ListenSink::Offer(PendingDelivery delivery) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return OfferResult::kClosed;
  ++sequence_;  // every delivery meant for the stream takes a number
  // A gap marker: a delivery lost before it reached this node.
  if (delivery.event == nullptr) return OfferResult::kDropped;
  if (queue_.size() >= options_.listener_queue_limit) {
    if (options_.slow_listener == SlowListenerPolicy::kDrop) {
      return OfferResult::kDropped;
    }
    FinishLocked(absl::ResourceExhaustedError(absl::StrCat(
        "listener fell behind: ", queue_.size(),
        " deliveries queued, the limit is ", options_.listener_queue_limit,
        " (--listener_queue_limit); disconnected (--slow_listener=disconnect)")));
    return OfferResult::kDisconnected;
  }
  queue_.emplace_back(std::move(delivery), sequence_);
  if (!writing_) StartNext();
  return OfferResult::kQueued;
}

void ListenSink::StartNext() {
  if (queue_.empty() || reactor_ == nullptr) return;
  const auto& [delivery, sequence] = queue_.front();
  message_.Clear();
  message_.mutable_subscription_ids()->Add(delivery.subscription_ids.begin(),
                                           delivery.subscription_ids.end());
  *message_.mutable_event() = *delivery.event;
  message_.set_sequence(sequence);
  writing_ = true;
  reactor_->StartWrite(&message_);
}

void ListenSink::FinishLocked(const absl::Status& status) {
  closed_ = true;
  queue_.clear();
  if (writing_ || finished_ || reactor_ == nullptr) {
    if (!finished_) final_status_ = status;
    return;
  }
  finished_ = true;
  reactor_->Finish(ToGrpc(status));
}

void ListenSink::Close(const absl::Status& status) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return;
  FinishLocked(status);
}

void ListenSink::OnWriteDone(bool ok) {
  std::lock_guard<std::mutex> lock(mu_);
  writing_ = false;
  if (!queue_.empty()) queue_.pop_front();
  if (!ok && !closed_) {
    FinishLocked(absl::CancelledError("the listener went away"));
    return;
  }
  if (closed_) {
    if (!finished_ && reactor_ != nullptr) {
      finished_ = true;
      reactor_->Finish(ToGrpc(final_status_));
    }
    return;
  }
  StartNext();
}

void ListenSink::OnCancel() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!closed_) FinishLocked(absl::CancelledError("the listener cancelled"));
}

void ListenSink::Detach() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  reactor_ = nullptr;
  queue_.clear();
}

}  // namespace

grpc::ServerBidiReactor<v1::PublishRequest, v1::PublishResponse>*
PubSubService::PublishStream(grpc::CallbackServerContext* context) {
  if (!OpenStream()) {
    return new RefusedStream<PublishBidi>(
        TooManyStreams(stream_options().max_streams));
  }
  return new PublishStreamReactor(this, DeadlineNanos(context->deadline()));
}

grpc::ServerWriteReactor<v1::Delivery>* PubSubService::Listen(
    grpc::CallbackServerContext*, const v1::ListenRequest* request) {
  using Writer = grpc::ServerWriteReactor<v1::Delivery>;
  absl::Status status = ValidateListen(*request, limits_);
  absl::StatusOr<uint32_t> subscriber =
      status.ok() ? subscribers_->Intern(request->subscriber())
                  : absl::StatusOr<uint32_t>(status);
  if (!subscriber.ok()) return new RefusedStream<Writer>(subscriber.status());
  if (!OpenStream()) {
    return new RefusedStream<Writer>(
        TooManyStreams(stream_options().max_streams));
  }
  return new ListenReactor(this, *subscriber);
}

}  // namespace service
}  // namespace cohort
