// End-to-end tests of the client library against a real CohortServer started
// in-process on 127.0.0.1 with port 0.
#include "client/client.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "filter/parse.h"
#include "filter/pattern.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/cohort/v1/pubsub.pb.h"
#include "service/api/server.h"
#include "service/api/server_test_util.h"

namespace cohort {
namespace client {
namespace {

using service::CohortServer;
using service::ServerOptions;
using service::testing::KeySpec;
using service::testing::StartServer;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Generous bound for anything that should happen "at once" (ASan is slow).
constexpr absl::Duration kPrompt = absl::Seconds(5);

ClientOptions OptionsFor(const CohortServer& server) {
  ClientOptions options;
  options.target = absl::StrCat("127.0.0.1:", server.port());
  return options;
}

std::unique_ptr<Client> ConnectOrDie(const ClientOptions& options) {
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? std::move(*client) : nullptr;
}

void AddKeyEvent(int64_t key, const std::string& payload,
                 v1::PublishRequest* request) {
  v1::Event* event = request->add_events();
  v1::Attribute* a = event->add_attributes();
  a->set_name("key");
  a->set_value(key);
  event->set_payload(payload);
}

v1::PublishRequest KeyEvent(int64_t key, const std::string& payload = "") {
  v1::PublishRequest request;
  request.set_return_ids(true);
  AddKeyEvent(key, payload, &request);
  return request;
}

uint64_t LiveSubscriptions(Client* client) {
  absl::StatusOr<v1::Stats> stats = client->Stats();
  EXPECT_TRUE(stats.ok()) << stats.status();
  return stats.ok() ? stats->subscriptions() : 0;
}

TEST(ClientConnect, ClosedPortFailsFastWithUnavailableNamingTheTarget) {
  // A bound socket that does not listen: connections to it are refused, and
  // no other process can take the port while the test runs.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)),
            0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  ClientOptions options;
  options.target = absl::StrCat("127.0.0.1:", ntohs(address.sin_port));
  options.deadline = absl::Seconds(30);

  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  const absl::Duration elapsed = absl::Now() - start;
  close(fd);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(client.status().message(), HasSubstr(options.target));
  EXPECT_LT(elapsed, kPrompt);
}

TEST(ClientConnect, BadOptionsAreInvalidArgument) {
  ClientOptions options;
  options.subscribe_batch = 0;
  EXPECT_EQ(Client::Connect(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options = ClientOptions();
  options.max_in_flight = 0;
  EXPECT_EQ(Client::Connect(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options = ClientOptions();
  options.deadline = absl::ZeroDuration();
  EXPECT_EQ(Client::Connect(options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ClientSubscribe, LargeRequestIsSplitIntoBatchesAndIdsKeepSpecOrder) {
  std::unique_ptr<CohortServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  ClientOptions options = OptionsFor(*server);
  options.subscribe_batch = 5000;
  std::unique_ptr<Client> client = ConnectOrDie(options);
  ASSERT_NE(client, nullptr);

  constexpr int kSpecs = 12000;
  std::vector<v1::SubscriptionSpec> specs;
  for (int i = 0; i < kSpecs; ++i) {
    specs.push_back(KeySpec(absl::StrCat("s", i % 10), i));
  }
  absl::StatusOr<std::vector<uint64_t>> ids = client->Subscribe(specs);
  ASSERT_TRUE(ids.ok()) << ids.status();
  ASSERT_EQ(ids->size(), static_cast<size_t>(kSpecs));
  EXPECT_EQ(std::set<uint64_t>(ids->begin(), ids->end()).size(), ids->size());
  for (int i = 1; i < kSpecs; ++i) {
    ASSERT_LT((*ids)[i - 1], (*ids)[i]) << "at " << i;
  }
  EXPECT_EQ(LiveSubscriptions(client.get()), static_cast<uint64_t>(kSpecs));
  // Id i belongs to spec i: spec 11999 (in the third batch) matches key 11999.
  absl::StatusOr<v1::PublishResponse> response =
      client->Publish(KeyEvent(kSpecs - 1));
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_THAT(service::testing::Ids(response->results(0)),
              ElementsAre(ids->back()));
}

TEST(ClientSubscribe, FailedBatchReportsWhatEarlierBatchesCreated) {
  std::unique_ptr<CohortServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  ClientOptions options = OptionsFor(*server);
  options.subscribe_batch = 5000;
  std::unique_ptr<Client> client = ConnectOrDie(options);
  ASSERT_NE(client, nullptr);

  std::vector<v1::SubscriptionSpec> specs;
  for (int i = 0; i < 10000; ++i) specs.push_back(KeySpec("s", i));
  specs[7000].mutable_predicates(0)->set_op(v1::OP_UNSPECIFIED);
  absl::StatusOr<std::vector<uint64_t>> ids = client->Subscribe(specs);
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ids.status().message(), HasSubstr("request 2 of 2"));
  EXPECT_THAT(ids.status().message(),
              HasSubstr("5000 subscriptions created by earlier requests"));
  // The server's message, with the index inside the failed batch.
  EXPECT_THAT(ids.status().message(), HasSubstr("subscriptions[2000]"));
  EXPECT_EQ(LiveSubscriptions(client.get()), 5000u);
}

TEST(ClientPublish, ReturnsMatchCountsAndIds) {
  std::unique_ptr<CohortServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> client = ConnectOrDie(OptionsFor(*server));
  ASSERT_NE(client, nullptr);
  absl::StatusOr<std::vector<uint64_t>> ids =
      client->Subscribe({KeySpec("a", 1), KeySpec("b", 1), KeySpec("a", 2)});
  ASSERT_TRUE(ids.ok()) << ids.status();

  v1::PublishRequest request;
  request.set_return_ids(true);
  AddKeyEvent(1, "", &request);
  AddKeyEvent(2, "", &request);
  AddKeyEvent(3, "", &request);
  absl::StatusOr<v1::PublishResponse> response = client->Publish(request);
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->results_size(), 3);
  EXPECT_EQ(response->results(0).match_count(), 2u);
  EXPECT_THAT(service::testing::Ids(response->results(0)),
              ElementsAre((*ids)[0], (*ids)[1]));
  EXPECT_EQ(response->results(1).match_count(), 1u);
  EXPECT_THAT(service::testing::Ids(response->results(1)),
              ElementsAre((*ids)[2]));
  EXPECT_EQ(response->results(2).match_count(), 0u);
  EXPECT_TRUE(response->results(2).subscription_ids().empty());
}

TEST(ClientPublish, InvalidEventIsInvalidArgument) {
  std::unique_ptr<CohortServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> client = ConnectOrDie(OptionsFor(*server));
  ASSERT_NE(client, nullptr);
  v1::PublishRequest request;
  request.add_events();  // no attributes
  EXPECT_EQ(client->Publish(request).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ClientUnsubscribe, UnknownIdIsNotFoundPassedThrough) {
  std::unique_ptr<CohortServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> client = ConnectOrDie(OptionsFor(*server));
  ASSERT_NE(client, nullptr);
  absl::StatusOr<std::vector<uint64_t>> ids =
      client->Subscribe({KeySpec("a", 1)});
  ASSERT_TRUE(ids.ok()) << ids.status();
  const uint64_t unknown = (*ids)[0] + 1000;

  const absl::Status status = client->Unsubscribe({(*ids)[0], unknown});
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr(absl::StrCat(unknown)));
  EXPECT_EQ(LiveSubscriptions(client.get()), 1u);  // all or nothing
  EXPECT_TRUE(client->Unsubscribe(*ids).ok());
  EXPECT_EQ(LiveSubscriptions(client.get()), 0u);
}

TEST(ClientUnsubscribe, FailedBatchReportsWhatEarlierBatchesRemoved) {
  std::unique_ptr<CohortServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  ClientOptions options = OptionsFor(*server);
  options.subscribe_batch = 2;
  std::unique_ptr<Client> client = ConnectOrDie(options);
  ASSERT_NE(client, nullptr);
  absl::StatusOr<std::vector<uint64_t>> ids =
      client->Subscribe({KeySpec("a", 1), KeySpec("a", 2), KeySpec("a", 3)});
  ASSERT_TRUE(ids.ok()) << ids.status();

  std::vector<uint64_t> remove = *ids;
  remove.push_back(ids->back() + 1000);  // in the second batch
  const absl::Status status = client->Unsubscribe(remove);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(),
              HasSubstr("2 subscriptions removed by earlier requests"));
  EXPECT_EQ(LiveSubscriptions(client.get()), 1u);
}

// Collects what a Publisher's `done` callbacks receive, in call order.
class Answers {
 public:
  Client::Publisher::DoneCallback Callback() {
    return [this](absl::StatusOr<v1::PublishResponse> response) {
      absl::MutexLock lock(&mu_);
      answers_.push_back(std::move(response));
    };
  }
  std::vector<absl::StatusOr<v1::PublishResponse>> Get() {
    absl::MutexLock lock(&mu_);
    return answers_;
  }

 private:
  absl::Mutex mu_;
  std::vector<absl::StatusOr<v1::PublishResponse>> answers_
      ABSL_GUARDED_BY(mu_);
};

// Property: with at most 2 requests outstanding, every one of 100 requests
// is answered exactly once, in request order, with the right results. (The
// server may run them in cohorts; only results are checked, not timing.)
TEST(ClientPublisher, AnswersEveryRequestInOrder) {
  std::unique_ptr<CohortServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  ClientOptions options = OptionsFor(*server);
  options.max_in_flight = 2;
  std::unique_ptr<Client> client = ConnectOrDie(options);
  ASSERT_NE(client, nullptr);
  // key 0: 1 match, key 1: 2 matches, key 2: none.
  ASSERT_TRUE(
      client->Subscribe({KeySpec("a", 0), KeySpec("a", 1), KeySpec("b", 1)})
          .ok());
  const uint64_t kMatches[] = {1, 2, 0};

  // Request i holds i % 7 + 1 events, so a response out of order would show
  // as a wrong number of results.
  constexpr int kRequests = 100;
  Answers answers;
  std::unique_ptr<Client::Publisher> publisher = client->OpenPublisher();
  for (int i = 0; i < kRequests; ++i) {
    v1::PublishRequest request;
    for (int j = 0; j <= i % 7; ++j) AddKeyEvent((i + j) % 3, "", &request);
    ASSERT_TRUE(
        publisher->Publish(std::move(request), answers.Callback()).ok());
  }
  ASSERT_TRUE(publisher->Finish().ok());

  const std::vector<absl::StatusOr<v1::PublishResponse>> got = answers.Get();
  ASSERT_EQ(got.size(), static_cast<size_t>(kRequests));
  for (int i = 0; i < kRequests; ++i) {
    ASSERT_TRUE(got[i].ok()) << i << ": " << got[i].status();
    ASSERT_EQ(got[i]->results_size(), i % 7 + 1) << i;
    for (int j = 0; j <= i % 7; ++j) {
      EXPECT_EQ(got[i]->results(j).match_count(), kMatches[(i + j) % 3])
          << i << "/" << j;
    }
  }
  EXPECT_EQ(publisher->Publish(v1::PublishRequest(), nullptr).code(),
            absl::StatusCode::kFailedPrecondition);
}

// Property: Publish may be called from several threads at once; each
// callback receives the answer to its own request (request k holds k % 9 + 1
// events, so a mix-up shows as a wrong number of results).
TEST(ClientPublisher, ConcurrentCallersEachGetTheirOwnAnswer) {
  std::unique_ptr<CohortServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  ClientOptions options = OptionsFor(*server);
  options.max_in_flight = 3;
  std::unique_ptr<Client> client = ConnectOrDie(options);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Subscribe({KeySpec("a", 1)}).ok());

  constexpr int kThreads = 4;
  constexpr int kPerThread = 50;
  std::unique_ptr<Client::Publisher> publisher = client->OpenPublisher();
  std::atomic<int> right{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const int events = (t * kPerThread + i) % 9 + 1;
        v1::PublishRequest request;
        for (int j = 0; j < events; ++j) AddKeyEvent(1, "", &request);
        const absl::Status status = publisher->Publish(
            std::move(request),
            [&right, events](absl::StatusOr<v1::PublishResponse> response) {
              if (response.ok() && response->results_size() == events &&
                  response->results(events - 1).match_count() == 1) {
                ++right;
              }
            });
        EXPECT_TRUE(status.ok()) << status;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_TRUE(publisher->Finish().ok());
  EXPECT_EQ(right.load(), kThreads * kPerThread);
}

// Property: an invalid request ends the stream with INVALID_ARGUMENT; the
// request before it is answered, it gets the stream's error.
TEST(ClientPublisher, InvalidRequestEndsTheStream) {
  std::unique_ptr<CohortServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> client = ConnectOrDie(OptionsFor(*server));
  ASSERT_NE(client, nullptr);
  Answers answers;
  std::unique_ptr<Client::Publisher> publisher = client->OpenPublisher();
  ASSERT_TRUE(publisher->Publish(KeyEvent(1), answers.Callback()).ok());
  v1::PublishRequest invalid;
  invalid.add_events();  // no attributes
  ASSERT_TRUE(publisher->Publish(invalid, answers.Callback()).ok());

  EXPECT_EQ(publisher->Finish().code(), absl::StatusCode::kInvalidArgument);
  const std::vector<absl::StatusOr<v1::PublishResponse>> got = answers.Get();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0].ok()) << got[0].status();
  EXPECT_EQ(got[1].status().code(), absl::StatusCode::kInvalidArgument);
  // After Finish, Publish is refused and calls no callback.
  EXPECT_EQ(publisher->Publish(KeyEvent(1), answers.Callback()).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(answers.Get().size(), 2u);
}

// Property: destroying a Publisher without Finish cancels it, and every
// accepted request's callback has run when the destructor returns.
TEST(ClientPublisher, DestroyingWithoutFinishCallsEveryCallback) {
  ServerOptions server_options = service::testing::LocalServerOptions();
  server_options.engine.cohort_wait_us = 20000;  // keep requests in flight
  std::unique_ptr<CohortServer> server = StartServer(server_options);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> client = ConnectOrDie(OptionsFor(*server));
  ASSERT_NE(client, nullptr);
  Answers answers;
  std::unique_ptr<Client::Publisher> publisher = client->OpenPublisher();
  constexpr int kRequests = 20;
  for (int i = 0; i < kRequests; ++i) {
    ASSERT_TRUE(publisher->Publish(KeyEvent(i), answers.Callback()).ok());
  }
  publisher.reset();
  const std::vector<absl::StatusOr<v1::PublishResponse>> got = answers.Get();
  ASSERT_EQ(got.size(), static_cast<size_t>(kRequests));
  for (const absl::StatusOr<v1::PublishResponse>& answer : got) {
    EXPECT_TRUE(answer.ok() ||
                answer.status().code() == absl::StatusCode::kCancelled)
        << answer.status();
  }
}

TEST(ClientPublisher, UnreachableServerIsReportedByFinish) {
  std::unique_ptr<CohortServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> client = ConnectOrDie(OptionsFor(*server));
  ASSERT_NE(client, nullptr);
  server.reset();
  std::unique_ptr<Client::Publisher> publisher = client->OpenPublisher();
  const absl::Status published = publisher->Publish(KeyEvent(1), nullptr);
  EXPECT_TRUE(published.ok() ||
              published.code() == absl::StatusCode::kUnavailable)
      << published;
  EXPECT_EQ(publisher->Finish().code(), absl::StatusCode::kUnavailable);
}

// Collects deliveries from a Listening's callback.
class Deliveries {
 public:
  std::function<void(const v1::Delivery&)> Callback() {
    return [this](const v1::Delivery& delivery) {
      absl::MutexLock lock(&mu_);
      deliveries_.push_back(delivery);
    };
  }
  // Waits up to kPrompt for `n` deliveries; returns what arrived.
  std::vector<v1::Delivery> WaitFor(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return deliveries_.size() >= n;
    };
    mu_.AwaitWithTimeout(absl::Condition(&enough), kPrompt);
    return deliveries_;
  }

 private:
  absl::Mutex mu_;
  std::vector<v1::Delivery> deliveries_ ABSL_GUARDED_BY(mu_);
};

bool WaitForListeners(Client* client, uint64_t n) {
  const absl::Time end = absl::Now() + kPrompt;
  while (absl::Now() < end) {
    absl::StatusOr<v1::Stats> stats = client->Stats();
    if (stats.ok() && stats->listeners() == n) return true;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return false;
}

TEST(ClientListen, ReceivesExactlyTheMatchingDeliveriesAndStopCancels) {
  std::unique_ptr<CohortServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> client = ConnectOrDie(OptionsFor(*server));
  ASSERT_NE(client, nullptr);
  absl::StatusOr<std::vector<uint64_t>> ids = client->Subscribe(
      {KeySpec("alice", 1), KeySpec("bob", 2), KeySpec("alice", 3)});
  ASSERT_TRUE(ids.ok()) << ids.status();

  Deliveries deliveries;
  std::unique_ptr<Client::Listening> listening =
      client->Listen("alice", deliveries.Callback());
  ASSERT_TRUE(WaitForListeners(client.get(), 1));
  for (const auto& [key, payload] : std::vector<std::pair<int, std::string>>{
           {1, "a1"}, {2, "b2"}, {3, "a3"}, {4, "none"}, {1, "last"}}) {
    ASSERT_TRUE(client->Publish(KeyEvent(key, payload)).ok());
  }
  ASSERT_EQ(deliveries.WaitFor(3).size(), 3u);
  absl::SleepFor(absl::Milliseconds(200));  // nothing more may come
  listening->Stop();
  EXPECT_EQ(listening->Wait().code(), absl::StatusCode::kCancelled);

  const std::vector<v1::Delivery> got = deliveries.WaitFor(3);
  ASSERT_EQ(got.size(), 3u);
  std::multiset<std::pair<std::string, uint64_t>> seen;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].sequence(), i + 1);
    ASSERT_EQ(got[i].subscription_ids_size(), 1);
    seen.emplace(got[i].event().payload(), got[i].subscription_ids(0));
  }
  EXPECT_EQ(seen,
            (std::multiset<std::pair<std::string, uint64_t>>{
                {"a1", (*ids)[0]}, {"a3", (*ids)[2]}, {"last", (*ids)[0]}}));
  EXPECT_TRUE(WaitForListeners(client.get(), 0));
}

TEST(ClientListen, ServerShutdownEndsTheStreamWithUnavailable) {
  std::unique_ptr<CohortServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> client = ConnectOrDie(OptionsFor(*server));
  ASSERT_NE(client, nullptr);
  Deliveries deliveries;
  std::unique_ptr<Client::Listening> listening =
      client->Listen("alice", deliveries.Callback());
  ASSERT_TRUE(WaitForListeners(client.get(), 1));
  server->Shutdown();
  EXPECT_EQ(listening->Wait().code(), absl::StatusCode::kUnavailable);
}

TEST(ClientDeadline, PublishThatWaitsTooLongIsDeadlineExceeded) {
  ServerOptions server_options = service::testing::LocalServerOptions();
  // No size limit, so a lone event waits the full cohort_wait_us: 20 times
  // the client's deadline. Not longer: CohortServer's destructor waits for
  // the parked Publish to be answered (gRPC's shutdown waits for every
  // callback handler to finish, and the engine stops after it).
  server_options.engine.cohort_max = 0;
  server_options.engine.cohort_wait_us = 2'000'000;
  std::unique_ptr<CohortServer> server = StartServer(server_options);
  ASSERT_NE(server, nullptr);
  // Connect with the default deadline first: the fast client below then
  // shares its ready connection.
  std::unique_ptr<Client> control = ConnectOrDie(OptionsFor(*server));
  ASSERT_NE(control, nullptr);
  ASSERT_TRUE(control->Subscribe({KeySpec("a", 1)}).ok());
  ClientOptions options = OptionsFor(*server);
  options.deadline = absl::Milliseconds(100);
  std::unique_ptr<Client> client = ConnectOrDie(options);
  ASSERT_NE(client, nullptr);

  const absl::Time start = absl::Now();
  const absl::StatusOr<v1::PublishResponse> response =
      client->Publish(KeyEvent(1));
  const absl::Duration elapsed = absl::Now() - start;
  EXPECT_EQ(response.status().code(), absl::StatusCode::kDeadlineExceeded)
      << response.status();
  EXPECT_GE(elapsed, absl::Milliseconds(90));
  EXPECT_LT(elapsed, kPrompt);
}

TEST(ClientStats, UnreachableServerIsUnavailableAfterRetries) {
  std::unique_ptr<CohortServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> client = ConnectOrDie(OptionsFor(*server));
  ASSERT_NE(client, nullptr);
  absl::StatusOr<v1::Stats> stats = client->Stats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->mode(), "staged");
  server.reset();

