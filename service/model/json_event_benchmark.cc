// Microbenchmarks (Google Benchmark) of the front stage's JSON events
// (json_event.h): what flattening and encoding cost per event, against the
// same values sent as attributes.
//
//   bazel run -c opt //service/model:json_event_benchmark --
//     --benchmark_repetitions=5   (one command line)
//
// The event is an EventBridge-like document of 22 values (bench/
// eventruler_workload.py's shape: nested detail, a list of tags, two item
// objects); subscriptions name 12 of its paths, strings with prefixes, so
// that encoding has derived attributes to fill. BM_Flat sends the event
// without its arrays as attributes; BM_Json and BM_JsonFlat send the
// documents with and without arrays (2 x 2 combinations, and 1).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "proto/cohort/v1/pubsub.pb.h"
#include "service/model/interner.h"
#include "service/model/json_event.h"
#include "service/model/limits.h"
#include "service/model/typed_attributes.h"
#include "service/model/validation.h"

namespace cohort {
namespace service {
namespace {

constexpr char kJson[] =
    R"({"version": "0", "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718",)"
    R"( "source": "app.svc042", "detail-type": "Type C",)"
    R"( "region": "eu-west-1", "account": "100000123456",)"
    R"( "detail": {"state": "running", "count": 42, "price": 1999,)"
    R"( "amount": 19.99, "user": {"name": "alice", "tier": 3},)"
    R"( "path": "/api/v1/orders", "flag": true,)"
    R"( "tags": ["prod", "web"],)"
    R"( "items": [{"sku": "sku-a1", "qty": 2, "unit": 5.25},)"
    R"( {"sku": "sku-b3", "qty": 1, "unit": 12.5}]}})";

constexpr char kJsonNoArrays[] =
    R"({"version": "0", "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718",)"
    R"( "source": "app.svc042", "detail-type": "Type C",)"
    R"( "region": "eu-west-1", "account": "100000123456",)"
    R"( "detail": {"state": "running", "count": 42, "price": 1999,)"
    R"( "amount": 19.99, "user": {"name": "alice", "tier": 3},)"
    R"( "path": "/api/v1/orders", "flag": true}})";

// A front stage whose subscriptions name 12 of the event's paths.
class Front {
 public:
  Front() : names_(1 << 12), typed_(&names_, 1 << 16) {
    std::vector<matcher::Predicate> out;
    auto lower = [&](const std::string& name, v1::Op op,
                     const std::string& s) {
      v1::Predicate p;
      p.set_attribute(name);
      p.set_op(op);
      if (s.empty()) {
        p.set_value(1);
      } else {
        p.set_string_value(s);
      }
      out.clear();
      (void)typed_.Lower("bench", p, &out);
    };
    lower("source", v1::OP_EQ, "app.svc042");
    lower("detail-type", v1::OP_EQ, "Type C");
    lower("region", v1::OP_PREFIX, "eu-");
    lower("detail.state", v1::OP_EQ, "running");
    lower("detail.count", v1::OP_GE, "");
    lower("detail.amount", v1::OP_LE, "");
    lower("detail.user.name", v1::OP_EQUALS_IGNORE_CASE, "Alice");
    lower("detail.path", v1::OP_PREFIX, "/api/");
    lower("detail.tags", v1::OP_EQ, "prod");
    lower("detail.items.sku", v1::OP_EQ, "sku-a1");
    lower("detail.items.qty", v1::OP_GE, "");
    lower("detail.flag", v1::OP_EXISTS, "");
  }

  // Validates and encodes `request` as the front stage does.
  size_t Build(const v1::PublishRequest& request) {
    json_.clear();
    if (!ValidatePublishAndFlatten(request, limits_, &json_).ok()) abort();
    if (!BuildEvents(request, json_, typed_, limits_, &records_, &event_of_)
             .ok()) {
      abort();
    }
    return records_.size();
  }

 private:
  Interner names_;
  TypedAttributes typed_;
  Limits limits_;
  std::vector<JsonGroup> json_;
  std::vector<std::vector<matcher::AttributeValue>> records_;
  std::vector<uint32_t> event_of_;
};

void Run(benchmark::State& state, const v1::PublishRequest& request) {
  Front front;
  size_t records = 0;
  for (auto _ : state) {
    records = front.Build(request);
    benchmark::DoNotOptimize(records);
  }
  state.SetItemsProcessed(state.iterations() * request.events_size());
  state.counters["records_per_event"] =
      static_cast<double>(records) / request.events_size();
}

void BM_Json(benchmark::State& state) {
  v1::PublishRequest request;
  for (int i = 0; i < 64; ++i) request.add_events()->set_json(kJson);
  Run(state, request);
}
BENCHMARK(BM_Json);

void BM_JsonFlat(benchmark::State& state) {
  v1::PublishRequest request;
  for (int i = 0; i < 64; ++i) request.add_events()->set_json(kJsonNoArrays);
  Run(state, request);
}
BENCHMARK(BM_JsonFlat);

void BM_Flat(benchmark::State& state) {
  v1::PublishRequest request;
  for (int i = 0; i < 64; ++i) {
    v1::Event* e = request.add_events();
    auto str = [e](const char* name, const char* value) {
      v1::Attribute* a = e->add_attributes();
      a->set_name(name);
      a->set_string_value(value);
    };
    auto num = [e](const char* name, int64_t value) {
      v1::Attribute* a = e->add_attributes();
      a->set_name(name);
      a->set_value(value);
    };
    str("version", "0");
    str("id", "6a7e8feb-b491-4cf7-a9f1-bf3703467718");
    str("source", "app.svc042");
    str("detail-type", "Type C");
    str("region", "eu-west-1");
    str("account", "100000123456");
    str("detail.state", "running");
    num("detail.count", 42);
    num("detail.price", 1999);
    v1::Attribute* amount = e->add_attributes();
    amount->set_name("detail.amount");
    amount->set_double_value(19.99);
    str("detail.user.name", "alice");
    num("detail.user.tier", 3);
    str("detail.path", "/api/v1/orders");
    v1::Attribute* flag = e->add_attributes();
    flag->set_name("detail.flag");
    flag->set_literal_value(v1::LITERAL_TRUE);
  }
  Run(state, request);
}
BENCHMARK(BM_Flat);

}  // namespace
}  // namespace service
}  // namespace cohort
