#include "service/api/server.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <fstream>
#include <functional>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "grpc/grpc.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "service/errno_status.h"
#include "service/observability/prometheus.h"
#include "service/release_memory.h"
#include "service/stages/admission.h"
#include "service/stages/create_engine.h"

namespace cohort {
namespace service {
namespace {

// The file that marks a --data_dir as a cluster node's copy of the log, and
// names the log's stream.
constexpr char kClusterMarker[] = "CLUSTER";

// A cluster node's copy of the log and a single node's state must never be
// mistaken for each other (docs/DESIGN.md section 11.8): `stream` empty is a
// single node, which refuses a directory with the marker; a cluster node
// refuses one that holds state without the marker, or the marker of
// another stream, and marks an empty one. FAILED_PRECONDITION naming the
// directory.
absl::Status ClaimDataDir(const std::string& dir, const std::string& stream) {
  const std::string marker = absl::StrCat(dir, "/", kClusterMarker);
  std::string found;
  {
    std::ifstream in(marker);
    if (in) std::getline(in, found);
  }
  const bool marked = !found.empty();
  if (stream.empty()) {
    if (!marked) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(
        "--data_dir: ", dir,
        " holds a cluster node's copy of the subscription log (", found,
        "); start it with --cluster_nats, or give a single node its own "
        "directory"));
  }
  const std::string want = absl::StrCat("stream ", stream);
  if (marked) {
    if (found == want) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(
        "--data_dir: ", dir, " holds a copy of the subscription log of ",
        found, ", not of ", want, "; empty it to start this node from ",
        want));
  }
  if (HoldsState(dir)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--data_dir: ", dir,
        " holds a single-node cohortd's subscriptions, not a copy of the "
        "subscription log; give a cluster node its own (empty) directory"));
  }
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoStatus(errno, absl::StrCat("--data_dir: cannot create ", dir));
  }
  return WriteFileAtomically(dir, kClusterMarker, want + "\n");
}

// The health service name clients may ask for besides "" (the whole server).
constexpr char kServiceName[] = "cohort.v1.PubSub";

// The --auth_tokens file; nullopt without one. Errors name the flag.
absl::StatusOr<std::optional<TokenStore>> LoadTokens(const std::string& path) {
  if (path.empty()) return std::nullopt;
  absl::StatusOr<TokenStore> tokens = TokenStore::Load(path);
  if (!tokens.ok()) {
    return absl::Status(
        tokens.status().code(),
        absl::StrCat("--auth_tokens: ", tokens.status().message()));
  }
  return std::optional<TokenStore>(*std::move(tokens));
}

}  // namespace

