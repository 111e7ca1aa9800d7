#include "service/cluster/subscription_log.h"

#include <nats/nats.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/notification.h"
#include "service/cluster/nats_status.h"
#include "service/observability/stage_profile.h"

namespace cohort {
namespace service {
namespace {

constexpr int kAppendThreads = 4;
// How long Start keeps trying to reach JetStream (a cluster just started
// elects its metadata leader within a second or so).
constexpr int64_t kStartTimeoutMs = 30000;
constexpr int64_t kTickNs = 10'000'000;  // the watchdog's waiter sweep

natsConnection* Nc(void* p) { return static_cast<natsConnection*>(p); }
jsCtx* Js(void* p) { return static_cast<jsCtx*>(p); }

bool Expired(int64_t deadline_ns, int64_t now_ns) {
  return deadline_ns > 0 && deadline_ns != std::numeric_limits<int64_t>::max() &&
         now_ns >= deadline_ns;
}

void SleepMs(int64_t ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

}  // namespace

SubscriptionLog::SubscriptionLog(const ClusterOptions& options)
    : options_(options),
      subject_(absl::StrCat("cohort.log.", options.stream)) {
  std::random_device random;
  incarnation_ = absl::StrCat(options.node, "-", random(), random());
}

absl::StatusOr<std::unique_ptr<SubscriptionLog>> SubscriptionLog::Connect(
    const ClusterOptions& options) {
  if (options.nats.empty()) {
    return absl::InvalidArgumentError("--cluster_nats: no NATS URL");
  }
  if (options.replicas < 1 || options.replicas > 5) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--cluster_replicas: ", options.replicas, " is not in [1, 5]"));
  }
  if (options.lost_timeout_ms < 100) {
    return absl::InvalidArgumentError(
        absl::StrCat("--cluster_lost_timeout_ms: ", options.lost_timeout_ms,
                     " is below 100"));
  }
  if (options.stream.empty() ||
      options.stream.find_first_of(" .*>\t") != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--cluster_stream: '", options.stream,
        "' must be a non-empty name without spaces, '.', '*' or '>'"));
  }
  std::unique_ptr<SubscriptionLog> log(new SubscriptionLog(options));
  if (absl::Status s = log->ConnectToStream(); !s.ok()) {
    log->Shutdown();
    return s;
  }
  return log;
}

absl::StatusOr<SubscriptionLog::Bounds> SubscriptionLog::StreamBounds(
    int64_t wait_ms) {
  jsStreamInfo* info = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  jsOptions o;
  jsOptions_Init(&o);
  if (wait_ms > 0) o.Wait = wait_ms;
  natsStatus s =
      js_GetStreamInfo(&info, Js(js_), options_.stream.c_str(), &o, &jerr);
  if (s != NATS_OK) {
    return NatsError(absl::StrCat("stream ", options_.stream), s, jerr);
  }
  // An empty stream (never written, or trimmed to its end) starts after
  // its last position.
  Bounds b{info->State.Msgs > 0 ? info->State.FirstSeq
                                : info->State.LastSeq + 1,
           info->State.LastSeq};
  jsStreamInfo_Destroy(info);
  return b;
}

absl::StatusOr<uint64_t> SubscriptionLog::FirstPosition() {
  absl::StatusOr<Bounds> bounds = StreamBounds(0);
  if (!bounds.ok()) return bounds.status();
  return bounds->first;
}

