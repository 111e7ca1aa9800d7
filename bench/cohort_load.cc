// cohort_load: a load driver for a running cohortd. It loads a Fabret
// workload's subscriptions into the server (Subscribe), publishes the
// workload's events for a fixed time through PublishStream or unary Publish
// (closed or open loop), and reports throughput, latency, errors by gRPC
// status code and the server's per-stage profile (GetStats).
//
//   cohort_load --server=127.0.0.1:50051 --preset=fabret-1m --mode=stream
//       --clients=4 --batch=64 --window=4 --duration_s=10 --json=/tmp/r.json
//   cohort_load --skip_load --mode=unary --rate=50000 --clients=4
//
// Measurement. A publish run lasts --warmup_s + --duration_s; no request is
// sent after that. Throughput counts the events whose response arrived inside
// the measured interval (after the warmup). Latency is recorded for every
// request *sent* inside the measured interval (open loop: every request whose
// intended send time lies inside it), each waited for up to --drain_s after
// the interval, so the slow tail at the end is not dropped. Open-loop latency
// runs from the intended send time, so a server that falls behind is charged
// for the queueing it causes (no coordinated omission). Requests still
// unanswered after the drain are cancelled and counted as "unanswered".
//
// Threads. Each client has its own channel (its own TCP connection). gRPC's
// callback threads run every completion; one thread per client only opens,
// paces and closes calls. Server counters (batches, events, batch sizes) are
// reported as the difference between a GetStats before and after the publish
// phase; the latency summaries GetStats returns cover the server's lifetime.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "bench/workload.h"
#include "grpcpp/grpcpp.h"
#include "proto/cohort/v1/pubsub.grpc.pb.h"
#include "proto/cohort/v1/pubsub.pb.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051",
          "cohortd address, host:port.");
ABSL_FLAG(std::string, preset, "fabret-1m",
          "Workload preset to generate in memory (fabret-1m, fabret-uniform); "
          "ignored when --workload is set.");
ABSL_FLAG(std::string, workload, "",
          "Read the workload from this file (cohort-workload v1 text) instead "
          "of generating --preset.");
ABSL_FLAG(int64_t, subscriptions, -1,
          "Override the preset's subscription count (-1: preset value).");
ABSL_FLAG(int64_t, events, -1,
          "Override the preset's event count (-1: preset value).");
ABSL_FLAG(bool, skip_load, false,
          "Do not subscribe; publish against the subscriptions the server "
          "already holds.");
ABSL_FLAG(int, subscribe_batch, 5000,
          "Subscriptions per Subscribe request in the load phase (at most the "
          "server's --max_batch).");
ABSL_FLAG(std::string, mode, "stream",
          "Publish phase: stream (PublishStream), unary (Publish), or none "
          "(load only).");
ABSL_FLAG(int, clients, 1,
          "Concurrent publishers, each with its own channel: streams in "
          "stream mode, callers (closed loop) or pacers (open loop) in unary "
          "mode.");
ABSL_FLAG(int, batch, 64, "Events per PublishRequest.");
ABSL_FLAG(int, window, 4,
          "Stream mode: PublishRequests a stream may have sent and not yet "
          "had answered.");
ABSL_FLAG(double, rate, 0,
          "Unary mode: 0 = closed loop (each client sends its next request "
          "when the previous returns); > 0 = open loop at this many events/s "
          "in total, latency measured from each request's intended send "
          "time.");
ABSL_FLAG(int, max_outstanding, 10000,
          "Open loop: requests one client may have outstanding; beyond it the "
          "pacer waits (the wait counts in latency). Bounds client memory.");
ABSL_FLAG(double, duration_s, 10, "Measured publish interval, in seconds.");
ABSL_FLAG(double, warmup_s, 2,
          "Publishing before the measured interval, in seconds (not "
          "counted).");
ABSL_FLAG(double, drain_s, 10,
          "After the interval, how long to wait for outstanding requests "
          "before cancelling them.");
ABSL_FLAG(bool, return_ids, false, "Set PublishRequest.return_ids.");
ABSL_FLAG(std::string, json, "",
          "Also write the results as JSON to this file.");

