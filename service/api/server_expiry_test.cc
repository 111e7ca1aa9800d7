// End-to-end tests of expiry and abandonment: a Publish whose deadline has
// passed is not matched or delivered, and streams that clients abandon (by
// cancelling, by letting their deadline pass, or by dropping the call
// without a word) give back their stream slots, their listener
// registrations and the matching work of their queued requests.
//
// The servers run with a long --cohort_wait_us so that an event reliably
// waits in a partition queue while its request expires.
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/cohort/v1/pubsub.grpc.pb.h"
#include "service/api/server.h"
#include "service/api/server_test_util.h"

namespace cohort {
namespace service {
namespace {

using testing::Client;
using testing::KeyEvent;
using testing::KeySubscription;
using testing::Listener;
using testing::LocalServerOptions;

// Long enough that a request with a 50 ms deadline expires in the queue.
constexpr uint32_t kLongCohortWaitUs = 300000;

// The default (partitioned) layout: the predicate stage forms each cohort
// once, skipping expired events; every partition matches every event of
// every cohort.
struct MatchTotals {
  uint64_t formed = 0;   // events the predicate stage put in cohorts
  uint64_t expired = 0;  // events it skipped as expired
  uint64_t matched = 0;  // events matched, summed over the partitions
  uint64_t partitions = 0;
};

MatchTotals Totals(const v1::Stats& stats) {
  MatchTotals totals;
  for (const v1::StageStats& stage : stats.stages()) {
    if (stage.stage() == "predicate") {
      totals.formed += stage.events();
      totals.expired += stage.expired();
    } else if (stage.stage() == "partition") {
      totals.matched += stage.events();
      ++totals.partitions;
    }
  }
  return totals;
}

// Polls stats until `done` holds (up to 30 s); returns the last stats.
template <typename Pred>
v1::Stats WaitForStats(Client& client, Pred done) {
  v1::Stats stats;
  for (int i = 0; i < 3000; ++i) {
    stats = client.Stats();
    if (done(stats)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return stats;
}

std::unique_ptr<CohortServer> StartServer(uint32_t max_streams) {
  ServerOptions options = LocalServerOptions();
  options.engine.partitions = 2;
  options.engine.pin_cores = false;
  options.engine.cohort_wait_us = kLongCohortWaitUs;
  options.streams.max_streams = max_streams;
  return testing::StartServer(options);
}

// Property: a Publish whose deadline passes while its event waits for a
// cohort is skipped when the cohort forms (counted once as expired, matched
// by no partition) and never reaches the listener; the next Publish is
// matched and delivered.
TEST(ServerDeadline, ExpiredPublishIsNeitherMatchedNorDelivered) {
  std::unique_ptr<CohortServer> server = StartServer(64);
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  v1::SubscribeResponse subscribed;
  ASSERT_TRUE(client.Subscribe(KeySubscription(1), &subscribed).ok());
  Listener listener(server->port(), "subscriber");
  ASSERT_TRUE(client.WaitForListeners(1));

  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::milliseconds(50));
    v1::PublishResponse response;
    grpc::Status status =
        client.stub()->Publish(&context, KeyEvent(1, "late"), &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED)
        << status.error_message();
  }
  v1::Stats stats = WaitForStats(client, [](const v1::Stats& s) {
    return Totals(s).expired == 1;
  });
  EXPECT_EQ(Totals(stats).expired, 1u);
  EXPECT_EQ(Totals(stats).matched, 0u);

  v1::PublishResponse response;
  ASSERT_TRUE(client.Publish(KeyEvent(1, "on time"), &response).ok());
  ASSERT_EQ(response.results_size(), 1);
  EXPECT_EQ(response.results(0).match_count(), 1u);
  std::vector<v1::Delivery> deliveries = listener.WaitFor(1);
  ASSERT_EQ(deliveries.size(), 1u);
  EXPECT_EQ(deliveries[0].event().payload(), "on time");
  EXPECT_EQ(Totals(client.Stats()).matched, 2u);  // by both partitions
}

// Property: a Publish that arrives with its deadline already passed is
// refused by the front stage before admission.
TEST(ServerDeadline, PublishArrivingExpiredIsRefusedUpFront) {
  std::unique_ptr<CohortServer> server = StartServer(64);
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() -
                       std::chrono::seconds(1));
  v1::PublishResponse response;
  grpc::Status status =
      client.stub()->Publish(&context, KeyEvent(1), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(client.Stats().events_published(), 0u);
}

// Property: when the client cancels a PublishStream, the requests it has
// queued are skipped instead of matched.
TEST(ServerDeadline, CancelledPublishStreamIsSkipped) {
  std::unique_ptr<CohortServer> server = StartServer(64);
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  v1::SubscribeResponse subscribed;
  ASSERT_TRUE(client.Subscribe(KeySubscription(1), &subscribed).ok());
  grpc::ClientContext context;
  auto stream = client.stub()->PublishStream(&context);
  ASSERT_TRUE(stream->Write(KeyEvent(1)));
  // Admitted, and waiting kLongCohortWaitUs for company.
  WaitForStats(client,
               [](const v1::Stats& s) { return s.events_published() == 1; });
  context.TryCancel();
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  v1::Stats stats = WaitForStats(client, [](const v1::Stats& s) {
    return Totals(s).expired == 1;
  });
  EXPECT_EQ(Totals(stats).expired, 1u);
  EXPECT_EQ(Totals(stats).matched, 0u);
}

// Long enough for a few thousand streams to open before it passes.
constexpr int kStreamDeadlineS = 10;

// How a test client walks away from a stream.
enum class Abandon { kDrop, kCancel, kDeadline };

// One stream opened and never read; destroying it without Finish drops the
// call (the client library cancels it).
struct OpenStream {
  std::unique_ptr<grpc::ClientContext> context;
  std::unique_ptr<grpc::ClientReader<v1::Delivery>> listen;
  std::unique_ptr<
      grpc::ClientReaderWriter<v1::PublishRequest, v1::PublishResponse>>
      publish;
};

// A stream's context: with a short deadline if it is to be abandoned that
// way.
OpenStream WithContext(Abandon how) {
  OpenStream s;
  s.context = std::make_unique<grpc::ClientContext>();
  if (how == Abandon::kDeadline) {
    s.context->set_deadline(std::chrono::system_clock::now() +
                            std::chrono::seconds(kStreamDeadlineS));
  }
  return s;
}

OpenStream OpenListen(v1::PubSub::Stub* stub, const std::string& subscriber,
                      Abandon how) {
  OpenStream s = WithContext(how);
  v1::ListenRequest request;
  request.set_subscriber(subscriber);
  s.listen = stub->Listen(s.context.get(), request);
  return s;
}

OpenStream OpenPublish(v1::PubSub::Stub* stub, Abandon how) {
  OpenStream s = WithContext(how);
  s.publish = stub->PublishStream(s.context.get());
  s.publish->Write(KeyEvent(1, "abandoned"));
  return s;
}

// Property: thousands of Listen and PublishStream streams, abandoned in the
// three ways a client can walk away, all give back their stream slot and
// listener registration; every publish is either matched by each partition
// or skipped as expired (never lost, never counted twice); afterwards the
// server admits exactly --max_streams streams again.
TEST(ServerStreams, AbandonedStreamsReleaseEverything) {
  constexpr int kListens = 2000;
  constexpr int kPublishes = 1000;
  constexpr uint32_t kMaxStreams = kListens + kPublishes;
  std::unique_ptr<CohortServer> server = StartServer(kMaxStreams);
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  v1::SubscribeResponse subscribed;
  ASSERT_TRUE(client.Subscribe(KeySubscription(1), &subscribed).ok());

  constexpr int kChannels = 8;
  std::vector<std::unique_ptr<v1::PubSub::Stub>> stubs;
  for (int c = 0; c < kChannels; ++c) {
    stubs.push_back(v1::PubSub::NewStub(testing::Connect(server->port())));
  }
  std::vector<OpenStream> streams;
  std::vector<Abandon> how;
  for (int i = 0; i < kListens + kPublishes; ++i) {
    const Abandon a = static_cast<Abandon>(i % 3);
    v1::PubSub::Stub* stub = stubs[i % kChannels].get();
    // Listeners of a subscriber without subscriptions: the publishes below
    // are not delivered to 2000 unread streams.
    streams.push_back(i < kListens ? OpenListen(stub, "listener", a)
                                   : OpenPublish(stub, a));
    how.push_back(a);
  }
  v1::Stats stats = WaitForStats(client, [&](const v1::Stats& s) {
    return s.open_streams() == kMaxStreams && s.listeners() == kListens;
  });
  ASSERT_EQ(stats.open_streams(), kMaxStreams);
  ASSERT_EQ(stats.listeners(), static_cast<uint64_t>(kListens));
  {
    OpenStream extra = OpenListen(stubs[0].get(), "subscriber", Abandon::kDrop);
    v1::Delivery delivery;
    EXPECT_FALSE(extra.listen->Read(&delivery));
    EXPECT_EQ(extra.listen->Finish().error_code(),
              grpc::StatusCode::RESOURCE_EXHAUSTED);
  }

  for (size_t i = 0; i < streams.size(); ++i) {
    if (how[i] == Abandon::kCancel) streams[i].context->TryCancel();
  }
  for (size_t i = 0; i < streams.size(); ++i) {
    if (how[i] == Abandon::kDrop) streams[i] = OpenStream();
  }
  stats = WaitForStats(client, [](const v1::Stats& s) {
    return s.open_streams() == 0 && s.listeners() == 0;
  });
  EXPECT_EQ(stats.open_streams(), 0u);
  EXPECT_EQ(stats.listeners(), 0u);
  streams.clear();

  // Every published event was either matched by each partition or skipped.
  const uint64_t published = stats.events_published();
  EXPECT_GT(published, 0u);
  stats = WaitForStats(client, [&](const v1::Stats& s) {
    const MatchTotals t = Totals(s);
    return t.formed + t.expired == published &&
           t.matched == t.partitions * t.formed;
  });
  const MatchTotals totals = Totals(stats);
  EXPECT_EQ(totals.formed + totals.expired, published);
  EXPECT_EQ(totals.matched, totals.partitions * totals.formed);

  // The slots are really free: exactly kMaxStreams open again.
  for (uint32_t i = 0; i < kMaxStreams; ++i) {
    streams.push_back(OpenListen(stubs[i % kChannels].get(),
                                 absl::StrCat("again", i % 50),
                                 Abandon::kDrop));
  }
  stats = WaitForStats(client, [&](const v1::Stats& s) {
    return s.open_streams() == kMaxStreams;
  });
  EXPECT_EQ(stats.open_streams(), kMaxStreams);
  OpenStream extra = OpenListen(stubs[0].get(), "subscriber", Abandon::kDrop);
  v1::Delivery delivery;
  EXPECT_FALSE(extra.listen->Read(&delivery));
  EXPECT_EQ(extra.listen->Finish().error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  streams.clear();
  stats = WaitForStats(client,
                       [](const v1::Stats& s) { return s.open_streams() == 0; });
  EXPECT_EQ(stats.open_streams(), 0u);
}

}  // namespace
}  // namespace service
}  // namespace cohort