absl::Status SubscriptionLog::Run(Applier applier, uint64_t start_position,
                                  AppliedHook applied_hook) {
  applier_ = std::move(applier);
  applied_hook_ = std::move(applied_hook);
  absl::StatusOr<Bounds> bounds = StreamBounds(0);
  if (!bounds.ok()) return bounds.status();
  const uint64_t first = bounds->first;
  const uint64_t last = bounds->last;
  if (last < start_position) {
    return absl::FailedPreconditionError(absl::StrCat(
        "stream ", options_.stream, " ends at position ", last,
        " but this node's state (--data_dir) reflects the log up to "
        "position ",
        start_position,
        ": it is not the stream that state came from; empty --data_dir "
        "to rebuild the node from the log"));
  }
  if (first > start_position + 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "stream ", options_.stream, " starts at position ", first,
        " but this node has applied the log only up to position ",
        start_position, " and has no snapshot to continue from"));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    applied_ = start_position;
    started_from_ = start_position;
    first_position_ = first;
    known_ = std::max(start_position, last);
    catch_up_target_ = last;
    last_contact_ns_ = MonotonicNanos();
  }
  UpdateServing();
  reader_ = std::thread([this] { ReadLoop(); });
  watchdog_ = std::thread([this] { WatchLoop(); });
  for (int i = 0; i < kAppendThreads; ++i) {
    appenders_.emplace_back([this] { AppendLoop(); });
  }
  if (options_.read_latest) {
    barrier_ = std::thread([p = this] {
      for (;;) {
        std::vector<Waiter> batch;
        {
          std::unique_lock<std::mutex> lock(p->mu_);
          p->cv_.wait(lock, [p]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
            return p->stopping_ || !p->barrier_waiters_.empty();
          });
          if (p->stopping_ && p->barrier_waiters_.empty()) return;
          batch.swap(p->barrier_waiters_);
        }
        absl::StatusOr<uint64_t> last = p->Probe();
        for (Waiter& w : batch) {
          if (!last.ok()) {
            w.ready(last.status());
          } else {
            p->WhenApplied(*last, w.deadline_ns, std::move(w.ready));
          }
        }
      }
    });
  }
  return absl::OkStatus();
}

absl::Status SubscriptionLog::ConnectToStream() {
  natsOptions* opts = nullptr;
  if (natsOptions_Create(&opts) != NATS_OK) {
    return absl::InternalError("natsOptions_Create failed");
  }
  nats_options_ = opts;
  std::vector<std::string> urls = absl::StrSplit(
      options_.nats, ',', absl::SkipWhitespace());
  std::vector<const char*> servers;
  for (std::string& url : urls) {
    url = std::string(absl::StripAsciiWhitespace(url));
    servers.push_back(url.c_str());
  }
  const int64_t ping_ms = std::max<int64_t>(100, options_.lost_timeout_ms / 4);
  natsStatus s = natsOptions_SetServers(opts, servers.data(),
                                        static_cast<int>(servers.size()));
  if (s == NATS_OK) s = natsOptions_SetName(opts, options_.node.c_str());
  // Only the servers named: a server's gossiped client URLs may not be
  // reachable from here, and an operator (or a test) that cuts this node
  // off from the URLs it was given must see it cut off.
  if (s == NATS_OK) s = natsOptions_SetIgnoreDiscoveredServers(opts, true);
  if (s == NATS_OK) s = natsOptions_SetMaxReconnect(opts, -1);
  if (s == NATS_OK) s = natsOptions_SetReconnectWait(opts, 250);
  if (s == NATS_OK) s = natsOptions_SetPingInterval(opts, ping_ms);
  if (s == NATS_OK) s = natsOptions_SetMaxPingsOut(opts, 2);
  if (s == NATS_OK) s = natsOptions_SetTimeout(opts, 2000);
  // Large subscribe batches: up to 64 MiB a message (the server's
  // max_payload must allow it too; deploy/local-cluster.sh sets it).
  if (s != NATS_OK) {
    return absl::InvalidArgumentError(
        absl::StrCat("--cluster_nats: '", options_.nats,
                     "': ", natsStatus_GetText(s)));
  }
  natsConnection* nc = nullptr;
  const int64_t give_up = MonotonicNanos() + kStartTimeoutMs * 1'000'000;
  for (;;) {
    s = natsConnection_Connect(&nc, opts);
    if (s == NATS_OK) break;
    if (MonotonicNanos() >= give_up) {
      return NatsError(absl::StrCat("--cluster_nats: cannot connect to ",
                                    options_.nats),
                       s, 0);
    }
    SleepMs(250);
  }
  connection_ = nc;
  jsOptions js_options;
  jsOptions_Init(&js_options);
  js_options.Wait = options_.append_timeout_ms;
  jsCtx* js = nullptr;
  s = natsConnection_JetStream(&js, nc, &js_options);
  if (s != NATS_OK) return NatsError("JetStream context", s, 0);
  js_ = js;

  // The stream: use it if it exists, else create it (several nodes may race
  // to create it with the same configuration; JetStream accepts that).
  for (;;) {
    jsStreamInfo* info = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    s = js_GetStreamInfo(&info, js, options_.stream.c_str(), nullptr, &jerr);
    if (s == NATS_OK) {
      jsStreamInfo_Destroy(info);
      break;
    }
    if (s == NATS_NOT_FOUND) {
      jsStreamConfig config;
      jsStreamConfig_Init(&config);
      config.Name = options_.stream.c_str();
      const char* subjects[] = {subject_.c_str()};
      config.Subjects = subjects;
      config.SubjectsLen = 1;
      config.Storage = js_FileStorage;
      config.Replicas = options_.replicas;
      config.Duplicates = options_.dedupe_window_ms * 1'000'000;
      config.MaxMsgSize = 64 << 20;
      jerr = static_cast<jsErrCode>(0);
      s = js_AddStream(&info, js, &config, nullptr, &jerr);
      if (info != nullptr) jsStreamInfo_Destroy(info);
      if (s == NATS_OK) continue;  // read it back
    }
    if (MonotonicNanos() >= give_up) {
      return NatsError(absl::StrCat("stream ", options_.stream), s, jerr);
    }
    SleepMs(250);
  }
  return absl::OkStatus();
}

