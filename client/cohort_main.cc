// cohort: the command-line client of a cohortd server.
//
//   cohort subscribe --subscriber=alice 'price <= 500 and kind = 7' [...]
//   cohort subscribe --subscriber=alice 'kind = 7 or (price < 9 and kind = 8)'
//   cohort subscribe --subscriber=alice '{"detail": {"price": [...]}}'
//   cohort subscribe --subscriber=alice --pattern=rule.json [...]
//       (Event Ruler patterns and SNS filter policies, filter/pattern.h)
//   cohort unsubscribe 17 18
//   cohort publish [--json] '{"detail": {"price": 19.99}}'
//   cohort publish [--json] '{"detail": {"price": 19.99, "tags": []}}'
//   cohort listen --subscriber=alice [--count=N]
//   cohort stats [--json]
//   cohort workload --preset=fabret-1m [--subscriptions=N] [--events=N]
//       --out=FILE                          (writes FILE, prints its report)
//   cohort load --workload=FILE|--preset=fabret-1m --clients=N [--rate=R]
//       [--duration=D] [--out=FILE.json|FILE.csv]
//   cohort token-hash [--subscriber=NAME|--publisher=NAME] [--token_file=F]
//       (prints the --auth_tokens line for the token on stdin or in F)
//
// Security (every command that connects): --tls_ca (and --tls_cert,
// --tls_key for mutual TLS) turn on TLS; --token_file, or else the
// environment variable COHORT_TOKEN, gives the bearer token sent with every
// call. A token is never taken from the command line, where `ps` shows it.
//
// absl flags are global, so one flag serves every command that needs it;
// each flag's help says which commands read it.
//
// Exit status: 0 on success, 1 when the server answers with an error (the
// gRPC status is printed), 2 for a usage error (a parse error points at the
// offending token).
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "client/load.h"
#include "filter/parse.h"
#include "filter/pattern.h"
#include "google/protobuf/util/json_util.h"
#include "service/api/auth.h"
#include "workload/typed_workload.h"
#include "workload/workload.h"
#include "workload/workload_file.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051",
          "cohortd address, host:port (every command but workload).");
ABSL_FLAG(bool, tls, false,
          "Connect with TLS, verifying the server's certificate against the "
          "system's root certificates (or --tls_ca). Implied by --tls_ca, "
          "--tls_cert and --tls_server_name.");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM file of the CA certificate(s) the server's certificate must be "
          "signed by; turns on TLS.");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM file with this client's certificate chain, for a server with "
          "--tls_client_ca (mutual TLS). Needs --tls_key.");
ABSL_FLAG(std::string, tls_key, "",
          "PEM file with the unencrypted private key of --tls_cert.");
ABSL_FLAG(std::string, tls_server_name, "",
          "The name the server's certificate must carry, when --server's host "
          "is not in it (e.g. an IP address).");
ABSL_FLAG(std::string, token_file, "",
          "File holding the bearer token (surrounding blanks and newlines are "
          "ignored) sent as 'authorization: Bearer TOKEN' with every call, "
          "for a server with --auth_tokens. Unset: the environment variable "
          "COHORT_TOKEN, if set. token-hash: the token to hash (default: "
          "stdin).");
ABSL_FLAG(std::string, publisher, "",
          "token-hash: print a 'publisher NAME HASH' line for this name.");
ABSL_FLAG(int64_t, deadline_ms, 10000,
          "Deadline of each call in milliseconds (not of listen; load: of "
          "connecting and of GetStats, its publish calls have none).");
ABSL_FLAG(std::string, subscriber, "",
          "subscribe, listen: the subscriber name (required); token-hash: "
          "print a 'subscriber NAME HASH' line for it.");
ABSL_FLAG(std::vector<std::string>, pattern, {},
          "subscribe: files (comma-separated; - for stdin) each holding one "
          "Event Ruler pattern or SNS filter policy (JSON) to subscribe, "
          "after the subscriptions given as arguments. An argument that "
          "starts with '{' is such a pattern too.");
ABSL_FLAG(std::string, payload, "",
          "publish: the event's payload; @FILE reads it from FILE.");
ABSL_FLAG(bool, ids, false,
          "publish: list the matched subscription ids, not only the count; "
          "load: ask for the ids (PublishRequest.return_ids).");
ABSL_FLAG(int64_t, count, 0,
          "listen: stop after this many deliveries (0 = until interrupted).");
ABSL_FLAG(bool, json, false,
          "stats: print the Stats message as JSON; workload: print the report "
          "as JSON; publish: every argument is a JSON event (Event.json), as "
          "an argument starting with '{' is without it.");