absl::StatusOr<std::unique_ptr<CohortServer>> CohortServer::Start(
    const ServerOptions& options) {
  // TLS files and the token file first: a mistake there should not wait
  // for a long recovery to be reported.
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      ServerCredentialsFor(options.tls);
  if (!credentials.ok()) return credentials.status();
  absl::StatusOr<std::optional<TokenStore>> tokens =
      LoadTokens(options.auth_tokens_file);
  if (!tokens.ok()) return tokens.status();
  // Owners of recovered subscriptions, for the AuthService (with tokens).
  std::vector<uint64_t> recovered_ids;
  std::vector<uint32_t> recovered_owners;
  std::unique_ptr<CohortServer> server(new CohortServer());
  server->options_ = options;
  server->attributes_ = std::make_unique<Interner>(options.max_attributes);
  server->typed_ = std::make_unique<TypedAttributes>(
      server->attributes_.get(), options.max_distinct_strings);
  server->subscribers_ =
      std::make_unique<Interner>(options.engine.max_subscribers);
  const bool cluster = !options.cluster.nats.empty();
  EngineOptions engine_options = options.engine;
  Recovery recovered;
  // Where `recovered` came from, for errors.
  std::string source = absl::StrCat("--data_dir ", options.durability.data_dir);
  const int64_t recovery_start = MonotonicNanos();
  if (cluster) {
    // The log first: where this node's state comes from depends on where
    // the log starts now.
    absl::StatusOr<std::unique_ptr<SubscriptionLog>> log =
        SubscriptionLog::Connect(options.cluster);
    if (!log.ok()) return log.status();
    server->log_ = std::move(*log);
    absl::StatusOr<std::unique_ptr<SnapshotExchange>> exchange =
        SnapshotExchange::Open(server->log_.get());
    if (!exchange.ok()) {
      server->log_->Shutdown();
      return exchange.status();
    }
    server->snapshots_ = std::move(*exchange);
  }
  if (!options.durability.data_dir.empty()) {
    DurabilityOptions durability_options = options.durability;
    if (cluster) {
      // A local copy of the log up to a position (docs/DESIGN.md section
      // 11.8). The log is the durable copy: a local copy cut short by a
      // machine crash is read on from the log (the snapshots are still
      // synced, and whole or absent).
      durability_options.log_positions = true;
      durability_options.fsync = false;
      SnapshotExchange* exchange = server->snapshots_.get();
      durability_options.on_snapshot = [exchange](uint64_t position,
                                                  std::string snapshot) {
        exchange->Offer(position, std::move(snapshot));
      };
    }
    // Which mode's directory it is, before recovery changes anything in it.
    if (absl::Status s = ClaimDataDir(options.durability.data_dir,
                                      cluster ? options.cluster.stream : "");
        !s.ok()) {
      server->Shutdown(0);
      return s;
    }
    absl::StatusOr<std::unique_ptr<Durability>> durability =
        Durability::Open(durability_options, &recovered);
    if (!durability.ok()) {
      server->Shutdown(0);
      return absl::Status(durability.status().code(),
                          absl::StrCat("--data_dir: ",
                                       durability.status().message()));
    }
    server->durability_ = std::move(*durability);
    server->recovery_summary_ = absl::StrFormat(
        "recovered %d subscriptions from %s in %.2f s (snapshot-%d, %d "
        "journal records replayed, journal tail %s, %d bytes discarded; "
        "journal written with %s)",
        recovered.state.live.size(), options.durability.data_dir,
        (MonotonicNanos() - recovery_start) / 1e9,
        recovered.snapshot_generation, recovered.records_replayed,
        recovered.tail, recovered.bytes_discarded,
        server->durability_->backend());
    if (cluster) {
      absl::StrAppendFormat(
          &server->recovery_summary_,
          "; subscription log applied to position %d, %d unfinished records "
          "(%d bytes) left to the log",
          recovered.state.log_position, recovered.unmarked_records,
          recovered.unmarked_bytes);
    }
  }
  if (cluster) {
    // A log trimmed past this node's state: start from the shared snapshot.
    absl::StatusOr<uint64_t> first = server->log_->FirstPosition();
    if (!first.ok()) {
      server->Shutdown(0);
      return first.status();
    }
    // A node with nothing (new, or its disk lost) starts from the shared
    // snapshot too, when there is one: loading it is cheaper than
    // replaying the log up to it.
    const bool must = *first > recovered.state.log_position + 1;
    bool want = false;
    if (!must && recovered.state.log_position == 0) {
      absl::StatusOr<uint64_t> newest = server->snapshots_->NewestPosition();
      want = newest.ok() && *newest > 0;
    }
    if (must || want) {
      const int64_t fetch_start = MonotonicNanos();
      absl::StatusOr<SnapshotExchange::Fetched> fetched =
          server->snapshots_->Fetch(*first - 1);
      absl::Status s = fetched.status();
      Recovery from_snapshot;
      if (s.ok()) s = DecodeSnapshot(fetched->bytes, &from_snapshot.state);
      if (!s.ok() && !must) {
        // The log still holds everything: read it from the start.
        absl::StrAppend(&server->recovery_summary_,
                        server->recovery_summary_.empty() ? "" : "; ",
                        "the shared snapshot could not be used (",
                        s.message(), "); reading the log from position 1");
      } else {
        if (s.ok() && server->durability_ != nullptr) {
          s = server->durability_->InstallSnapshot(fetched->bytes);
        }
        if (!s.ok()) {
          server->Shutdown(0);
          return absl::Status(
              s.code(),
              absl::StrCat("the subscription log starts at position ", *first,
                           ", after this node's state (position ",
                           recovered.state.log_position,
                           "), and the shared snapshot cannot be used: ",
                           s.message()));
        }
        recovered = std::move(from_snapshot);
        source = absl::StrCat("the shared snapshot at log position ",
                              fetched->position);
        absl::StrAppendFormat(
            &server->recovery_summary_,
            "%sstarted from the shared snapshot at log position %d (%d "
            "subscriptions, %d bytes, published by %s) in %.2f s",
            server->recovery_summary_.empty() ? "" : "; ",
            fetched->position, recovered.state.live.size(),
            fetched->bytes.size(), fetched->node,
            (MonotonicNanos() - fetch_start) / 1e9);
      }
    }
  }
  const bool restoring =
      recovered.state.next_id > 1 || !recovered.state.attributes.empty() ||
      !recovered.state.subscribers.empty();
  // Names first, in id order, so that they get their old ids; only then
  // are new names journaled.
  for (const auto& [names, dictionary, what] :
       {std::make_tuple(&recovered.state.attributes, server->attributes_.get(),
                        "attribute"),
        std::make_tuple(&recovered.state.subscribers,
                        server->subscribers_.get(), "subscriber")}) {
    for (size_t id = 0; id < names->size(); ++id) {
      absl::StatusOr<uint32_t> got = dictionary->Intern((*names)[id]);
      if (!got.ok() || *got != id) {
        server->Shutdown(0);
        return absl::DataLossError(absl::StrCat(
            source, ": ", what, " name \"", (*names)[id], "\" (id ", id,
            ") cannot be restored: ",
            got.ok() ? absl::StrCat("it became id ", *got)
                     : std::string(got.status().message())));
      }
    }
  }
  if (restoring) server->typed_->RestoreNames();
  for (const StringRecord& s : recovered.state.strings) {
    if (absl::Status status =
            server->typed_->RestoreString(s.attribute, s.code, s.bytes);
        !status.ok()) {
      server->Shutdown(0);
      return absl::DataLossError(absl::StrCat(
          source, ": cannot restore a string value: ", status.message()));
    }
  }
  if (server->durability_ != nullptr) {
    Durability* log = server->durability_.get();
    server->typed_->SetOnNewString(
        [log](uint32_t attribute, int64_t code, absl::string_view bytes) {
          log->LogString(attribute, code, bytes);
        });
    server->attributes_->SetOnNewName(
        [log](uint32_t id, absl::string_view name) {
          log->LogName(kAttributeName, id, name);
        });
    server->subscribers_->SetOnNewName(
        [log](uint32_t id, absl::string_view name) {
          log->LogName(kSubscriberName, id, name);
        });
    engine_options.durability = log;
  }
  // --index_copies=0: the default rule, counting what was recovered.
  engine_options.index_copies =
      ResolveIndexCopies(engine_options, recovered.state.live.size());
  server->index_copies_ = engine_options.index_copies;
  absl::StatusOr<std::unique_ptr<Engine>> engine =
      CreateEngine(options.mode, engine_options);
  if (!engine.ok()) {
    server->Shutdown(0);
    return engine.status();
  }
  server->engine_ = std::move(*engine);
  const uint64_t start_position = recovered.state.log_position;
  if (restoring) {
    if (absl::Status s = server->engine_->Restore(&recovered.state);
        !s.ok()) {
      server->Shutdown(0);
      return absl::DataLossError(
          absl::StrCat(source, ": cannot restore: ", s.message()));
    }
    if (tokens->has_value()) {
      recovered_ids.reserve(recovered.state.live.size());
      recovered_owners.reserve(recovered.state.live.size());
      for (const auto& [id, input] : recovered.state.live) {
        recovered_ids.push_back(id);
        recovered_owners.push_back(input.subscriber);
      }
    }
    // The recovered state (a few hundred bytes per subscription, more than
    // the index) is garbage now; hand its pages back to the kernel.
    recovered = Recovery();
    ReleaseFreeMemory();
  }
  server->service_ = std::make_unique<PubSubService>(
      server->engine_.get(), server->typed_.get(),
      server->subscribers_.get(), options.limits, options.streams);
  if (tokens->has_value()) {
    server->auth_ = std::make_unique<AuthService>(
        server->service_.get(), server->subscribers_.get(), **std::move(tokens),
        options.limits);
    server->auth_->owners().Subscribed(recovered_ids, recovered_owners);
  }

  if (cluster) {
    PubSubService* service = server->service_.get();
    Durability* local = server->durability_.get();
    absl::Status running = server->log_->Run(
        [service](uint64_t position, absl::string_view record,
                  std::function<void(LogOutcome)> done) {
          service->ApplyLogRecord(position, record, std::move(done));
        },
        start_position,
        // On the reader thread, once the record's changes are journaled
        // and applied: mark where they end.
        [local](uint64_t position) {
          if (local != nullptr) local->LogPosition(position);
        });
    if (!running.ok()) {
      server->Shutdown(0);
      return running;
    }
    service->set_log(server->log_.get());
    service->set_snapshots(server->snapshots_.get());
    absl::StatusOr<std::unique_ptr<ClusterDeliveries>> deliveries =
        ClusterDeliveries::Start(server->log_->connection(),
                                 options.cluster.stream, options.cluster.node,
                                 server->subscribers_.get(),
                                 &server->engine_->listeners());
    if (!deliveries.ok()) {
      server->Shutdown(0);
      return deliveries.status();
    }
    server->deliveries_ = std::move(*deliveries);
    service->set_deliveries(server->deliveries_.get());
    server->engine_->set_remote_deliveries(server->deliveries_.get());
  }

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen, *credentials, &server->port_);
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  if (options.max_connection_age_ms > 0) {
    builder.AddChannelArgument(
        GRPC_ARG_MAX_CONNECTION_AGE_MS,
        static_cast<int>(std::min<int64_t>(options.max_connection_age_ms,
                                           INT32_MAX)));
    builder.AddChannelArgument(
        GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
        static_cast<int>(std::min<int64_t>(
            std::max<int64_t>(options.max_connection_age_ms / 10, 1000),
            INT32_MAX)));
  }
  if (options.max_concurrent_streams > 0) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                               options.max_concurrent_streams);
  }
  if (server->auth_ != nullptr) {
    builder.RegisterService(server->auth_.get());
  } else {
    builder.RegisterService(server->service_.get());
  }
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    server->server_.reset();
    return absl::UnavailableError(absl::StrCat(
        "--listen: cannot listen on ", options.listen,
        " (address in use, not local, or malformed?)"));
  }
  grpc::HealthCheckServiceInterface* health =
      server->server_->GetHealthCheckService();
  if (health != nullptr && server->log_ != nullptr) {
    // NOT_SERVING until caught up with the log, and while it is lost.
    SubscriptionLog* log = server->log_.get();
    server->log_->SetServingObserver([health, log](bool serving) {
      health->SetServingStatus(serving);
      health->SetServingStatus(kServiceName, serving);
      // For the operator (and deploy/local-cluster.sh, which waits for the
      // first "serving" line).
      const absl::Status why = log->Serving();
      std::fprintf(stderr, "cohortd: cluster: %s\n",
                   serving ? absl::StrCat("serving (log applied to position ",
                                          log->applied(), ")")
                                 .c_str()
                           : absl::StrCat("NOT_SERVING: ", why.message())
                                 .c_str());
      std::fflush(stderr);
    });
  } else if (health != nullptr) {
    health->SetServingStatus(true);
    health->SetServingStatus(kServiceName, true);
  }
  if (options.metrics_port >= 0) {
    CohortServer* self = server.get();
    absl::StatusOr<std::unique_ptr<MetricsHttpServer>> metrics =
        MetricsHttpServer::Start(options.metrics_host, options.metrics_port,
                                 [self] {
                                   return RenderPrometheus(self->Metrics());
                                 });
    if (!metrics.ok()) {
      server->Shutdown(0);
      return absl::Status(metrics.status().code(),
                          absl::StrCat("--metrics_port: ",
                                       metrics.status().message()));
    }
    server->metrics_ = std::move(*metrics);
  }
  return server;
}

