// cohortd: the Cohort publish/subscribe matching server.
//
// Parses flags, starts CohortServer, waits for SIGTERM or SIGINT, then shuts
// down in order (health NOT_SERVING, stop accepting, finish admitted work)
// and exits 0. Exits 2 on a bad flag, 1 if the server cannot start.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "service/api/server.h"
#include "service/model/limits.h"
#include "service/stages/cohort_pipeline.h"
#include "service/stages/engine.h"
#include "service/stages/engine_options.h"
#include "service/stages/numa.h"
#include "service/stages/placement.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "host:port to serve gRPC on (port 0 picks a free port, printed at "
          "start). The default accepts local clients only; a non-loopback "
          "address without --tls_cert prints a warning.");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM file with the server's certificate chain (leaf first): serve "
          "gRPC over TLS. Needs --tls_key. Empty: plaintext. Read at start; "
          "restart to rotate.");
ABSL_FLAG(std::string, tls_key, "",
          "PEM file with the unencrypted private key of --tls_cert.");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM file of CA certificates: mutual TLS, every client must present "
          "a certificate signed by one of them. Needs --tls_cert and "
          "--tls_key.");
ABSL_FLAG(std::string, auth_tokens, "",
          "Token file: lines 'subscriber NAME SHA256HEX' and 'publisher NAME "
          "SHA256HEX' (the hex SHA-256 of each bearer token; `cohort "
          "token-hash` prints them; '#' comments). Set: Subscribe, Listen and "
          "Unsubscribe need a subscriber's token (metadata 'authorization: "
          "Bearer TOKEN') and act only as that subscriber; Publish and "
          "PublishStream need a publisher's token if the file has publisher "
          "lines, else they are open; GetStats is open. A token that is sent "
          "must be in the file. Empty: no authorization.");
ABSL_FLAG(std::string, mode, "staged",
          "staged: front stage -> cohorts formed once -> predicate stage and "
          "per-core partition stages -> reply stage. threaded: the "
          "thread-per-request baseline (a pool of --threads workers sharing "
          "one index), kept for comparison.");
ABSL_FLAG(uint32_t, partitions, 0,
          "Partition stages in staged mode, one thread each, owning a "
          "disjoint part of the index (see --index). 0 = one per CPU this "
          "process may use.");
ABSL_FLAG(std::string, index, "partitioned",
          "Index layout in staged mode. partitioned: one predicate table for "
          "the server; each cohort's phase 1 is done once, its work split "
          "over the partitions' cores, and each partition matches every "
          "cohort against its own disjoint part of the clusters. "
          "sharded_phase1: each partition owns a whole index of every P-th "
          "subscription and evaluates phase 1 for every event (the earlier "
          "layout, kept for comparison). replicated: each partition holds "
          "the whole index and matches its share of the events (P times the "
          "memory and subscribe work); the paper's staged server without "
          "partitioning, run as partitioned with --index_copies equal to "
          "--partitions. bench/experiment.sh compares them.");
ABSL_FLAG(uint32_t, index_copies, 0,
          "--index=partitioned: copies of the subscription set, G, each "
          "split over partitions / G of the partition threads with its own "
          "cohorts; a published event goes to one copy (the one with the "
          "fewest events in it), a change to every copy. 1: one index "
          "divided over every partition; equal to --partitions: a whole "
          "index per partition (the replicated layout). Must divide "
          "--partitions. Each copy costs the index's memory again and "
          "applies every change again. 0: the fewest copies that give none "
          "more than 8 partitions, fewer if the copies of what was "
          "recovered (64 bytes a subscription each) would pass "
          "--index_memory_budget_mb; the startup line and GetStats say "
          "which.");
ABSL_FLAG(uint64_t, index_memory_budget_mb, 0,
          "What --index_copies=0 lets the copies of the index take "
          "together, in MiB; 0: half the machine's memory.");