  const absl::Time start = absl::Now();
  stats = client->Stats();
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kUnavailable)
      << stats.status();
  EXPECT_LT(absl::Now() - start, kPrompt);
}

// ParseFilter returns the server's parse of the CLI grammar (the same as
// the local parser's) and its errors; unreachable, it is UNAVAILABLE.
TEST(ClientParseFilter, ReturnsTheServersParseAndErrors) {
  std::unique_ptr<CohortServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> client = ConnectOrDie(OptionsFor(*server));
  ASSERT_NE(client, nullptr);
  const std::string text = R"(price <= 500 and kind in ["a", "b"])";
  absl::StatusOr<std::vector<v1::Predicate>> parsed =
      client->ParseFilter(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<std::vector<v1::Predicate>> local = filter::ParseSubscription(text);
  ASSERT_TRUE(local.ok()) << local.status();
  ASSERT_EQ(parsed->size(), local->size());
  for (size_t i = 0; i < parsed->size(); ++i) {
    EXPECT_EQ((*parsed)[i].SerializeAsString(),
              (*local)[i].SerializeAsString());
  }
  parsed = client->ParseFilter("price is 5");
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(parsed.status().message(), HasSubstr("filter: column 7"));
  EXPECT_EQ(LiveSubscriptions(client.get()), 0u);
  server.reset();
  parsed = client->ParseFilter(text);
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kUnavailable)
      << parsed.status();
}

