#include "service/cluster/snapshot_exchange.h"

#include <nats/nats.h>
#include <openssl/evp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "service/cluster/nats_status.h"
#include "service/storage/journal_frame.h"

namespace cohort {
namespace service {
namespace {

// Below NATS's default max_payload (1 MiB) with room for the headers.
constexpr size_t kChunkBytes = 512 << 10;
constexpr size_t kChunkHeader = 8 + 4;
constexpr size_t kManifestFixed = 8 + 4 + 4 + 8 + 32;
constexpr int kFetchAttempts = 5;
constexpr int64_t kWaitMs = 10000;
// JetStream's JSStreamDuplicateMessageConflict.
constexpr int kClaimInProcess = 10158;

jsCtx* Js(void* p) { return static_cast<jsCtx*>(p); }

std::string Sha256(absl::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(),
             nullptr);
  return std::string(reinterpret_cast<const char*>(digest), length);
}

}  // namespace

SnapshotExchange::SnapshotExchange(SubscriptionLog* log)
    : log_(log),
      stream_(absl::StrCat(log->options().stream, "_SNAPSHOTS")),
      prefix_(absl::StrCat("cohort.snap.", log->options().stream)) {}

absl::StatusOr<std::unique_ptr<SnapshotExchange>> SnapshotExchange::Open(
    SubscriptionLog* log) {
  std::unique_ptr<SnapshotExchange> exchange(new SnapshotExchange(log));
  jsOptions js_options;
  jsOptions_Init(&js_options);
  js_options.Wait = kWaitMs;
  jsCtx* js = nullptr;
  natsStatus s = natsConnection_JetStream(
      &js, static_cast<natsConnection*>(log->connection()), &js_options);
  if (s != NATS_OK) return NatsError("JetStream context", s, 0);
  exchange->js_ = js;
  if (absl::Status status = exchange->CreateStream(); !status.ok()) {
    return status;
  }
  exchange->uploader_ = std::thread([p = exchange.get()] { p->UploadLoop(); });
  return exchange;
}

SnapshotExchange::~SnapshotExchange() {
  Shutdown();
  if (js_ != nullptr) jsCtx_Destroy(Js(js_));
}

void SnapshotExchange::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (uploader_.joinable()) uploader_.join();
}