ABSL_FLAG(bool, phase2_stealing, true,
          "--index=partitioned or replicated: a partition thread with "
          "nothing of its own matches another partition's share of a "
          "cohort when that partition's thread is behind (every mask buffer "
          "in use, or two cohorts behind), so a preempted or slowed core "
          "holds up only the match it took. GetStats counts them "
          "(stolen_matches).");
ABSL_FLAG(uint32_t, steal_units, 0,
          "--index=partitioned or replicated: cut each partition's share of "
          "a cohort into this many runs of its cluster lists (1 to 32), "
          "each taken on its own by the partition's thread or, under "
          "--phase2_stealing, an idle one, so idle threads finish the rest "
          "of a share its own thread is slow with (a larger share, a "
          "slower core); a thread descheduled inside a unit still holds "
          "that unit. 0: 1 (no cut), which measured best on 2 cores; the "
          "startup line names the units when there are more than one.");
ABSL_FLAG(bool, pin_cores, true,
          "Pin partition p to the p-th usable CPU. Takes effect only when "
          "there are at least as many usable CPUs as partitions.");
ABSL_FLAG(std::string, numa, "auto",
          "auto: each pinned partition allocates its index memory on its "
          "CPU's NUMA node (libnuma; a no-op on a one-node machine, and "
          "without --pin_cores); off: leave placement to the kernel.");
ABSL_FLAG(uint32_t, cohort_max, 64,
          "Cohort size limit: a cohort runs as soon as this many events "
          "wait. 1 turns cohort scheduling off; 0 = no limit. 64 is the "
          "matcher's chunk (one bit per event in a predicate mask), and the "
          "partitioned layout's largest cohort: there 0 or more than 64 "
          "means 64. On fabret-1m the matcher runs about 3x faster per event "
          "at 64 than at 1.");
ABSL_FLAG(uint32_t, cohort_wait_us, 0,
          "Cohort wait limit in microseconds: how long the oldest queued "
          "event may wait for company while a stage is free to run it. 0: a "
          "free stage runs whatever is queued, as the StagedServer paper's "
          "stages do; under load cohorts still fill, because events queue "
          "while the previous cohort runs. A positive value makes light-load "
          "cohorts bigger at the price of that much latency.");
ABSL_FLAG(uint32_t, cohorts_in_flight, 0,
          "--index=partitioned: cohorts in flight at once, 1 to 64, each "
          "with a mask buffer of a word per mask slot, about one per "
          "predicate (1.3 MB on fabret-1m). More let a partition that finished its share of one "
          "cohort go on to the next ones instead of waiting for the slowest "
          "partition. 0: 2 below 4 partitions, 4 from 4, 6 from 16 "
          "on.");
ABSL_FLAG(uint64_t, queue_limit, 4096,
          "Most events admitted and not yet answered; bounds every stage "
          "queue. When full, Publish fails with RESOURCE_EXHAUSTED and "
          "PublishStream stops reading.");
ABSL_FLAG(int64_t, latency_target_us, 0,
          "0 (off), or a target in microseconds for the time from "
          "admission to answer: every 100 ms in which even the fastest "
          "answer took longer, the limit on events in flight drops to "
          "throughput x target (Little's law), and otherwise it grows back "
          "by a quarter, up to --queue_limit. Only the fastest answers "
          "must meet it, so the p99 lands at a few times it "
          "(bench/overload.sh uses half the unloaded p99); GetStats and "
          "/metrics show the limit in force (admission_limit).");
ABSL_FLAG(uint32_t, threads, 0,
          "Worker threads in threaded mode. 0 = one per usable CPU.");
ABSL_FLAG(uint64_t, listener_queue_limit, 1024,
          "Deliveries queued per Listen stream before --slow_listener acts.");
ABSL_FLAG(std::string, slow_listener, "drop",
          "What happens to a listener whose queue is full: drop (the "
          "delivery is lost and counted; the stream sees a gap in "
          "Delivery.sequence) or disconnect (the stream ends with "
          "RESOURCE_EXHAUSTED). Publishers are never stalled.");