ABSL_FLAG(std::string, workload, "",
          "load: read the workload from this file (written by cohort "
          "workload) instead of generating --preset.");
ABSL_FLAG(std::string, preset, "fabret-1m",
          "workload, load: the workload preset, fabret-1m, fabret-10m, "
          "fabret-uniform, selective-1m, ranges-1m, events-1m, events-10m "
          "(typed: strings, sets, prefixes; its file is in the CLI's "
          "grammar) or eventbridge-1m (Event Ruler patterns over JSON "
          "events), workload/presets.md (load: ignored with --workload).");
ABSL_FLAG(int64_t, subscriptions, -1,
          "workload, load: subscriptions in the preset's workload (-1 = the "
          "preset's: 10,000,000 for the -10m presets, else 1,000,000; load: "
          "ignored with --workload).");
ABSL_FLAG(int64_t, events, -1,
          "workload, load: events in the preset's workload (-1 = the "
          "preset's 100,000; load: ignored with --workload).");
ABSL_FLAG(std::optional<uint64_t>, seed, std::nullopt,
          "workload: the random seed (default: the preset's).");
ABSL_FLAG(std::string, out, "",
          "workload: write the workload file here (default: stdout, and the "
          "report to stderr); load: write the report here, as JSON if FILE "
          "ends in .json, as CSV if it ends in .csv.");
ABSL_FLAG(int, clients, 1,
          "load: concurrent publishers, each with its own connection.");
ABSL_FLAG(double, rate, 0,
          "load: 0 = closed loop (each client sends its next request when the "
          "previous one returns); > 0 = open loop at this many events/s in "
          "total, latency measured from each request's intended send time "
          "(--mode=unary only).");
ABSL_FLAG(double, duration, 10,
          "load: the measured publish interval, in seconds.");
ABSL_FLAG(double, warmup, 1,
          "load: seconds of publishing before the measured interval (not "
          "counted).");
ABSL_FLAG(std::string, mode, "unary",
          "load: unary (Publish calls, closed or open loop), stream "
          "(PublishStream with --window requests in flight per client) or "
          "none (subscribe only).");
ABSL_FLAG(int, batch, 1, "load: events per PublishRequest.");
ABSL_FLAG(int, window, 4,
          "load, --mode=stream: requests a stream may have sent and not yet "
          "had answered.");
ABSL_FLAG(int, subscribe_batch, 5000,
          "load: subscriptions per Subscribe request (at most the server's "
          "--max_batch).");
ABSL_FLAG(int, subscribe_in_flight, 4,
          "load: Subscribe requests in flight at once (concurrent "
          "subscribers, as the server sees them).");
ABSL_FLAG(bool, skip_load, false,
          "load: do not subscribe; publish against the subscriptions the "
          "server already holds.");

namespace cohort {
namespace client {
namespace {

constexpr int kServerError = 1;
constexpr int kUsageError = 2;

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "cohort: %s: %s\n",
               absl::StatusCodeToString(status.code()).c_str(),
               std::string(status.message()).c_str());
  return kServerError;
}

int Usage(const std::string& message) {
  std::fprintf(stderr, "cohort: %s\n(see cohort --help)\n", message.c_str());
  return kUsageError;
}

// A token as read from a file or stdin: without the surrounding blanks and
// the newline an editor or `echo` adds, so that it hashes as it is sent.
absl::StatusOr<std::string> CleanToken(absl::string_view text,
                                       absl::string_view source) {
  const std::string token(absl::StripAsciiWhitespace(text));
  if (absl::Status status = service::CheckToken(token); !status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": ", status.message()));
  }
  return token;
}

// Reads `flag`'s file into *out (unchanged if the flag is empty).
absl::Status ReadFlagFile(const absl::Flag<std::string>& flag,
                          absl::string_view name, std::string* out) {
  const std::string path = absl::GetFlag(flag);
  if (path.empty()) return absl::OkStatus();
  absl::StatusOr<std::string> contents = service::ReadSecretFile(path);
  if (!contents.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, ": ", contents.status().message()));
  }
  *out = *std::move(contents);
  return absl::OkStatus();
}