SubscriptionLog::~SubscriptionLog() {
  Shutdown();
  if (js_ != nullptr) jsCtx_Destroy(Js(js_));
  if (connection_ != nullptr) natsConnection_Destroy(Nc(connection_));
  if (nats_options_ != nullptr) {
    natsOptions_Destroy(static_cast<natsOptions*>(nats_options_));
  }
}

void SubscriptionLog::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (reader_.joinable()) reader_.join();
  if (watchdog_.joinable()) watchdog_.join();
  if (barrier_.joinable()) barrier_.join();
  for (std::thread& t : appenders_) t.join();
  appenders_.clear();
  std::vector<std::pair<StatusCallback, absl::Status>> due;
  std::deque<PendingAppend> appends;
  {
    std::lock_guard<std::mutex> lock(mu_);
    due = TakeDueWaiters(MonotonicNanos());
    appends.swap(appends_);
    serving_ = false;
  }
  RunDue(std::move(due));
  for (PendingAppend& a : appends) {
    a.done(absl::UnavailableError("cohortd is shutting down"), 0);
  }
  // Closed, not destroyed: cross-node deliveries may still publish on it
  // (and fail) until the engine has stopped; the destructor frees it.
  if (connection_ != nullptr) natsConnection_Close(Nc(connection_));
}

void SubscriptionLog::SetServingObserver(std::function<void(bool)> observer) {
  bool serving;
  {
    std::lock_guard<std::mutex> lock(mu_);
    serving_observer_ = observer;
    serving = serving_;
  }
  observer(serving);
}

absl::Status SubscriptionLog::Serving() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (serving_) return absl::OkStatus();
  if (stopping_) return absl::UnavailableError("cohortd is shutting down");
  if (fell_behind_ > 0) {
    return absl::UnavailableError(absl::StrCat(
        "not serving: the subscription log now starts at position ",
        fell_behind_, ", after this node's position ", applied_,
        " (trimmed behind a shared snapshot while this node was not "
        "reading); restart the node; try another node"));
  }
  if (lost_) {
    return absl::UnavailableError(absl::StrCat(
        "not serving: the subscription log (stream ", options_.stream,
        ") has not answered for ",
        (MonotonicNanos() - last_contact_ns_) / 1'000'000,
        " ms (--cluster_lost_timeout_ms=", options_.lost_timeout_ms,
        "); try another node"));
  }
  return absl::UnavailableError(absl::StrCat(
      "not serving: catching up with the subscription log (applied ",
      applied_, " of ", catch_up_target_, "); try another node"));
}