ABSL_FLAG(uint32_t, max_predicates, 32, "Predicates per subscription.");
ABSL_FLAG(uint32_t, max_event_attributes, 256, "Attributes per event.");
ABSL_FLAG(uint32_t, max_payload_bytes, 65536, "Bytes of Event.payload.");
ABSL_FLAG(uint32_t, max_string_bytes, 256,
          "Bytes of a string value: an event attribute's, or a predicate's "
          "operand (OP_PREFIX's prefix and each OP_IN value included).");
ABSL_FLAG(uint32_t, max_set_size, 64,
          "Values in the list of an OP_IN or OP_NOT_IN predicate.");
ABSL_FLAG(uint32_t, max_json_bytes, 65536, "Bytes of Event.json.");
ABSL_FLAG(uint32_t, max_json_depth, 32,
          "How deep the objects and arrays of an Event.json nest (the "
          "document's own object is 1).");
ABSL_FLAG(uint32_t, max_json_values, 1024,
          "Values (numbers, strings, true, false, null) in an Event.json, "
          "every array element counted.");
ABSL_FLAG(uint32_t, max_json_combinations, 256,
          "Combinations of array elements one JSON event is matched as: "
          "the product, over the arrays holding fields that subscriptions "
          "name, of their distinct elements. An event with more fails "
          "the Publish with RESOURCE_EXHAUSTED.");
ABSL_FLAG(uint32_t, max_or_expansion, 150,
          "Conjunctions an \"or\" subscription (SubscriptionSpec.any_of) "
          "expands into: the product of its groups' alternatives; 1 to "
          "1024. A Subscribe with more fails with RESOURCE_EXHAUSTED.");
ABSL_FLAG(uint64_t, max_distinct_strings, 1000000,
          "Distinct strings subscriptions may name on one attribute (and, "
          "apart, distinct prefixes or suffixes of one length, case folds "
          "and string range bounds); a Subscribe naming one "
          "more fails with RESOURCE_EXHAUSTED. Counted since the service "
          "started (a restart counts those of the recovered "
          "subscriptions).");
ABSL_FLAG(uint32_t, max_batch, 10000,
          "Subscriptions per Subscribe, ids per Unsubscribe and events per "
          "Publish request.");
ABSL_FLAG(uint32_t, max_streams, 1024,
          "Open Listen and PublishStream streams, together.");
ABSL_FLAG(uint32_t, stream_window, 16,
          "Requests of one PublishStream in flight at once; the stream stops "
          "reading (gRPC flow control) beyond it.");
ABSL_FLAG(int32_t, max_message_bytes, 64 << 20,
          "Largest request message accepted, in bytes.");
ABSL_FLAG(uint32_t, max_concurrent_streams, 0,
          "Calls open at once on one client connection (HTTP/2 "
          "SETTINGS_MAX_CONCURRENT_STREAMS; Listen and PublishStream count "
          "too); further calls wait in the client. 0 = no limit (gRPC's "
          "default). A finished call's memory is held until the client reads "
          "its answer, so with clients that may stop reading this bounds "
          "what each connection can pin (bench/overload.sh).");
ABSL_FLAG(uint32_t, max_attributes, 1u << 20,
          "Distinct attribute names the service will intern.");
ABSL_FLAG(uint32_t, max_subscribers, 1u << 24,
          "Distinct subscriber names the service will intern.");
ABSL_FLAG(int32_t, metrics_port, -1,
          "Port for Prometheus text metrics over HTTP (GET /metrics); -1 = "
          "off, 0 = any free port (printed at start).");
ABSL_FLAG(std::string, metrics_host, "127.0.0.1",
          "Address the metrics endpoint listens on.");
ABSL_FLAG(std::string, data_dir, "",
          "Directory for the journal and snapshots (created if absent; its "
          "parent must exist). Set: subscriptions survive restarts, and "
          "Subscribe/Unsubscribe answer only once their record is durable. "
          "Empty: nothing is stored. With --cluster_nats: a local copy of "
          "the subscription log up to a position (snapshots plus a journal, "
          "never synced: the log is the durable copy), so that a restart "
          "reads only the log after it (docs/DESIGN.md section 11.8).");
