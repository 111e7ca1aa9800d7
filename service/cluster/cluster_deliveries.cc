#include "service/cluster/cluster_deliveries.h"

#include <nats/nats.h>

#include <chrono>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "service/observability/stage_profile.h"
#include "service/storage/journal_frame.h"

namespace cohort {
namespace service {
namespace {

constexpr int64_t kAnnounceEveryMs = 500;
constexpr int64_t kPeerTimeoutNs = 2'000'000'000;

natsConnection* Nc(void* p) { return static_cast<natsConnection*>(p); }

// Messages use the journal's integer encoding (little-endian fixed width,
// service/storage/journal_frame.h); a string is a uint32 length and bytes.
void PutString(std::string* out, absl::string_view s) {
  PutFixed32(static_cast<uint32_t>(s.size()), out);
  out->append(s.data(), s.size());
}

// Reads what PutFixed* and PutString wrote; ok() turns false at the first
// short read.
class Reader {
 public:
  explicit Reader(absl::string_view data) : data_(data) {}
  uint32_t U32() { return static_cast<uint32_t>(Fixed(4)); }
  uint64_t U64() { return Fixed(8); }
  absl::string_view String() {
    const uint32_t n = U32();
    if (!Need(n)) return {};
    absl::string_view s = data_.substr(0, n);
    data_.remove_prefix(n);
    return s;
  }
  bool ok() const { return ok_; }

 private:
  uint64_t Fixed(int bytes) {
    if (!Need(bytes)) return 0;
    const uint64_t v = LoadFixed(data_.data(), bytes);
    data_.remove_prefix(bytes);
    return v;
  }
  bool Need(size_t n) {
    if (!ok_ || data_.size() < n) ok_ = false;
    return ok_;
  }
  absl::string_view data_;
  bool ok_ = true;
};

}  // namespace

ClusterDeliveries::ClusterDeliveries(void* connection,
                                     const std::string& stream,
                                     const std::string& node,
                                     Interner* subscribers,
                                     ListenerRegistry* registry)
    : connection_(connection),
      prefix_(absl::StrCat("cohort.", stream, ".")),
      self_(absl::StrCat(node, "/", std::random_device()(),
                         std::random_device()())),
      subscribers_(subscribers),
      registry_(registry) {
  for (uint32_t b = 0; b < kBuckets; ++b) closures_[b] = {this, b};
}

uint32_t ClusterDeliveries::BucketOf(absl::string_view subscriber) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a, 64 bits
  for (const char c : subscriber) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return static_cast<uint32_t>(h % kBuckets);
}

absl::StatusOr<std::unique_ptr<ClusterDeliveries>> ClusterDeliveries::Start(
    void* connection, const std::string& stream, const std::string& node,
    Interner* subscribers, ListenerRegistry* registry) {
  std::unique_ptr<ClusterDeliveries> d(
      new ClusterDeliveries(connection, stream, node, subscribers, registry));
  natsSubscription* sub = nullptr;
  const std::string subject = absl::StrCat(d->prefix_, "listeners");
  natsStatus s = natsConnection_Subscribe(
      &sub, Nc(connection), subject.c_str(),
      [](natsConnection*, natsSubscription*, natsMsg* msg, void* closure) {
        static_cast<ClusterDeliveries*>(closure)->OnAnnouncement(
            absl::string_view(natsMsg_GetData(msg),
                              natsMsg_GetDataLength(msg)));
        natsMsg_Destroy(msg);
      },
      d.get());
  if (s != NATS_OK) {
    return absl::UnavailableError(absl::StrCat(
        "subscribing to ", subject, ": ", natsStatus_GetText(s)));
  }
  d->announcements_sub_ = sub;
  d->announcer_ = std::thread([p = d.get()] { p->AnnounceLoop(); });
  return d;
}

ClusterDeliveries::~ClusterDeliveries() { Shutdown(); }

void ClusterDeliveries::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (uint32_t b = 0; b < kBuckets; ++b) WatchBucket(b, false);
  }
  cv_.notify_all();
  if (announcer_.joinable()) announcer_.join();
  if (announcements_sub_ != nullptr) {
    auto* sub = static_cast<natsSubscription*>(announcements_sub_);
    natsSubscription_Unsubscribe(sub);
    natsSubscription_Destroy(sub);
    announcements_sub_ = nullptr;
  }
}