// TLS and the token from --tls*, --token_file and COHORT_TOKEN.
absl::StatusOr<ClientSecurity> SecurityFromFlags() {
  ClientSecurity security;
  for (const auto& [flag, name, out] :
       {std::make_tuple(&FLAGS_tls_ca, "tls_ca", &security.tls_ca_pem),
        std::make_tuple(&FLAGS_tls_cert, "tls_cert", &security.tls_cert_pem),
        std::make_tuple(&FLAGS_tls_key, "tls_key", &security.tls_key_pem)}) {
    if (absl::Status status = ReadFlagFile(*flag, name, out); !status.ok()) {
      return status;
    }
  }
  security.tls_server_name = absl::GetFlag(FLAGS_tls_server_name);
  security.tls = absl::GetFlag(FLAGS_tls) || !security.tls_ca_pem.empty() ||
                 !security.tls_cert_pem.empty() ||
                 !security.tls_server_name.empty();
  if (security.tls_cert_pem.empty() != security.tls_key_pem.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key go together");
  }
  std::string token;
  if (!absl::GetFlag(FLAGS_token_file).empty()) {
    if (absl::Status status =
            ReadFlagFile(FLAGS_token_file, "token_file", &token);
        !status.ok()) {
      return status;
    }
    absl::StatusOr<std::string> clean = CleanToken(token, "--token_file");
    if (!clean.ok()) return clean.status();
    security.token = *std::move(clean);
  } else if (const char* env = std::getenv("COHORT_TOKEN");
             env != nullptr && *env != '\0') {
    absl::StatusOr<std::string> clean = CleanToken(env, "COHORT_TOKEN");
    if (!clean.ok()) return clean.status();
    security.token = *std::move(clean);
  }
  return security;
}

absl::StatusOr<std::unique_ptr<Client>> ConnectFromFlags() {
  ClientOptions options;
  options.target = absl::GetFlag(FLAGS_server);
  options.deadline = absl::Milliseconds(absl::GetFlag(FLAGS_deadline_ms));
  absl::StatusOr<ClientSecurity> security = SecurityFromFlags();
  if (!security.ok()) return security.status();
  options.security = *std::move(security);
  return Client::Connect(options);
}

// The bytes of `path`, named by flag --`flag`: NOT_FOUND "--FLAG: cannot
// read PATH" if it cannot be opened; "-" is stdin where `stdin_dash`.
absl::StatusOr<std::string> ReadFlagPath(absl::string_view flag,
                                         const std::string& path,
                                         bool stdin_dash) {
  std::ostringstream bytes;
  if (stdin_dash && path == "-") {
    bytes << std::cin.rdbuf();
    return bytes.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("--", flag, ": cannot read ", path));
  }
  bytes << in.rdbuf();
  return bytes.str();
}

// The subscriptions of `subscribe`: each argument, then each --pattern
// file's text.
absl::StatusOr<std::vector<std::string>> SubscribeTexts(
    const std::vector<std::string>& args) {
  std::vector<std::string> texts = args;
  for (const std::string& file : absl::GetFlag(FLAGS_pattern)) {
    absl::StatusOr<std::string> text =
        ReadFlagPath("pattern", file, /*stdin_dash=*/true);
    if (!text.ok()) return text.status();
    texts.push_back(*std::move(text));
  }
  return texts;
}

int Subscribe(const std::vector<std::string>& args) {
  const std::string subscriber = absl::GetFlag(FLAGS_subscriber);
  if (subscriber.empty()) return Usage("subscribe needs --subscriber=NAME");
  absl::StatusOr<std::vector<std::string>> texts = SubscribeTexts(args);
  if (!texts.ok()) return Usage(std::string(texts.status().message()));
  if (texts->empty()) {
    return Usage("subscribe needs at least one subscription (or --pattern)");
  }
  std::vector<v1::SubscriptionSpec> specs;
  std::vector<std::string> shown;  // what each line of the answer shows
  for (const std::string& text : *texts) {
    const bool pattern = filter::IsPattern(text);
    // The spec forms: "or", "$or" and lists of several kinds of condition
    // become any_of groups.
    absl::StatusOr<v1::SubscriptionSpec> spec =
        pattern ? filter::ParsePatternSpec(text)
                : filter::ParseSubscriptionSpec(text);
    if (!spec.ok()) return Usage(std::string(spec.status().message()));
    spec->set_subscriber(subscriber);
    // A pattern is shown as what it became, in the grammar.
    shown.push_back(pattern ? filter::FormatSubscription(*spec) : text);
    specs.push_back(*std::move(spec));
  }
  auto client = ConnectFromFlags();
  if (!client.ok()) return Fail(client.status());
  absl::StatusOr<std::vector<uint64_t>> ids = (*client)->Subscribe(specs);
  if (!ids.ok()) return Fail(ids.status());
  for (size_t i = 0; i < ids->size(); ++i) {
    std::printf("%llu\t%s\n", static_cast<unsigned long long>((*ids)[i]),
                shown[i].c_str());
  }
  return 0;
}

