// The load driver's publish phase: the clients (PublishStream, or unary
// Publish in closed or open loop), their schedule and what they record.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "client/load.h"
#include "client/load_internal.h"
#include "grpcpp/grpcpp.h"
#include "proto/cohort/v1/pubsub.grpc.pb.h"
#include "proto/cohort/v1/pubsub.pb.h"

namespace cohort {
namespace client {
namespace internal {
namespace {

// A PublishStream that fails is reopened, and a closed-loop caller whose
// request failed sends its next, after this pause, so a server that rejects
// every call is not hammered.
constexpr auto kRestartBackoff = std::chrono::milliseconds(100);

// When a publish run starts, when its measured interval starts and ends (no
// request is sent after `end`), and when waiting for answers stops.
struct Schedule {
  Clock::time_point start;
  Clock::time_point measure_start;
  Clock::time_point end;
  Clock::time_point drain_deadline;
};

Schedule MakeSchedule(const LoadOptions& o) {
  auto seconds = [](double s) {
    return std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(s));
  };
  Schedule s;
  s.start = Clock::now();
  s.measure_start = s.start + seconds(o.warmup_s);
  s.end = s.measure_start + seconds(o.duration_s);
  s.drain_deadline = s.end + seconds(o.drain_s);
  return s;
}

// PublishRecorder: one client's observations. Completions of one client may
// run concurrently on gRPC threads, hence the lock.
class PublishRecorder {
 public:
  explicit PublishRecorder(const Schedule& schedule) : schedule_(schedule) {}

  // RecordResponse(): a request sent (open loop: due) at `sent` was answered
  // with `response` at `done`.
  void RecordResponse(Clock::time_point sent, Clock::time_point done,
                      const v1::PublishResponse& response) {
    uint64_t matches = 0;
    for (const v1::EventResult& r : response.results()) {
      matches += r.match_count();
    }
    absl::MutexLock lock(&mu_);
    if (sent >= schedule_.measure_start && sent < schedule_.end) {
      totals_.latency.Record(
          std::chrono::duration_cast<std::chrono::nanoseconds>(done - sent)
              .count());
    }
    if (done >= schedule_.measure_start && done < schedule_.end) {
      ++totals_.requests;
      totals_.events += response.results_size();
      totals_.matches += matches;
    }
  }
  void RecordError(grpc::StatusCode code) {
    absl::MutexLock lock(&mu_);
    ++totals_.errors[CodeName(code)];
  }
  void RecordUnanswered(uint64_t requests) {
    absl::MutexLock lock(&mu_);
    totals_.unanswered += requests;
  }
  void MergeInto(PublishResult* out) {
    absl::MutexLock lock(&mu_);
    out->latency.Merge(totals_.latency);
    out->requests += totals_.requests;
    out->events += totals_.events;
    out->matches += totals_.matches;
    out->unanswered += totals_.unanswered;
    for (const auto& [code, n] : totals_.errors) out->errors[code] += n;
  }