namespace cohort {
namespace bench {
namespace {

namespace v1 = ::cohort::v1;
using Clock = std::chrono::steady_clock;

// The load phase keeps this many Subscribe batches in flight: enough to hide
// the round trip without queueing much more than one batch per partition.
constexpr int kLoadBatchesInFlight = 4;
// Subscriptions are spread over this many subscriber names ("s0" ... "s999"),
// so Listen experiments find a realistic number of subscribers.
constexpr size_t kSubscriberNames = 1000;
// A Subscribe batch refused with RESOURCE_EXHAUSTED is retried up to this
// many times, after kRetryBackoff doubled per attempt (the API asks clients
// to back off).
constexpr int kMaxSubscribeAttempts = 8;
constexpr auto kRetryBackoff = std::chrono::milliseconds(10);
// A PublishStream that fails is reopened, and a closed-loop caller whose
// request failed sends its next, after this pause, so a server that rejects
// every call is not hammered.
constexpr auto kRestartBackoff = std::chrono::milliseconds(100);
// Deadline for connecting and for GetStats.
constexpr auto kControlTimeout = std::chrono::seconds(10);

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// Status code name as the API documents it, e.g. "RESOURCE_EXHAUSTED"
// (gRPC and Abseil number their codes alike).
std::string CodeName(grpc::StatusCode code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

using ErrorCounts = std::map<std::string, uint64_t>;

// LatencyHistogram: a log-bucketed histogram of durations in nanoseconds.
// Each power-of-two range [2^e, 2^(e+1)) is split into 32 equal sub-buckets,
// so a percentile (a bucket's midpoint) is within 1/64 of the true value;
// values below 32 ns are exact. Not thread-safe: callers lock.
class LatencyHistogram {
 public:
  LatencyHistogram() : counts_(kBuckets, 0) {}

  void Record(uint64_t ns) {
    ++counts_[Index(ns)];
    ++count_;
    sum_ += ns;
    max_ = std::max(max_, ns);
  }
  void Merge(const LatencyHistogram& other) {
    for (int i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
    count_ += other.count_;
    sum_ += other.sum_;
    max_ = std::max(max_, other.max_);
  }
  uint64_t count() const { return count_; }
  uint64_t max() const { return max_; }
  double Mean() const {
    return count_ == 0 ? 0 : static_cast<double>(sum_) / count_;
  }
  // Percentile() is the midpoint of the bucket holding the ceil(q * count)-th
  // smallest value, capped at the maximum; 0 when empty.
  uint64_t Percentile(double q) const {
    if (count_ == 0) return 0;
    const uint64_t rank = std::max<uint64_t>(
        1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_))));
    uint64_t seen = 0;
    for (int i = 0; i < kBuckets; ++i) {
      seen += counts_[i];
      if (seen >= rank) return std::min(max_, Lower(i) + Width(i) / 2);
    }
    return max_;
  }

 private:
  static constexpr int kSubBits = 5;  // 32 sub-buckets per power of two
  static constexpr uint64_t kSub = uint64_t{1} << kSubBits;
  // Group 0 holds 0 ... 31 exactly; group g >= 1 holds [2^(g+4), 2^(g+5)).
  static constexpr int kBuckets = (64 - kSubBits + 1) * kSub;

