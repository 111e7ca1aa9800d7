// End-to-end tests of cohortd's limits through a real server on 127.0.0.1:
// malformed requests (each gets a precise status, the server keeps serving
// and its index is unchanged), overload (RESOURCE_EXHAUSTED, bounded
// queues, recovery), streams under overload, and slow listeners.
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grpc/grpc.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "service/api/server.h"
#include "service/api/server_test_util.h"

namespace cohort {
namespace service {
namespace {

using v1::Op;

v1::SubscribeRequest OneSpec(const std::string& subscriber,
                             const std::string& attribute, Op op,
                             int64_t value, int64_t upper = 0) {
  v1::SubscribeRequest request;
  v1::SubscriptionSpec* spec = request.add_subscriptions();
  spec->set_subscriber(subscriber);
  v1::Predicate* p = spec->add_predicates();
  p->set_attribute(attribute);
  p->set_op(op);
  p->set_value(value);
  p->set_upper(upper);
  return request;
}

v1::PublishRequest OneEvent(std::vector<std::pair<std::string, int64_t>> attrs,
                            std::string payload = "") {
  v1::PublishRequest request;
  v1::Event* event = request.add_events();
  for (const auto& [name, value] : attrs) {
    v1::Attribute* a = event->add_attributes();
    a->set_name(name);
    a->set_value(value);
  }
  event->set_payload(std::move(payload));
  return request;
}

struct BadCase {
  std::string name;
  std::function<grpc::Status(testing::Client&)> call;
  grpc::StatusCode code;
  std::string message;  // must occur in the status message
};

std::vector<BadCase> BadCases(uint64_t live_id) {
  using testing::Client;
  auto subscribe = [](v1::SubscribeRequest request) {
    return [request](Client& c) {
      v1::SubscribeResponse response;
      return c.Subscribe(request, &response);
    };
  };
  auto publish = [](v1::PublishRequest request) {
    return [request](Client& c) {
      v1::PublishResponse response;
      return c.Publish(request, &response);
    };
  };
  auto unsubscribe = [](std::vector<uint64_t> ids) {
    return [ids](Client& c) {
      v1::UnsubscribeRequest request;
      for (uint64_t id : ids) request.add_subscription_ids(id);
      return c.Unsubscribe(request);
    };
  };
  auto publish_bytes = [](std::string bytes) {
    return [bytes](Client& c) { return c.PublishBytes(bytes); };
  };
  const auto kInvalid = grpc::StatusCode::INVALID_ARGUMENT;
  const std::string kNotARequest =
      "request: the bytes are not a cohort.v1.PublishRequest";
  v1::SubscribeRequest empty_conjunction = OneSpec("s", "a", v1::OP_EQ, 1);
  empty_conjunction.mutable_subscriptions(0)->clear_predicates();
  v1::SubscribeRequest too_many = OneSpec("s", "a", v1::OP_EQ, 1);
  for (int i = 0; i < 32; ++i) {
    *too_many.mutable_subscriptions(0)->add_predicates() =
        too_many.subscriptions(0).predicates(0);
  }
  v1::SubscribeRequest one_bad_of_two = OneSpec("s", "a", v1::OP_EQ, 1);
  *one_bad_of_two.add_subscriptions() =
      OneSpec("s", "b", v1::OP_BETWEEN, 5, 1).subscriptions(0);
  v1::SubscribeRequest big_batch;
  for (int i = 0; i < 101; ++i) {
    *big_batch.add_subscriptions() =
        OneSpec("s", "a", v1::OP_EQ, i).subscriptions(0);
  }
  v1::PublishRequest big_publish;
  for (int i = 0; i < 101; ++i) {
    *big_publish.add_events() = OneEvent({{"a", i}}).events(0);
  }
  std::vector<std::pair<std::string, int64_t>> many_attributes;
  for (int i = 0; i < 257; ++i) many_attributes.emplace_back(absl::StrCat("x", i), i);
  v1::PublishRequest second_event_bad = OneEvent({{"a", 1}});
  *second_event_bad.add_events() = OneEvent({{"a", 1}, {"a", 2}}).events(0);
  std::vector<uint64_t> many_ids;
  for (uint64_t i = 1; i <= 101; ++i) many_ids.push_back(i);

  return {
      {"op unspecified", subscribe(OneSpec("s", "a", v1::OP_UNSPECIFIED, 1)),
       kInvalid, "subscriptions[0].predicates[0].op: OP_UNSPECIFIED"},
      {"op unknown number",
       subscribe(OneSpec("s", "a", static_cast<Op>(99), 1)), kInvalid,
       "unknown value 99"},
      {"between value > upper",
       subscribe(OneSpec("s", "a", v1::OP_BETWEEN, 10, 5)), kInvalid,
       "value 10 > upper 5"},
      {"empty conjunction", subscribe(empty_conjunction), kInvalid,
       "subscriptions[0].predicates: empty"},
      {"33 predicates", subscribe(too_many), kInvalid, "the limit is 32"},
      {"empty attribute", subscribe(OneSpec("s", "", v1::OP_EQ, 1)), kInvalid,
       "predicates[0].attribute: empty"},
      {"attribute starts with digit",
       subscribe(OneSpec("s", "1a", v1::OP_EQ, 1)), kInvalid,
       "starts with '1'"},
      {"attribute with space", subscribe(OneSpec("s", "a b", v1::OP_EQ, 1)),
       kInvalid, "' ' at position 1"},
      {"attribute 65 chars",
       subscribe(OneSpec("s", std::string(65, 'a'), v1::OP_EQ, 1)), kInvalid,
       "the limit is 64"},
      {"empty subscriber", subscribe(OneSpec("", "a", v1::OP_EQ, 1)), kInvalid,
       "subscriptions[0].subscriber: empty"},
      {"subscriber 257 bytes",
       subscribe(OneSpec(std::string(257, 's'), "a", v1::OP_EQ, 1)), kInvalid,
       "the limit is 256"},
      {"subscriber control char", subscribe(OneSpec("a\nb", "a", v1::OP_EQ, 1)),
       kInvalid, "control character"},
      {"second spec bad", subscribe(one_bad_of_two), kInvalid,
       "subscriptions[1].predicates[0]"},
      {"subscribe batch over max_batch", subscribe(big_batch), kInvalid,
       "subscriptions: 101 entries; the limit is 100"},
      {"event without attributes", publish(OneEvent({})), kInvalid,
       "events[0].attributes: empty"},
      {"duplicate event attribute", publish(OneEvent({{"a", 1}, {"a", 2}})),
       kInvalid, "events[0].attributes[1].name"},
      {"second event duplicate", publish(second_event_bad), kInvalid,
       "events[1].attributes[1].name"},
      {"257 event attributes", publish(OneEvent(many_attributes)), kInvalid,
       "the limit is 256"},
      {"bad event attribute name", publish(OneEvent({{"a-", 1}, {"-a", 2}})),
       kInvalid, "events[0].attributes[1].name"},
      {"payload over limit",
       publish(OneEvent({{"a", 1}}, std::string(65537, 'p'))), kInvalid,
       "65537 bytes; the limit is 65536"},
      {"publish batch over max_batch", publish(big_publish), kInvalid,
       "events: 101 entries; the limit is 100"},
      {"publish bytes: a bad tag", publish_bytes("\xff\xff\xff"), kInvalid,
       kNotARequest},
      {"publish bytes: an event cut short",
       publish_bytes(std::string("\x0a\x05") + "ab"), kInvalid, kNotARequest},
      {"publish bytes: an event that is not an Event",
       publish_bytes(std::string("\x0a\x03\xff\xff\xff")), kInvalid,
       kNotARequest},
      {"unknown subscription id", unsubscribe({live_id + 1000}),
       grpc::StatusCode::NOT_FOUND, "subscription_ids[0]"},
      {"id zero", unsubscribe({0}), grpc::StatusCode::NOT_FOUND,
       "0 is never a subscription id"},
      {"known then unknown id", unsubscribe({live_id, live_id + 77}),
       grpc::StatusCode::NOT_FOUND, "subscription_ids[1]"},
      {"duplicate ids", unsubscribe({live_id, live_id}), kInvalid,
       "subscription_ids[1]"},
      {"unsubscribe batch over max_batch", unsubscribe(many_ids), kInvalid,
       "subscription_ids: 101 entries; the limit is 100"},
      {"listen without subscriber",
       [](Client& c) {
         grpc::ClientContext context;
         testing::SetDeadline(&context, 5);
         v1::ListenRequest request;
         auto reader = c.stub()->Listen(&context, request);
         v1::Delivery delivery;
         while (reader->Read(&delivery)) {
         }
         return reader->Finish();
       },
       kInvalid, "subscriber: empty"},
      {"stream with an invalid second request",
       [](Client& c) {
         std::vector<v1::PublishRequest> requests = {OneEvent({{"a", 1}}),
                                                     OneEvent({})};
         std::vector<v1::PublishResponse> responses;
         grpc::Status status = c.PublishStream(requests, &responses);
         // The first request is answered before the stream fails.
         if (responses.size() != 1) {
           return grpc::Status(grpc::StatusCode::INTERNAL, "responses");
         }
         return status;
       },
       kInvalid, "events[0].attributes: empty"},
      {"message over max_message_bytes",
       publish(OneEvent({{"a", 1}}, std::string(1 << 20, 'p'))),
       grpc::StatusCode::RESOURCE_EXHAUSTED, ""},
      {"publish larger than queue_limit",
       [](Client& c) {
         v1::PublishRequest request;
         for (int i = 0; i < 65; ++i) {
           *request.add_events() = OneEvent({{"a", i}}).events(0);
         }
         v1::PublishResponse response;
         return c.Publish(request, &response);
       },
       grpc::StatusCode::RESOURCE_EXHAUSTED, "--queue_limit"},
  };
}

// Property: each malformed request gets its precise status and a message
// naming the field and limit; afterwards the server still serves, and the
// subscriptions and matches are exactly what they were.
TEST(ServerBadInput, EachGetsAPreciseStatusAndTheIndexIsUnchanged) {
  ServerOptions options = testing::LocalServerOptions();
  options.engine.partitions = 2;
  options.limits.max_batch = 100;
  options.engine.queue_limit = 64;
  options.max_message_bytes = 512 << 10;
  options.limits.max_payload_bytes = 65536;
  auto server = CohortServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  testing::Client client((*server)->port());
  v1::SubscribeResponse ids;
  ASSERT_TRUE(client.Subscribe(OneSpec("s", "a", v1::OP_LE, 10), &ids).ok());
  const uint64_t live_id = ids.subscription_ids(0);

  const std::vector<BadCase> cases = BadCases(live_id);
  EXPECT_GE(cases.size(), 30u);
  for (const BadCase& bad : cases) {
    grpc::Status status = bad.call(client);
    EXPECT_EQ(status.error_code(), bad.code)
        << bad.name << ": " << status.error_message();
    EXPECT_NE(status.error_message().find(bad.message), std::string::npos)
        << bad.name << ": " << status.error_message();
  }
  v1::Stats stats = client.Stats();
  EXPECT_EQ(stats.subscriptions(), 1u);
  v1::PublishRequest probe = OneEvent({{"a", 3}});
  probe.set_return_ids(true);
  v1::PublishResponse response;
  ASSERT_TRUE(client.Publish(probe, &response).ok());
  EXPECT_EQ(testing::Ids(response.results(0)), std::vector<uint64_t>{live_id});
}

// Property: when publishers exceed capacity, the excess gets
// RESOURCE_EXHAUSTED at once, no queue grows past --queue_limit, and the
// server serves normally once the load drops.
TEST(ServerOverload, ExcessPublishesAreRejectedAndTheServerRecovers) {
  ServerOptions options = testing::LocalServerOptions();
  options.engine.partitions = 1;
  options.engine.queue_limit = 16;
  options.engine.cohort_max = 0;            // no size limit: cohorts wait ...
  options.engine.cohort_wait_us = 300000;   // ... 300 ms, so events pile up
  auto server = CohortServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  testing::Client client((*server)->port());
  v1::SubscribeResponse ids;
  ASSERT_TRUE(client.Subscribe(testing::KeySubscription(1), &ids).ok());

  constexpr int kPublishers = 40;
  std::vector<grpc::Status> statuses(kPublishers);
  std::vector<std::thread> threads;
  for (int i = 0; i < kPublishers; ++i) {
    threads.emplace_back([&, i] {
      v1::PublishResponse response;
      statuses[i] = client.Publish(testing::KeyEvent(1), &response);
      if (statuses[i].ok()) {
        EXPECT_EQ(response.results(0).match_count(), 1u);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  int ok = 0, exhausted = 0;
  for (const grpc::Status& s : statuses) {
    if (s.ok()) ++ok;
    if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      ++exhausted;
      EXPECT_NE(s.error_message().find("--queue_limit"), std::string::npos);
    }
  }
  EXPECT_EQ(ok + exhausted, kPublishers);
  EXPECT_GE(ok, 16);
  EXPECT_GT(exhausted, 0);
  v1::Stats stats = client.Stats();
  EXPECT_EQ(stats.stages(0).rejections(), static_cast<uint64_t>(exhausted));
  for (const v1::StageStats& stage : stats.stages()) {
    EXPECT_LE(stage.queue_length_max(), 16u) << stage.name();
  }
  // Recovery: a publish after the burst is served.
  v1::PublishResponse response;
  EXPECT_TRUE(client.Publish(testing::KeyEvent(1), &response).ok());
  EXPECT_EQ(response.results(0).match_count(), 1u);
}

// Property: a full server refuses a Publish before parsing it: a request
// whose event is not an Event (INVALID_ARGUMENT once parsed) gets
// RESOURCE_EXHAUSTED while the queue is full, so a refusal costs no parse.
TEST(ServerOverload, RefusesBeforeParsing) {
  ServerOptions options = testing::LocalServerOptions();
  options.engine.partitions = 1;
  options.engine.queue_limit = 16;
  options.engine.cohort_max = 0;            // no size limit: the cohort
  options.engine.cohort_wait_us = 1000000;  // holds its events for 1 s
  auto server = CohortServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  testing::Client client((*server)->port());
  v1::PublishRequest full;
  for (int i = 0; i < 16; ++i)
    *full.add_events() = testing::KeyEvent(1).events(0);
  std::thread filler([&] {
    v1::PublishResponse response;
    EXPECT_TRUE(client.Publish(full, &response).ok());
  });
  // Waits up to 500 ms for `n` events in flight; their number afterwards.
  auto in_flight_after_waiting_for = [&client](uint64_t n) {
    for (int i = 0; i < 500 && client.Stats().events_in_flight() != n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return client.Stats().events_in_flight();
  };
  ASSERT_EQ(in_flight_after_waiting_for(16), 16u);
  const std::string not_an_event("\x0a\x03\xff\xff\xff");
  grpc::Status status = client.PublishBytes(not_an_event);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << status.error_message();
  filler.join();
  // The answer goes out just before admission takes the events back.
  ASSERT_EQ(in_flight_after_waiting_for(0), 0u);
  // With room again the same bytes are parsed, and refused as malformed.
  status = client.PublishBytes(not_an_event);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << status.error_message();
}

// Property: a PublishStream that outruns the server is slowed, not failed:
// every request is answered, in order, though the queue holds only 16 events.
TEST(ServerOverload, StreamsWaitForRoomInsteadOfFailing) {
  ServerOptions options = testing::LocalServerOptions();
  options.engine.partitions = 2;
  options.engine.queue_limit = 16;
  options.engine.cohort_max = 8;
  auto server = CohortServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  testing::Client client((*server)->port());
  v1::SubscribeResponse ids;
  ASSERT_TRUE(client.Subscribe(testing::KeySubscription(3), &ids).ok());
  std::vector<v1::PublishRequest> requests;
  for (int r = 0; r < 200; ++r) {
    v1::PublishRequest request;
    for (int i = 0; i < 10; ++i) {
      *request.add_events() = testing::KeyEvent(i % 2 == 0 ? 3 : 4).events(0);
    }
    requests.push_back(request);
  }
  std::vector<v1::PublishResponse> responses;
  ASSERT_TRUE(client.PublishStream(requests, &responses).ok());
  ASSERT_EQ(responses.size(), requests.size());
  for (const v1::PublishResponse& response : responses) {
    ASSERT_EQ(response.results_size(), 10);
    for (int i = 0; i < 10; ++i) {
      EXPECT_EQ(response.results(i).match_count(), i % 2 == 0 ? 1u : 0u);
    }
  }
  const v1::Stats stats = client.Stats();
  for (const v1::StageStats& stage : stats.stages()) {
    EXPECT_LE(stage.queue_length_max(), 16u) << stage.name();
  }
}

// Property: with max_concurrent_streams = 2, one client connection has at
// most two calls open in the server: a third Listen on it waits in the
// client (the server sees two listeners, however long it waits) and gets in
// once one of the two ends; another connection is not held back.
TEST(ServerLimits, ConcurrentStreamsPerConnectionAreCapped) {
  ServerOptions options = testing::LocalServerOptions();
  options.max_concurrent_streams = 2;
  auto server = CohortServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  testing::Client other((*server)->port());  // a connection of its own
  for (int i = 0; i < 3; ++i) {
    v1::SubscribeResponse ids;
    ASSERT_TRUE(
        other
            .Subscribe(OneSpec(absl::StrCat("l", i), "key", v1::OP_EQ, 7), &ids)
            .ok());
  }
  // Channels with the same arguments share one connection; this one must
  // have its own.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto stub = v1::PubSub::NewStub(
      grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", (*server)->port()),
                                grpc::InsecureChannelCredentials(), args));
  grpc::ClientContext contexts[3];
  v1::ListenRequest requests[3];
  for (int i = 0; i < 3; ++i) {
    testing::SetDeadline(&contexts[i]);
    requests[i].set_subscriber(absl::StrCat("l", i));
  }
  auto first = stub->Listen(&contexts[0], requests[0]);
  auto second = stub->Listen(&contexts[1], requests[1]);
  // A synchronous Listen returns once its stream is open, so the third
  // blocks in its own thread until a slot frees.
  std::atomic<bool> third_open{false};
  std::atomic<bool> received{false};
  v1::Delivery delivery;
  std::thread third([&] {
    auto reader = stub->Listen(&contexts[2], requests[2]);
    third_open = true;
    received = reader->Read(&delivery);
    contexts[2].TryCancel();
    reader->Finish();
  });
  auto listeners = [&other] { return other.Stats().listeners(); };
  for (int i = 0; i < 1000 && listeners() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(listeners(), 2u);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(listeners(), 2u);
  EXPECT_FALSE(third_open.load());

  // End the first: the third gets its slot and is served. Publish (on the
  // other connection) until it has read a delivery.
  contexts[0].TryCancel();
  EXPECT_EQ(first->Finish().error_code(), grpc::StatusCode::CANCELLED);
  for (int i = 0; i < 1500 && !received.load(); ++i) {
    v1::PublishResponse response;
    EXPECT_TRUE(other.Publish(OneEvent({{"key", 7}}), &response).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  third.join();
  EXPECT_TRUE(third_open.load());
  ASSERT_TRUE(received.load());
  EXPECT_EQ(delivery.event().attributes(0).value(), 7);
  contexts[1].TryCancel();
  second->Finish();
}

// A server whose listener queues hold 4 deliveries, a subscription of
// subscriber "slow" to key 42, and a Listen stream for "slow" that is not
// read until StartReading().
class SlowListenerTest : public ::testing::Test {
 protected:
  void Start(SlowListenerPolicy policy) {
    ServerOptions options = testing::LocalServerOptions();
    options.streams.listener_queue_limit = 4;
    options.streams.slow_listener = policy;
    auto server = CohortServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    client_ = std::make_unique<testing::Client>(server_->port());
    v1::SubscribeRequest request = testing::KeySubscription(42);
    request.mutable_subscriptions(0)->set_subscriber("slow");
    v1::SubscribeResponse ids;
    ASSERT_TRUE(client_->Subscribe(request, &ids).ok());
    listener_ = std::make_unique<testing::Listener>(server_->port(), "slow",
                                                    /*start_reading=*/false);
    ASSERT_TRUE(client_->WaitForListeners(1));
  }

  // Publishes `n` events with a 32 KiB payload that match "slow"; every
  // publish must succeed however slow the listener is.
  void Flood(int n) {
    for (int i = 0; i < n; ++i) {
      v1::PublishResponse response;
      ASSERT_TRUE(client_
                      ->Publish(testing::KeyEvent(42, std::string(32 << 10, 'x')),
                                &response)
                      .ok());
    }
  }

  // The reply stage's profile (the last stage).
  v1::StageStats ReplyStats() {
    const v1::Stats stats = client_->Stats();
    return stats.stages(stats.stages_size() - 1);
  }

  std::unique_ptr<CohortServer> server_;
  std::unique_ptr<testing::Client> client_;
  std::unique_ptr<testing::Listener> listener_;
};

// 400 deliveries of 32 KiB (12.5 MiB) are more than gRPC buffers hold.
constexpr int kFloodEvents = 400;

// Property: with --slow_listener=drop a listener that does not read loses
// deliveries (counted, visible as sequence gaps) while publishers are never
// stalled; what it does receive is in order.
TEST_F(SlowListenerTest, DropPolicyDropsAndCountsWithoutStallingPublishers) {
  Start(SlowListenerPolicy::kDrop);
  Flood(kFloodEvents);
  const uint64_t dropped = ReplyStats().dropped_deliveries();
  EXPECT_GT(dropped, 0u);
  listener_->StartReading();
  std::vector<v1::Delivery> deliveries =
      listener_->WaitFor(kFloodEvents - dropped);
  EXPECT_EQ(deliveries.size(), kFloodEvents - dropped);
  // Once the listener reads again, it gets new deliveries; the dropped ones
  // show as a gap before them.
  Flood(1);
  deliveries = listener_->WaitFor(kFloodEvents - dropped + 1);
  ASSERT_EQ(deliveries.size(), kFloodEvents - dropped + 1);
  uint64_t previous = 0;
  for (const v1::Delivery& delivery : deliveries) {
    EXPECT_GT(delivery.sequence(), previous);
    previous = delivery.sequence();
  }
  EXPECT_EQ(deliveries.back().sequence(),
            static_cast<uint64_t>(kFloodEvents + 1));
}

// Property: with --slow_listener=disconnect the same listener is ended with
// RESOURCE_EXHAUSTED naming the flag, counted, and publishers are unaffected.
TEST_F(SlowListenerTest, DisconnectPolicyEndsTheStream) {
  Start(SlowListenerPolicy::kDisconnect);
  Flood(kFloodEvents);
  listener_->StartReading();
  grpc::Status status = listener_->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(status.error_message().find("--listener_queue_limit"),
            std::string::npos);
  EXPECT_EQ(ReplyStats().disconnected_listeners(), 1u);
  EXPECT_TRUE(client_->WaitForListeners(0));
}

}  // namespace
}  // namespace service
}  // namespace cohort