absl::Status SnapshotExchange::CreateStream() {
  const std::string subjects = absl::StrCat(prefix_, ".>");
  for (int attempt = 0;; ++attempt) {
    jsStreamInfo* info = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    natsStatus s = js_GetStreamInfo(&info, Js(js_), stream_.c_str(), nullptr,
                                    &jerr);
    if (s == NATS_OK) {
      jsStreamInfo_Destroy(info);
      return absl::OkStatus();
    }
    if (s == NATS_NOT_FOUND) {
      jsStreamConfig config;
      jsStreamConfig_Init(&config);
      config.Name = stream_.c_str();
      const char* list[] = {subjects.c_str()};
      config.Subjects = list;
      config.SubjectsLen = 1;
      config.Storage = js_FileStorage;
      config.Replicas = log_->options().replicas;
      config.MaxMsgsPerSubject = 1;
      config.MaxMsgSize = static_cast<int32_t>(kChunkBytes + 4096);
      jerr = static_cast<jsErrCode>(0);
      s = js_AddStream(&info, Js(js_), &config, nullptr, &jerr);
      if (info != nullptr) jsStreamInfo_Destroy(info);
      if (s == NATS_OK) continue;
    }
    if (attempt >= 40) {
      return NatsError(absl::StrCat("snapshot stream ", stream_), s, jerr);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

absl::StatusOr<std::optional<SnapshotExchange::Manifest>>
SnapshotExchange::ReadManifest() {
  const std::string subject = absl::StrCat(prefix_, ".manifest");
  natsMsg* msg = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_GetLastMsg(&msg, Js(js_), stream_.c_str(), subject.c_str(),
                               nullptr, &jerr);
  if (s == NATS_NOT_FOUND) return std::optional<Manifest>();
  if (s != NATS_OK) {
    return NatsError(absl::StrCat("snapshot manifest (stream ", stream_, ")"),
                     s, jerr);
  }
  const absl::string_view data(natsMsg_GetData(msg),
                               natsMsg_GetDataLength(msg));
  Manifest m;
  m.sequence = natsMsg_GetSequence(msg);
  if (data.size() < kManifestFixed) {
    natsMsg_Destroy(msg);
    return absl::DataLossError(absl::StrCat(
        "snapshot manifest (stream ", stream_, "): ", data.size(),
        " bytes, not a manifest"));
  }
  m.position = LoadFixed(data.data(), 8);
  m.slot = static_cast<uint32_t>(LoadFixed(data.data() + 8, 4));
  m.chunks = static_cast<uint32_t>(LoadFixed(data.data() + 12, 4));
  m.bytes = LoadFixed(data.data() + 16, 8);
  m.sha256 = std::string(data.substr(24, 32));
  m.node = std::string(data.substr(kManifestFixed));
  natsMsg_Destroy(msg);
  {
    std::lock_guard<std::mutex> lock(mu_);
    newest_seen_ = std::max(newest_seen_, m.position);
  }
  return std::optional<Manifest>(std::move(m));
}

absl::StatusOr<SnapshotExchange::Fetched> SnapshotExchange::Fetch(
    uint64_t at_least) {
  absl::Status last_error;
  for (int attempt = 0; attempt < kFetchAttempts; ++attempt) {
    if (attempt > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200 * attempt));
    }
    absl::StatusOr<std::optional<Manifest>> manifest = ReadManifest();
    if (!manifest.ok()) {
      last_error = manifest.status();
      continue;
    }
    if (!manifest->has_value()) {
      return absl::NotFoundError(absl::StrCat(
          "no snapshot is published in stream ", stream_,
          " (a node with --data_dir publishes one after its first fold)"));
    }
    const Manifest& m = **manifest;
    if (m.position < at_least) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the newest published snapshot reflects log position ", m.position,
          ", before position ", at_least, " that the log now starts after"));
    }
    Fetched out;
    out.position = m.position;
    out.node = m.node;
    out.bytes.reserve(m.bytes);
    bool whole = true;
    for (uint32_t i = 0; i < m.chunks && whole; ++i) {
      const std::string subject =
          absl::StrCat(prefix_, ".chunk.", m.slot, ".", i);
      natsMsg* msg = nullptr;
      jsErrCode jerr = static_cast<jsErrCode>(0);
      natsStatus s = js_GetLastMsg(&msg, Js(js_), stream_.c_str(),
                                   subject.c_str(), nullptr, &jerr);
      if (s != NATS_OK) {
        last_error = NatsError(absl::StrCat("snapshot chunk ", subject), s,
                               jerr);
        whole = false;
        break;
      }
      const absl::string_view data(natsMsg_GetData(msg),
                                   natsMsg_GetDataLength(msg));
      if (data.size() < kChunkHeader ||
          LoadFixed(data.data(), 8) != m.position ||
          LoadFixed(data.data() + 8, 4) != i) {
        // Replaced by a newer publication while we read: start over.
        last_error = absl::DataLossError(absl::StrCat(
            "snapshot chunk ", subject, " is not chunk ", i, " of position ",
            m.position));
        whole = false;
      } else {
        out.bytes.append(data.data() + kChunkHeader,
                         data.size() - kChunkHeader);
      }
      natsMsg_Destroy(msg);
    }
    if (!whole) continue;
    if (out.bytes.size() != m.bytes || Sha256(out.bytes) != m.sha256) {
      last_error = absl::DataLossError(absl::StrCat(
          "the snapshot at log position ", m.position, " in stream ", stream_,
          " does not match its manifest's size and SHA-256"));
      continue;
    }
    return out;
  }
  return last_error;
}