int Unsubscribe(const std::vector<std::string>& args) {
  if (args.empty()) return Usage("unsubscribe needs subscription ids");
  std::vector<uint64_t> ids;
  for (const std::string& arg : args) {
    uint64_t id;
    if (!absl::SimpleAtoi(arg, &id)) {
      return Usage(absl::StrCat("unsubscribe: \"", arg,
                                "\" is not a subscription id"));
    }
    ids.push_back(id);
  }
  auto client = ConnectFromFlags();
  if (!client.ok()) return Fail(client.status());
  absl::Status status = (*client)->Unsubscribe(ids);
  if (!status.ok()) return Fail(status);
  std::printf("unsubscribed %zu\n", ids.size());
  return 0;
}

absl::StatusOr<std::string> PayloadFromFlag() {
  const std::string flag = absl::GetFlag(FLAGS_payload);
  if (flag.empty() || flag[0] != '@') return flag;
  return ReadFlagPath("payload", flag.substr(1), /*stdin_dash=*/false);
}

int Publish(const std::vector<std::string>& args) {
  if (args.empty()) return Usage("publish needs at least one event");
  absl::StatusOr<std::string> payload = PayloadFromFlag();
  if (!payload.ok()) return Usage(std::string(payload.status().message()));
  v1::PublishRequest request;
  request.set_return_ids(absl::GetFlag(FLAGS_ids));
  for (const std::string& text : args) {
    v1::Event* event = request.add_events();
    event->set_payload(*payload);
    if (absl::GetFlag(FLAGS_json) ||
        absl::StartsWith(absl::StripLeadingAsciiWhitespace(text), "{")) {
      // A JSON event, sent as written (the server checks it).
      event->set_json(text);
      continue;
    }
    absl::StatusOr<std::vector<v1::Attribute>> attributes = filter::ParseEvent(text);
    if (!attributes.ok()) return Usage(std::string(attributes.status().message()));
    for (v1::Attribute& a : *attributes) *event->add_attributes() = std::move(a);
  }
  auto client = ConnectFromFlags();
  if (!client.ok()) return Fail(client.status());
  absl::StatusOr<v1::PublishResponse> response = (*client)->Publish(request);
  if (!response.ok()) return Fail(response.status());
  for (int i = 0; i < response->results_size(); ++i) {
    const v1::EventResult& result = response->results(i);
    std::printf("%s\tmatched %llu", args[i].c_str(),
                static_cast<unsigned long long>(result.match_count()));
    if (request.return_ids()) {
      std::printf("\t%s", absl::StrJoin(result.subscription_ids(), " ").c_str());
    }
    std::printf("\n");
  }
  return 0;
}

int Listen() {
  const std::string subscriber = absl::GetFlag(FLAGS_subscriber);
  if (subscriber.empty()) return Usage("listen needs --subscriber=NAME");
  const int64_t limit = absl::GetFlag(FLAGS_count);
  auto client = ConnectFromFlags();
  if (!client.ok()) return Fail(client.status());
  int64_t received = 0;
  std::unique_ptr<Client::Listening> listening;
  std::mutex mu;
  std::unique_lock<std::mutex> assigning(mu);  // held until assigned
  listening = (*client)->Listen(subscriber, [&](const v1::Delivery& d) {
    std::string event = filter::FormatEvent(d.event());
    if (!d.event().json().empty()) {
      absl::StrAppend(&event, event.empty() ? "" : " ", "json ",
                      d.event().json());
    }
    std::printf("seq %llu\tids %s\t%s\tpayload %zu bytes\n",
                static_cast<unsigned long long>(d.sequence()),
                absl::StrJoin(d.subscription_ids(), ",").c_str(),
                event.c_str(), d.event().payload().size());
    std::fflush(stdout);
    std::lock_guard<std::mutex> lock(mu);
    if (++received == limit) listening->Stop();
  });
  assigning.unlock();
  absl::Status status = listening->Wait();
  std::lock_guard<std::mutex> lock(mu);
  if (limit > 0 && received >= limit) return 0;
  return status.ok() ? 0 : Fail(status);
}

