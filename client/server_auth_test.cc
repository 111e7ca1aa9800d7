// End-to-end tests of --auth_tokens through a real server on 127.0.0.1: each
// denial (UNAUTHENTICATED without a token or with an unknown or malformed
// one, PERMISSION_DENIED for another subscriber's Subscribe, Listen and
// Unsubscribe and for publishing without a publisher's token) leaves the
// server unchanged, and the allowed paths work. Calls go through the client
// library (client/client.h), so its token handling is tested too; malformed
// headers through a raw stub.
#include <atomic>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/cohort/v1/pubsub.pb.h"
#include "service/api/auth.h"
#include "service/api/auth_service.h"
#include "service/api/server.h"
#include "service/api/server_test_util.h"

namespace cohort {
namespace service {
namespace {

using client::Client;
using client::ClientOptions;
using service::testing::KeySpec;
using service::testing::StartServer;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kAlice[] = "alice-7f3a9c2e51d04b68";
constexpr char kBob[] = "bob-0c5e7a1f92b3d846";
constexpr char kFeed[] = "feed-4d2b8e6f13a7c950";
constexpr char kUnknown[] = "nobody-9e8d7c6b5a493827";
const char* const kAllTokens[] = {kAlice, kBob, kFeed, kUnknown};

// Writes a token file under TEST_TMPDIR; returns its path.
std::string WriteTokens(const std::string& name, bool with_publisher) {
  const std::string path = absl::StrCat(std::getenv("TEST_TMPDIR"), "/", name);
  std::ofstream out(path);
  out << "# test tokens\n"
      << TokenLine(Role::kSubscriber, "alice", kAlice) << "\n"
      << TokenLine(Role::kSubscriber, "bob", kBob) << "\n";
  if (with_publisher) out << TokenLine(Role::kPublisher, "feed", kFeed) << "\n";
  return path;
}

ServerOptions AuthOptions(bool with_publisher) {
  ServerOptions options = testing::LocalServerOptions();
  options.auth_tokens_file = WriteTokens(
      with_publisher ? "tokens-pub.txt" : "tokens-open.txt", with_publisher);
  return options;
}

std::unique_ptr<Client> ConnectAs(const CohortServer& server,
                                  const std::string& token) {
  ClientOptions options;
  options.target = absl::StrCat("127.0.0.1:", server.port());
  options.deadline = absl::Seconds(30);
  options.security.token = token;
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? std::move(*client) : nullptr;
}

// Matches of one event {key = k}, published with `token`.
absl::StatusOr<uint64_t> MatchesOf(const CohortServer& server, int64_t key,
                                   const std::string& token = kFeed) {
  std::unique_ptr<Client> client = ConnectAs(server, token);
  absl::StatusOr<v1::PublishResponse> response =
      client->Publish(testing::KeyEvent(key));
  if (!response.ok()) return response.status();
  return response->results(0).match_count();
}

uint64_t Subscriptions(const CohortServer& server) {
  v1::Stats stats;
  server.FillStats(&stats);
  return stats.subscriptions();
}

// No message may carry a token (or a token's hash).
void ExpectNoSecrets(const absl::Status& status) {
  for (const char* token : kAllTokens) {
    EXPECT_THAT(status.message(), Not(HasSubstr(token)));
    EXPECT_THAT(status.message(),
                Not(HasSubstr(Sha256Hex(token).substr(0, 12))));
  }
}

void ExpectCode(const absl::Status& status, absl::StatusCode code,
                const std::string& message_part) {
  EXPECT_EQ(status.code(), code) << status;
  EXPECT_THAT(status.message(), HasSubstr(message_part));
  ExpectNoSecrets(status);
}

// Listens as `subscriber` with `token` until the stream ends; the status.
absl::Status ListenStatus(Client* client, const std::string& subscriber) {
  std::unique_ptr<Client::Listening> listening =
      client->Listen(subscriber, [](const v1::Delivery&) {});
  return listening->Wait();
}

absl::Status PublishStreamStatus(Client* client) {
  std::unique_ptr<Client::Publisher> publisher = client->OpenPublisher();
  (void)publisher->Publish(testing::KeyEvent(1), nullptr);
  return publisher->Finish();
}

TEST(ServerAuth, CallsWithoutATokenAreUnauthenticated) {
  std::unique_ptr<CohortServer> server = StartServer(AuthOptions(true));
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> anonymous = ConnectAs(*server, "");
  const auto kNo = absl::StatusCode::kUnauthenticated;
  ExpectCode(anonymous->Subscribe({KeySpec("alice", 1)}).status(), kNo,
             "no token: Subscribe needs a subscriber's token");
  ExpectCode(anonymous->Unsubscribe({1}), kNo,
             "no token: Unsubscribe needs a subscriber's token");
  ExpectCode(ListenStatus(anonymous.get(), "alice"), kNo,
             "no token: Listen needs a subscriber's token");
  ExpectCode(anonymous->Publish(testing::KeyEvent(1)).status(), kNo,
             "no token: publishing needs a publisher's token");
  ExpectCode(PublishStreamStatus(anonymous.get()), kNo,
             "no token: publishing needs a publisher's token");
  EXPECT_EQ(Subscriptions(*server), 0u);
  // GetStats and ParseFilter are open.
  absl::StatusOr<v1::Stats> stats = anonymous->Stats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->events_published(), 0u);
  absl::StatusOr<std::vector<v1::Predicate>> parsed =
      anonymous->ParseFilter("key = 1");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->size(), 1u);
}

TEST(ServerAuth, UnknownTokensAreUnauthenticatedEverywhere) {
  std::unique_ptr<CohortServer> server = StartServer(AuthOptions(true));
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> stranger = ConnectAs(*server, kUnknown);
  const auto kNo = absl::StatusCode::kUnauthenticated;
  const std::string kWhy = "unknown token";
  ExpectCode(stranger->Subscribe({KeySpec("alice", 1)}).status(), kNo, kWhy);
  ExpectCode(stranger->Unsubscribe({1}), kNo, kWhy);
  ExpectCode(ListenStatus(stranger.get(), "alice"), kNo, kWhy);
  ExpectCode(stranger->Publish(testing::KeyEvent(1)).status(), kNo, kWhy);
  ExpectCode(PublishStreamStatus(stranger.get()), kNo, kWhy);
  ExpectCode(stranger->Stats().status(), kNo, kWhy);
  ExpectCode(stranger->ParseFilter("key = 1").status(), kNo, kWhy);
  // A token's hash is not a token.
  std::unique_ptr<Client> hasher = ConnectAs(*server, Sha256Hex(kAlice));
  ExpectCode(hasher->Subscribe({KeySpec("alice", 1)}).status(), kNo, kWhy);
  EXPECT_EQ(Subscriptions(*server), 0u);
}

TEST(ServerAuth, MalformedAuthorizationHeadersAreUnauthenticated) {
  std::unique_ptr<CohortServer> server = StartServer(AuthOptions(true));
  ASSERT_NE(server, nullptr);
  testing::Client raw(server->port());
  const std::vector<std::vector<std::string>> headers = {
      {absl::StrCat("Basic ", kAlice)},
      {kAlice},
      {"Bearer "},
      {absl::StrCat("Bearer  ", kAlice)},  // two spaces: not the token
      {absl::StrCat("Bearer ", kAlice), absl::StrCat("Bearer ", kBob)},
  };
  for (const std::vector<std::string>& values : headers) {
    grpc::ClientContext context;
    testing::SetDeadline(&context);
    for (const std::string& value : values) {
      context.AddMetadata("authorization", value);
    }
    v1::SubscribeResponse response;
    v1::SubscribeRequest request;
    *request.add_subscriptions() = KeySpec("alice", 1);
    const grpc::Status status =
        raw.stub()->Subscribe(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED)
        << values[0];
    ExpectNoSecrets(
        absl::Status(absl::StatusCode::kUnknown, status.error_message()));
  }
  // The scheme is case-insensitive (RFC 6750).
  grpc::ClientContext context;
  testing::SetDeadline(&context);
  context.AddMetadata("authorization", absl::StrCat("bEaReR ", kAlice));
  v1::SubscribeRequest request;
  *request.add_subscriptions() = KeySpec("alice", 1);
  v1::SubscribeResponse response;
  EXPECT_TRUE(raw.stub()->Subscribe(&context, request, &response).ok());
  EXPECT_EQ(Subscriptions(*server), 1u);
}

TEST(ServerAuth, SubscribeOnlyAsTheTokensSubscriber) {
  std::unique_ptr<CohortServer> server = StartServer(AuthOptions(true));
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> alice = ConnectAs(*server, kAlice);
  // One foreign spec refuses the whole request.
  ExpectCode(alice
                 ->Subscribe({KeySpec("alice", 1), KeySpec("alice", 2),
                              KeySpec("bob", 3)})
                 .status(),
             absl::StatusCode::kPermissionDenied,
             "subscriptions[2].subscriber: the token is subscriber "
             "\"alice\"'s, which may subscribe only as \"alice\"; nothing "
             "was added");
  EXPECT_EQ(Subscriptions(*server), 0u);
  // A publisher's token cannot subscribe at all.
  std::unique_ptr<Client> feed = ConnectAs(*server, kFeed);
  ExpectCode(feed->Subscribe({KeySpec("feed", 1)}).status(),
             absl::StatusCode::kPermissionDenied,
             "the token is publisher \"feed\"'s; Subscribe needs a "
             "subscriber's token");
  EXPECT_EQ(Subscriptions(*server), 0u);
  // As itself it can.
  absl::StatusOr<std::vector<uint64_t>> ids =
      alice->Subscribe({KeySpec("alice", 1), KeySpec("alice", 2)});
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(ids->size(), 2u);
  EXPECT_EQ(Subscriptions(*server), 2u);
  EXPECT_EQ(MatchesOf(*server, 2).value_or(99), 1u);
}

TEST(ServerAuth, ListenOnlyAsTheTokensSubscriber) {
  std::unique_ptr<CohortServer> server = StartServer(AuthOptions(true));
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> alice = ConnectAs(*server, kAlice);
  std::unique_ptr<Client> bob = ConnectAs(*server, kBob);
  ASSERT_TRUE(bob->Subscribe({KeySpec("bob", 5)}).ok());
  ExpectCode(ListenStatus(alice.get(), "bob"),
             absl::StatusCode::kPermissionDenied,
             "subscriber: the token is subscriber \"alice\"'s, which may "
             "listen only as \"alice\"");
  std::unique_ptr<Client> feed = ConnectAs(*server, kFeed);
  ExpectCode(ListenStatus(feed.get(), "bob"),
             absl::StatusCode::kPermissionDenied,
             "Listen needs a subscriber's token");
  EXPECT_EQ(server->engine()->listeners().size(), 0u);

  // Bob listening as bob gets bob's delivery.
  absl::Notification delivered;
  std::unique_ptr<Client::Listening> listening =
      bob->Listen("bob", [&](const v1::Delivery& d) {
        if (d.event().attributes(0).value() == 5) delivered.Notify();
      });
  for (int i = 0; i < 1000 && bob->Stats()->listeners() != 1; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_EQ(MatchesOf(*server, 5).value_or(99), 1u);
  EXPECT_TRUE(delivered.WaitForNotificationWithTimeout(absl::Seconds(10)));
  listening->Stop();
  EXPECT_EQ(listening->Wait().code(), absl::StatusCode::kCancelled);
}

TEST(ServerAuth, UnsubscribeOnlyTheTokensSubscriptions) {
  std::unique_ptr<CohortServer> server = StartServer(AuthOptions(true));
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> alice = ConnectAs(*server, kAlice);
  std::unique_ptr<Client> bob = ConnectAs(*server, kBob);
  absl::StatusOr<std::vector<uint64_t>> a =
      alice->Subscribe({KeySpec("alice", 1), KeySpec("alice", 1)});
  absl::StatusOr<std::vector<uint64_t>> b = bob->Subscribe({KeySpec("bob", 1)});
  ASSERT_TRUE(a.ok() && b.ok());
  const uint64_t a0 = (*a)[0], a1 = (*a)[1], b0 = (*b)[0];
  const uint64_t never = 1000;

  // Another's id: refused, named, nothing removed (not even bob's own).
  ExpectCode(bob->Unsubscribe({b0, a1}), absl::StatusCode::kPermissionDenied,
             absl::StrCat("subscription_ids[1]: subscription ", a1,
                          " belongs to another subscriber; nothing was "
                          "removed"));
  // PERMISSION_DENIED wins over NOT_FOUND, wherever the ids are.
  ExpectCode(bob->Unsubscribe({never, a0}), absl::StatusCode::kPermissionDenied,
             "subscription_ids[1]: subscription");
  // Ids nobody owns are NOT_FOUND, as without --auth_tokens.
  ExpectCode(bob->Unsubscribe({b0, never}), absl::StatusCode::kNotFound,
             absl::StrCat("subscription_ids[1]: ", never,
                          " is not a live subscription"));
  // A publisher's token cannot unsubscribe.
  ExpectCode(ConnectAs(*server, kFeed)->Unsubscribe({b0}),
             absl::StatusCode::kPermissionDenied,
             "Unsubscribe needs a subscriber's token");
  EXPECT_EQ(Subscriptions(*server), 3u);
  EXPECT_EQ(MatchesOf(*server, 1).value_or(99), 3u);

  // Each removes its own; a second removal is NOT_FOUND.
  EXPECT_TRUE(alice->Unsubscribe({a1, a0}).ok());
  EXPECT_TRUE(bob->Unsubscribe({b0}).ok());
  ExpectCode(alice->Unsubscribe({a0}), absl::StatusCode::kNotFound,
             "is not a live subscription");
  // Once removed, an id is nobody's: NOT_FOUND for others too.
  ExpectCode(bob->Unsubscribe({a0}), absl::StatusCode::kNotFound,
             "is not a live subscription");
  EXPECT_EQ(Subscriptions(*server), 0u);
  EXPECT_EQ(MatchesOf(*server, 1).value_or(99), 0u);
}

// The race the ownership rule guards against: ids are dense, so a client can
// guess the next one; it must not be able to remove a subscription whose
// Subscribe has not been answered yet. Bob keeps trying to unsubscribe the
// ids alice is about to get, while she subscribes; none of his attempts may
// succeed and all of her subscriptions stay.
TEST(ServerAuth, GuessedIdsOfConcurrentSubscribesCannotBeRemoved) {
  std::unique_ptr<CohortServer> server = StartServer(AuthOptions(true));
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> alice = ConnectAs(*server, kAlice);
  std::unique_ptr<Client> bob = ConnectAs(*server, kBob);
  constexpr int kSubscribes = 200;
  std::atomic<bool> done{false};
  std::atomic<int> bob_successes{0}, bob_attempts{0};
  std::thread attacker([&] {
    while (!done.load()) {
      const uint64_t next = Subscriptions(*server) + 1;
      for (uint64_t id = next; id < next + 3; ++id) {
        ++bob_attempts;
        if (bob->Unsubscribe({id}).ok()) ++bob_successes;
      }
    }
  });
  for (int i = 0; i < kSubscribes; ++i) {
    ASSERT_TRUE(alice->Subscribe({KeySpec("alice", 7)}).ok());
  }
  done.store(true);
  attacker.join();
  EXPECT_GT(bob_attempts.load(), 0);
  EXPECT_EQ(bob_successes.load(), 0);
  EXPECT_EQ(Subscriptions(*server), static_cast<uint64_t>(kSubscribes));
  EXPECT_EQ(MatchesOf(*server, 7).value_or(0),
            static_cast<uint64_t>(kSubscribes));
}

TEST(ServerAuth, PublishingNeedsAPublisherTokenWhenTheFileHasOne) {
  std::unique_ptr<CohortServer> server = StartServer(AuthOptions(true));
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> alice = ConnectAs(*server, kAlice);
  ASSERT_TRUE(alice->Subscribe({KeySpec("alice", 3)}).ok());
  const std::string kWhy =
      "the token is subscriber \"alice\"'s; publishing needs a publisher's "
      "token";
  ExpectCode(alice->Publish(testing::KeyEvent(3)).status(),
             absl::StatusCode::kPermissionDenied, kWhy);
  ExpectCode(PublishStreamStatus(alice.get()),
             absl::StatusCode::kPermissionDenied, kWhy);
  v1::Stats stats;
  server->FillStats(&stats);
  EXPECT_EQ(stats.events_published(), 0u);

  std::unique_ptr<Client> feed = ConnectAs(*server, kFeed);
  absl::StatusOr<v1::PublishResponse> response =
      feed->Publish(testing::KeyEvent(3));
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->results(0).match_count(), 1u);
  EXPECT_TRUE(PublishStreamStatus(feed.get()).ok());
  server->FillStats(&stats);
  EXPECT_EQ(stats.events_published(), 2u);
}

TEST(ServerAuth, PublishingIsOpenWithoutPublisherLines) {
  std::unique_ptr<CohortServer> server = StartServer(AuthOptions(false));
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> alice = ConnectAs(*server, kAlice);
  ASSERT_TRUE(alice->Subscribe({KeySpec("alice", 4)}).ok());
  std::unique_ptr<Client> anonymous = ConnectAs(*server, "");
  EXPECT_EQ(MatchesOf(*server, 4, "").value_or(99), 1u);
  EXPECT_TRUE(PublishStreamStatus(anonymous.get()).ok());
  // A subscriber's token may publish too...
  EXPECT_EQ(MatchesOf(*server, 4, kAlice).value_or(99), 1u);
  // ...but a token that is sent must be known.
  ExpectCode(MatchesOf(*server, 4, kUnknown).status(),
             absl::StatusCode::kUnauthenticated, "unknown token");
  // Subscribing still needs a token.
  ExpectCode(anonymous->Subscribe({KeySpec("alice", 4)}).status(),
             absl::StatusCode::kUnauthenticated, "no token");
}

TEST(ServerAuth, RecoveredSubscriptionsKeepTheirOwners) {
  ServerOptions options = AuthOptions(true);
  options.durability.data_dir =
      absl::StrCat(std::getenv("TEST_TMPDIR"), "/auth-data");
  uint64_t alice_id = 0;
  {
    std::unique_ptr<CohortServer> server = StartServer(options);
    ASSERT_NE(server, nullptr);
    absl::StatusOr<std::vector<uint64_t>> ids =
        ConnectAs(*server, kAlice)->Subscribe({KeySpec("alice", 9)});
    ASSERT_TRUE(ids.ok()) << ids.status();
    alice_id = (*ids)[0];
    server->Shutdown();
  }
  std::unique_ptr<CohortServer> server = StartServer(options);
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(Subscriptions(*server), 1u);
  ExpectCode(ConnectAs(*server, kBob)->Unsubscribe({alice_id}),
             absl::StatusCode::kPermissionDenied,
             "belongs to another subscriber");
  EXPECT_TRUE(ConnectAs(*server, kAlice)->Unsubscribe({alice_id}).ok());
  EXPECT_EQ(Subscriptions(*server), 0u);
}

TEST(ServerAuth, BadTokenFilesStopTheStart) {
  ServerOptions options = testing::LocalServerOptions();
  options.auth_tokens_file =
      absl::StrCat(std::getenv("TEST_TMPDIR"), "/no-such-tokens");
  absl::StatusOr<std::unique_ptr<CohortServer>> server =
      CohortServer::Start(options);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(server.status().message(),
              HasSubstr(absl::StrCat("--auth_tokens: cannot read ",
                                     options.auth_tokens_file)));

  options.auth_tokens_file =
      absl::StrCat(std::getenv("TEST_TMPDIR"), "/bad-tokens");
  {
    std::ofstream out(options.auth_tokens_file);
    out << TokenLine(Role::kSubscriber, "alice", kAlice) << "\n"
        << "subscriber bob " << kBob << "\n";  // the token, not its hash
  }
  server = CohortServer::Start(options);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(server.status().message(),
              HasSubstr(absl::StrCat(
                  "--auth_tokens: ", options.auth_tokens_file, ":2: ")));
  ExpectNoSecrets(server.status());
}

TEST(ServerAuth, StartupSummarySaysAuthIsOn) {
  std::unique_ptr<CohortServer> server = StartServer(AuthOptions(true));
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->security_summary(),
            "TLS off, auth on (2 subscriber tokens, 1 publisher tokens)");
  std::unique_ptr<CohortServer> plain =
      StartServer(testing::LocalServerOptions());
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->security_summary(), "TLS off, auth off");
}

TEST(SubscriptionOwners, ChecksInTheDocumentedOrder) {
  SubscriptionOwners owners;
  const uint64_t ids[] = {1, 2, 3};
  const uint32_t subscribers[] = {10, 10, 20};
  owners.Subscribed(ids, subscribers);
  EXPECT_EQ(owners.size(), 3u);
  EXPECT_TRUE(owners.Check({1, 2}, 10).ok());
  EXPECT_EQ(owners.Check({1, 3}, 10).code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(owners.Check({4, 3}, 10).code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(owners.Check({1, 4}, 10).code(), absl::StatusCode::kNotFound);
  // A subscriber never named owns nothing.
  EXPECT_EQ(owners.Check({1}, std::nullopt).code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(owners.Check({}, std::nullopt).ok());
  owners.Unsubscribed({1, 3});
  EXPECT_EQ(owners.size(), 1u);
  EXPECT_EQ(owners.Check({1}, 10).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(owners.Check({3}, 10).code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace service
}  // namespace cohort