MetricsSnapshot CohortServer::Metrics() const {
  MetricsSnapshot snapshot;
  service_->FillStats(&snapshot.stats, &snapshot.stages);
  snapshot.publish = engine_->PublishDurations();
  if (durability_ != nullptr) {
    snapshot.journal_sync = durability_->journal_sync_durations();
  }
  snapshot.process = ReadProcessMetrics();
  return snapshot;
}

std::string CohortServer::security_summary() const {
  const char* tls = !options_.tls.enabled()               ? "TLS off"
                    : options_.tls.client_ca_file.empty() ? "TLS on"
                                                          : "mTLS on";
  if (auth_ == nullptr) return absl::StrCat(tls, ", auth off");
  return absl::StrCat(tls, ", auth on (", auth_->tokens().subscriber_tokens(),
                      " subscriber tokens, ",
                      auth_->tokens().publisher_tokens(), " publisher tokens)");
}

bool IsLoopbackListen(absl::string_view listen) {
  if (absl::StartsWith(listen, "unix:") ||
      absl::StartsWith(listen, "unix-abstract:")) {
    return true;
  }
  absl::string_view host = listen;
  if (const size_t colon = host.rfind(':'); colon != absl::string_view::npos) {
    host = host.substr(0, colon);
  }
  if (absl::ConsumePrefix(&host, "[")) {
    return absl::ConsumeSuffix(&host, "]") && host == "::1";
  }
  if (absl::EqualsIgnoreCase(host, "localhost")) return true;
  // 127.0.0.0/8: four decimal octets, the first 127.
  const std::vector<absl::string_view> octets = absl::StrSplit(host, '.');
  if (octets.size() != 4 || octets[0] != "127") return false;
  for (absl::string_view octet : octets) {
    int value = 0;
    if (!absl::SimpleAtoi(octet, &value) || value < 0 || value > 255) {
      return false;
    }
  }
  return true;
}

