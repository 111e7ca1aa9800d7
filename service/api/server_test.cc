// End-to-end tests through a real cohortd server on 127.0.0.1 (TCP, port 0):
// results and Listen deliveries against the API-level oracle in every mode,
// the ordering guarantee with several clients, PublishStream ordering,
// health, metrics, and shutdown. Bad input and overload are in
// server_limits_test.cc.
#include "service/api/server.h"

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/api/server_test_util.h"
#include "service/stages/test_util.h"

namespace cohort {
namespace service {
namespace {

using testing::Rng;

using testing::Config;
using testing::ConfigName;

ServerOptions OptionsFor(const Config& config) {
  ServerOptions options = testing::LocalServerOptions();
  options.mode = config.mode;
  options.engine.partitions = config.partitions;
  options.engine.cohort_max = config.cohort_max;
  testing::ApplyLayout(config, &options.engine);
  options.engine.threads = 3;
  return options;
}

class ServerDifferentialTest : public ::testing::TestWithParam<Config> {};

// Property: over the network, through unary Publish and PublishStream from
// concurrent clients, every EventResult equals the oracle (ids ascending,
// return_ids honoured), and a Listen stream receives exactly the events that
// match its subscriber's subscriptions, once each, with sequence 1, 2, ...
TEST_P(ServerDifferentialTest, ResultsAndDeliveriesEqualTheOracle) {
  auto server = CohortServer::Start(OptionsFor(GetParam()));
  ASSERT_TRUE(server.ok()) << server.status();
  testing::Client client((*server)->port());
  Rng rng(7 + GetParam().partitions * 10 + GetParam().cohort_max);
  constexpr int kAttributes = 5;
  constexpr int kDomain = 3;

  std::map<uint64_t, v1::SubscriptionSpec> live;
  for (int batch = 0; batch < 4; ++batch) {
    v1::SubscribeRequest request;
    for (int i = 0; i < 100; ++i) {
      *request.add_subscriptions() = testing::RandomSpec(
          rng, absl::StrCat("s", rng() % 4), kAttributes, kDomain);
    }
    v1::SubscribeResponse response;
    ASSERT_TRUE(client.Subscribe(request, &response).ok());
    ASSERT_EQ(response.subscription_ids_size(), 100);
    for (int i = 0; i < 100; ++i) {
      live[response.subscription_ids(i)] = request.subscriptions(i);
    }
  }
  v1::UnsubscribeRequest unsubscribe;
  for (const auto& [id, spec] : live) {
    if (rng() % 5 == 0) unsubscribe.add_subscription_ids(id);
  }
  ASSERT_TRUE(client.Unsubscribe(unsubscribe).ok());
  for (uint64_t id : unsubscribe.subscription_ids()) live.erase(id);

  testing::Listener listener((*server)->port(), "s2");
  ASSERT_TRUE(client.WaitForListeners(1));

  std::vector<v1::PublishRequest> requests(24);
  int event_number = 0;
  for (size_t r = 0; r < requests.size(); ++r) {
    requests[r].set_return_ids(r % 3 != 0);
    const int n = 1 + static_cast<int>(rng() % 30);
    for (int i = 0; i < n; ++i) {
      *requests[r].add_events() = testing::RandomEvent(
          rng, kAttributes, kDomain, absl::StrCat("e", event_number++));
    }
  }
  std::vector<v1::PublishResponse> responses(requests.size());
  std::thread unary([&] {
    for (size_t r = 0; r < requests.size(); r += 2) {
      EXPECT_TRUE(client.Publish(requests[r], &responses[r]).ok());
    }
  });
  std::vector<v1::PublishRequest> streamed;
  for (size_t r = 1; r < requests.size(); r += 2) streamed.push_back(requests[r]);
  std::vector<v1::PublishResponse> stream_responses;
  EXPECT_TRUE(client.PublishStream(streamed, &stream_responses).ok());
  unary.join();
  ASSERT_EQ(stream_responses.size(), streamed.size());
  for (size_t k = 0; k < streamed.size(); ++k) {
    responses[2 * k + 1] = stream_responses[k];
  }

  std::map<std::string, std::vector<uint64_t>> expected_deliveries;
  for (size_t r = 0; r < requests.size(); ++r) {
    ASSERT_EQ(responses[r].results_size(), requests[r].events_size());
    for (int i = 0; i < requests[r].events_size(); ++i) {
      const v1::Event& event = requests[r].events(i);
      std::vector<uint64_t> expected, for_listener;
      for (const auto& [id, spec] : live) {
        if (!testing::Matches(spec, event)) continue;
        expected.push_back(id);
        if (spec.subscriber() == "s2") for_listener.push_back(id);
      }
      const v1::EventResult& result = responses[r].results(i);
      EXPECT_EQ(result.match_count(), expected.size());
      if (requests[r].return_ids()) {
        EXPECT_EQ(testing::Ids(result), expected) << event.DebugString();
      } else {
        EXPECT_EQ(result.subscription_ids_size(), 0);
      }
      if (!for_listener.empty()) {
        expected_deliveries[event.payload()] = for_listener;
      }
    }
  }
  std::vector<v1::Delivery> deliveries =
      listener.WaitFor(expected_deliveries.size());
  std::map<std::string, std::vector<uint64_t>> received;
  for (size_t k = 0; k < deliveries.size(); ++k) {
    EXPECT_EQ(deliveries[k].sequence(), k + 1);
    const std::string& payload = deliveries[k].event().payload();
    EXPECT_EQ(received.count(payload), 0u) << "delivered twice: " << payload;
    received[payload] = std::vector<uint64_t>(
        deliveries[k].subscription_ids().begin(),
        deliveries[k].subscription_ids().end());
  }
  EXPECT_EQ(received, expected_deliveries);
  // Nothing more arrives.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(listener.received(), deliveries.size());
}

INSTANTIATE_TEST_SUITE_P(
    Modes, ServerDifferentialTest,
    ::testing::Values(Config{"staged", 1, 1}, Config{"staged", 1, 64},
                      Config{"staged", 2, 1}, Config{"staged", 2, 64},
                      Config{"staged", 3, 1}, Config{"staged", 3, 64},
                      Config{"staged", 3, 64, "partitioned", 8},
                      Config{"staged", 3, 64, "sharded_phase1"},
                      Config{"staged", 3, 64, "replicated"},
                      Config{"staged", 4, 64, "partitioned", 0, 0, 2},
                      Config{"threaded", 0, 0}),
    ConfigName);

// Property: with several clients subscribing, publishing and unsubscribing
// at once, an event published after Subscribe returned matches, and one
// published after Unsubscribe returned does not.
TEST(ServerOrdering, ChangesAreVisibleToLaterPublishesFromOtherClients) {
  auto server = CohortServer::Start(OptionsFor(Config{"staged", 2, 64}));
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([port, t] {
      testing::Client subscriber(port);
      testing::Client publisher(port);  // a separate channel
      for (int round = 0; round < 20; ++round) {
        const int64_t key = t * 1000 + round;
        v1::SubscribeResponse ids;
        ASSERT_TRUE(
            subscriber.Subscribe(testing::KeySubscription(key), &ids).ok());
        v1::PublishResponse response;
        ASSERT_TRUE(
            publisher.Publish(testing::KeyEvent(key), &response).ok());
        ASSERT_EQ(response.results(0).subscription_ids_size(), 1);
        EXPECT_EQ(response.results(0).subscription_ids(0),
                  ids.subscription_ids(0));
        v1::UnsubscribeRequest unsubscribe;
        unsubscribe.add_subscription_ids(ids.subscription_ids(0));
        ASSERT_TRUE(subscriber.Unsubscribe(unsubscribe).ok());
        response.Clear();
        ASSERT_TRUE(
            publisher.Publish(testing::KeyEvent(key), &response).ok());
        EXPECT_EQ(response.results(0).match_count(), 0u);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
}

class ServerJsonTest : public ::testing::TestWithParam<Config> {};

// Property: a JSON event whose arrays give several combinations counts
// and lists each matched subscription once (return_ids or not), its
// listener gets it once with the document as sent, and a request with an
// event over --max_json_combinations fails whole with RESOURCE_EXHAUSTED
// naming it, matching and delivering nothing.
TEST_P(ServerJsonTest, ArraysMatchOnceAndLimitsRefuseTheWholeRequest) {
  ServerOptions options = OptionsFor(GetParam());
  options.limits.max_json_combinations = 6;
  auto server = CohortServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  testing::Client client(port);
  testing::Listener listener(port, "s");
  v1::SubscribeRequest subscribe;
  // tags = "b" (one element); o.p = 1 and o.q = 2 (one element of o);
  // o.p = 1 and o.q = 9 (never in one element); tags != "a".
  auto spec = [&](std::vector<std::tuple<std::string, v1::Op, std::string,
                                          int64_t>> ps) {
    v1::SubscriptionSpec* s = subscribe.add_subscriptions();
    s->set_subscriber("s");
    for (const auto& [name, op, str, num] : ps) {
      v1::Predicate* p = s->add_predicates();
      p->set_attribute(name);
      p->set_op(op);
      if (str.empty()) {
        p->set_value(num);
      } else {
        p->set_string_value(str);
      }
    }
  };
  spec({{"tags", v1::OP_EQ, "b", 0}});
  spec({{"o.p", v1::OP_EQ, "", 1}, {"o.q", v1::OP_EQ, "", 2}});
  spec({{"o.p", v1::OP_EQ, "", 1}, {"o.q", v1::OP_EQ, "", 9}});
  spec({{"tags", v1::OP_NE, "a", 0}});
  v1::SubscribeResponse ids;
  ASSERT_TRUE(client.Subscribe(subscribe, &ids).ok());
  ASSERT_EQ(ids.subscription_ids_size(), 4);
  const std::string json =
      R"({"tags": ["a", "b", "c"], "o": [{"p": 1, "q": 2}, {"p": 3, "q": 9}]})";
  for (const bool return_ids : {true, false}) {
    v1::PublishRequest publish;
    publish.set_return_ids(return_ids);
    v1::Event* event = publish.add_events();
    event->set_json(json);
    event->set_payload("p");
    // A second event without json in the same request keeps its place.
    v1::Event* plain = publish.add_events();
    v1::Attribute* a = plain->add_attributes();
    a->set_name("tags");
    a->set_string_value("b");
    v1::PublishResponse response;
    grpc::Status status = client.Publish(publish, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(response.results_size(), 2);
    EXPECT_EQ(response.results(0).match_count(), 3u);
    EXPECT_EQ(response.results(1).match_count(), 2u);
    if (return_ids) {
      EXPECT_THAT(testing::Ids(response.results(0)),
                  ::testing::ElementsAre(ids.subscription_ids(0),
                                         ids.subscription_ids(1),
                                         ids.subscription_ids(3)));
    } else {
      EXPECT_EQ(response.results(0).subscription_ids_size(), 0);
    }
  }
  // Once per event: 2 x (the JSON event, the plain one), in any order
  // (the plain event may finish before the JSON event's records).
  const auto deliveries = listener.WaitFor(4);
  ASSERT_EQ(deliveries.size(), 4u);
  int json_deliveries = 0;
  for (const v1::Delivery& d : deliveries) {
    if (d.event().json().empty()) {
      EXPECT_EQ(d.subscription_ids_size(), 2);  // tags = "b", tags != "a"
      continue;
    }
    ++json_deliveries;
    EXPECT_EQ(d.event().json(), json);
    EXPECT_EQ(d.event().payload(), "p");
    EXPECT_EQ(d.subscription_ids_size(), 3);
  }
  EXPECT_EQ(json_deliveries, 2);
  // 3 tags x 3 elements of o = 9 combinations > 6 (the event above had 6).
  v1::PublishRequest over;
  over.add_events()->set_json(R"({"tags": ["b"]})");
  over.add_events()->set_json(
      R"({"tags": ["a", "b", "c"], "o": [{"p": 1}, {"p": 2}, {"p": 3}]})");
  v1::PublishResponse response;
  grpc::Status status = client.Publish(over, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(status.error_message(),
              ::testing::HasSubstr("events[1].json: its arrays give more "
                                   "than 6 combinations"));
  // Malformed: INVALID_ARGUMENT naming the place.
  v1::PublishRequest bad;
  bad.add_events()->set_json(R"({"o": {"p": 1, "p": 2}})");
  status = client.Publish(bad, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              ::testing::HasSubstr("events[0].json: at o.p: the key is in "
                                   "its object twice"));
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(listener.received(), 4u);  // the refused requests: nothing
}

INSTANTIATE_TEST_SUITE_P(
    Modes, ServerJsonTest,
    ::testing::Values(Config{"staged", 1, 64}, Config{"staged", 3, 1},
                      Config{"staged", 3, 64, "sharded_phase1"},
                      Config{"threaded", 0, 0}),
    ConfigName);

class ServerOrTest : public ::testing::TestWithParam<Config> {};

// Property: an "or" subscription is one id: an event that several of its
// branches match (and, as JSON, several records) counts and lists it once
// and delivers it once; Unsubscribe removes every branch, and branch ids
// serve again afterwards; an expansion over --max_or_expansion is
// RESOURCE_EXHAUSTED with nothing added.
TEST_P(ServerOrTest, OneIdMatchedOnceAndRemovedWhole) {
  ServerOptions options = OptionsFor(GetParam());
  options.limits.max_or_expansion = 6;
  auto server = CohortServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  testing::Client client(port);
  testing::Listener listener(port, "s");
  auto predicate = [](const std::string& name, int64_t value) {
    v1::Predicate p;
    p.set_attribute(name);
    p.set_op(v1::OP_EQ);
    p.set_value(value);
    return p;
  };
  // k = 1 and (a = 1 or b = 1 or (a = 2 and b = 2)); and a plain b = 1.
  auto or_spec = [&] {
    v1::SubscriptionSpec s;
    s.set_subscriber("s");
    *s.add_predicates() = predicate("k", 1);
    v1::AnyOf* group = s.add_any_of();
    *group->add_alternatives()->add_predicates() = predicate("a", 1);
    *group->add_alternatives()->add_predicates() = predicate("b", 1);
    v1::Conjunction* both = group->add_alternatives();
    *both->add_predicates() = predicate("a", 2);
    *both->add_predicates() = predicate("b", 2);
    return s;
  };
  v1::SubscribeRequest subscribe;
  *subscribe.add_subscriptions() = or_spec();
  v1::SubscriptionSpec* plain = subscribe.add_subscriptions();
  plain->set_subscriber("s");
  *plain->add_predicates() = predicate("b", 1);
  v1::SubscribeResponse ids;
  ASSERT_TRUE(client.Subscribe(subscribe, &ids).ok());
  ASSERT_EQ(ids.subscription_ids_size(), 2);
  const uint64_t either = ids.subscription_ids(0);
  const uint64_t b1 = ids.subscription_ids(1);

  // (attributes, expected ids); "j" marks a JSON event.
  struct Case {
    std::string json;
    std::vector<std::pair<std::string, int64_t>> attributes;
    std::vector<uint64_t> expected;
  };
  const std::vector<Case> cases = {
      {"", {{"k", 1}, {"a", 1}, {"b", 1}}, {either, b1}},  // two branches
      {"", {{"k", 1}, {"a", 2}, {"b", 2}}, {either}},
      {"", {{"k", 1}, {"a", 2}, {"b", 3}}, {}},
      {"", {{"k", 2}, {"a", 1}, {"b", 1}}, {b1}},
      // Arrays: records for (a 1, b 1), (a 2, b 1), (a 1, b 2), (a 2, b 2):
      // every branch matches in some record.
      {R"({"k": 1, "a": [1, 2], "b": [1, 2]})", {}, {either, b1}},
  };
  int delivered = 0;
  for (const bool return_ids : {true, false}) {
    v1::PublishRequest publish;
    publish.set_return_ids(return_ids);
    for (size_t c = 0; c < cases.size(); ++c) {
      v1::Event* event = publish.add_events();
      event->set_payload(absl::StrCat(c));
      if (!cases[c].json.empty()) event->set_json(cases[c].json);
      for (const auto& [name, value] : cases[c].attributes) {
        v1::Attribute* a = event->add_attributes();
        a->set_name(name);
        a->set_value(value);
      }
      if (!cases[c].expected.empty()) ++delivered;
    }
    v1::PublishResponse response;
    grpc::Status status = client.Publish(publish, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(response.results_size(), static_cast<int>(cases.size()));
    for (size_t c = 0; c < cases.size(); ++c) {
      SCOPED_TRACE(c);
      EXPECT_EQ(response.results(c).match_count(), cases[c].expected.size());
      if (return_ids) {
        EXPECT_EQ(testing::Ids(response.results(c)), cases[c].expected);
      }
    }
  }
  const auto deliveries = listener.WaitFor(delivered);
  ASSERT_EQ(deliveries.size(), static_cast<size_t>(delivered));
  for (const v1::Delivery& d : deliveries) {
    const Case& c = cases[std::stoi(d.event().payload())];
    EXPECT_EQ(std::vector<uint64_t>(d.subscription_ids().begin(),
                                    d.subscription_ids().end()),
              c.expected)
        << d.event().payload();
  }

  // Over the expansion limit (2 x 4 = 8 > 6): nothing of the request is
  // added.
  v1::SubscribeRequest over;
  *over.add_subscriptions() = or_spec();
  v1::SubscriptionSpec* big = over.add_subscriptions();
  *big = or_spec();
  v1::AnyOf* second = big->add_any_of();
  for (int i = 0; i < 2; ++i) {
    *second->add_alternatives()->add_predicates() = predicate("c", i);
  }
  *big->mutable_any_of(0)->add_alternatives()->add_predicates() =
      predicate("c", 9);
  v1::SubscribeResponse refused;
  grpc::Status status = client.Subscribe(over, &refused);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(status.error_message(),
              ::testing::HasSubstr("subscriptions[1].any_of: expands into 8 "
                                   "conjunctions"));

  // Removed whole: no branch matches any more; a new "or" subscription
  // (its branch ids reused) matches as itself.
  v1::UnsubscribeRequest unsubscribe;
  unsubscribe.add_subscription_ids(either);
  ASSERT_TRUE(client.Unsubscribe(unsubscribe).ok());
  v1::SubscribeRequest again;
  *again.add_subscriptions() = or_spec();
  v1::SubscribeResponse again_ids;
  ASSERT_TRUE(client.Subscribe(again, &again_ids).ok());
  ASSERT_EQ(again_ids.subscription_ids_size(), 1);
  const uint64_t renewed = again_ids.subscription_ids(0);
  EXPECT_GT(renewed, b1);
  v1::PublishRequest publish;
  publish.set_return_ids(true);
  v1::Event* event = publish.add_events();
  for (const auto& [name, value] : cases[0].attributes) {
    v1::Attribute* a = event->add_attributes();
    a->set_name(name);
    a->set_value(value);
  }
  v1::PublishResponse response;
  ASSERT_TRUE(client.Publish(publish, &response).ok());
  EXPECT_THAT(testing::Ids(response.results(0)),
              ::testing::ElementsAre(b1, renewed));
  EXPECT_EQ(client.Stats().subscriptions(), 2u);
}

INSTANTIATE_TEST_SUITE_P(
    Modes, ServerOrTest,
    ::testing::Values(Config{"staged", 1, 64}, Config{"staged", 3, 1},
                      Config{"staged", 3, 64, "sharded_phase1"},
                      Config{"staged", 2, 16, "replicated"},
                      Config{"threaded", 0, 0}),
    ConfigName);

// Property: the health service reports SERVING while up, and GetStats and
// the Prometheus endpoint describe the same server.
TEST(ServerIntrospection, HealthStatsAndMetrics) {
  ServerOptions options = OptionsFor(Config{"staged", 2, 64});
  options.metrics_port = 0;
  auto server = CohortServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  testing::Client client((*server)->port());
  EXPECT_EQ(client.HealthCheck(""), 1);  // SERVING
  EXPECT_EQ(client.HealthCheck("cohort.v1.PubSub"), 1);
  v1::SubscribeResponse ids;
  ASSERT_TRUE(client.Subscribe(testing::KeySubscription(5), &ids).ok());
  v1::PublishResponse response;
  ASSERT_TRUE(client.Publish(testing::KeyEvent(5), &response).ok());
  v1::Stats stats = client.Stats();
  EXPECT_EQ(stats.subscriptions(), 1u);
  EXPECT_EQ(stats.events_published(), 1u);
  EXPECT_EQ(stats.mode(), "staged");
  EXPECT_EQ(stats.partitions(), 2u);
  // front, predicate, 2 partitions, reply
  ASSERT_EQ(stats.stages_size(), 5);
  EXPECT_EQ(stats.stages(1).name(), "predicate");
  EXPECT_EQ(stats.stages(1).events(), 1u);
  EXPECT_EQ(stats.stages(2).name(), "partition/0");
  EXPECT_EQ(stats.stages(2).events(), 1u);
  EXPECT_EQ(stats.stages(4).name(), "reply");
  EXPECT_EQ(stats.stages(4).matches(), 1u);
  const std::string metrics =
      testing::HttpGet((*server)->metrics_port(), "/metrics");
  EXPECT_NE(metrics.find("cohort_subscriptions 1"), std::string::npos)
      << metrics.substr(0, 2000);
  EXPECT_NE(metrics.find("cohort_events_published_total 1"), std::string::npos);
  // The histograms GetStats does not carry: one publish answered, the
  // stages' waits, and the process's figures.
  EXPECT_NE(metrics.find("\ncohort_publish_duration_seconds_count 1\n"),
            std::string::npos);
  EXPECT_NE(metrics.find("\ncohort_publish_duration_seconds_bucket{le=\"10\"}"
                         " 1\n"),
            std::string::npos);
  EXPECT_NE(metrics.find("\ncohort_stage_wait_seconds_count{stage=\"reply\","
                         "name=\"reply\"} 1\n"),
            std::string::npos);
  EXPECT_NE(metrics.find("\nprocess_resident_memory_bytes "),
            std::string::npos);
  // No journal without --data_dir.
  EXPECT_EQ(metrics.find("cohort_journal_"), std::string::npos);
}

// Property: ParseFilter turns the CLI's grammar, and Event Ruler patterns,
// into the predicates that Subscribe takes (a spec built from them matches
// as written), and reports a parse error or a broken limit as
// INVALID_ARGUMENT naming the field.
TEST(ServerParseFilter, ParsesTheCliGrammarAndChecksLimits) {
  ServerOptions options = OptionsFor(Config{"staged", 2, 64});
  options.limits.max_predicates = 3;
  options.limits.max_string_bytes = 4;
  auto server = CohortServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  testing::Client client((*server)->port());

  v1::ParseFilterResponse parsed;
  ASSERT_TRUE(client
                  .ParseFilter(R"(price <= 500 and kind in ["a", "b"] and)"
                               R"( not exists gone)",
                               &parsed)
                  .ok());
  ASSERT_EQ(parsed.predicates_size(), 3);
  EXPECT_EQ(parsed.predicates(0).attribute(), "price");
  EXPECT_EQ(parsed.predicates(0).op(), v1::OP_LE);
  EXPECT_EQ(parsed.predicates(0).value(), 500);
  EXPECT_EQ(parsed.predicates(1).op(), v1::OP_IN);
  ASSERT_EQ(parsed.predicates(1).string_values().values_size(), 2);
  EXPECT_EQ(parsed.predicates(1).string_values().values(1), "b");
  EXPECT_EQ(parsed.predicates(2).op(), v1::OP_NOT_EXISTS);
  EXPECT_EQ(parsed.predicates(2).operand_case(),
            v1::Predicate::OPERAND_NOT_SET);

  // The predicates subscribe and match as the text says.
  v1::SubscribeRequest subscribe;
  v1::SubscriptionSpec* spec = subscribe.add_subscriptions();
  spec->set_subscriber("s");
  *spec->mutable_predicates() = parsed.predicates();
  v1::SubscribeResponse ids;
  ASSERT_TRUE(client.Subscribe(subscribe, &ids).ok());
  v1::PublishRequest publish;
  for (const auto& [price, kind] :
       std::vector<std::pair<int, std::string>>{{400, "b"}, {600, "a"}}) {
    v1::Event* event = publish.add_events();
    v1::Attribute* a = event->add_attributes();
    a->set_name("price");
    a->set_value(price);
    a = event->add_attributes();
    a->set_name("kind");
    a->set_string_value(kind);
  }
  v1::PublishResponse published;
  ASSERT_TRUE(client.Publish(publish, &published).ok());
  EXPECT_EQ(published.results(0).match_count(), 1u);
  EXPECT_EQ(published.results(1).match_count(), 0u);

  auto expect_invalid = [&](const std::string& filter,
                            const std::string& message) {
    v1::ParseFilterResponse response;
    const grpc::Status status = client.ParseFilter(filter, &response);
    EXPECT_EQ(status.error_code(), grpc::INVALID_ARGUMENT) << filter;
    EXPECT_THAT(status.error_message(), ::testing::HasSubstr(message))
        << filter;
    EXPECT_EQ(response.predicates_size(), 0);
  };
  expect_invalid("price is 5", "filter: column 7: expected an operator");
  expect_invalid("price is 5", "\n  price is 5\n        ^^");
  expect_invalid("", "filter: column 1");
  expect_invalid("a = 1 and b = 2 and c = 3 and d = 4",
                 "predicates: has 4 predicates; the limit is 3 "
                 "(--max_predicates)");
  expect_invalid(R"(a = "12345")", "predicates[0]");
  expect_invalid(std::string(65537, ' '),
                 "filter: at most 65536 bytes, got 65537");
  // Event Ruler patterns and SNS policies: told apart by their '{'.
  ASSERT_TRUE(client
                  .ParseFilter(R"( {"detail": {"kind": ["a", "b"]},)"
                               R"( "price": [{"numeric": ["<=", 500]}]})",
                               &parsed)
                  .ok());
  ASSERT_EQ(parsed.predicates_size(), 2);
  EXPECT_EQ(parsed.predicates(0).attribute(), "detail.kind");
  EXPECT_EQ(parsed.predicates(0).op(), v1::OP_IN);
  EXPECT_EQ(parsed.predicates(1).attribute(), "price");
  EXPECT_EQ(parsed.predicates(1).op(), v1::OP_LE);
  EXPECT_EQ(parsed.predicates(1).value(), 500);
  ASSERT_TRUE(
      client.ParseFilter(R"({"a": [{"numeric": [">", 1.5]}]})", &parsed).ok());
  ASSERT_EQ(parsed.predicates_size(), 1);
  EXPECT_EQ(parsed.predicates(0).op(), v1::OP_GT);
  EXPECT_EQ(parsed.predicates(0).double_value(), 1.5);
  expect_invalid(R"({"a": [{"numeric": [">", 1e300]}]})",
                 "filter: pattern: at a[0].numeric[1]: 1e+300 is beyond the "
                 "int64 range");
  expect_invalid(R"({"a": [{"$or": [1]}]})", "filter: pattern: at a[0]");
  expect_invalid(R"({"a": [1])", "filter: pattern: not valid JSON: ");
  expect_invalid(R"({"a": ["12345"]})", "predicates[0]");
  expect_invalid(R"({"a": [1], "b": [2], "c": [3], "d": [4]})",
                 "predicates: has 4 predicates; the limit is 3 "
                 "(--max_predicates)");
  EXPECT_EQ(client.Stats().subscriptions(), 1u);
}

// Property: Shutdown answers every admitted request, ends Listen streams
// with UNAVAILABLE, and then refuses new calls.
TEST(ServerShutdown, FinishesAdmittedWorkAndEndsListeners) {
  ServerOptions options = OptionsFor(Config{"staged", 2, 64});
  options.engine.cohort_wait_us = 200000;  // keep publishes queued
  auto server = CohortServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  testing::Client client((*server)->port());
  v1::SubscribeResponse ids;
  ASSERT_TRUE(client.Subscribe(testing::KeySubscription(9), &ids).ok());
  testing::Listener listener((*server)->port(), "subscriber");
  ASSERT_TRUE(client.WaitForListeners(1));
  constexpr int kPublishers = 8;
  std::vector<std::thread> publishers;
  std::vector<grpc::Status> statuses(kPublishers);
  std::vector<v1::PublishResponse> responses(kPublishers);
  for (int i = 0; i < kPublishers; ++i) {
    publishers.emplace_back([&, i] {
      statuses[i] = client.Publish(testing::KeyEvent(9), &responses[i]);
    });
  }
  // Shut down once all are admitted (they wait in the partition queues).
  while (client.Stats().events_published() < kPublishers) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  (*server)->Shutdown();
  for (std::thread& t : publishers) t.join();
  for (int i = 0; i < kPublishers; ++i) {
    ASSERT_TRUE(statuses[i].ok()) << statuses[i].error_message();
    EXPECT_EQ(responses[i].results(0).match_count(), 1u);
  }
  EXPECT_EQ(listener.Finish().error_code(), grpc::UNAVAILABLE);
  v1::PublishResponse response;
  EXPECT_EQ(client.Publish(testing::KeyEvent(9), &response).error_code(),
            grpc::UNAVAILABLE);
}

// Property: shutdown does not wait out --cohort_wait_us: an event parked in
// a partition queue waiting for company is matched and answered at once.
TEST(ServerShutdown, DoesNotWaitForCohortsToFill) {
  ServerOptions options = OptionsFor(Config{"staged", 2, 0});
  options.engine.cohort_wait_us = 60'000'000;  // a minute
  auto server = CohortServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  testing::Client client((*server)->port());
  v1::SubscribeResponse ids;
  ASSERT_TRUE(client.Subscribe(testing::KeySubscription(4), &ids).ok());
  grpc::Status status;
  v1::PublishResponse response;
  std::thread publisher(
      [&] { status = client.Publish(testing::KeyEvent(4), &response); });
  while (client.Stats().events_published() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const auto start = std::chrono::steady_clock::now();
  (*server)->Shutdown();
  publisher.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.results(0).match_count(), 1u);
}

}  // namespace
}  // namespace service
}  // namespace cohort