void PrintStatsTable(const v1::Stats& s) {
  std::string layout = s.index_layout().empty()
                           ? ""
                           : absl::StrCat(", index ", s.index_layout());
  if (s.index_copies() > 1) {
    absl::StrAppend(&layout, " (", s.index_copies(), " copies)");
  }
  std::printf("mode %s, %u partitions%s, cohort_max %u, cohort_wait_us %llu, "
              "uptime %.1f s\n",
              s.mode().c_str(), s.partitions(), layout.c_str(), s.cohort_max(),
              static_cast<unsigned long long>(s.cohort_wait_us()),
              s.uptime_us() / 1e6);
  std::printf(
      "%llu subscriptions, %llu events published, %llu listeners, "
      "%llu open streams\n",
      static_cast<unsigned long long>(s.subscriptions()),
      static_cast<unsigned long long>(s.events_published()),
      static_cast<unsigned long long>(s.listeners()),
      static_cast<unsigned long long>(s.open_streams()));
  std::printf("%llu events in flight, admission limit %llu\n\n",
              static_cast<unsigned long long>(s.events_in_flight()),
              static_cast<unsigned long long>(s.admission_limit()));
  std::printf("%-12s %9s %7s %9s %9s %9s %9s %9s %7s %10s %12s %7s %7s %7s\n",
              "stage", "queue", "max", "wait p50", "wait p99", "svc p50",
              "svc p99", "batches", "batch", "events", "matches", "reject",
              "expired", "drop");
  for (const v1::StageStats& st : s.stages()) {
    // Events per batch: the predicate stage's and a partition's mean cohort
    // size (changes are not batches), the front's mean events per Publish
    // request.
    const double mean_batch =
        st.batches() == 0
            ? 0.0
            : static_cast<double>(st.events()) / st.batches();
    std::printf(
        "%-12s %9.1f %7llu %7.0fus %7.0fus %7.0fus %7.0fus %9llu %7.1f %10llu "
        "%12llu %7llu %7llu %7llu\n",
        st.name().c_str(), st.queue_length_mean(),
        static_cast<unsigned long long>(st.queue_length_max()),
        st.wait().p50_us(), st.wait().p99_us(), st.service().p50_us(),
        st.service().p99_us(), static_cast<unsigned long long>(st.batches()),
        mean_batch, static_cast<unsigned long long>(st.events()),
        static_cast<unsigned long long>(st.matches()),
        static_cast<unsigned long long>(st.rejections()),
        static_cast<unsigned long long>(st.expired()),
        static_cast<unsigned long long>(st.dropped_deliveries()));
  }
  // Where the partitions run (--pin_cores, --numa), if they are pinned.
  std::vector<std::string> placement;
  for (const v1::StageStats& st : s.stages()) {
    if (!st.has_cpu()) continue;
    placement.push_back(absl::StrCat(
        st.name(), " cpu ", st.cpu(),
        st.has_numa_node() ? absl::StrCat(" node ", st.numa_node()) : ""));
  }
  if (!placement.empty()) {
    std::printf("\nplacement: %s\n", absl::StrJoin(placement, ", ").c_str());
  }
  // The attributes on which subscriptions have named strings: distinct
  // string operands, distinct bounds of string ranges, distinct prefixes
  // and suffixes and their lengths, distinct case folds.
  if (s.attributes_size() > 0) {
    std::printf("\n%-24s %12s %12s %14s %12s %12s %14s %12s\n", "attribute",
                "strings", "prefixes", "prefix lengths", "range bounds",
                "suffixes", "suffix lengths", "case folds");
    for (const v1::AttributeStats& a : s.attributes()) {
      std::printf("%-24s %12llu %12llu %14u %12llu %12llu %14u %12llu\n",
                  a.name().c_str(),
                  static_cast<unsigned long long>(a.distinct_strings()),
                  static_cast<unsigned long long>(a.distinct_prefixes()),
                  a.prefix_lengths(),
                  static_cast<unsigned long long>(a.range_bounds()),
                  static_cast<unsigned long long>(a.distinct_suffixes()),
                  a.suffix_lengths(),
                  static_cast<unsigned long long>(a.distinct_folded()));
    }
  }
}

int Stats() {
  auto client = ConnectFromFlags();
  if (!client.ok()) return Fail(client.status());
  absl::StatusOr<v1::Stats> stats = (*client)->Stats();
  if (!stats.ok()) return Fail(stats.status());
  if (absl::GetFlag(FLAGS_json)) {
    std::string json;
    google::protobuf::util::JsonPrintOptions options;
    options.add_whitespace = true;
    (void)google::protobuf::util::MessageToJsonString(*stats, &json, options);
    std::printf("%s", json.c_str());
  } else {
    PrintStatsTable(*stats);
  }
  return 0;
}

// ---------------------------------------------------------------------------
// workload and load.

// The preset's options with --subscriptions, --events and --seed applied.
// As //bench:workload does, a preset whose counts were changed is recorded
// as "<preset>+custom" (another seed is still the same preset).
absl::StatusOr<workload::WorkloadOptions> WorkloadOptionsFromFlags() {
  absl::StatusOr<workload::WorkloadOptions> options =
      workload::PresetOptions(absl::GetFlag(FLAGS_preset));
  if (!options.ok()) return options.status();
  workload::WorkloadOptions& o = *options;
  bool changed = false;
  for (auto [flag, knob] :
       {std::pair(absl::GetFlag(FLAGS_subscriptions), &o.subscriptions),
        std::pair(absl::GetFlag(FLAGS_events), &o.events)}) {
    if (flag < 0) continue;
    changed = changed || flag != *knob;
    *knob = flag;
  }
  if (std::optional<uint64_t> seed = absl::GetFlag(FLAGS_seed)) o.seed = *seed;
  if (changed) o.preset = absl::StrCat(o.preset, "+custom");
  if (absl::Status status = workload::Validate(o); !status.ok()) return status;
  return options;
}

