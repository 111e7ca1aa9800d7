// Cluster mode's shared snapshots and log trimming (docs/DESIGN.md section
// 11.8). A node with --data_dir folds its local copy of the log into a
// snapshot now and then (service/storage); it offers each one here, and
// this class publishes it to a second JetStream stream, where a node that
// cannot read the log from where its own state ends (a new node, or one
// down longer than the log reaches back) fetches it. Once a snapshot is
// published, the log is trimmed up to the one before it, never past a
// record younger than --cluster_trim_grace_ms (a node away for less reads
// on where it left off) and never past a record that a running node has
// not been sent, so the log holds about two snapshot intervals of records
// (or the grace period's), not the whole history.
//
// The stream <stream>_SNAPSHOTS (created if absent, with the log's replica
// count and one message per subject) holds, on subjects under
// cohort.snap.<stream>:
//   .manifest         the newest snapshot: uint64 position, uint32 slot,
//                     uint32 chunks, uint64 bytes, 32 bytes of SHA-256 of
//                     the snapshot, then the publishing node's name
//   .chunk.<slot>.<i> chunk i of the snapshot in slot 0 or 1: uint64
//                     position, uint32 i, then at most 512 KiB of it
//   .claim            message id claim-after-<manifest sequence>: the
//                     one node that publishes the next snapshot after the
//                     manifest it read (JetStream's duplicate window drops
//                     the other nodes' claims), so one node at a time
//                     writes a slot
// A publication writes the slot the manifest does not name, then the
// manifest, with JetStream's expected-last-sequence check so that an older
// snapshot never replaces a newer one: the snapshot the manifest names is
// whole at every moment, and a node that dies halfway leaves the old one.
//
// Thread safety: every public method may be called from any thread. One
// uploader thread publishes and trims; Fetch runs on the caller's.
#ifndef COHORT_SERVICE_CLUSTER_SNAPSHOT_EXCHANGE_H_
#define COHORT_SERVICE_CLUSTER_SNAPSHOT_EXCHANGE_H_

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/cohort/v1/pubsub.pb.h"
#include "service/cluster/subscription_log.h"

namespace cohort {
namespace service {

class SnapshotExchange {
 public:
  struct Fetched {
    uint64_t position = 0;  // the log position the snapshot reflects
    std::string bytes;      // a store.h snapshot
    std::string node;       // who published it
  };

  // Opens (creating if absent) the snapshot stream over `log`'s connection
  // and starts the uploader. `log` must outlive this object. UNAVAILABLE if
  // JetStream does not answer.
  static absl::StatusOr<std::unique_ptr<SnapshotExchange>> Open(
      SubscriptionLog* log);
  ~SnapshotExchange();
  SnapshotExchange(const SnapshotExchange&) = delete;
  SnapshotExchange& operator=(const SnapshotExchange&) = delete;

  // The newest published snapshot, if it reflects at least position
  // `at_least`. NOT_FOUND if none is published; FAILED_PRECONDITION if the
  // newest is older than `at_least`; DATA_LOSS if its chunks do not add up
  // to its checksum after retries (each retry rereads the manifest, in
  // case a newer snapshot replaced it meanwhile); UNAVAILABLE if the stream
  // does not answer.
  absl::StatusOr<Fetched> Fetch(uint64_t at_least);

  // The log position of the newest published snapshot; 0 if none.
  absl::StatusOr<uint64_t> NewestPosition();

  // Queues the snapshot at `position` for publication (replacing a queued
  // older one) and returns at once.
  void Offer(uint64_t position, std::string bytes);

  // Stats: the newest snapshot this node published or saw, what it
  // published, and the log's trimming.
  void FillStats(v1::ClusterStats* stats) const;

  // Stops the uploader (a publication in progress is abandoned; the
  // manifest still names a whole snapshot). Idempotent.
  void Shutdown();

 private:
  explicit SnapshotExchange(SubscriptionLog* log);

  struct Manifest {
    uint64_t position = 0;
    uint32_t slot = 0;
    uint32_t chunks = 0;
    uint64_t bytes = 0;
    std::string sha256;
    std::string node;
    uint64_t sequence = 0;  // of the manifest message in the stream
  };

  absl::Status CreateStream();
  // The manifest now; nullopt if none was ever published.
  absl::StatusOr<std::optional<Manifest>> ReadManifest();
  absl::Status Publish(uint64_t position, const std::string& bytes);
  // Trims the log up to `position` or the first record a running node has
  // not read, whichever is lower.
  absl::Status Trim(uint64_t position);
  void UploadLoop();

  SubscriptionLog* const log_;
  const std::string stream_;   // <log stream>_SNAPSHOTS
  const std::string prefix_;   // cohort.snap.<log stream>
  void* js_ = nullptr;         // jsCtx*

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<std::pair<uint64_t, std::string>> pending_
      ABSL_GUARDED_BY(mu_);
  uint64_t newest_seen_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t published_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t publish_failures_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t trimmed_to_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread uploader_;
  bool shut_down_ = false;  // Shutdown's, on the controlling thread
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_CLUSTER_SNAPSHOT_EXCHANGE_H_