  static int Index(uint64_t v) {
    if (v < kSub) return static_cast<int>(v);
    const int shift = 63 - __builtin_clzll(v) - kSubBits;
    return (shift + 1) * kSub + static_cast<int>((v >> shift) & (kSub - 1));
  }
  static uint64_t Lower(int i) {
    const int group = i / kSub;
    const uint64_t sub = i % kSub;
    return group == 0 ? sub : (kSub + sub) << (group - 1);
  }
  static uint64_t Width(int i) {
    const int group = i / kSub;
    return group == 0 ? 1 : uint64_t{1} << (group - 1);
  }

  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t max_ = 0;
};

// ---------------------------------------------------------------------------
// Workload -> API messages.

absl::StatusOr<Workload> LoadWorkload() {
  return LoadOrGenerate(absl::GetFlag(FLAGS_workload),
                        absl::GetFlag(FLAGS_preset),
                        absl::GetFlag(FLAGS_subscriptions),
                        absl::GetFlag(FLAGS_events));
}

// Subscription `i` of the workload as a SubscriptionSpec (matcher::Op and
// cohort.v1.Op are numbered alike).
void FillSubscription(const Workload& w, size_t i, v1::SubscriptionSpec* spec) {
  spec->set_subscriber(absl::StrCat("s", i % kSubscriberNames));
  for (const matcher::Predicate& p : w.subscriptions[i]) {
    v1::Predicate* out = spec->add_predicates();
    out->set_attribute(w.attribute_names[p.attribute]);
    out->set_op(static_cast<v1::Op>(p.op));
    out->set_value(p.value);
    if (p.op == matcher::Op::kBetween) out->set_upper(p.upper);
  }
}

// Event `i` of the workload, with its derived payload.
void FillEvent(const Workload& w, size_t i, v1::Event* event) {
  for (const matcher::AttributeValue& a : w.events[i]) {
    v1::Attribute* out = event->add_attributes();
    out->set_name(w.attribute_names[a.attribute]);
    out->set_value(a.value);
  }
  event->set_payload(EventPayload(w.options, i));
}

// The requests publishers cycle through: ceil(N / batch) requests, request k
// holding events k*batch ... k*batch+batch-1 modulo N, so one pass over the
// pool publishes every event at least once (the last request wraps around to
// the first events). Built once and shared read-only by all clients.
using RequestPool = std::vector<v1::PublishRequest>;

RequestPool BuildRequestPool(const Workload& w, int batch, bool return_ids) {
  const size_t n = w.events.size();
  RequestPool pool((n + batch - 1) / batch);
  for (size_t k = 0; k < pool.size(); ++k) {
    pool[k].set_return_ids(return_ids);
    for (int j = 0; j < batch; ++j) {
      FillEvent(w, (k * batch + j) % n, pool[k].add_events());
    }
  }
  return pool;
}

std::shared_ptr<grpc::Channel> NewChannel(const std::string& target) {
  grpc::ChannelArguments args;
  // Channels with equal arguments share connections; a local subchannel pool
  // gives each client its own TCP connection, as separate publishers have.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  // Responses with return_ids can exceed gRPC's 4 MiB default.
  args.SetMaxReceiveMessageSize(-1);
  std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(
      target, grpc::InsecureChannelCredentials(), args);
  // Channels live until the process exits. A callback-API call's context
  // holds a channel reference and is destroyed on gRPC's callback thread;
  // if that were the last reference, gRPC would tear down its callback
  // completion queue from that very thread and crash (seen at the end of a
  // load phase). Intentionally leaked.
  static absl::Mutex* keep_mu = new absl::Mutex;
  static auto* keep = new std::vector<std::shared_ptr<grpc::Channel>>;
  absl::MutexLock lock(keep_mu);
  keep->push_back(channel);
  return channel;
}

// ---------------------------------------------------------------------------
// Load phase.

struct LoadResult {
  bool ran = false;
  uint64_t subscribed = 0;  // ids returned
  uint64_t failed = 0;      // subscriptions in batches that finally failed
  double seconds = 0;
  ErrorCounts errors;  // every failed attempt, retried or not
};

// SubscribeLoader: sends the workload's subscriptions in batches with at most
// kLoadBatchesInFlight in flight, retrying batches refused as overloaded.
// Run() is called once, from one thread; completions run on gRPC threads.
class SubscribeLoader {
 public:
  SubscribeLoader(v1::PubSub::Stub* stub, const Workload& workload, int batch)
      : stub_(stub), workload_(workload), batch_(batch) {}

  LoadResult Run();

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