int Workload() {
  const std::string path = absl::GetFlag(FLAGS_out);
  absl::StatusOr<workload::WorkloadReport> report;
  if (workload::IsTypedPreset(absl::GetFlag(FLAGS_preset))) {
    // A typed preset: its own generator and text format (typed_workload.h).
    const int64_t subscriptions = absl::GetFlag(FLAGS_subscriptions);
    const int64_t events = absl::GetFlag(FLAGS_events);
    if (subscriptions < -1 || events < -1) {
      return Usage("workload: --subscriptions and --events must be >= 0");
    }
    report = workload::GenerateTypedWorkloadFile(
        absl::GetFlag(FLAGS_preset),
        subscriptions >= 0
            ? subscriptions
            : workload::TypedPresetSubscriptions(absl::GetFlag(FLAGS_preset)),
        events >= 0 ? events : 100000, absl::GetFlag(FLAGS_seed).value_or(1),
        path, workload::kDefaultReportSample);
  } else {
    absl::StatusOr<workload::WorkloadOptions> options = WorkloadOptionsFromFlags();
    if (!options.ok()) return Usage(std::string(options.status().message()));
    report = workload::GenerateWorkloadFile(*options, path,
                                         workload::kDefaultReportSample);
  }
  if (!report.ok()) {
    std::fprintf(stderr, "cohort: %s\n",
                 std::string(report.status().message()).c_str());
    return kServerError;
  }
  const std::string text = absl::GetFlag(FLAGS_json)
                               ? workload::FormatReportJson(*report) + "\n"
                               : workload::FormatReportText(*report);
  std::fputs(text.c_str(), path.empty() ? stderr : stdout);
  return 0;
}

// "1h02m", "3m05s", "42s".
std::string FormatEta(double seconds) {
  const int64_t s = std::llround(seconds);
  if (s >= 3600) return absl::StrFormat("%dh%02dm", s / 3600, s % 3600 / 60);
  if (s >= 60) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%ds", s);
}

// ProgressPrinter: the subscribe phase's progress on stdout. On a terminal,
// one line rewritten in place (percent, subscriptions/s, ETA); otherwise,
// for logs, a plain line each time another tenth is done.
class ProgressPrinter {
 public:
  ProgressPrinter() : terminal_(isatty(STDOUT_FILENO) == 1) {}

  void operator()(const SubscribeProgress& p) {
    const int percent =
        p.total == 0 ? 100 : static_cast<int>(100 * p.done / p.total);
    const double rate = p.seconds > 0 ? p.done / p.seconds : 0;
    const std::string eta =
        rate > 0 ? FormatEta((p.total - p.done) / rate) : std::string("?");
    if (terminal_) {
      // \r returns to the line's start; \033[K clears what a longer line
      // left behind.
      std::printf(
          "\rsubscribing %3d%%  %llu/%llu  %.0f subscriptions/s  "
          "ETA %s\033[K",
          percent, static_cast<unsigned long long>(p.done),
          static_cast<unsigned long long>(p.total), rate, eta.c_str());
      if (p.done >= p.total) std::printf("\n");
    } else if (percent / 10 > last_tenth_ || (p.done >= p.total && !ended_)) {
      last_tenth_ = percent / 10;
      std::printf(
          "subscribing: %d%% (%llu of %llu), %.0f subscriptions/s, "
          "ETA %s\n",
          percent, static_cast<unsigned long long>(p.done),
          static_cast<unsigned long long>(p.total), rate, eta.c_str());
    }
    ended_ = ended_ || p.done >= p.total;
    std::fflush(stdout);
  }

 private:
  const bool terminal_;
  int last_tenth_ = 0;
  bool ended_ = false;
};

