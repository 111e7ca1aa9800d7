// cohortd's server object: owns the engine, the dictionaries, the gRPC
// server (PubSub, grpc.health.v1.Health, server reflection) and the
// Prometheus endpoint, and shuts them down in order.
//
// Used by cohortd_main.cc and by the end-to-end tests, which start a real
// server on 127.0.0.1 with port 0. With TLS files (tls.h) it serves over TLS;
// with a token file (auth.h) the PubSub service it registers is the
// AuthService in front of PubSubService (auth_service.h).
//
// Thread safety: Start and Shutdown are called by one controlling thread;
// port accessors may be called from any thread.
#ifndef COHORT_SERVICE_API_SERVER_H_
#define COHORT_SERVICE_API_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/grpcpp.h"
#include "service/api/auth_service.h"
#include "service/api/pubsub_service.h"
#include "service/api/tls.h"
#include "service/cluster/cluster_deliveries.h"
#include "service/cluster/snapshot_exchange.h"
#include "service/cluster/subscription_log.h"
#include "service/model/interner.h"
#include "service/model/validation.h"
#include "service/observability/metrics_http.h"
#include "service/observability/prometheus.h"
#include "service/stages/engine.h"
#include "service/storage/durability.h"

namespace cohort {
namespace service {

// The largest --max_concurrent_streams (HTTP/2 allows 2^31 - 1).
inline constexpr uint32_t kMaxConcurrentStreams = 1u << 20;

struct ServerOptions {
  // host:port for gRPC; port 0 picks a free port (see port()).
  std::string listen = "127.0.0.1:50051";
  // "staged" or "threaded".
  std::string mode = "staged";
  EngineOptions engine;
  Limits limits;
  StreamOptions streams;
  // Largest request message gRPC accepts, in bytes.
  int max_message_bytes = 64 << 20;
  // Most calls open at once on one client connection (HTTP/2
  // SETTINGS_MAX_CONCURRENT_STREAMS); a client's further calls wait in the
  // client. 0 = gRPC's default (no limit).
  int max_concurrent_streams = 0;
  // Most distinct attribute names (the attribute dictionary's size).
  uint32_t max_attributes = 1u << 20;
  // Most distinct strings subscriptions may name on one attribute
  // (typed_attributes.h).
  uint64_t max_distinct_strings = 1000000;
  // Prometheus text endpoint: host and port; port -1 = off, 0 = any.
  std::string metrics_host = "127.0.0.1";
  int metrics_port = -1;
  // Durability: off while durability.data_dir is empty. Set, Start recovers
  // the directory before serving and every change is journaled
  // (durability.h); engine.durability is then set by Start.
  DurabilityOptions durability;
  // TLS (--tls_cert, --tls_key, --tls_client_ca): off while the files are
  // empty.
  ServerTlsOptions tls;
  // Token file (--auth_tokens, format in auth.h): empty = no authorization.
  std::string auth_tokens_file;
  // Cluster mode (--cluster_*): off while cluster.nats is empty. Set, the
  // subscriptions are the subscription log's (subscription_log.h), health
  // is NOT_SERVING until the node has caught up with it, and durability
  // must be off (the log is the journal).
  ClusterOptions cluster;
  // GRPC_ARG_MAX_CONNECTION_AGE_MS (--max_connection_age_ms): clients
  // reconnect (and re-resolve a DNS name, finding new nodes) after this long;
  // a grace of a tenth of it lets calls finish. 0: no limit.
  int64_t max_connection_age_ms = 0;
};

// IsLoopbackListen()
//
// True iff `listen` (a --listen value) accepts only local clients: a host
// of localhost, 127.0.0.0/8 or [::1], or a unix: socket.
bool IsLoopbackListen(absl::string_view listen);

class CohortServer {
 public:
  // Builds and starts everything; errors name the flag or address at fault.
  static absl::StatusOr<std::unique_ptr<CohortServer>> Start(
      const ServerOptions& options);
  ~CohortServer();

  // The bound gRPC port, and the metrics port (-1 if off).
  int port() const { return port_; }
  int metrics_port() const;

  // Health -> NOT_SERVING, listeners closed with UNAVAILABLE, stop accepting
  // calls, wait up to `grace_ms` for calls in progress, then finish admitted
  // work and stop the stages. Idempotent.
  void Shutdown(int64_t grace_ms = 10000);

  Engine* engine() { return engine_.get(); }
  // Cluster mode's log; null on a single node.
  SubscriptionLog* log() { return log_.get(); }
  // What Start recovered, for the operator: "" without --data_dir.
  const std::string& recovery_summary() const { return recovery_summary_; }
  // The index copies the engine runs (--index_copies, its default rule
  // resolved; `partitions` with --index=replicated).
  uint32_t index_copies() const { return index_copies_; }
  // "TLS off", "TLS on" or "mTLS on", then ", auth off" or ", auth on (N
  // subscriber tokens, M publisher tokens)", for the startup line.
  std::string security_summary() const;
  // Stats as GetStats returns them.
  void FillStats(v1::Stats* stats) const { service_->FillStats(stats); }
  // What the metrics endpoint renders: the stats, the stage, publish and
  // journal histograms, and the process's figures.
  MetricsSnapshot Metrics() const;

 private:
  CohortServer() = default;

  ServerOptions options_;
  std::unique_ptr<Interner> attributes_;
  std::unique_ptr<TypedAttributes> typed_;
  std::unique_ptr<Interner> subscribers_;
  // Before engine_: the engine uses it until it is destroyed.
  std::unique_ptr<Durability> durability_;
  std::string recovery_summary_;
  uint32_t index_copies_ = 1;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<PubSubService> service_;
  // In front of service_ with --auth_tokens (null without); after service_
  // and before server_, so it is destroyed between them.
  std::unique_ptr<AuthService> auth_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<MetricsHttpServer> metrics_;
  // Cluster mode only: cross-node deliveries, on log_'s connection (which
  // the log closes in Shutdown and frees when destroyed, after this).
  std::unique_ptr<ClusterDeliveries> deliveries_;
  // Cluster mode only. Last: its threads apply records to the engine and
  // set the health service's status, so it stops before they are destroyed
  // (Shutdown stops it first).
  std::unique_ptr<SubscriptionLog> log_;
  // Cluster mode only: shared snapshots, on log_'s connection (so destroyed
  // before it); offered snapshots by durability_'s folds until the engine
  // closes it (Shutdown stops both first).
  std::unique_ptr<SnapshotExchange> snapshots_;
  int port_ = 0;
  bool shut_down_ = false;
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_API_SERVER_H_