  v1::PubSub::Stub* const stub_;
  const Workload& workload_;
  const int batch_;
  size_t next_ = 0;  // next subscription to send; Run()'s thread only
  absl::Mutex mu_;
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<std::unique_ptr<Call>> retries_ ABSL_GUARDED_BY(mu_);
  LoadResult result_ ABSL_GUARDED_BY(mu_);
};

std::unique_ptr<SubscribeLoader::Call> SubscribeLoader::NextCall() {
  const size_t n = workload_.subscriptions.size();
  std::unique_ptr<Call> call;
  {
    absl::MutexLock lock(&mu_);
    auto ready = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return in_flight_ < kLoadBatchesInFlight &&
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

LoadResult SubscribeLoader::Run() {
  const Clock::time_point start = Clock::now();
  while (std::unique_ptr<Call> call = NextCall()) Issue(std::move(call));
  absl::MutexLock lock(&mu_);
  result_.ran = true;
  result_.seconds = Seconds(Clock::now() - start);
  return result_;
}

// ---------------------------------------------------------------------------
// Publish phase: measurement.

// When a publish run starts, when its measured interval starts and ends (no
// request is sent after `end`), and when waiting for answers stops.
struct Schedule {
  Clock::time_point start;
  Clock::time_point measure_start;
  Clock::time_point end;
  Clock::time_point drain_deadline;
};

// What the publishers observed, merged over clients.
struct Totals {
  LatencyHistogram latency;  // requests sent in the measured interval
  uint64_t requests = 0;     // answered in the measured interval
  uint64_t events = 0;       // answered in the measured interval
  uint64_t matches = 0;      // sum of match_count over those events
  uint64_t unanswered = 0;   // requests abandoned (stream broke, cancelled)
  ErrorCounts errors;
};

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
  void MergeInto(Totals* out) {
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
  Totals totals_ ABSL_GUARDED_BY(mu_);
};

// ---------------------------------------------------------------------------
// Publish phase: PublishStream.

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
  grpc::Status Run(v1::PubSub::Stub* stub);
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

grpc::Status StreamClient::Run(v1::PubSub::Stub* stub) {
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
void RunStreamClient(v1::PubSub::Stub* stub, const RequestPool& pool,
                     size_t first, int window, const Schedule& schedule,
                     PublishRecorder* recorder) {
  size_t next = first;
  while (Clock::now() < schedule.end) {
    auto stream =
        std::make_unique<StreamClient>(pool, next, window, schedule, recorder);
    const grpc::Status status = stream->Run(stub);
    next = stream->next();
    if (status.ok()) break;
    recorder->RecordError(status.error_code());
    std::this_thread::sleep_for(kRestartBackoff);
  }
}

// ---------------------------------------------------------------------------
// Publish phase: unary Publish.

// UnaryClient: one publisher of unary Publish calls through the callback
// API, closed loop (RunClosedLoop) or open loop (RunOpenLoop). Completions
// run on gRPC threads; Run*() on the client's thread. The object must outlive
// its completions: keep it until the process ends.
class UnaryClient {
 public:
  UnaryClient(v1::PubSub::Stub* stub, const RequestPool& pool, size_t first,
              const Schedule& schedule, PublishRecorder* recorder)
      : stub_(stub),
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
  };

  void Issue(Clock::time_point intended);
  void Complete(const std::shared_ptr<Call>& call, const grpc::Status& status);
  // Drain() waits for the outstanding calls until the drain deadline, then
  // cancels the rest and waits for them.
  void Drain();

  v1::PubSub::Stub* const stub_;
  const RequestPool& pool_;
  const Schedule& schedule_;
  PublishRecorder* const recorder_;
  bool closed_loop_ = false;  // set before the first Issue
  absl::Mutex mu_;
  bool failed_ ABSL_GUARDED_BY(mu_) = false;  // closed loop: resend after error
  size_t next_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::shared_ptr<Call>> in_flight_ ABSL_GUARDED_BY(mu_);
};

void UnaryClient::Issue(Clock::time_point intended) {
  auto call = std::make_shared<Call>();
  call->intended = intended;
  const v1::PublishRequest* request;
  {
    absl::MutexLock lock(&mu_);
    in_flight_.insert(call);
    request = &pool_[next_];
    next_ = (next_ + 1) % pool_.size();
  }
  stub_->async()->Publish(
      &call->context, request, &call->response,
      [this, call](grpc::Status status) { Complete(call, status); });
}

void UnaryClient::Complete(const std::shared_ptr<Call>& call,
                           const grpc::Status& status) {
  const Clock::time_point now = Clock::now();
  if (status.ok()) {
    recorder_->RecordResponse(call->intended, now, call->response);
  } else {
    recorder_->RecordError(status.error_code());
  }
  bool again;
  {
    absl::MutexLock lock(&mu_);
    in_flight_.erase(call);
    again = closed_loop_ && now < schedule_.end;
    // A callback must not sleep: the client thread backs off and resends.
    if (again && !status.ok()) {
      failed_ = true;
      again = false;
    }
  }
  if (again) Issue(Clock::now());
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
// Publish phase: driver.

struct PublishOptions {
  std::string server;
  std::string mode;
  int clients = 1;
  int batch = 64;
  int window = 4;
  double rate = 0;
  size_t max_outstanding = 0;
  double warmup_s = 0;
  double duration_s = 0;
  double drain_s = 0;
  bool return_ids = false;
};

Schedule MakeSchedule(const PublishOptions& o) {
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

// RunClient() runs publisher `c` of `o.clients` on its own channel.
void RunClient(const PublishOptions& o, int c, const RequestPool& pool,
               const Schedule& schedule, PublishRecorder* recorder,
               std::unique_ptr<UnaryClient>* unary_out) {
  std::shared_ptr<grpc::Channel> channel = NewChannel(o.server);
  std::unique_ptr<v1::PubSub::Stub> stub = v1::PubSub::NewStub(channel);
  // Clients start at different points of the pool so that they do not
  // publish the same events at the same moment.
  const size_t first = pool.size() * c / o.clients;
  if (o.mode == "stream") {
    RunStreamClient(stub.get(), pool, first, o.window, schedule, recorder);
    return;
  }
  *unary_out = std::make_unique<UnaryClient>(stub.get(), pool, first, schedule,
                                             recorder);
  if (o.rate <= 0) {
    (*unary_out)->RunClosedLoop();
    return;
  }
  // Each client paces rate / clients events/s; offsets spread them evenly.
  const std::chrono::duration<double> interval(o.batch * o.clients / o.rate);
  const auto step = std::chrono::duration_cast<Clock::duration>(interval);
  (*unary_out)->RunOpenLoop(step * c / o.clients, step, o.max_outstanding);
}

Totals RunPublish(const PublishOptions& o, const RequestPool& pool) {
  const Schedule schedule = MakeSchedule(o);
  std::vector<std::unique_ptr<PublishRecorder>> recorders;
  // Unary clients stay alive until the process ends (see UnaryClient).
  static auto* const unary = new std::vector<std::unique_ptr<UnaryClient>>();
  unary->resize(o.clients);
  std::vector<std::thread> threads;
  for (int c = 0; c < o.clients; ++c) {
    recorders.push_back(std::make_unique<PublishRecorder>(schedule));
    threads.emplace_back(RunClient, std::cref(o), c, std::cref(pool),
                         std::cref(schedule), recorders.back().get(),
                         &(*unary)[c]);
  }
  for (std::thread& t : threads) t.join();
  Totals totals;
  for (const auto& r : recorders) r->MergeInto(&totals);
  return totals;
}

// ---------------------------------------------------------------------------
// Server profile.

absl::StatusOr<v1::Stats> FetchStats(v1::PubSub::Stub* stub) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kControlTimeout);
  v1::Stats stats;
  grpc::Status status = stub->GetStats(&context, v1::GetStatsRequest(), &stats);
  if (!status.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                        status.error_message());
  }
  return stats;
}

// One stage over the publish phase: counters are after - before.
struct StageSummary {
  std::string name;
  uint64_t batches = 0;
  uint64_t events = 0;
  uint64_t matches = 0;
  double mean_batch = 0;  // from the batch_sizes histogram
  // events / batches: exact where a batch holds events (a partition's
  // cohorts), unlike the histogram estimate, whose buckets are wide.
  double events_per_batch = 0;
  const v1::StageStats* stats = nullptr;  // the "after" snapshot
};

// Mean batch size from the batch_sizes histogram difference: each bucket
// counts at its midpoint (previous listed bound + 1 ... its bound); the
// overflow bucket at its lower end.
double HistogramMean(const v1::StageStats& after,
                     const v1::StageStats* before) {
  std::map<uint64_t, int64_t> counts;
  for (const v1::HistogramBucket& b : after.batch_sizes()) {
    counts[b.upper_bound()] += b.count();
  }
  if (before != nullptr) {
    for (const v1::HistogramBucket& b : before->batch_sizes()) {
      counts[b.upper_bound()] -= b.count();
    }
  }
  double sum = 0, n = 0;
  uint64_t lower = 1;
  for (const auto& [bound, count] : counts) {
    const double mid = bound == UINT64_MAX ? lower : (lower + bound) / 2.0;
    sum += mid * count;
    n += count;
    lower = bound + 1;
  }
  return n == 0 ? 0 : sum / n;
}

std::vector<StageSummary> SummarizeStages(const v1::Stats& before,
                                          const v1::Stats& after) {
  absl::flat_hash_map<std::string, const v1::StageStats*> old;
  for (const v1::StageStats& s : before.stages()) old[s.name()] = &s;
  std::vector<StageSummary> out;
  for (const v1::StageStats& s : after.stages()) {
    auto it = old.find(s.name());
    const v1::StageStats* b = it == old.end() ? nullptr : it->second;
    StageSummary sum;
    sum.name = s.name();
    sum.batches = s.batches() - (b ? b->batches() : 0);
    sum.events = s.events() - (b ? b->events() : 0);
    sum.matches = s.matches() - (b ? b->matches() : 0);
    sum.mean_batch = HistogramMean(s, b);
    if (sum.batches > 0) {
      sum.events_per_batch = static_cast<double>(sum.events) / sum.batches;
    }
    sum.stats = &s;
    out.push_back(sum);
  }
  return out;
}

// ---------------------------------------------------------------------------
// Output.

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppendFormat(&out, "\\u%04x", c);
    } else {
      out.push_back(c);
    }
  }
  return out + "\"";
}