int CohortServer::metrics_port() const {
  return metrics_ == nullptr ? -1 : metrics_->port();
}

void CohortServer::Shutdown(int64_t grace_ms) {
  if (shut_down_) return;
  shut_down_ = true;
  if (server_ == nullptr) {  // Start failed before the server ran
    if (deliveries_ != nullptr) deliveries_->Shutdown();
    if (snapshots_ != nullptr) snapshots_->Shutdown();
    if (log_ != nullptr) log_->Shutdown();
    if (engine_ != nullptr) engine_->Shutdown();
    return;
  }
  if (grpc::HealthCheckServiceInterface* health =
          server_->GetHealthCheckService()) {
    health->SetServingStatus(false);
    health->SetServingStatus(kServiceName, false);
  }
  // Stops applying the log and answers changes still waiting for it
  // UNAVAILABLE (they may be applied by the other nodes: a client retries
  // them elsewhere with the same request_id).
  if (deliveries_ != nullptr) deliveries_->Shutdown();
  if (snapshots_ != nullptr) snapshots_->Shutdown();
  if (log_ != nullptr) log_->Shutdown();
  // Listen streams never end on their own; end them first so that the
  // server's shutdown only waits for requests that will finish.
  engine_->listeners().CloseAll(
      ShuttingDownError());
  // Calls in progress must not wait out --cohort_wait_us for company.
  engine_->Flush();
  server_->Shutdown(std::chrono::system_clock::now() +
                    std::chrono::milliseconds(grace_ms));
  engine_->Shutdown();
  if (metrics_ != nullptr) metrics_->Stop();
}

CohortServer::~CohortServer() { Shutdown(0); }

}  // namespace service
}  // namespace cohort