void ClusterDeliveries::WatchBucket(uint32_t bucket, bool watch) {
  if (watch && bucket_subs_[bucket] == nullptr && !stopping_) {
    natsSubscription* sub = nullptr;
    const std::string subject = absl::StrCat(prefix_, "deliver.", bucket);
    if (natsConnection_Subscribe(
            &sub, Nc(connection_), subject.c_str(),
            [](natsConnection*, natsSubscription*, natsMsg* msg,
               void* closure) {
              auto* c = static_cast<BucketClosure*>(closure);
              c->self->OnDelivery(
                  c->bucket, absl::string_view(natsMsg_GetData(msg),
                                               natsMsg_GetDataLength(msg)));
              natsMsg_Destroy(msg);
            },
            &closures_[bucket]) == NATS_OK) {
      // Deliveries are many small messages: allow a deep pending queue
      // before libnats drops (a drop shows as a gap).
      natsSubscription_SetPendingLimits(sub, 1 << 20, 1 << 30);
      bucket_subs_[bucket] = sub;
    }
    // Numbering starts afresh for a newly watched bucket.
    for (auto it = received_seq_.begin(); it != received_seq_.end();) {
      it = it->first.second == bucket ? received_seq_.erase(it) : ++it;
    }
  } else if (!watch && bucket_subs_[bucket] != nullptr) {
    auto* sub = static_cast<natsSubscription*>(bucket_subs_[bucket]);
    natsSubscription_Unsubscribe(sub);
    natsSubscription_Destroy(sub);
    bucket_subs_[bucket] = nullptr;
  }
}

void ClusterDeliveries::LocalListenerAdded(uint32_t subscriber) {
  const std::string name = subscribers_->Name(subscriber);
  const uint32_t bucket = BucketOf(name);
  bool first;
  {
    std::lock_guard<std::mutex> lock(mu_);
    first = local_[subscriber]++ == 0;
    if (first && bucket_listeners_[bucket]++ == 0) WatchBucket(bucket, true);
  }
  if (first) Announce();
}

void ClusterDeliveries::LocalListenerRemoved(uint32_t subscriber) {
  const uint32_t bucket = BucketOf(subscribers_->Name(subscriber));
  bool last = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = local_.find(subscriber);
    if (it == local_.end()) return;
    if (--it->second == 0) {
      last = true;
      local_.erase(it);
      if (--bucket_listeners_[bucket] == 0) WatchBucket(bucket, false);
    }
  }
  if (last) Announce();
}

void ClusterDeliveries::Announce() {
  std::string message;
  PutString(&message, self_);
  std::vector<uint32_t> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    ids.reserve(local_.size());
    for (const auto& [id, count] : local_) ids.push_back(id);
  }
  PutFixed32(static_cast<uint32_t>(ids.size()), &message);
  for (uint32_t id : ids) PutString(&message, subscribers_->Name(id));
  const std::string subject = absl::StrCat(prefix_, "listeners");
  natsConnection_Publish(Nc(connection_), subject.c_str(), message.data(),
                         static_cast<int>(message.size()));
}

void ClusterDeliveries::AnnounceLoop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(kAnnounceEveryMs),
                   [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
                     return stopping_;
                   });
      if (stopping_) return;
      // Forget silent peers; resolve names subscribed since.
      const int64_t now = MonotonicNanos();
      for (auto it = peers_.begin(); it != peers_.end();) {
        it = now - it->second.heard_ns > kPeerTimeoutNs ? peers_.erase(it)
                                                        : ++it;
      }
      UpdateRemote();
    }
    Announce();
  }
}

void ClusterDeliveries::OnAnnouncement(absl::string_view data) {
  Reader in(data);
  const std::string sender(in.String());
  Peer peer;
  const uint32_t n = in.U32();
  for (uint32_t i = 0; i < n && in.ok(); ++i) {
    peer.names.emplace(in.String());
  }
  if (!in.ok() || sender == self_) return;
  peer.heard_ns = MonotonicNanos();
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return;
  peers_[sender] = std::move(peer);
  UpdateRemote();
}