ABSL_FLAG(std::string, fsync, "always",
          "With --data_dir, one node (a cluster node's local copy is never "
          "synced): always (fdatasync each journal group before "
          "answering) or none (answer once the kernel has the bytes: UNSAFE, "
          "a machine crash loses acknowledged changes; a process crash does "
          "not).");
ABSL_FLAG(uint64_t, snapshot_every, 1000000,
          "With --data_dir: subscription changes journaled between "
          "snapshots (each subscription of a batched Subscribe counts; a "
          "snapshot is also taken on a clean shutdown); 0 = only at "
          "shutdown.");
ABSL_FLAG(uint32_t, snapshot_growth_percent, 50,
          "With --data_dir, one node: a snapshot also waits until the "
          "changes since the last one reach this percentage of the "
          "subscriptions that one held, so that folding (which rewrites "
          "every live subscription) costs in proportion to the changes: "
          "loading N subscriptions folds about 3N of them, not one live set "
          "per --snapshot_every. Recovery after a crash then replays up to "
          "that share of the live set from the journal. 0 = every "
          "--snapshot_every changes. Not with --cluster_nats, whose nodes "
          "snapshot at the same log positions.");
ABSL_FLAG(uint32_t, journal_group_max, 1024,
          "With --data_dir: most records written and synced as one group.");
ABSL_FLAG(uint32_t, journal_group_wait_us, 0,
          "With --data_dir: how long a group smaller than "
          "--journal_group_max waits for more records, in microseconds; 0 "
          "writes at once (groups still form while the previous one is "
          "being synced).");

ABSL_FLAG(std::string, cluster_nats, "",
          "Cluster mode: NATS server URLs, comma separated "
          "(nats://host:4222,...), of a NATS cluster with JetStream. Every "
          "Subscribe and Unsubscribe goes through a replicated subscription "
          "log (a JetStream stream) that every cohortd of the cluster "
          "applies in order: all nodes hold the same subscriptions under the "
          "same ids (docs/DESIGN.md section 11). Empty: one node, no NATS.");
ABSL_FLAG(std::string, cluster_node, "",
          "Cluster mode: this node's name, in stats and message ids. Empty: "
          "the host name and --listen port.");
ABSL_FLAG(std::string, cluster_stream, "COHORT_LOG",
          "Cluster mode: the JetStream stream of the subscription log "
          "(subject cohort.log.<stream>). Created if absent.");
ABSL_FLAG(int32_t, cluster_replicas, 3,
          "Cluster mode: replicas of the log stream when this node creates "
          "it (1 to 5). 3 survives the loss of one NATS server.");
ABSL_FLAG(int64_t, cluster_lost_timeout_ms, 5000,
          "Cluster mode: a node whose log stream has not answered for this "
          "long goes NOT_SERVING (health, and UNAVAILABLE to calls) rather "
          "than answer from a stale view, and serves again once it has "
          "caught up. At least 100.");
ABSL_FLAG(int64_t, cluster_dedupe_window_ms, 120000,
          "Cluster mode: the log stream's duplicate window when this node "
          "creates it: a retried Subscribe or Unsubscribe with the same "
          "request_id within it is applied once.");
ABSL_FLAG(int64_t, cluster_trim_grace_ms, 600000,
          "Cluster mode: the log is trimmed behind shared snapshots only "
          "where its records are older than this, so that a node cut off "
          "or stopped for less keeps reading the log where it left off (one "
          "away for longer starts from the shared snapshot when restarted). "
          "At least 1000.");
ABSL_FLAG(std::string, cluster_read, "applied",
          "Cluster mode: what a Publish without min_log_position sees. "
          "applied: every change this node had applied when it arrived. "
          "latest: every change acknowledged to anyone before it arrived "
          "(one stream round trip, shared by concurrent publishes, before "
          "matching).");