uint64_t SubscriptionLog::AppliedBefore(int64_t time_ns) const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t found = 0;
  for (const auto& [position, stored_ns] : applied_times_) {
    if (stored_ns > time_ns) break;
    found = position;
  }
  return found;
}

uint64_t SubscriptionLog::applied() const {
  std::lock_guard<std::mutex> lock(mu_);
  return applied_;
}

void SubscriptionLog::FillStats(v1::ClusterStats* stats) const {
  std::lock_guard<std::mutex> lock(mu_);
  stats->set_node(options_.node);
  stats->set_stream(options_.stream);
  stats->set_applied_position(applied_);
  stats->set_known_position(std::max(known_, applied_));
  stats->set_serving(serving_);
  stats->set_appended(appended_);
  stats->set_applied(applied_records_);
  stats->set_duplicates(duplicates_);
  stats->set_started_from_position(started_from_);
  stats->set_log_first_position(first_position_);
}

void SubscriptionLog::UpdateServing() {
  std::function<void(bool)> observer;
  bool serving;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t now = MonotonicNanos();
    const bool lost =
        now - last_contact_ns_ > options_.lost_timeout_ms * 1'000'000;
    if (lost && !lost_) caught_up_ = false;
    lost_ = lost;
    if (!caught_up_ && !lost_ && applied_ >= catch_up_target_) {
      caught_up_ = true;
    }
    serving = caught_up_ && !lost_ && !stopping_ && fell_behind_ == 0;
    if (serving == serving_) return;
    serving_ = serving;
    observer = serving_observer_;
  }
  if (observer) observer(serving);
}

absl::StatusOr<uint64_t> SubscriptionLog::Probe() {
  absl::StatusOr<Bounds> bounds =
      StreamBounds(std::max<int64_t>(100, options_.lost_timeout_ms / 4));
  if (!bounds.ok()) {
    UpdateServing();
    return bounds.status();
  }
  const uint64_t first = bounds->first;
  const uint64_t last = bounds->last;
  {
    std::lock_guard<std::mutex> lock(mu_);
    known_ = std::max(known_, last);
    first_position_ = first;
    last_contact_ns_ = MonotonicNanos();
    // Back from an outage (or never caught up): catch up with what the
    // stream holds now before serving again.
    if (!caught_up_) catch_up_target_ = std::max(catch_up_target_, last);
  }
  UpdateServing();
  return last;
}

void SubscriptionLog::WatchLoop() {
  const int64_t probe_every_ns =
      std::max<int64_t>(25, options_.lost_timeout_ms / 4) * 1'000'000;
  int64_t next_probe = 0;
  for (;;) {
    std::vector<std::pair<StatusCallback, absl::Status>> due;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::nanoseconds(kTickNs),
                   [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
                     return stopping_;
                   });
      if (stopping_) return;
      const int64_t now = MonotonicNanos();
      due = TakeDueWaiters(now);
      PruneOutcomes(now);
    }
    RunDue(std::move(due));
    if (MonotonicNanos() >= next_probe) {
      (void)Probe();
      next_probe = MonotonicNanos() + probe_every_ns;
    }
    UpdateServing();
  }
}