std::string ErrorsJson(const ErrorCounts& errors) {
  std::string out = "{";
  for (const auto& [code, n] : errors) {
    absl::StrAppend(&out, out.size() > 1 ? ", " : "", JsonString(code), ": ",
                    n);
  }
  return out + "}";
}

std::string LatencyJson(const LatencyHistogram& h) {
  auto us = [](double ns) { return ns / 1000.0; };
  return absl::StrFormat(
      "{\"count\": %d, \"p50\": %.1f, \"p90\": %.1f, \"p99\": %.1f, "
      "\"p999\": %.1f, \"max\": %.1f, \"mean\": %.1f}",
      h.count(), us(h.Percentile(0.50)), us(h.Percentile(0.90)),
      us(h.Percentile(0.99)), us(h.Percentile(0.999)), us(h.max()),
      us(h.Mean()));
}

std::string LoadJson(const LoadResult& load) {
  if (!load.ran) return "null";
  return absl::StrFormat(
      "{\"subscriptions\": %d, \"failed\": %d, \"seconds\": %.3f, "
      "\"subscriptions_per_s\": %.0f, \"errors\": %s}",
      load.subscribed, load.failed, load.seconds,
      load.seconds > 0 ? load.subscribed / load.seconds : 0.0,
      ErrorsJson(load.errors));
}