absl::StatusOr<uint64_t> SnapshotExchange::NewestPosition() {
  absl::StatusOr<std::optional<Manifest>> manifest = ReadManifest();
  if (!manifest.ok()) return manifest.status();
  return manifest->has_value() ? (*manifest)->position : 0;
}

void SnapshotExchange::Offer(uint64_t position, std::string bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    if (pending_.has_value() && pending_->first >= position) return;
    pending_.emplace(position, std::move(bytes));
  }
  cv_.notify_all();
}

void SnapshotExchange::UploadLoop() {
  for (;;) {
    std::pair<uint64_t, std::string> next;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return stopping_ || pending_.has_value();
      });
      if (stopping_) return;
      next = std::move(*pending_);
      pending_.reset();
    }
    absl::Status s = Publish(next.first, next.second);
    if (!s.ok()) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) return;
        ++publish_failures_;
      }
      std::fprintf(stderr,
                   "cohortd: cluster: publishing the snapshot at log "
                   "position %llu failed: %s\n",
                   static_cast<unsigned long long>(next.first),
                   s.ToString().c_str());
    }
  }
}

absl::Status SnapshotExchange::Publish(uint64_t position,
                                       const std::string& bytes) {
  absl::StatusOr<std::optional<Manifest>> current = ReadManifest();
  if (!current.ok()) return current.status();
  if (current->has_value() && (*current)->position >= position) {
    return absl::OkStatus();  // another node published this one or later
  }
  // One publication follows each manifest: nodes that read the same
  // manifest claim the same successor, and JetStream drops every claim but
  // the first as a duplicate. (Claiming the position instead would let two
  // nodes folding at different positions write the same slot at once.)
  const std::string claim_subject = absl::StrCat(prefix_, ".claim");
  const std::string claim_id = absl::StrCat(
      "claim-after-", current->has_value() ? (*current)->sequence : 0);
  jsPubOptions po;
  jsPubOptions_Init(&po);
  po.MsgId = claim_id.c_str();
  jsPubAck* ack = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_Publish(&ack, Js(js_), claim_subject.c_str(),
                            log_->options().node.data(),
                            static_cast<int>(log_->options().node.size()),
                            &po, &jerr);
  // JetStream error 10158, "duplicate message id is in process": another
  // node's claim is being stored right now; it wins.
  if (s != NATS_OK && jerr == kClaimInProcess) return absl::OkStatus();
  if (s != NATS_OK) return NatsError("claiming the snapshot", s, jerr);
  const bool duplicate = ack->Duplicate;
  jsPubAck_Destroy(ack);
  if (duplicate) return absl::OkStatus();

  const uint32_t slot = current->has_value() ? 1 - (*current)->slot : 0;
  // The slot's chunks from an older, perhaps longer, snapshot go first.
  jsOptions purge;
  jsOptions_Init(&purge);
  const std::string slot_subjects =
      absl::StrCat(prefix_, ".chunk.", slot, ".>");
  purge.Stream.Purge.Subject = slot_subjects.c_str();
  jerr = static_cast<jsErrCode>(0);
  s = js_PurgeStream(Js(js_), stream_.c_str(), &purge, &jerr);
  if (s != NATS_OK) return NatsError("clearing a snapshot slot", s, jerr);
  const uint32_t chunks =
      static_cast<uint32_t>((bytes.size() + kChunkBytes - 1) / kChunkBytes);
  std::string chunk;
  for (uint32_t i = 0; i < chunks; ++i) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return absl::CancelledError("shutting down");
    }
    chunk.clear();
    PutFixed64(position, &chunk);
    PutFixed32(i, &chunk);
    const size_t from = static_cast<size_t>(i) * kChunkBytes;
    chunk.append(bytes, from, std::min(kChunkBytes, bytes.size() - from));
    const std::string subject =
        absl::StrCat(prefix_, ".chunk.", slot, ".", i);
    jsPubOptions_Init(&po);
    ack = nullptr;
    jerr = static_cast<jsErrCode>(0);
    s = js_Publish(&ack, Js(js_), subject.c_str(), chunk.data(),
                   static_cast<int>(chunk.size()), &po, &jerr);
    if (ack != nullptr) jsPubAck_Destroy(ack);
    if (s != NATS_OK) return NatsError("publishing a snapshot chunk", s, jerr);
  }
  std::string manifest;
  PutFixed64(position, &manifest);
  PutFixed32(slot, &manifest);
  PutFixed32(chunks, &manifest);
  PutFixed64(bytes.size(), &manifest);
  manifest += Sha256(bytes);
  manifest += log_->options().node;
  const std::string manifest_subject = absl::StrCat(prefix_, ".manifest");
  jsPubOptions_Init(&po);
  // Replaces exactly the manifest read above: a newer one published
  // meanwhile wins.
  if (current->has_value()) {
    po.ExpectLastSubjectSeq = (*current)->sequence;
  } else {
    po.ExpectNoMessage = true;
  }
  ack = nullptr;
  jerr = static_cast<jsErrCode>(0);
  s = js_Publish(&ack, Js(js_), manifest_subject.c_str(), manifest.data(),
                 static_cast<int>(manifest.size()), &po, &jerr);
  if (ack != nullptr) jsPubAck_Destroy(ack);
  if (s != NATS_OK) {
    return NatsError("publishing the snapshot manifest", s, jerr);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++published_;
    newest_seen_ = std::max(newest_seen_, position);
  }
  // The log before the previous snapshot is no longer needed by anyone who
  // can fetch this one; keeping one interval more leaves a node that is
  // reading the log, or fetching the previous snapshot, time to finish.
  if (current->has_value()) return Trim((*current)->position);
  return absl::OkStatus();
}

