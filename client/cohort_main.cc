// cohort: the command-line client of a cohortd server.
//
//   cohort subscribe --subscriber=alice 'price <= 500 and kind = 7' [...]
//   cohort unsubscribe 17 18
//   cohort publish 'price=420 kind=7' [--payload=@file | --payload=text] [--ids]
//   cohort listen --subscriber=alice [--count=N]
//   cohort stats [--json]
//
// Exit status: 0 on success, 1 when the server answers with an error (the
// gRPC status is printed), 2 for a usage error (a parse error points at the
// offending token).
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "client/parse.h"
#include "google/protobuf/util/json_util.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "cohortd address, host:port.");
ABSL_FLAG(int64_t, deadline_ms, 10000,
          "Deadline of each call in milliseconds (not of listen).");
ABSL_FLAG(std::string, subscriber, "",
          "subscribe, listen: the subscriber name (required).");
ABSL_FLAG(std::string, payload, "",
          "publish: the event's payload; @FILE reads it from FILE.");
ABSL_FLAG(bool, ids, false,
          "publish: list the matched subscription ids, not only the count.");
ABSL_FLAG(int64_t, count, 0,
          "listen: stop after this many deliveries (0 = until interrupted).");
ABSL_FLAG(bool, json, false, "stats: print the Stats message as JSON.");

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

absl::StatusOr<std::unique_ptr<Client>> ConnectFromFlags() {
  ClientOptions options;
  options.target = absl::GetFlag(FLAGS_server);
  options.deadline = absl::Milliseconds(absl::GetFlag(FLAGS_deadline_ms));
  return Client::Connect(options);
}

int Subscribe(const std::vector<std::string>& args) {
  const std::string subscriber = absl::GetFlag(FLAGS_subscriber);
  if (subscriber.empty()) return Usage("subscribe needs --subscriber=NAME");
  if (args.empty()) return Usage("subscribe needs at least one subscription");
  std::vector<v1::SubscriptionSpec> specs;
  for (const std::string& text : args) {
    absl::StatusOr<std::vector<v1::Predicate>> predicates =
        ParseSubscription(text);
    if (!predicates.ok()) return Usage(std::string(predicates.status().message()));
    v1::SubscriptionSpec& spec = specs.emplace_back();
    spec.set_subscriber(subscriber);
    for (v1::Predicate& p : *predicates) *spec.add_predicates() = std::move(p);
  }
  auto client = ConnectFromFlags();
  if (!client.ok()) return Fail(client.status());
  absl::StatusOr<std::vector<uint64_t>> ids = (*client)->Subscribe(specs);
  if (!ids.ok()) return Fail(ids.status());
  for (size_t i = 0; i < ids->size(); ++i) {
    std::printf("%llu\t%s\n", static_cast<unsigned long long>((*ids)[i]),
                args[i].c_str());
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
  std::ifstream in(flag.substr(1), std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("--payload: cannot read ", flag.substr(1)));
  }
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

int Publish(const std::vector<std::string>& args) {
  if (args.empty()) return Usage("publish needs at least one event");
  absl::StatusOr<std::string> payload = PayloadFromFlag();
  if (!payload.ok()) return Usage(std::string(payload.status().message()));
  v1::PublishRequest request;
  request.set_return_ids(absl::GetFlag(FLAGS_ids));
  for (const std::string& text : args) {
    absl::StatusOr<std::vector<v1::Attribute>> attributes = ParseEvent(text);
    if (!attributes.ok()) return Usage(std::string(attributes.status().message()));
    v1::Event* event = request.add_events();
    for (v1::Attribute& a : *attributes) *event->add_attributes() = std::move(a);
    event->set_payload(*payload);
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

std::string EventText(const v1::Event& event) {
  std::vector<std::string> parts;
  for (const v1::Attribute& a : event.attributes()) {
    parts.push_back(absl::StrCat(a.name(), "=", a.value()));
  }
  return absl::StrJoin(parts, " ");
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
    std::printf("seq %llu\tids %s\t%s\tpayload %zu bytes\n",
                static_cast<unsigned long long>(d.sequence()),
                absl::StrJoin(d.subscription_ids(), ",").c_str(),
                EventText(d.event()).c_str(), d.event().payload().size());
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
  std::printf("mode %s, %u partitions, cohort_max %u, cohort_wait_us %llu, "
              "uptime %.1f s\n",
              s.mode().c_str(), s.partitions(), s.cohort_max(),
              static_cast<unsigned long long>(s.cohort_wait_us()),
              s.uptime_us() / 1e6);
  std::printf("%llu subscriptions, %llu events published, %llu listeners\n\n",
              static_cast<unsigned long long>(s.subscriptions()),
              static_cast<unsigned long long>(s.events_published()),
              static_cast<unsigned long long>(s.listeners()));
  std::printf("%-12s %9s %7s %9s %9s %9s %9s %9s %7s %10s %12s %7s %7s\n",
              "stage", "queue", "max", "wait p50", "wait p99", "svc p50",
              "svc p99", "batches", "batch", "events", "matches", "reject",
              "drop");
  for (const v1::StageStats& st : s.stages()) {
    const double mean_batch =
        st.batches() == 0 ? 0.0
                          : static_cast<double>(st.events() + st.updates()) /
                                st.batches();
    std::printf(
        "%-12s %9.1f %7llu %7.0fus %7.0fus %7.0fus %7.0fus %9llu %7.1f %10llu "
        "%12llu %7llu %7llu\n",
        st.name().c_str(), st.queue_length_mean(),
        static_cast<unsigned long long>(st.queue_length_max()),
        st.wait().p50_us(), st.wait().p99_us(), st.service().p50_us(),
        st.service().p99_us(), static_cast<unsigned long long>(st.batches()),
        mean_batch, static_cast<unsigned long long>(st.events()),
        static_cast<unsigned long long>(st.matches()),
        static_cast<unsigned long long>(st.rejections()),
        static_cast<unsigned long long>(st.dropped_deliveries()));
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

int Main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "the Cohort command-line client.\n"
      "  cohort subscribe --subscriber=NAME 'price <= 500 and kind = 7' ...\n"
      "  cohort unsubscribe ID ...\n"
      "  cohort publish 'price=420 kind=7' ... [--payload=TEXT|@FILE] [--ids]\n"
      "  cohort listen --subscriber=NAME [--count=N]\n"
      "  cohort stats [--json]\n"
      "Predicates: = == != <> < <= > >= (or eq ne lt le gt ge), "
      "'x between 1 and 5', 'x in [1, 5]', joined by 'and'.\n"
      "Exit status: 0 ok, 1 the server returned an error, 2 usage error.");
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (positional.size() < 2) return Usage("missing command");
  const std::string command = positional[1];
  const std::vector<std::string> args(positional.begin() + 2, positional.end());
  if (command == "subscribe") return Subscribe(args);
  if (command == "unsubscribe") return Unsubscribe(args);
  if (command == "publish") return Publish(args);
  if (command == "listen") return args.empty() ? Listen() : Usage("listen takes no arguments");
  if (command == "stats") return args.empty() ? Stats() : Usage("stats takes no arguments");
  return Usage(absl::StrCat("unknown command \"", command, "\""));
}

}  // namespace
}  // namespace client
}  // namespace cohort

int main(int argc, char** argv) { return cohort::client::Main(argc, argv); }