std::string StatsJson(const v1::Stats& after,
                      const std::vector<StageSummary>& stages) {
  std::string out = absl::StrFormat(
      "{\"mode\": %s, \"partitions\": %d, \"cohort_max\": %d, "
      "\"cohort_wait_us\": %d, \"subscriptions\": %d, \"stages\": [",
      JsonString(after.mode()), after.partitions(), after.cohort_max(),
      after.cohort_wait_us(), after.subscriptions());
  for (size_t i = 0; i < stages.size(); ++i) {
    const StageSummary& s = stages[i];
    absl::StrAppendFormat(
        &out,
        "%s{\"name\": %s, \"batches\": %d, \"events\": %d, \"matches\": %d, "
        "\"mean_batch_size\": %.2f, \"events_per_batch\": %.2f, \"wait_us\": "
        "{\"p50\": %.1f, \"p99\": "
        "%.1f}, \"service_us\": {\"p50\": %.1f, \"p99\": %.1f}, "
        "\"rejections\": %d}",
        i == 0 ? "" : ", ", JsonString(s.name), s.batches, s.events, s.matches,
        s.mean_batch, s.events_per_batch, s.stats->wait().p50_us(),
        s.stats->wait().p99_us(), s.stats->service().p50_us(),
        s.stats->service().p99_us(), s.stats->rejections());
  }
  return out + "]}";
}