 private:
  const Schedule& schedule_;
  absl::Mutex mu_;
  PublishResult totals_ ABSL_GUARDED_BY(mu_);  // before/after unused
};

// ---------------------------------------------------------------------------
// PublishStream.

// StreamClient: one PublishStream. Writes requests from the pool one at a
// time (gRPC allows one outstanding write) while fewer than `window` are
// unanswered; responses come in request order, so send times form a FIFO.
// Reactions run on gRPC threads; Run() on the client's thread.
class StreamClient
    : public grpc::ClientBidiReactor<v1::PublishRequest, v1::PublishResponse> {
 public:
  StreamClient(const RequestPool& pool, size_t next, int window,
               const Schedule& schedule, PublishRecorder* recorder)
      : pool_(pool),
        window_(window),
        schedule_(schedule),
        recorder_(recorder),
        next_(next) {}

  // Run() publishes until the schedule's end or until the stream breaks,
  // half-closes, waits for the answers (cancelling at the drain deadline)
  // and returns the stream's status.
  grpc::Status Run(v1::PubSub::Stub* stub, const ClientSecurity& security);
  // Pool index the next stream of this client should continue from.
  size_t next() {
    absl::MutexLock lock(&mu_);
    return next_;
  }

  void OnWriteDone(bool ok) override;
  void OnReadDone(bool ok) override;
  void OnDone(const grpc::Status& status) override {
    status_ = status;
    done_.Notify();
  }

 private:
  // Pump() starts the next write, or half-closes once the run is over.
  void Pump();

  const RequestPool& pool_;
  const size_t window_;
  const Schedule& schedule_;
  PublishRecorder* const recorder_;
  grpc::ClientContext context_;
  v1::PublishResponse response_;  // the one outstanding read
  grpc::Status status_;           // written by OnDone, read after done_
  absl::Notification done_;
  absl::Mutex mu_;
  size_t next_ ABSL_GUARDED_BY(mu_);
  std::deque<Clock::time_point> sent_ ABSL_GUARDED_BY(mu_);  // unanswered
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;  // no more writes
  bool broken_ ABSL_GUARDED_BY(mu_) = false;  // a read or write failed
};

void StreamClient::Pump() {
  const v1::PublishRequest* request = nullptr;
  bool half_close = false;
  {
    absl::MutexLock lock(&mu_);
    if (writing_ || closed_) return;
    if (broken_ || Clock::now() >= schedule_.end) {
      closed_ = true;
      // After a failed read or write no operation may be started.
      half_close = !broken_;
    } else if (sent_.size() < window_) {
      writing_ = true;
      request = &pool_[next_];
      next_ = (next_ + 1) % pool_.size();
      sent_.push_back(Clock::now());
    }
  }
  if (request != nullptr) StartWrite(request);
  if (half_close) StartWritesDone();
}

void StreamClient::OnWriteDone(bool ok) {
  {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (!ok) broken_ = true;
  }
  Pump();
}

void StreamClient::OnReadDone(bool ok) {
  const Clock::time_point now = Clock::now();
  Clock::time_point sent = now;
  {
    absl::MutexLock lock(&mu_);
    if (!ok) {  // the server ended the stream; OnDone follows
      broken_ = true;
      return;
    }
    if (!sent_.empty()) {
      sent = sent_.front();
      sent_.pop_front();
    }
  }
  recorder_->RecordResponse(sent, now, response_);
  StartRead(&response_);
  Pump();
}

grpc::Status StreamClient::Run(v1::PubSub::Stub* stub,
                               const ClientSecurity& security) {
  AddToken(security, &context_);
  stub->async()->PublishStream(&context_, this);
  AddHold();  // this thread calls Pump() after StartCall
  StartRead(&response_);
  Pump();
  StartCall();
  {
    absl::MutexLock lock(&mu_);
    auto broken = [this]()
                      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return broken_; };
    // A timed wait may wake a little early; Pump() closes only at the end.
    while (!broken_ && Clock::now() < schedule_.end) {
      mu_.AwaitWithTimeout(absl::Condition(&broken),
                           absl::FromChrono(schedule_.end - Clock::now()));
    }
  }
  Pump();  // half-close now if no write is in flight
  RemoveHold();
  if (!done_.WaitForNotificationWithTimeout(
          absl::FromChrono(schedule_.drain_deadline - Clock::now()))) {
    context_.TryCancel();
    done_.WaitForNotification();
  }
  absl::MutexLock lock(&mu_);
  recorder_->RecordUnanswered(sent_.size());
  return status_;
}

// RunStreamClient() runs one client's PublishStreams, reopening a failed
// stream (after kRestartBackoff) until the schedule ends.
void RunStreamClient(v1::PubSub::Stub* stub, const ClientSecurity& security,
                     const RequestPool& pool, size_t first, int window,
                     const Schedule& schedule, PublishRecorder* recorder) {
  size_t next = first;
  while (Clock::now() < schedule.end) {
    auto stream =
        std::make_unique<StreamClient>(pool, next, window, schedule, recorder);
    const grpc::Status status = stream->Run(stub, security);
    next = stream->next();
    if (status.ok()) break;
    recorder->RecordError(status.error_code());
    std::this_thread::sleep_for(kRestartBackoff);
  }
}

// ---------------------------------------------------------------------------
// Unary Publish.

// UnaryClient: one publisher of unary Publish calls through the callback
// API, closed loop (RunClosedLoop) or open loop (RunOpenLoop). Completions
// run on gRPC threads; Run*() on the client's thread. The object must outlive
// its completions, which may still be returning when Run*() has returned:
// it is kept until the process exits (KeepUntilExit), with its stub. The
// pool, schedule and recorder need only outlive Run*().
class UnaryClient {
 public:
  UnaryClient(std::unique_ptr<v1::PubSub::Stub> stub, ClientSecurity security,
              const RequestPool& pool, size_t first, const Schedule& schedule,
              PublishRecorder* recorder)
      : stub_(std::move(stub)),
        security_(std::move(security)),
        pool_(pool),
        schedule_(schedule),
        recorder_(recorder),
        next_(first) {}