absl::Status SnapshotExchange::Trim(uint64_t position) {
  const std::string& log_stream = log_->options().stream;
  jsConsumerInfoList* consumers = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_Consumers(&consumers, Js(js_), log_stream.c_str(), nullptr,
                              &jerr);
  if (s != NATS_OK && s != NATS_NOT_FOUND) {
    return NatsError("listing the log's readers", s, jerr);
  }
  // Only records older than the grace period: a node away for less (cut
  // off, stopped, its reader being recreated) reads on where it left off.
  uint64_t upto =
      std::min(position, log_->AppliedBefore(
                             StreamClockNanos() -
                             log_->options().trim_grace_ms * 1'000'000));
  if (consumers != nullptr) {
    for (int i = 0; i < consumers->Count; ++i) {
      // A running node reads the log with one consumer; never trim what it
      // has not been sent.
      upto = std::min(upto, consumers->List[i]->Delivered.Stream);
    }
    jsConsumerInfoList_Destroy(consumers);
  }
  if (upto == 0) return absl::OkStatus();
  jsOptions purge;
  jsOptions_Init(&purge);
  purge.Stream.Purge.Sequence = upto + 1;  // removes positions <= upto
  jerr = static_cast<jsErrCode>(0);
  s = js_PurgeStream(Js(js_), log_stream.c_str(), &purge, &jerr);
  if (s != NATS_OK) return NatsError("trimming the log", s, jerr);
  std::lock_guard<std::mutex> lock(mu_);
  trimmed_to_ = std::max(trimmed_to_, upto);
  return absl::OkStatus();
}

void SnapshotExchange::FillStats(v1::ClusterStats* stats) const {
  std::lock_guard<std::mutex> lock(mu_);
  stats->set_snapshot_position(newest_seen_);
  stats->set_snapshots_published(published_);
  stats->set_snapshot_failures(publish_failures_);
  if (trimmed_to_ + 1 > stats->log_first_position()) {
    stats->set_log_first_position(trimmed_to_ + 1);
  }
}

}  // namespace service
}  // namespace cohort