void SubscriptionLog::ReadLoop() {
  natsSubscription* sub = nullptr;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) break;
    }
    if (sub == nullptr) {
      jsSubOptions so;
      jsSubOptions_Init(&so);
      so.Stream = options_.stream.c_str();
      so.Ordered = true;
      const uint64_t from = applied() + 1;
      if (from > 1) {
        so.Config.DeliverPolicy = js_DeliverByStartSequence;
        so.Config.OptStartSeq = from;
      } else {
        so.Config.DeliverPolicy = js_DeliverAll;
      }
      jsErrCode jerr = static_cast<jsErrCode>(0);
      natsStatus s = js_SubscribeSync(&sub, Js(js_), subject_.c_str(), nullptr,
                                      &so, &jerr);
      if (s != NATS_OK) {
        sub = nullptr;
        SleepMs(200);
        continue;
      }
    }
    natsMsg* msg = nullptr;
    natsStatus s = natsSubscription_NextMsg(&msg, sub, 100);
    if (s == NATS_TIMEOUT) continue;
    if (s != NATS_OK) {
      // A slow consumer, a missed heartbeat, a closed connection: read again
      // from the first position not applied.
      natsSubscription_Destroy(sub);
      sub = nullptr;
      SleepMs(100);
      continue;
    }
    jsMsgMetaData* meta = nullptr;
    if (natsMsg_GetMetaData(&meta, msg) != NATS_OK) {
      natsMsg_Destroy(msg);
      continue;
    }
    const uint64_t position = meta->Sequence.Stream;
    const int64_t log_time_ns = meta->Timestamp;
    jsMsgMetaData_Destroy(meta);
    const uint64_t expected = applied() + 1;
    if (position != expected) {
      natsMsg_Destroy(msg);
      if (position > expected) {
        // The ordered consumer never skips a record the stream holds: the
        // log was trimmed past this node (it was not reading when a
        // snapshot was published). Its state cannot go on; it stops serving
        // until restarted from the shared snapshot.
        absl::StatusOr<uint64_t> first = FirstPosition();
        if (first.ok() && *first > expected) {
          {
            std::lock_guard<std::mutex> lock(mu_);
            fell_behind_ = *first;
          }
          UpdateServing();
          std::fprintf(stderr,
                       "cohortd: cluster: the log now starts at position "
                       "%llu, after this node's position %llu: restart it "
                       "(it starts from the shared snapshot)\n",
                       static_cast<unsigned long long>(*first),
                       static_cast<unsigned long long>(expected - 1));
          std::fflush(stderr);
          natsSubscription_Destroy(sub);
          sub = nullptr;
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait(lock, [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
            return stopping_;
          });
          break;
        }
        // Else start over from the first position not applied.
        natsSubscription_Destroy(sub);
        sub = nullptr;
      }
      continue;
    }
    const absl::string_view record(natsMsg_GetData(msg),
                                   natsMsg_GetDataLength(msg));
    // Written before Notify, read after the wait: the notification orders
    // them.
    LogOutcome outcome;
    absl::Notification applied_here;
    applier_(position, record, [&](LogOutcome o) {
      outcome = std::move(o);
      applied_here.Notify();
    });
    applied_here.WaitForNotification();
    natsMsg_Destroy(msg);
    if (applied_hook_) applied_hook_(position);
    std::vector<std::pair<StatusCallback, absl::Status>> due;
    {
      std::lock_guard<std::mutex> lock(mu_);
      applied_ = position;
      known_ = std::max(known_, position);
      ++applied_records_;
      last_contact_ns_ = MonotonicNanos();
      outcomes_[position] = KeptOutcome{std::move(outcome), log_time_ns};
      if (applied_times_.empty() ||
          log_time_ns - applied_times_.back().second >= 100'000'000) {
        applied_times_.emplace_back(position, log_time_ns);
        const int64_t keep_after =
            log_time_ns - 2 * options_.trim_grace_ms * 1'000'000;
        while (applied_times_.size() > 1 &&
               applied_times_[1].second < keep_after) {
          applied_times_.pop_front();
        }
      }
      due = TakeDueWaiters(MonotonicNanos());
    }
    RunDue(std::move(due));
    UpdateServing();
  }
  if (sub != nullptr) natsSubscription_Destroy(sub);
}

void SubscriptionLog::PruneOutcomes(int64_t) {
  // Keep the outcomes of the duplicate window (plus a minute of slack for
  // clock skew between the stream's timestamps and ours), and at least the
  // last 1,024.
  const int64_t keep_after =
      StreamClockNanos() - (options_.dedupe_window_ms + 60'000) * 1'000'000;
  while (outcomes_.size() > 1024 &&
         outcomes_.begin()->second.log_time_ns < keep_after) {
    outcomes_.erase(outcomes_.begin());
  }
}

std::vector<std::pair<SubscriptionLog::StatusCallback, absl::Status>>
SubscriptionLog::TakeDueWaiters(int64_t now_ns) {
  std::vector<std::pair<StatusCallback, absl::Status>> due;
  auto applied_end = waiters_.upper_bound(applied_);
  for (auto it = waiters_.begin(); it != applied_end;) {
    due.emplace_back(std::move(it->second.ready), absl::OkStatus());
    it = waiters_.erase(it);
  }
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (stopping_) {
      due.emplace_back(std::move(it->second.ready),
                       absl::UnavailableError("cohortd is shutting down"));
      it = waiters_.erase(it);
    } else if (Expired(it->second.deadline_ns, now_ns)) {
      due.emplace_back(
          std::move(it->second.ready),
          absl::DeadlineExceededError(absl::StrCat(
              "deadline passed while waiting for this node to apply the "
              "subscription log to position ",
              it->first, " (applied ", applied_, ")")));
      it = waiters_.erase(it);
    } else {
      ++it;
    }
  }
  return due;
}