void ClusterDeliveries::UpdateRemote() {
  std::set<uint32_t> remote;
  for (const auto& [sender, peer] : peers_) {
    for (const std::string& name : peer.names) {
      if (std::optional<uint32_t> id = subscribers_->Find(name)) {
        remote.insert(*id);
      }
    }
  }
  for (uint32_t id : remote_) {
    if (remote.count(id) == 0) registry_->SetRemote(id, false);
  }
  for (uint32_t id : remote) {
    if (remote_.count(id) == 0) registry_->SetRemote(id, true);
  }
  remote_ = std::move(remote);
}

void ClusterDeliveries::Deliver(
    const v1::Event& event,
    const std::vector<std::pair<uint32_t, std::vector<uint64_t>>>& matches) {
  // Group by bucket: the event is sent once per bucket.
  std::map<uint32_t, std::vector<size_t>> buckets;
  std::vector<std::string> names(matches.size());
  for (size_t i = 0; i < matches.size(); ++i) {
    names[i] = subscribers_->Name(matches[i].first);
    buckets[BucketOf(names[i])].push_back(i);
  }
  const std::string event_bytes = event.SerializeAsString();
  std::lock_guard<std::mutex> lock(send_mu_);
  for (const auto& [bucket, members] : buckets) {
    std::string message;
    PutString(&message, self_);
    PutFixed64(++sent_seq_[bucket], &message);
    PutString(&message, event_bytes);
    PutFixed32(static_cast<uint32_t>(members.size()), &message);
    for (size_t i : members) {
      PutString(&message, names[i]);
      PutFixed32(static_cast<uint32_t>(matches[i].second.size()), &message);
      for (uint64_t id : matches[i].second) PutFixed64(id, &message);
    }
    const std::string subject = absl::StrCat(prefix_, "deliver.", bucket);
    if (natsConnection_Publish(Nc(connection_), subject.c_str(),
                               message.data(),
                               static_cast<int>(message.size())) == NATS_OK) {
      sent_.fetch_add(members.size(), std::memory_order_relaxed);
    }
  }
}

void ClusterDeliveries::OnDelivery(uint32_t bucket, absl::string_view data) {
  Reader in(data);
  const std::string sender(in.String());
  const uint64_t seq = in.U64();
  const absl::string_view event_bytes = in.String();
  if (!in.ok() || sender == self_) return;
  uint64_t missed = 0;
  std::vector<uint32_t> gap_subscribers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    uint64_t& last = received_seq_[{sender, bucket}];
    if (last != 0 && seq > last + 1) missed = seq - last - 1;
    if (seq > last) last = seq;
    if (missed > 0) {
      for (const auto& [id, count] : local_) {
        if (BucketOf(subscribers_->Name(id)) == bucket) {
          gap_subscribers.push_back(id);
        }
      }
    }
  }
  if (missed > 0) {
    gaps_.fetch_add(missed, std::memory_order_relaxed);
    for (uint64_t i = 0; i < missed; ++i) {
      for (uint32_t id : gap_subscribers) registry_->DeliverGap(id);
    }
  }
  auto event = std::make_shared<v1::Event>();
  if (!event->ParseFromArray(event_bytes.data(),
                             static_cast<int>(event_bytes.size()))) {
    return;
  }
  const uint32_t n = in.U32();
  uint64_t queued = 0, dropped = 0, disconnected = 0;
  for (uint32_t i = 0; i < n && in.ok(); ++i) {
    const absl::string_view name = in.String();
    const uint32_t k = in.U32();
    std::vector<uint64_t> ids;
    ids.reserve(k);
    for (uint32_t j = 0; j < k && in.ok(); ++j) ids.push_back(in.U64());
    if (!in.ok()) break;
    std::optional<uint32_t> id = subscribers_->Find(name);
    if (!id.has_value()) continue;
    registry_->Deliver(*id, event, std::move(ids), &queued, &dropped,
                       &disconnected);
    received_.fetch_add(1, std::memory_order_relaxed);
  }
}

void ClusterDeliveries::FillStats(v1::ClusterStats* stats) const {
  stats->set_deliveries_sent(sent_.load(std::memory_order_relaxed));
  stats->set_deliveries_received(received_.load(std::memory_order_relaxed));
  stats->set_delivery_gaps(gaps_.load(std::memory_order_relaxed));
}

}  // namespace service
}  // namespace cohort
