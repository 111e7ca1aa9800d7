// ArenaMessages (Subscribe's requests in an arena per call), and
// CountPublishEvents (what unary Publish admits a request by, before parsing
// it) against the parser: on random requests, with unknown fields mixed in,
// and on every prefix of them, the count agrees with the parsed
// events_size() wherever the bytes parse, and bytes it calls malformed do
// not parse.
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/cohort/v1/pubsub.pb.h"
#include "service/api/pubsub_service.h"

namespace cohort {
namespace service {
namespace {

// A holder's request and response live in one arena of its own; a large
// request parses into it whole (its blocks grow past the first), and
// Release frees all of it (asan's run of this test checks for leaks).
TEST(ArenaMessagesTest, ParsesIntoOneArenaAndReleasesIt) {
  v1::SubscribeRequest want;
  for (int i = 0; i < 2000; ++i) {
    v1::SubscriptionSpec* spec = want.add_subscriptions();
    spec->set_subscriber(absl::StrCat("subscriber-", i % 7));
    for (int k = 0; k < 4; ++k) {
      v1::Predicate* p = spec->add_predicates();
      p->set_attribute(absl::StrCat("attribute", k));
      p->set_op(v1::OP_LE);
      p->set_value(i * 10 + k);
    }
  }
  const std::string bytes = want.SerializeAsString();
  ArenaMessages<v1::SubscribeRequest, v1::SubscribeResponse> messages;
  for (int call = 0; call < 3; ++call) {
    grpc::MessageHolder<v1::SubscribeRequest, v1::SubscribeResponse>* holder =
        messages.AllocateMessages();
    ASSERT_NE(holder->request()->GetArena(), nullptr);
    EXPECT_EQ(holder->request()->GetArena(), holder->response()->GetArena());
    ASSERT_TRUE(holder->request()->ParseFromString(bytes));
    EXPECT_EQ(holder->request()->subscriptions_size(), 2000);
    EXPECT_EQ(holder->request()->SerializeAsString(), bytes);
    holder->response()->add_subscription_ids(42);
    EXPECT_GT(holder->request()->GetArena()->SpaceUsed(), bytes.size());
    holder->Release();
  }
}

// The bytes as gRPC hands them to the handler, in `pieces` slices (a
// request arrives in several when it spans frames).
grpc::ByteBuffer Buffer(const std::string& bytes, int pieces) {
  std::vector<grpc::Slice> slices;
  size_t at = 0;
  for (int i = 0; i < pieces; ++i) {
    const size_t end =
        i + 1 == pieces ? bytes.size() : bytes.size() * (i + 1) / pieces;
    slices.emplace_back(bytes.data() + at, end - at);
    at = end;
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

v1::PublishRequest RandomRequest(std::mt19937_64& rng) {
  v1::PublishRequest request;
  const int events = static_cast<int>(rng() % 40);
  for (int e = 0; e < events; ++e) {
    v1::Event* event = request.add_events();
    const int attributes = static_cast<int>(rng() % 20);
    for (int a = 0; a < attributes; ++a) {
      v1::Attribute* attribute = event->add_attributes();
      attribute->set_name(absl::StrCat("a", rng() % 64));
      attribute->set_value(static_cast<int64_t>(rng()));
    }
    event->set_payload(std::string(rng() % 300, 'p'));
  }
  request.set_return_ids(rng() % 2 == 0);
  return request;
}

// Unknown top-level fields of every wire type (a newer client's fields),
// which the parser keeps and the count must skip.
std::string UnknownFields() {
  std::string bytes;
  bytes += "\x18\x96\x01";                // field 3, varint 150
  bytes += "\x21" + std::string(8, 'x');  // field 4, 64-bit
  bytes +=
      "\x2a\x03"
      "abc";                              // field 5, 3 bytes
  bytes += "\x35" + std::string(4, 'y');  // field 6, 32-bit
  return bytes;
}

TEST(CountPublishEvents, AgreesWithTheParserOnRandomRequestsAndPrefixes) {
  std::mt19937_64 rng(20261123);
  int malformed = 0;
  int parsed_prefixes = 0;
  for (int round = 0; round < 200; ++round) {
    const v1::PublishRequest request = RandomRequest(rng);
    std::string bytes = request.SerializeAsString();
    if (round % 3 == 0) bytes += UnknownFields();
    const int pieces = 1 + static_cast<int>(rng() % 4);
    const std::optional<uint64_t> count =
        CountPublishEvents(Buffer(bytes, pieces));
    ASSERT_TRUE(count.has_value()) << "round " << round;
    EXPECT_EQ(*count, static_cast<uint64_t>(request.events_size()))
        << "round " << round;
    // Prefixes: cut at a random place (every place for a few rounds).
    for (size_t cut = 0; cut < bytes.size();
         cut += round < 5 ? 1 : 1 + rng() % 97) {
      const std::string prefix = bytes.substr(0, cut);
      const std::optional<uint64_t> n = CountPublishEvents(Buffer(prefix, 1));
      v1::PublishRequest parsed;
      if (parsed.ParseFromString(prefix)) {
        ++parsed_prefixes;
        ASSERT_TRUE(n.has_value()) << "round " << round << " cut " << cut;
        EXPECT_EQ(*n, static_cast<uint64_t>(parsed.events_size()))
            << "round " << round << " cut " << cut;
      }
      if (!n.has_value()) ++malformed;
    }
  }
  // Both outcomes occurred.
  EXPECT_GT(malformed, 100);
  EXPECT_GT(parsed_prefixes, 100);
}

TEST(CountPublishEvents, MalformedTopLevels) {
  for (const std::string& bytes :
       {std::string("\xff\xff\xff"), std::string("\x0a\x05") + "ab",
        std::string("\x0a"), std::string("\x00\x00", 2),
        std::string("\x0a\xff\xff\xff\xff\x0f")}) {
    EXPECT_FALSE(CountPublishEvents(Buffer(bytes, 1)).has_value())
        << absl::CEscape(bytes);
  }
  EXPECT_EQ(CountPublishEvents(Buffer("", 1)), std::optional<uint64_t>(0));
  // An event whose inside is not an Event still counts: its inside is the
  // parser's business (unary Publish then answers INVALID_ARGUMENT).
  EXPECT_EQ(CountPublishEvents(Buffer("\x0a\x03\xff\xff\xff", 1)),
            std::optional<uint64_t>(1));
}

}  // namespace
}  // namespace service
}  // namespace cohort