absl::StatusOr<LoadOptions> LoadOptionsFromFlags() {
  LoadOptions o;
  o.server = absl::GetFlag(FLAGS_server);
  absl::StatusOr<ClientSecurity> security = SecurityFromFlags();
  if (!security.ok()) return security.status();
  o.security = *std::move(security);
  o.control_timeout = absl::Milliseconds(absl::GetFlag(FLAGS_deadline_ms));
  absl::StatusOr<PublishMode> mode =
      ParsePublishMode(absl::GetFlag(FLAGS_mode));
  if (!mode.ok()) {
    return absl::InvalidArgumentError("--mode must be unary, stream or none");
  }
  o.mode = *mode;
  o.subscribe = !absl::GetFlag(FLAGS_skip_load);
  o.subscribe_batch = absl::GetFlag(FLAGS_subscribe_batch);
  o.subscribe_in_flight = absl::GetFlag(FLAGS_subscribe_in_flight);
  o.clients = absl::GetFlag(FLAGS_clients);
  o.batch = absl::GetFlag(FLAGS_batch);
  o.window = absl::GetFlag(FLAGS_window);
  o.rate = absl::GetFlag(FLAGS_rate);
  o.warmup_s = absl::GetFlag(FLAGS_warmup);
  o.duration_s = absl::GetFlag(FLAGS_duration);
  o.return_ids = absl::GetFlag(FLAGS_ids);
  if (o.rate > 0 && o.mode != PublishMode::kUnary) {
    return absl::InvalidArgumentError("--rate needs --mode=unary");
  }
  // Checked here to name the flags, which the library's fields are not.
  if (!(o.duration_s > 0)) {
    return absl::InvalidArgumentError("--duration must be > 0");
  }
  if (!(o.warmup_s >= 0) || !(o.rate >= 0)) {
    return absl::InvalidArgumentError("--warmup and --rate must be >= 0");
  }
  if (o.control_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--deadline_ms must be > 0");
  }
  // What remains is named like its flag (clients, batch, window, ...).
  if (absl::Status status = ValidateLoadOptions(o); !status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--", status.message()));
  }
  return o;
}

int Load() {
  absl::StatusOr<LoadOptions> options = LoadOptionsFromFlags();
  if (!options.ok()) return Usage(std::string(options.status().message()));
  const std::string out = absl::GetFlag(FLAGS_out);
  if (!out.empty() && !absl::EndsWith(out, ".json") &&
      !absl::EndsWith(out, ".csv")) {
    return Usage("load: --out must end in .json or .csv");
  }
  absl::StatusOr<workload::Workload> workload = workload::LoadOrGenerateAny(
      absl::GetFlag(FLAGS_workload), absl::GetFlag(FLAGS_preset),
      absl::GetFlag(FLAGS_subscriptions), absl::GetFlag(FLAGS_events));
  if (!workload.ok()) return Usage(std::string(workload.status().message()));
  LoadCallbacks callbacks;
  callbacks.on_progress = ProgressPrinter();
  callbacks.on_subscribed = [](const LoadReport& report) {
    std::fputs(FormatSubscribeText(report.subscribe).c_str(), stdout);
    std::fflush(stdout);
  };
  absl::StatusOr<LoadReport> report = RunLoad(*workload, *options, callbacks);
  if (!report.ok()) return Fail(report.status());
  if (report->published) {
    std::fputs(FormatPublishText(*report).c_str(), stdout);
    std::fputs(FormatServerText(*report).c_str(), stdout);
  }
  std::fflush(stdout);
  if (!out.empty()) {
    if (absl::Status status = WriteLoadReport(*report, out); !status.ok()) {
      return Fail(status);
    }
  }
  if (report->subscribe.failed > 0) {
    return Fail(absl::DataLossError(absl::StrCat(
        report->subscribe.failed, " subscriptions could not be loaded")));
  }
  return 0;
}

// token-hash: the --auth_tokens line (or just the hash) for the token in
// --token_file or on stdin. The token itself is never printed.
int TokenHash() {
  const std::string subscriber = absl::GetFlag(FLAGS_subscriber);
  const std::string publisher = absl::GetFlag(FLAGS_publisher);
  if (!subscriber.empty() && !publisher.empty()) {
    return Usage("token-hash takes --subscriber or --publisher, not both");
  }
  for (const std::string& name : {subscriber, publisher}) {
    for (char c : name) {
      // Blanks separate the file's fields; UTF-8 is fine.
      if (static_cast<unsigned char>(c) <= ' ' || c == '\x7f') {
        return Usage(
            "token-hash: a name in the token file cannot have blanks or "
            "control characters");
      }
    }
  }
  std::string text;
  absl::string_view source = "stdin";
  if (!absl::GetFlag(FLAGS_token_file).empty()) {
    source = "--token_file";
    if (absl::Status status =
            ReadFlagFile(FLAGS_token_file, "token_file", &text);
        !status.ok()) {
      return Usage(std::string(status.message()));
    }
  } else {
    std::ostringstream in;
    in << std::cin.rdbuf();
    text = in.str();
  }
  absl::StatusOr<std::string> token = CleanToken(text, source);
  if (!token.ok()) return Usage(std::string(token.status().message()));
  if (!subscriber.empty()) {
    std::printf("%s\n", service::TokenLine(service::Role::kSubscriber,
                                           subscriber, *token)
                            .c_str());
  } else if (!publisher.empty()) {
    std::printf("%s\n",
                service::TokenLine(service::Role::kPublisher, publisher, *token)
                    .c_str());
  } else {
    std::printf("%s\n", service::Sha256Hex(*token).c_str());
  }
  return 0;
}