  // RunClosedLoop() keeps one request outstanding: each completion sends the
  // next, until the schedule's end; after an error the next is sent after
  // kRestartBackoff, so a refusing server is not hammered.
  void RunClosedLoop();
  // RunOpenLoop() sends request k at start + offset + k * interval whether
  // or not earlier ones returned; with `max_outstanding` outstanding it waits
  // (the delay counts in latency, which runs from the intended time).
  void RunOpenLoop(Clock::duration offset, Clock::duration interval,
                   size_t max_outstanding);

 private:
  struct Call {
    grpc::ClientContext context;
    v1::PublishResponse response;
    Clock::time_point intended;
    const v1::PublishRequest* request = nullptr;
  };

  // NewCallLocked() takes the next request from the pool and counts the
  // call as in flight; Start() sends it (without the lock: a call may
  // complete inline). A call is in flight from NewCallLocked until its
  // completion has recorded it, so Drain() cannot return between a
  // completion and the call it sends next.
  std::shared_ptr<Call> NewCallLocked(Clock::time_point intended)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Start(std::shared_ptr<Call> call);
  void Issue(Clock::time_point intended);
  void Complete(const std::shared_ptr<Call>& call, const grpc::Status& status);
  // Drain() waits for the outstanding calls until the drain deadline, then
  // cancels the rest and waits for them.
  void Drain();

  const std::unique_ptr<v1::PubSub::Stub> stub_;
  const ClientSecurity security_;
  const RequestPool& pool_;
  const Schedule& schedule_;
  PublishRecorder* const recorder_;
  bool closed_loop_ = false;  // set before the first Issue
  absl::Mutex mu_;
  bool failed_ ABSL_GUARDED_BY(mu_) = false;  // closed loop: resend after error
  size_t next_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::shared_ptr<Call>> in_flight_ ABSL_GUARDED_BY(mu_);
};

std::shared_ptr<UnaryClient::Call> UnaryClient::NewCallLocked(
    Clock::time_point intended) {
  auto call = std::make_shared<Call>();
  call->intended = intended;
  call->request = &pool_[next_];
  next_ = (next_ + 1) % pool_.size();
  in_flight_.insert(call);
  return call;
}

void UnaryClient::Start(std::shared_ptr<Call> call) {
  Call* raw = call.get();
  AddToken(security_, &raw->context);
  stub_->async()->Publish(&raw->context, raw->request, &raw->response,
                          [this, call = std::move(call)](grpc::Status status) {
                            Complete(call, status);
                          });
}

void UnaryClient::Issue(Clock::time_point intended) {
  std::shared_ptr<Call> call;
  {
    absl::MutexLock lock(&mu_);
    call = NewCallLocked(intended);
  }
  Start(std::move(call));
}

void UnaryClient::Complete(const std::shared_ptr<Call>& call,
                           const grpc::Status& status) {
  const Clock::time_point now = Clock::now();
  if (status.ok()) {
    recorder_->RecordResponse(call->intended, now, call->response);
  } else {
    recorder_->RecordError(status.error_code());
  }
  std::shared_ptr<Call> next;
  {
    absl::MutexLock lock(&mu_);
    in_flight_.erase(call);
    bool again = closed_loop_ && now < schedule_.end;
    // A callback must not sleep: the client thread backs off and resends.
    if (again && !status.ok()) {
      failed_ = true;
      again = false;
    }
    if (again) next = NewCallLocked(Clock::now());
  }
  if (next != nullptr) Start(std::move(next));
}

void UnaryClient::Drain() {
  auto empty = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return in_flight_.empty();
  };
  std::vector<std::shared_ptr<Call>> late;
  {
    absl::MutexLock lock(&mu_);
    if (mu_.AwaitWithTimeout(
            absl::Condition(&empty),
            absl::FromChrono(schedule_.drain_deadline - Clock::now()))) {
      return;
    }
    late.assign(in_flight_.begin(), in_flight_.end());
  }
  // Cancel outside the lock: a cancelled call may complete on this thread.
  recorder_->RecordUnanswered(late.size());
  for (const std::shared_ptr<Call>& call : late) call->context.TryCancel();
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&empty));
}