struct Report {
  PublishOptions options;
  LoadResult load;
  bool published = false;
  Totals totals;
  absl::StatusOr<v1::Stats> before = absl::UnknownError("not fetched");
  absl::StatusOr<v1::Stats> after = absl::UnknownError("not fetched");
};

std::string ReportJson(const Report& r) {
  const PublishOptions& o = r.options;
  const Totals& t = r.totals;
  std::string stats = "null";
  if (r.before.ok() && r.after.ok()) {
    stats = StatsJson(*r.after, SummarizeStages(*r.before, *r.after));
  }
  return absl::StrFormat(
      "{\"phase\": %s, \"mode\": %s, \"server\": %s, \"clients\": %d, "
      "\"batch\": %d, \"window\": %d, \"rate\": %.0f, \"return_ids\": %s, "
      "\"warmup_s\": %.3f, \"duration\": %.3f, \"requests\": %d, "
      "\"events\": %d, \"events_per_s\": %.0f, \"matches_per_event\": %.3f, "
      "\"latency_us\": %s, \"unanswered\": %d, \"errors\": %s, \"load\": %s, "
      "\"stats\": %s}\n",
      JsonString(r.published ? "publish" : "load"), JsonString(o.mode),
      JsonString(o.server), o.clients, o.batch, o.window, o.rate,
      o.return_ids ? "true" : "false", o.warmup_s, o.duration_s, t.requests,
      t.events, t.events / o.duration_s,
      t.events == 0 ? 0.0 : static_cast<double>(t.matches) / t.events,
      LatencyJson(t.latency), t.unanswered, ErrorsJson(t.errors),
      LoadJson(r.load), stats);
}

std::string ErrorsText(const ErrorCounts& errors) {
  if (errors.empty()) return " none";
  std::string out;
  for (const auto& [code, n] : errors) absl::StrAppend(&out, " ", code, "=", n);
  return out;
}

void PrintLoad(const LoadResult& load) {
  absl::PrintF(
      "load: %d subscriptions in %.2f s = %.0f subscriptions/s; %d failed; "
      "errors:%s\n",
      load.subscribed, load.seconds,
      load.seconds > 0 ? load.subscribed / load.seconds : 0.0, load.failed,
      ErrorsText(load.errors));
}

void PrintPublish(const Report& r) {
  const PublishOptions& o = r.options;
  const Totals& t = r.totals;
  const LatencyHistogram& h = t.latency;
  absl::PrintF(
      "publish: mode %s, %d clients, batch %d, window %d, rate %.0f, "
      "return_ids %s\n"
      "  %d events in %.1f s = %.0f events/s (%d requests), %.2f "
      "matches/event\n"
      "  latency us: p50 %.0f  p90 %.0f  p99 %.0f  p99.9 %.0f  max %.0f  "
      "mean %.0f  (%d requests)\n"
      "  unanswered %d; errors:%s\n",
      o.mode, o.clients, o.batch, o.window, o.rate,
      o.return_ids ? "true" : "false", t.events, o.duration_s,
      t.events / o.duration_s, t.requests,
      t.events == 0 ? 0.0 : static_cast<double>(t.matches) / t.events,
      h.Percentile(0.5) / 1e3, h.Percentile(0.9) / 1e3,
      h.Percentile(0.99) / 1e3, h.Percentile(0.999) / 1e3, h.max() / 1e3,
      h.Mean() / 1e3, h.count(), t.unanswered, ErrorsText(t.errors));
}

void PrintStats(const Report& r) {
  if (!r.before.ok() || !r.after.ok()) {
    absl::PrintF("stats: GetStats failed: %s\n",
                 (r.before.ok() ? r.after : r.before).status().ToString());
    return;
  }
  const v1::Stats& a = *r.after;
  absl::PrintF(
      "server: mode %s, %d partitions, cohort_max %d, %d subscriptions; "
      "stages over the publish phase (wait/service: since server start):\n",
      a.mode(), a.partitions(), a.cohort_max(), a.subscriptions());
  for (const StageSummary& s : SummarizeStages(*r.before, a)) {
    absl::PrintF(
        "  %-12s batches %8d  events %9d  mean batch %5.1f (events/batch "
        "%5.1f)  wait p50/p99 "
        "%7.0f/%7.0f us  service p50/p99 %7.0f/%7.0f us\n",
        s.name, s.batches, s.events, s.mean_batch, s.events_per_batch,
        s.stats->wait().p50_us(), s.stats->wait().p99_us(),
        s.stats->service().p50_us(), s.stats->service().p99_us());
  }
}

