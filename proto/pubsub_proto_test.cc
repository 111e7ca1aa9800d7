// Pins the cohort.v1 API contract of docs/DESIGN.md section 2: message and
// field names, field numbers and types, enum values, and the shape of each RPC.
// Outside clients depend on these, so a change here must be deliberate. The
// last tests run the generated gRPC code against an in-process server, which
// also proves that it compiles and links against @usr//:grpc.

#include <memory>
#include <string>
#include <vector>

#include "google/protobuf/descriptor.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/cohort/v1/pubsub.grpc.pb.h"
#include "proto/cohort/v1/pubsub.pb.h"

namespace cohort::v1 {
namespace {

using ::google::protobuf::Descriptor;
using ::google::protobuf::DescriptorPool;
using ::google::protobuf::EnumDescriptor;
using ::google::protobuf::FieldDescriptor;
using ::google::protobuf::MethodDescriptor;
using ::google::protobuf::ServiceDescriptor;

const Descriptor* FindMessage(const std::string& name) {
  return DescriptorPool::generated_pool()->FindMessageTypeByName("cohort.v1." +
                                                                 name);
}

TEST(PubSubProto, FileAndPackage) {
  const auto* file = Predicate::descriptor()->file();
  EXPECT_EQ(file->name(), "cohort/v1/pubsub.proto");
  EXPECT_EQ(file->package(), "cohort.v1");
  EXPECT_EQ(file->syntax(), google::protobuf::FileDescriptor::SYNTAX_PROTO3);
}

// One pinned field: `message.name = number`, of `type` (and `type_name` for
// message and enum fields), repeated or not.
struct PinnedField {
  const char* message;
  const char* name;
  int number;
  FieldDescriptor::Type type;
  bool repeated;
  const char* type_name;  // full name for TYPE_MESSAGE / TYPE_ENUM, else "".
};

constexpr FieldDescriptor::Type kString = FieldDescriptor::TYPE_STRING;
constexpr FieldDescriptor::Type kBytes = FieldDescriptor::TYPE_BYTES;
constexpr FieldDescriptor::Type kInt64 = FieldDescriptor::TYPE_INT64;
constexpr FieldDescriptor::Type kDouble = FieldDescriptor::TYPE_DOUBLE;
constexpr FieldDescriptor::Type kUint64 = FieldDescriptor::TYPE_UINT64;
constexpr FieldDescriptor::Type kBool = FieldDescriptor::TYPE_BOOL;
constexpr FieldDescriptor::Type kEnum = FieldDescriptor::TYPE_ENUM;
constexpr FieldDescriptor::Type kMessage = FieldDescriptor::TYPE_MESSAGE;

// docs/DESIGN.md section 2, "Messages and field names", row by row.
const PinnedField kPinnedFields[] = {
    {"Predicate", "attribute", 1, kString, false, ""},
    {"Predicate", "op", 2, kEnum, false, "cohort.v1.Op"},
    {"Predicate", "value", 3, kInt64, false, ""},
    {"Predicate", "upper", 4, kInt64, false, ""},
    {"Predicate", "string_value", 5, kBytes, false, ""},
    {"Predicate", "int64_values", 6, kMessage, false, "cohort.v1.Int64List"},
    {"Predicate", "string_values", 7, kMessage, false,
     "cohort.v1.StringList"},
    {"Predicate", "string_upper", 8, kBytes, false, ""},
    {"Predicate", "double_value", 9, kDouble, false, ""},
    {"Predicate", "double_values", 10, kMessage, false,
     "cohort.v1.DoubleList"},
    {"Predicate", "double_upper", 11, kDouble, false, ""},
    {"Predicate", "literal_value", 12, kEnum, false, "cohort.v1.Literal"},
    {"Int64List", "values", 1, kInt64, true, ""},
    {"StringList", "values", 1, kBytes, true, ""},
    {"DoubleList", "values", 1, kDouble, true, ""},
    {"SubscriptionSpec", "subscriber", 1, kString, false, ""},
    {"SubscriptionSpec", "predicates", 2, kMessage, true,
     "cohort.v1.Predicate"},
    {"SubscriptionSpec", "any_of", 3, kMessage, true, "cohort.v1.AnyOf"},
    {"AnyOf", "alternatives", 1, kMessage, true, "cohort.v1.Conjunction"},
    {"Conjunction", "predicates", 1, kMessage, true, "cohort.v1.Predicate"},
    {"SubscribeRequest", "subscriptions", 1, kMessage, true,
     "cohort.v1.SubscriptionSpec"},
    {"SubscribeRequest", "request_id", 2, kString, false, ""},
    {"SubscribeResponse", "subscription_ids", 1, kUint64, true, ""},
    {"SubscribeResponse", "log_position", 2, kUint64, false, ""},
    {"UnsubscribeRequest", "subscription_ids", 1, kUint64, true, ""},
    {"UnsubscribeRequest", "request_id", 2, kString, false, ""},
    {"UnsubscribeResponse", "log_position", 1, kUint64, false, ""},
    {"Attribute", "name", 1, kString, false, ""},
    {"Attribute", "value", 2, kInt64, false, ""},
    {"Attribute", "string_value", 3, kBytes, false, ""},
    {"Attribute", "double_value", 4, kDouble, false, ""},
    {"Attribute", "literal_value", 5, kEnum, false, "cohort.v1.Literal"},
    {"Event", "attributes", 1, kMessage, true, "cohort.v1.Attribute"},
    {"Event", "payload", 2, kBytes, false, ""},
    {"Event", "json", 3, kBytes, false, ""},
    {"PublishRequest", "events", 1, kMessage, true, "cohort.v1.Event"},
    {"PublishRequest", "return_ids", 2, kBool, false, ""},
    {"PublishRequest", "min_log_position", 3, kUint64, false, ""},
    {"PublishResponse", "results", 1, kMessage, true, "cohort.v1.EventResult"},
    {"EventResult", "match_count", 1, kUint64, false, ""},
    {"EventResult", "subscription_ids", 2, kUint64, true, ""},
    {"ListenRequest", "subscriber", 1, kString, false, ""},
    {"Delivery", "subscription_ids", 1, kUint64, true, ""},
    {"Delivery", "event", 2, kMessage, false, "cohort.v1.Event"},
    {"Delivery", "sequence", 3, kUint64, false, ""},
    {"Stats", "subscriptions", 1, kUint64, false, ""},
    {"Stats", "events_published", 2, kUint64, false, ""},
    {"Stats", "index_layout", 10, kString, false, ""},
    {"Stats", "attributes", 14, kMessage, true, "cohort.v1.AttributeStats"},
    {"Stats", "cluster", 15, kMessage, false, "cohort.v1.ClusterStats"},
    {"AttributeStats", "name", 1, kString, false, ""},
    {"AttributeStats", "distinct_strings", 2, kUint64, false, ""},
    {"AttributeStats", "distinct_prefixes", 3, kUint64, false, ""},
    {"AttributeStats", "range_bounds", 5, kUint64, false, ""},
    {"AttributeStats", "distinct_suffixes", 6, kUint64, false, ""},
    {"AttributeStats", "distinct_folded", 8, kUint64, false, ""},
    {"StageStats", "deliveries", 20, kUint64, false, ""},
    {"ParseFilterRequest", "filter", 1, kString, false, ""},
    {"ParseFilterResponse", "predicates", 1, kMessage, true,
     "cohort.v1.Predicate"},
    {"ParseFilterResponse", "any_of", 2, kMessage, true, "cohort.v1.AnyOf"},
};

TEST(PubSubProto, PinnedFieldsKeepNameNumberAndType) {
  for (const PinnedField& pin : kPinnedFields) {
    SCOPED_TRACE(std::string(pin.message) + "." + pin.name);
    const Descriptor* message = FindMessage(pin.message);
    ASSERT_NE(message, nullptr);
    const FieldDescriptor* by_name = message->FindFieldByName(pin.name);
    ASSERT_NE(by_name, nullptr);
    EXPECT_EQ(by_name->number(), pin.number);
    const FieldDescriptor* by_number = message->FindFieldByNumber(pin.number);
    ASSERT_NE(by_number, nullptr);
    EXPECT_EQ(by_number->name(), pin.name);
    EXPECT_EQ(by_name->type(), pin.type);
    EXPECT_EQ(by_name->is_repeated(), pin.repeated);
    if (pin.type == kMessage) {
      EXPECT_EQ(by_name->message_type()->full_name(), pin.type_name);
    } else if (pin.type == kEnum) {
      EXPECT_EQ(by_name->enum_type()->full_name(), pin.type_name);
    }
  }
}

TEST(PubSubProto, PredicateUpperIsFieldFour) {
  const FieldDescriptor* upper = Predicate::descriptor()->FindFieldByName("upper");
  ASSERT_NE(upper, nullptr);
  EXPECT_EQ(upper->number(), 4);
  EXPECT_EQ(Predicate::kUpperFieldNumber, 4);
}

TEST(PubSubProto, EmptyMessagesHaveNoFields) {
  // UnsubscribeResponse was empty until cluster mode added log_position
  // (field 1, pinned above); an old client skips it.
  for (const char* name : {"GetStatsRequest"}) {
    SCOPED_TRACE(name);
    const Descriptor* message = FindMessage(name);
    ASSERT_NE(message, nullptr);
    EXPECT_EQ(message->field_count(), 0);
  }
}

// Wrapping value and upper (and Attribute.value) in oneofs kept their
// numbers and types, so old clients' bytes parse as before; an old client's
// value 0 is sent as nothing, which the server reads as the int64 0.
TEST(PubSubProto, OperandsAreOneofsAroundTheOldFields) {
  const Descriptor* predicate = Predicate::descriptor();
  for (const char* name : {"value", "string_value", "int64_values",
                           "string_values", "double_value", "double_values"}) {
    SCOPED_TRACE(name);
    ASSERT_NE(predicate->FindFieldByName(name)->containing_oneof(), nullptr);
    EXPECT_EQ(predicate->FindFieldByName(name)->containing_oneof()->name(),
              "operand");
  }
  for (const char* name : {"upper", "string_upper", "double_upper"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(predicate->FindFieldByName(name)->containing_oneof()->name(),
              "upper_operand");
  }
  const Descriptor* attribute = Attribute::descriptor();
  EXPECT_EQ(attribute->FindFieldByName("value")->containing_oneof()->name(),
            "kind");
  EXPECT_EQ(
      attribute->FindFieldByName("string_value")->containing_oneof()->name(),
      "kind");
  EXPECT_EQ(
      attribute->FindFieldByName("double_value")->containing_oneof()->name(),
      "kind");
  // The bytes of an old client's predicate and attribute.
  Predicate old;
  old.set_attribute("price");
  old.set_op(OP_BETWEEN);
  old.set_value(10);
  old.set_upper(20);
  Predicate parsed;
  ASSERT_TRUE(parsed.ParseFromString(old.SerializeAsString()));
  EXPECT_EQ(parsed.operand_case(), Predicate::kValue);
  EXPECT_EQ(parsed.value(), 10);
  EXPECT_EQ(parsed.upper(), 20);
}

TEST(PubSubProto, LiteralEnumValues) {
  const EnumDescriptor* literal = Literal_descriptor();
  ASSERT_EQ(literal->value_count(), 4);
  EXPECT_EQ(LITERAL_UNSPECIFIED, 0);
  EXPECT_EQ(LITERAL_TRUE, 1);
  EXPECT_EQ(LITERAL_FALSE, 2);
  EXPECT_EQ(LITERAL_NULL, 3);
}

TEST(PubSubProto, OpEnumValuesAreZeroToTwentyTwo) {
  const EnumDescriptor* op = Op_descriptor();
  const std::vector<std::string> names = {
      "OP_UNSPECIFIED", "OP_EQ",     "OP_NE",     "OP_LT",
      "OP_LE",          "OP_GT",     "OP_GE",     "OP_BETWEEN",
      "OP_IN",          "OP_NOT_IN", "OP_PREFIX", "OP_EXISTS",
      "OP_NOT_EXISTS",  "OP_SUFFIX", "OP_EQUALS_IGNORE_CASE",
      "OP_NOT_PREFIX",  "OP_NOT_SUFFIX", "OP_CIDR", "OP_WILDCARD",
      "OP_NOT_EQUALS_IGNORE_CASE", "OP_NOT_WILDCARD",
      "OP_PREFIX_IGNORE_CASE", "OP_SUFFIX_IGNORE_CASE"};
  ASSERT_EQ(op->value_count(), static_cast<int>(names.size()));
  for (int number = 0; number < static_cast<int>(names.size()); ++number) {
    SCOPED_TRACE(names[number]);
    const auto* value = op->FindValueByName(names[number]);
    ASSERT_NE(value, nullptr);
    EXPECT_EQ(value->number(), number);
  }
  EXPECT_EQ(OP_BETWEEN, 7);
  EXPECT_EQ(OP_NOT_EXISTS, 12);
  EXPECT_EQ(OP_SUFFIX, 13);
  EXPECT_EQ(OP_EQUALS_IGNORE_CASE, 14);
  EXPECT_EQ(OP_NOT_PREFIX, 15);
  EXPECT_EQ(OP_NOT_SUFFIX, 16);
  EXPECT_EQ(OP_CIDR, 17);
  EXPECT_EQ(OP_WILDCARD, 18);
  EXPECT_EQ(OP_NOT_EQUALS_IGNORE_CASE, 19);
  EXPECT_EQ(OP_NOT_WILDCARD, 20);
  EXPECT_EQ(OP_SUFFIX_IGNORE_CASE, 22);
}

// One pinned RPC: its name, request and response types, and streaming shape.
struct PinnedMethod {
  const char* name;
  const char* input;
  const char* output;
  bool client_streaming;
  bool server_streaming;
};

TEST(PubSubProto, ServiceHasTheSevenMethodsWithTheirShapes) {
  const PinnedMethod kMethods[] = {
      {"Subscribe", "SubscribeRequest", "SubscribeResponse", false, false},
      {"Unsubscribe", "UnsubscribeRequest", "UnsubscribeResponse", false,
       false},
      {"Publish", "PublishRequest", "PublishResponse", false, false},
      {"PublishStream", "PublishRequest", "PublishResponse", true, true},
      {"Listen", "ListenRequest", "Delivery", false, true},
      {"GetStats", "GetStatsRequest", "Stats", false, false},
      {"ParseFilter", "ParseFilterRequest", "ParseFilterResponse", false,
       false},
  };
  const ServiceDescriptor* service =
      DescriptorPool::generated_pool()->FindServiceByName("cohort.v1.PubSub");
  ASSERT_NE(service, nullptr);
  EXPECT_EQ(service->method_count(), 7);
  for (const PinnedMethod& pin : kMethods) {
    SCOPED_TRACE(pin.name);
    const MethodDescriptor* method = service->FindMethodByName(pin.name);
    ASSERT_NE(method, nullptr);
    EXPECT_EQ(method->input_type()->full_name(),
              std::string("cohort.v1.") + pin.input);
    EXPECT_EQ(method->output_type()->full_name(),
              std::string("cohort.v1.") + pin.output);
    EXPECT_EQ(method->client_streaming(), pin.client_streaming);
    EXPECT_EQ(method->server_streaming(), pin.server_streaming);
  }
}

// A stand-in server: Subscribe hands out ids 100, 101, ...; PublishStream
// answers each request with match_count = number of attributes per event.
// Every other RPC stays UNIMPLEMENTED.
class FakePubSub final : public PubSub::Service {
 public:
  grpc::Status Subscribe(grpc::ServerContext* /*context*/,
                         const SubscribeRequest* request,
                         SubscribeResponse* response) override {
    for (int i = 0; i < request->subscriptions_size(); ++i) {
      response->add_subscription_ids(100 + i);
    }
    return grpc::Status::OK;
  }

  grpc::Status PublishStream(
      grpc::ServerContext* /*context*/,
      grpc::ServerReaderWriter<PublishResponse, PublishRequest>* stream)
      override {
    PublishRequest request;
    while (stream->Read(&request)) {
      PublishResponse response;
      for (const Event& event : request.events()) {
        response.add_results()->set_match_count(event.attributes_size());
      }
      stream->Write(response);
    }
    return grpc::Status::OK;
  }
};

class PubSubInProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = PubSub::NewStub(server_->InProcessChannel(grpc::ChannelArguments()));
  }

  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
  }