void SubscriptionLog::RunDue(
    std::vector<std::pair<StatusCallback, absl::Status>> due) {
  for (auto& [ready, status] : due) ready(status);
}

void SubscriptionLog::WhenApplied(uint64_t position, int64_t deadline_ns,
                                  StatusCallback ready) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (position > applied_ && !stopping_) {
      waiters_.emplace(position, Waiter{deadline_ns, std::move(ready)});
      return;
    }
  }
  ready(position <= applied()
            ? absl::OkStatus()
            : absl::UnavailableError("cohortd is shutting down"));
}

void SubscriptionLog::ReadBarrier(int64_t deadline_ns, StatusCallback ready) {
  if (!options_.read_latest) {  // --cluster_read=applied: nothing to learn
    ready(absl::OkStatus());
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      barrier_waiters_.push_back(Waiter{deadline_ns, std::move(ready)});
      cv_.notify_all();
      return;
    }
  }
  ready(absl::UnavailableError("cohortd is shutting down"));
}

void SubscriptionLog::Append(std::string message_id, std::string record,
                             int64_t deadline_ns, AppendCallback done) {
  if (absl::Status serving = Serving(); !serving.ok()) {
    done(serving, 0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (message_id.empty()) {
      message_id = absl::StrCat(incarnation_, "-", ++message_counter_);
    }
    appends_.push_back(PendingAppend{std::move(message_id), std::move(record),
                                     deadline_ns, std::move(done)});
  }
  cv_.notify_all();
}

void SubscriptionLog::AppendLoop() {
  for (;;) {
    PendingAppend a;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return stopping_ || !appends_.empty();
      });
      if (appends_.empty()) return;  // stopping
      a = std::move(appends_.front());
      appends_.pop_front();
    }
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MsgId = a.message_id.c_str();
    po.MaxWait = options_.append_timeout_ms;
    jsPubAck* ack = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    natsStatus s = js_Publish(&ack, Js(js_), subject_.c_str(), a.record.data(),
                              static_cast<int>(a.record.size()), &po, &jerr);
    if (s != NATS_OK) {
      a.done(NatsError(absl::StrCat("appending to the subscription log "
                                    "(stream ", options_.stream,
                                    "); the change may still be applied: "
                                    "retry with the same request_id"),
                       s, jerr),
             0);
      if (ack != nullptr) jsPubAck_Destroy(ack);
      continue;
    }
    const uint64_t position = ack->Sequence;
    const bool duplicate = ack->Duplicate;
    jsPubAck_Destroy(ack);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++appended_;
      if (duplicate) ++duplicates_;
      known_ = std::max(known_, position);
      last_contact_ns_ = MonotonicNanos();
    }
    WhenApplied(position, a.deadline_ns,
                [this, position, done = std::move(a.done)](absl::Status s) {
                  if (!s.ok()) {
                    done(s, position);
                    return;
                  }
                  LogOutcome outcome;
                  bool found = false;
                  {
                    std::lock_guard<std::mutex> lock(mu_);
                    auto it = outcomes_.find(position);
                    if (it != outcomes_.end()) {
                      outcome = it->second.outcome;
                      found = true;
                    }
                  }
                  if (!found) {
                    done(absl::UnavailableError(absl::StrCat(
                             "the outcome of log position ", position,
                             " is no longer kept")),
                         position);
                    return;
                  }
                  done(outcome, position);
                });
  }
}

}  // namespace service
}  // namespace cohort