// ---------------------------------------------------------------------------
// main.

absl::StatusOr<PublishOptions> OptionsFromFlags() {
  PublishOptions o;
  o.server = absl::GetFlag(FLAGS_server);
  o.mode = absl::GetFlag(FLAGS_mode);
  o.clients = absl::GetFlag(FLAGS_clients);
  o.batch = absl::GetFlag(FLAGS_batch);
  o.window = absl::GetFlag(FLAGS_window);
  o.rate = absl::GetFlag(FLAGS_rate);
  o.max_outstanding = std::max(1, absl::GetFlag(FLAGS_max_outstanding));
  o.warmup_s = absl::GetFlag(FLAGS_warmup_s);
  o.duration_s = absl::GetFlag(FLAGS_duration_s);
  o.drain_s = absl::GetFlag(FLAGS_drain_s);
  o.return_ids = absl::GetFlag(FLAGS_return_ids);
  if (o.mode != "stream" && o.mode != "unary" && o.mode != "none") {
    return absl::InvalidArgumentError("--mode: stream, unary or none");
  }
  if (o.clients < 1 || o.batch < 1 || o.window < 1 ||
      absl::GetFlag(FLAGS_subscribe_batch) < 1) {
    return absl::InvalidArgumentError(
        "--clients, --batch, --window and --subscribe_batch must be >= 1");
  }
  if (!(o.duration_s > 0) || o.warmup_s < 0 || o.drain_s < 0 || o.rate < 0) {
    return absl::InvalidArgumentError(
        "--duration_s must be > 0; --warmup_s, --drain_s, --rate >= 0");
  }
  return o;
}

int Main() {
  absl::StatusOr<PublishOptions> options = OptionsFromFlags();
  if (!options.ok()) {
    std::cerr << "cohort_load: " << options.status().message() << "\n";
    return 2;
  }
  Report report;
  report.options = *options;
  absl::StatusOr<Workload> workload = LoadWorkload();
  if (!workload.ok()) {
    std::cerr << "workload: " << workload.status().message() << "\n";
    return 2;
  }
  std::shared_ptr<grpc::Channel> channel = NewChannel(options->server);
  if (!channel->WaitForConnected(std::chrono::system_clock::now() +
                                 kControlTimeout)) {
    std::cerr << "cohort_load: cannot connect to " << options->server << "\n";
    return 1;
  }
  std::unique_ptr<v1::PubSub::Stub> stub = v1::PubSub::NewStub(channel);
  if (!absl::GetFlag(FLAGS_skip_load)) {
    report.load = SubscribeLoader(stub.get(), *workload,
                                  absl::GetFlag(FLAGS_subscribe_batch))
                      .Run();
    PrintLoad(report.load);
  }
  if (options->mode != "none" && !workload->events.empty()) {
    const RequestPool pool =
        BuildRequestPool(*workload, options->batch, options->return_ids);
    report.before = FetchStats(stub.get());
    report.totals = RunPublish(*options, pool);
    report.after = FetchStats(stub.get());
    report.published = true;
    PrintPublish(report);
    PrintStats(report);
  }
  std::fflush(stdout);
  if (const std::string path = absl::GetFlag(FLAGS_json); !path.empty()) {
    std::ofstream out(path);
    out << ReportJson(report);
    if (!out.good()) {
      std::cerr << "cohort_load: cannot write " << path << "\n";
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace bench
}  // namespace cohort

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Load driver for cohortd: subscribes a Fabret workload, publishes its "
      "events (PublishStream or unary Publish, closed or open loop) and "
      "reports events/s, latency, errors and the server's stage profile.\n"
      "  cohort_load --server=127.0.0.1:50051 --preset=fabret-1m "
      "--mode=stream --clients=4 --json=/tmp/r.json");
  absl::ParseCommandLine(argc, argv);
  return cohort::bench::Main();
}