  FakePubSub service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<PubSub::Stub> stub_;
};

TEST_F(PubSubInProcessTest, UnaryCallRoundTrips) {
  SubscribeRequest request;
  for (int i = 0; i < 3; ++i) {
    SubscriptionSpec* spec = request.add_subscriptions();
    spec->set_subscriber("alice");
    Predicate* predicate = spec->add_predicates();
    predicate->set_attribute("price");
    predicate->set_op(OP_BETWEEN);
    predicate->set_value(i);
    predicate->set_upper(i + 10);
  }
  SubscribeResponse response;
  grpc::ClientContext context;
  grpc::Status status = stub_->Subscribe(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(std::vector<uint64_t>(response.subscription_ids().begin(),
                                  response.subscription_ids().end()),
            (std::vector<uint64_t>{100, 101, 102}));
}

// The in-process transport does not buffer: a write completes only once the
// peer reads it. So the client reads each answer before the next write.
TEST_F(PubSubInProcessTest, BidiStreamAnswersEachRequest) {
  grpc::ClientContext context;
  auto stream = stub_->PublishStream(&context);
  PublishResponse response;
  for (int attributes = 1; attributes <= 3; ++attributes) {
    PublishRequest request;
    Event* event = request.add_events();
    for (int i = 0; i < attributes; ++i) {
      Attribute* attribute = event->add_attributes();
      attribute->set_name("a" + std::to_string(i));
      attribute->set_value(i);
    }
    ASSERT_TRUE(stream->Write(request));
    ASSERT_TRUE(stream->Read(&response));
    ASSERT_EQ(response.results_size(), 1);
    EXPECT_EQ(response.results(0).match_count(), attributes);
  }
  ASSERT_TRUE(stream->WritesDone());
  EXPECT_FALSE(stream->Read(&response));
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(PubSubInProcessTest, MethodNotOverriddenIsUnimplemented) {
  GetStatsRequest request;
  Stats stats;
  grpc::ClientContext context;
  EXPECT_EQ(stub_->GetStats(&context, request, &stats).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
}

}  // namespace
}  // namespace cohort::v1