void UnaryClient::RunClosedLoop() {
  closed_loop_ = true;
  Issue(Clock::now());
  auto failed = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return failed_; };
  while (Clock::now() < schedule_.end) {
    {
      absl::MutexLock lock(&mu_);
      if (!mu_.AwaitWithTimeout(
              absl::Condition(&failed),
              absl::FromChrono(schedule_.end - Clock::now()))) {
        continue;
      }
      failed_ = false;
    }
    std::this_thread::sleep_for(kRestartBackoff);
    if (Clock::now() < schedule_.end) Issue(Clock::now());
  }
  Drain();
}

void UnaryClient::RunOpenLoop(Clock::duration offset, Clock::duration interval,
                              size_t max_outstanding) {
  auto has_room = [this, max_outstanding]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return in_flight_.size() < max_outstanding;
  };
  for (int64_t k = 0;; ++k) {
    const Clock::time_point intended = schedule_.start + offset + k * interval;
    if (intended >= schedule_.end) break;
    std::this_thread::sleep_until(intended);
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(&has_room));
    }
    Issue(intended);
  }
  Drain();
}

// ---------------------------------------------------------------------------
// Driver.

// RunClient() runs publisher `c` of `o.clients` on its own channel.
void RunClient(const LoadOptions& o, int c, const RequestPool& pool,
               const Schedule& schedule, PublishRecorder* recorder) {
  std::shared_ptr<grpc::Channel> channel = NewChannel(o.server, o.security);
  // Connect before the first publish (at most control_timeout): a fresh
  // channel whose first connection attempt fails (a burst of new
  // connections to a busy server) fails its calls at once with UNAVAILABLE
  // until it reconnects, which a load run would count as errors.
  channel->WaitForConnected(std::chrono::system_clock::now() +
                            absl::ToChronoMilliseconds(o.control_timeout));
  std::unique_ptr<v1::PubSub::Stub> stub = v1::PubSub::NewStub(channel);
  // Clients start at different points of the pool so that they do not
  // publish the same events at the same moment.
  const size_t first = pool.size() * c / o.clients;
  if (o.mode == PublishMode::kStream) {
    RunStreamClient(stub.get(), o.security, pool, first, o.window, schedule,
                    recorder);
    return;
  }
  auto unary = std::make_shared<UnaryClient>(std::move(stub), o.security, pool,
                                             first, schedule, recorder);
  KeepUntilExit(unary);
  if (o.rate <= 0) {
    unary->RunClosedLoop();
    return;
  }
  // Each client paces rate / clients events/s; offsets spread them evenly.
  const std::chrono::duration<double> interval(o.batch * o.clients / o.rate);
  const auto step = std::chrono::duration_cast<Clock::duration>(interval);
  unary->RunOpenLoop(step * c / o.clients, step, o.max_outstanding);
}

}  // namespace

void RunPublish(const LoadOptions& options, const RequestPool& pool,
                PublishResult* result) {
  const Schedule schedule = MakeSchedule(options);
  std::vector<std::unique_ptr<PublishRecorder>> recorders;
  std::vector<std::thread> threads;
  for (int c = 0; c < options.clients; ++c) {
    recorders.push_back(std::make_unique<PublishRecorder>(schedule));
    threads.emplace_back(RunClient, std::cref(options), c, std::cref(pool),
                         std::cref(schedule), recorders.back().get());
  }
  for (std::thread& t : threads) t.join();
  for (const auto& r : recorders) r->MergeInto(result);
}

}  // namespace internal
}  // namespace client
}  // namespace cohort