// ParseFilterSpec returns the server's parse with its "or" groups, the
// same as the local parsers' (the grammar's and the pattern's); ParseFilter
// refuses a filter with "or" rather than drop its groups.
TEST(ClientParseFilter, SpecFormKeepsOrGroups) {
  std::unique_ptr<CohortServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> client = ConnectOrDie(OptionsFor(*server));
  ASSERT_NE(client, nullptr);
  for (const std::string text :
       {"price <= 500 and kind in [\"a\", \"b\"]",
        "price <= 500 and (kind = \"a\" or kind = \"b\" and n > 1)",
        "a = 1 or b = 2", R"({"p": [19.99, "a"], "q": [1]})"}) {
    SCOPED_TRACE(text);
    absl::StatusOr<v1::SubscriptionSpec> parsed =
        client->ParseFilterSpec(text);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    absl::StatusOr<v1::SubscriptionSpec> local =
        filter::IsPattern(text) ? filter::ParsePatternSpec(text)
                                : filter::ParseSubscriptionSpec(text);
    ASSERT_TRUE(local.ok()) << local.status();
    EXPECT_EQ(parsed->SerializeAsString(), local->SerializeAsString());
  }
  absl::StatusOr<std::vector<v1::Predicate>> predicates =
      client->ParseFilter("a = 1 or b = 2");
  EXPECT_EQ(predicates.status().code(), absl::StatusCode::kInvalidArgument)
      << predicates.status();
  absl::StatusOr<v1::SubscriptionSpec> parsed =
      client->ParseFilterSpec("(a = 1 or b = 2");
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(parsed.status().message(), HasSubstr("filter: column 1"));
}

TEST(ClientFromGrpc, KeepsCodeAndMessage) {
  EXPECT_TRUE(FromGrpc(grpc::Status::OK).ok());
  const absl::Status status =
      FromGrpc(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "full"));
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(), "full");
}

}  // namespace
}  // namespace client
}  // namespace cohort