ABSL_FLAG(int64_t, max_connection_age_ms, 0,
          "Close client connections after this many milliseconds (with a "
          "grace of a tenth of it, at least 1 s), so that clients "
          "re-resolve a DNS name and spread over new nodes; Listen streams "
          "then end with UNAVAILABLE and clients reconnect. 0: never. "
          "300000 suits a cluster.");

namespace cohort {
namespace service {
namespace {

// The startup line's note of the steal units, where there is more than one
// (as phase2_stealing is named only when off).
std::string StealUnitsNote(uint32_t partitions_per_copy, uint32_t flag) {
  const uint32_t units = CohortPipeline::UnitsFor(partitions_per_copy, flag);
  return units > 1 ? absl::StrCat(", steal_units ", units) : "";
}

absl::StatusOr<ServerOptions> OptionsFromFlags() {
  ServerOptions o;
  o.listen = absl::GetFlag(FLAGS_listen);
  o.mode = absl::GetFlag(FLAGS_mode);
  const uint32_t cpus = UsableCpus();
  o.engine.partitions = absl::GetFlag(FLAGS_partitions);
  if (o.engine.partitions == 0) o.engine.partitions = cpus;
  absl::StatusOr<IndexLayout> layout =
      ParseIndexLayout(absl::GetFlag(FLAGS_index));
  if (!layout.ok()) return layout.status();
  o.engine.index_layout = *layout;
  o.engine.index_copies = absl::GetFlag(FLAGS_index_copies);
  o.engine.index_memory_budget_bytes =
      absl::GetFlag(FLAGS_index_memory_budget_mb) << 20;
  if (o.engine.index_layout == IndexLayout::kPartitioned) {
    if (absl::Status s =
            CheckIndexCopies(o.engine.partitions, o.engine.index_copies);
        !s.ok()) {
      return s;
    }
  }
  o.engine.phase2_stealing = absl::GetFlag(FLAGS_phase2_stealing);
  o.engine.steal_units = absl::GetFlag(FLAGS_steal_units);
  if (absl::Status s = CohortPipeline::CheckStealUnits(o.engine.steal_units);
      !s.ok()) {
    return s;
  }
  o.engine.pin_cores = absl::GetFlag(FLAGS_pin_cores);
  const std::string numa = absl::GetFlag(FLAGS_numa);
  if (numa != "auto" && numa != "off") {
    return absl::InvalidArgumentError(
        absl::StrCat("--numa: \"", numa, "\" is not auto or off"));
  }
  o.engine.numa = numa == "auto";
  o.engine.cohort_max = absl::GetFlag(FLAGS_cohort_max);
  o.engine.cohort_wait_us = absl::GetFlag(FLAGS_cohort_wait_us);
  o.engine.cohorts_in_flight = absl::GetFlag(FLAGS_cohorts_in_flight);
  if (o.engine.cohorts_in_flight > CohortPipeline::kMaxBuffers) {
    return absl::InvalidArgumentError(
        absl::StrCat("--cohorts_in_flight: at most ",
                     CohortPipeline::kMaxBuffers, " (0 = the default)"));
  }
  o.engine.queue_limit = absl::GetFlag(FLAGS_queue_limit);
  o.engine.latency_target_us = absl::GetFlag(FLAGS_latency_target_us);
  o.engine.threads = absl::GetFlag(FLAGS_threads);
  if (o.engine.threads == 0) o.engine.threads = cpus;
  o.engine.max_subscribers = absl::GetFlag(FLAGS_max_subscribers);
  o.streams.listener_queue_limit = absl::GetFlag(FLAGS_listener_queue_limit);
  const std::string slow = absl::GetFlag(FLAGS_slow_listener);
  if (slow == "drop") {
    o.streams.slow_listener = SlowListenerPolicy::kDrop;
  } else if (slow == "disconnect") {
    o.streams.slow_listener = SlowListenerPolicy::kDisconnect;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "--slow_listener: \"", slow, "\" is not drop or disconnect"));
  }
  o.streams.max_streams = absl::GetFlag(FLAGS_max_streams);
  o.streams.stream_window = absl::GetFlag(FLAGS_stream_window);
  o.limits.max_predicates = absl::GetFlag(FLAGS_max_predicates);
  o.limits.max_event_attributes = absl::GetFlag(FLAGS_max_event_attributes);
  o.limits.max_payload_bytes = absl::GetFlag(FLAGS_max_payload_bytes);
  o.limits.max_batch = absl::GetFlag(FLAGS_max_batch);
  o.limits.max_string_bytes = absl::GetFlag(FLAGS_max_string_bytes);
  o.limits.max_set_size = absl::GetFlag(FLAGS_max_set_size);
  o.limits.max_json_bytes = absl::GetFlag(FLAGS_max_json_bytes);
  o.limits.max_json_depth = absl::GetFlag(FLAGS_max_json_depth);
  o.limits.max_json_values = absl::GetFlag(FLAGS_max_json_values);
  o.limits.max_json_combinations = absl::GetFlag(FLAGS_max_json_combinations);
  if (o.limits.max_json_depth == 0 || o.limits.max_json_combinations == 0) {
    return absl::InvalidArgumentError(
        "--max_json_depth and --max_json_combinations: at least 1");
  }
  o.limits.max_or_expansion = absl::GetFlag(FLAGS_max_or_expansion);
  if (o.limits.max_or_expansion == 0 ||
      o.limits.max_or_expansion > kMaxOrExpansionLimit) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max_or_expansion: 1 to ", kMaxOrExpansionLimit, ", got ",
        o.limits.max_or_expansion));
  }
  o.max_distinct_strings = absl::GetFlag(FLAGS_max_distinct_strings);
  o.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  const uint32_t concurrent = absl::GetFlag(FLAGS_max_concurrent_streams);
  if (concurrent > kMaxConcurrentStreams) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_concurrent_streams: at most ",
                     kMaxConcurrentStreams, " (0 = no limit)"));
  }
  o.max_concurrent_streams = static_cast<int>(concurrent);
  o.max_attributes = absl::GetFlag(FLAGS_max_attributes);
  o.metrics_port = absl::GetFlag(FLAGS_metrics_port);
  o.metrics_host = absl::GetFlag(FLAGS_metrics_host);
  o.durability.data_dir = absl::GetFlag(FLAGS_data_dir);
  const std::string fsync = absl::GetFlag(FLAGS_fsync);
  if (fsync == "always" || fsync == "none") {
    o.durability.fsync = fsync == "always";
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--fsync: \"", fsync, "\" is not always or none"));
  }
  o.tls.cert_file = absl::GetFlag(FLAGS_tls_cert);
  o.tls.key_file = absl::GetFlag(FLAGS_tls_key);
  o.tls.client_ca_file = absl::GetFlag(FLAGS_tls_client_ca);
  if (absl::Status s = CheckServerTlsOptions(o.tls); !s.ok()) return s;
  o.auth_tokens_file = absl::GetFlag(FLAGS_auth_tokens);
  o.durability.snapshot_every = absl::GetFlag(FLAGS_snapshot_every);
  o.durability.snapshot_growth_percent =
      absl::GetFlag(FLAGS_snapshot_growth_percent);
  o.durability.group_max = absl::GetFlag(FLAGS_journal_group_max);
  o.durability.group_wait_us = absl::GetFlag(FLAGS_journal_group_wait_us);
  if (o.durability.group_max == 0) {
    return absl::InvalidArgumentError("--journal_group_max must be at least 1");
  }
  if (o.streams.listener_queue_limit == 0 || o.streams.stream_window == 0 ||
      o.limits.max_predicates == 0 || o.limits.max_event_attributes == 0 ||
      o.limits.max_batch == 0 || o.max_attributes == 0 ||
      o.engine.max_subscribers == 0 || o.max_message_bytes <= 0 ||
      o.limits.max_set_size == 0 || o.max_distinct_strings == 0) {
    return absl::InvalidArgumentError(
        "--listener_queue_limit, --stream_window, --max_predicates, "
        "--max_event_attributes, --max_batch, --max_attributes, "
        "--max_subscribers, --max_message_bytes, --max_set_size and "
        "--max_distinct_strings must be at least 1");
  }
  // Checked again by CreateEngine; here it is a flag mistake (exit 2).
  if (absl::Status s = CheckLatencyTarget(o.engine.latency_target_us);
      !s.ok()) {
    return s;
  }
  if (o.limits.max_predicates > 1024) {
    return absl::InvalidArgumentError(
        "--max_predicates: at most 1024 (the matcher's limit)");
  }
  o.cluster.nats = absl::GetFlag(FLAGS_cluster_nats);
  o.cluster.node = absl::GetFlag(FLAGS_cluster_node);
  if (o.cluster.node.empty()) {
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    o.cluster.node =
        absl::StrCat(host, ":", o.listen.substr(o.listen.rfind(':') + 1));
  }
  o.cluster.stream = absl::GetFlag(FLAGS_cluster_stream);
  o.cluster.replicas = absl::GetFlag(FLAGS_cluster_replicas);
  o.cluster.lost_timeout_ms = absl::GetFlag(FLAGS_cluster_lost_timeout_ms);
  o.cluster.dedupe_window_ms = absl::GetFlag(FLAGS_cluster_dedupe_window_ms);
  o.cluster.trim_grace_ms = absl::GetFlag(FLAGS_cluster_trim_grace_ms);
  const std::string read = absl::GetFlag(FLAGS_cluster_read);
  if (read != "applied" && read != "latest") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--cluster_read: \"", read, "\" is not applied or latest"));
  }
  o.cluster.read_latest = read == "latest";
  if (o.cluster.replicas < 1 || o.cluster.replicas > 5) {
    return absl::InvalidArgumentError("--cluster_replicas: 1 to 5");
  }
  if (o.cluster.lost_timeout_ms < 100) {
    return absl::InvalidArgumentError(
        "--cluster_lost_timeout_ms: at least 100");
  }
  if (o.cluster.dedupe_window_ms < 1000) {
    return absl::InvalidArgumentError(
        "--cluster_dedupe_window_ms: at least 1000");
  }
  if (o.cluster.trim_grace_ms < 1000) {
    return absl::InvalidArgumentError("--cluster_trim_grace_ms: at least 1000");
  }
  o.max_connection_age_ms = absl::GetFlag(FLAGS_max_connection_age_ms);
  if (o.max_connection_age_ms < 0) {
    return absl::InvalidArgumentError("--max_connection_age_ms: 0 or more");
  }
  if (o.metrics_port < -1 || o.metrics_port > 65535) {
    return absl::InvalidArgumentError("--metrics_port: -1 or 0..65535");
  }
  return o;
}