int Main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "the Cohort command-line client.\n"
      "  cohort subscribe --subscriber=NAME 'price <= 500 and kind = 7' ...\n"
      "  cohort subscribe --subscriber=NAME '{\"price\": [{\"numeric\": "
      "[\"<=\", 500]}]}' ... [--pattern=FILE,...]   (Event Ruler / SNS)\n"
      "  cohort unsubscribe ID ...\n"
      "  cohort publish 'price=420 kind=7' ... [--payload=TEXT|@FILE] [--ids]\n"
      "  cohort listen --subscriber=NAME [--count=N]\n"
      "  cohort stats [--json]\n"
      "  cohort workload --preset=fabret-1m [--subscriptions=N] [--events=N] "
      "[--seed=S] --out=FILE [--json]\n"
      "  cohort load --workload=FILE|--preset=fabret-1m [--clients=N] "
      "[--rate=EVENTS_PER_S] [--duration=SECONDS] [--out=FILE.json|FILE.csv]\n"
      "      [--mode=unary|stream|none] [--batch=N] [--window=N] [--ids] "
      "[--skip_load]\n"
      "  cohort token-hash [--subscriber=NAME|--publisher=NAME] "
      "[--token_file=FILE]   (token on stdin without --token_file)\n"
      "Security: --tls_ca=FILE (TLS; --tls for the system's CAs), "
      "--tls_cert=FILE --tls_key=FILE (mutual TLS), --token_file=FILE or "
      "the environment variable COHORT_TOKEN (bearer token).\n"
      "Predicates: = == != <> < <= > >= (or eq ne lt le gt ge), "
      "'x between 1 and 5' (or 'x in 1..5'), 'x in [1, 2, 3]', "
      "'x not in [1, 2]', 'path prefix \"/api/\"', 'exists x', "
      "'not exists x', 'f suffix \".png\"', 'n equals-ignore-case \"a\"', "
      "'p prefix-ignore-case \"/Api\"', 'f suffix-ignore-case \".PNG\"', "
      "'ip cidr \"10.0.0.0/8\"', 'f wildcard \"a*b*c\"', "
      "'x not prefix \"t\"' (also not suffix, not equals-ignore-case, "
      "not wildcard), "
      "joined by 'and', and groups of them by 'or' with parentheses "
      "('a = 1 and (b = 2 or c = 3)'; 'and' binds tighter). Values are "
      "numbers (42, 19.99, 1e-3) or strings in double quotes "
      "('type = \"order\"'; escapes \\\" \\\\ \\n \\t "
      "\\r \\0 \\xHH). Changed: 'x in [a, b]' is now a list (IN), not "
      "a range.\n"
      "load subscribes the workload (batched Subscribe), then publishes its "
      "events from --clients clients: closed loop, or open loop at --rate "
      "events/s in total (latency from the intended send time), and reports "
      "events/s, matches/event, latency p50/p90/p99/p99.9/max, errors and "
      "rejections.\n"
      "Exit status: 0 ok, 1 the server returned an error, 2 usage error.");
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (positional.size() < 2) return Usage("missing command");
  const std::string command = positional[1];
  const std::vector<std::string> args(positional.begin() + 2, positional.end());
  if (command == "token-hash") {
    return args.empty() ? TokenHash() : Usage("token-hash takes no arguments");
  }
  if (command != "workload") {
    // Bad security flags are usage errors, reported before connecting.
    if (absl::StatusOr<ClientSecurity> security = SecurityFromFlags();
        !security.ok()) {
      return Usage(std::string(security.status().message()));
    }
  }
  if (command == "subscribe") return Subscribe(args);
  if (command == "unsubscribe") return Unsubscribe(args);
  if (command == "publish") return Publish(args);
  if (command == "listen") return args.empty() ? Listen() : Usage("listen takes no arguments");
  if (command == "stats") return args.empty() ? Stats() : Usage("stats takes no arguments");
  if (command == "workload") {
    return args.empty() ? Workload() : Usage("workload takes no arguments");
  }
  if (command == "load") {
    return args.empty() ? Load() : Usage("load takes no arguments");
  }
  return Usage(absl::StrCat("unknown command \"", command, "\""));
}

}  // namespace
}  // namespace client
}  // namespace cohort

int main(int argc, char** argv) { return cohort::client::Main(argc, argv); }