int Main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "cohortd: the Cohort content-based publish/subscribe server.\n"
      "Usage: cohortd [--flag=value ...]; see --help for every flag.");
  absl::ParseCommandLine(argc, argv);
  absl::StatusOr<ServerOptions> options = OptionsFromFlags();
  if (!options.ok()) {
    std::fprintf(stderr, "cohortd: %s\n",
                 std::string(options.status().message()).c_str());
    return 2;
  }
  // Block the shutdown signals in every thread; main waits for them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  absl::StatusOr<std::unique_ptr<CohortServer>> server =
      CohortServer::Start(*options);
  if (!server.ok()) {
    std::fprintf(stderr, "cohortd: %s\n",
                 std::string(server.status().message()).c_str());
    return 1;
  }
  if (!(*server)->recovery_summary().empty()) {
    std::printf("cohortd: %s\n", (*server)->recovery_summary().c_str());
  }
  // The threaded baseline has workers, not partitions or cohorts.
  const std::string engine =
      options->mode == "staged"
          ? absl::StrFormat(
                "%u partitions, index %s, cohort_max %u, cohort_wait_us %lld%s",
                options->engine.partitions,
                IndexLayoutName(options->engine.index_layout),
                options->engine.cohort_max,
                static_cast<long long>(options->engine.cohort_wait_us),
                options->engine.index_layout != IndexLayout::kShardedPhase1
                    ? absl::StrCat(
                          ", index_copies ", (*server)->index_copies(),
                          ", cohorts_in_flight ",
                          CohortPipeline::BuffersFor(
                              options->engine.partitions /
                                  (*server)->index_copies(),
                              options->engine.cohorts_in_flight),
                          StealUnitsNote(options->engine.partitions /
                                             (*server)->index_copies(),
                                         options->engine.steal_units),
                          options->engine.phase2_stealing
                              ? ""
                              : ", phase2_stealing off")
                    : "")
          : absl::StrFormat("%u workers", options->engine.threads);
  if (!options->tls.enabled() && !IsLoopbackListen(options->listen)) {
    std::fprintf(stderr,
                 "cohortd: warning: --listen=%s is not a loopback address and "
                 "TLS is off: calls%s cross the network in plaintext (see "
                 "--tls_cert)\n",
                 options->listen.c_str(),
                 options->auth_tokens_file.empty() ? "" : " and their tokens");
  }
  std::printf("cohortd: serving on port %d (mode %s, %s; %s)\n",
              (*server)->port(), options->mode.c_str(), engine.c_str(),
              (*server)->security_summary().c_str());
  if (SubscriptionLog* log = (*server)->log()) {
    std::printf(
        "cohortd: cluster node %s, subscription log stream %s on %s "
        "(applied to position %llu; NOT_SERVING until caught up)\n",
        log->options().node.c_str(), log->options().stream.c_str(),
        log->options().nats.c_str(),
        static_cast<unsigned long long>(log->applied()));
  }
  if (options->mode == "staged") {
    // Where the partitions run, as their stats report it.
    v1::Stats stats;
    (*server)->FillStats(&stats);
    std::vector<std::string> cpus, nodes;
    for (const v1::StageStats& stage : stats.stages()) {
      if (stage.stage() != "partition") continue;
      cpus.push_back(stage.has_cpu() ? absl::StrCat(stage.cpu()) : "-");
      nodes.push_back(stage.has_numa_node() ? absl::StrCat(stage.numa_node())
                                            : "-");
    }
    std::printf("cohortd: partitions on cpus %s, memory on nodes %s "
                "(--pin_cores=%s --numa=%s; NUMA: %s)%s\n",
                absl::StrJoin(cpus, ",").c_str(),
                absl::StrJoin(nodes, ",").c_str(),
                options->engine.pin_cores ? "true" : "false",
                options->engine.numa ? "auto" : "off", NumaSummary().c_str(),
                OverSubscribed(options->engine.partitions)
                    ? absl::StrCat("; ", options->engine.partitions,
                                   " partitions on ", UsableCpus(),
                                   " CPUs: SCHED_BATCH")
                          .c_str()
                    : "");
  }
  if ((*server)->metrics_port() >= 0) {
    std::printf("cohortd: metrics on http://%s:%d/metrics\n",
                options->metrics_host.c_str(), (*server)->metrics_port());
  }
  std::fflush(stdout);
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  std::printf("cohortd: %s received; shutting down\n",
              signal_number == SIGTERM ? "SIGTERM" : "SIGINT");
  std::fflush(stdout);
  (*server)->Shutdown();
  const absl::Status stored = (*server)->engine()->durability_status();
  if (!stored.ok()) {
    std::fprintf(stderr, "cohortd: final snapshot failed: %s\n",
                 std::string(stored.message()).c_str());
  }
  std::printf("cohortd: stopped\n");
  return stored.ok() ? 0 : 1;
}

}  // namespace
}  // namespace service
}  // namespace cohort

int main(int argc, char** argv) { return cohort::service::Main(argc, argv); }
