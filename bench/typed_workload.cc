#include "bench/typed_workload.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "service/api/interner.h"
#include "service/api/typed_attributes.h"
#include "service/api/validation.h"

namespace cohort {
namespace bench {
namespace {

using internal::Rng;
using internal::StreamRng;
using internal::ZipfTable;

// Stream tags of events-1m (apart from workload.h's 1 to 4).
constexpr uint64_t kTypedSubscriptionStream = 12;
constexpr uint64_t kTypedEventStream = 13;

// The value spaces of events-1m (bench/workloads.md).
constexpr uint32_t kTypes = 200;
constexpr uint32_t kRegions = 20;
constexpr uint32_t kTenants = 100000;
constexpr uint32_t kResources = 50;
constexpr uint32_t kSources = 30;
constexpr int64_t kUsers = 1000000;

const char* const kEntities[] = {
    "order",   "payment", "refund",  "invoice",  "cart",     "user",
    "account", "session", "login",   "shipment", "delivery", "return",
    "stock",   "price",   "coupon",  "review",   "ticket",   "message",
    "file",    "job",     "build",   "deploy",   "alert",    "metric",
    "report",  "export",  "import",  "sync",     "webhook",  "email",
    "sms",     "push",    "search",  "click",    "view",     "like",
    "comment", "follow",  "upload",  "download"};
const char* const kVerbs[] = {"created", "updated", "deleted", "failed",
                              "completed"};
const char* const kStatuses[] = {"ok", "error", "retry", "timeout",
                                 "cancelled"};

std::string TypeName(uint32_t i) {
  return absl::StrCat(kEntities[i % 40], ".", kVerbs[i / 40 % 5]);
}
std::string RegionName(uint32_t i) {
  static const char* const kAreas[] = {"eu-west", "eu-north", "us-east",
                                       "us-west", "ap-south"};
  return absl::StrCat(kAreas[i % 5], "-", 1 + i / 5);
}
std::string TenantName(uint32_t i) { return absl::StrFormat("tenant-%05d", i); }
std::string ResourceName(uint32_t i) {
  return absl::StrCat(kEntities[i % 40], i < 40 ? "" : "s");
}
std::string SourceName(uint32_t i) { return absl::StrFormat("svc-%02d", i); }

// The Zipf tables of the value spaces.
struct Tables {
  ZipfTable types{kTypes, 1.0};
  ZipfTable regions{kRegions, 0.5};
  ZipfTable tenants{kTenants, 0.5};
  ZipfTable resources{kResources, 1.0};
  ZipfTable sources{kSources, 0.8};
  ZipfTable statuses{5, 1.5};
};

v1::Predicate Pred(absl::string_view name, v1::Op op) {
  v1::Predicate p;
  p.set_attribute(std::string(name));
  p.set_op(op);
  return p;
}
v1::Predicate Str(absl::string_view name, v1::Op op, std::string value) {
  v1::Predicate p = Pred(name, op);
  p.set_string_value(std::move(value));
  return p;
}
v1::Predicate Int(absl::string_view name, v1::Op op, int64_t value) {
  v1::Predicate p = Pred(name, op);
  p.set_value(value);
  return p;
}

// "/api/v<1..3>/<resource>/" and a path below it.
std::string PathPrefix(uint32_t version, uint32_t resource) {
  return absl::StrCat("/api/v", version, "/", ResourceName(resource), "/");
}

v1::SubscriptionSpec Subscription(const Tables& t, Rng& rng, int64_t n) {
  v1::SubscriptionSpec spec;
  spec.set_subscriber(absl::StrCat("app-", n % 1000));
  auto add = [&spec](v1::Predicate p) {
    *spec.add_predicates() = std::move(p);
  };
  auto tenant = [&] { return TenantName(t.tenants.Sample(rng)); };
  const uint64_t pick = rng.Below(100);
  if (pick < 35) {  // T1: a tenant's events of a few types, maybe priced
    add(Str("tenant", v1::OP_EQ, tenant()));
    v1::Predicate in = Pred("type", v1::OP_IN);
    for (uint64_t k = 1 + rng.Below(3); k > 0; --k) {
      in.mutable_string_values()->add_values(TypeName(t.types.Sample(rng)));
    }
    add(std::move(in));
    if (rng.Below(2) == 0) {
      v1::Predicate price = Int("price", v1::OP_BETWEEN, rng.InRange(0, 90000));
      price.set_upper(price.value() + rng.InRange(100, 10000));
      add(std::move(price));
    }
  } else if (pick < 55) {  // T2: one user's failures
    add(Int("user_id", v1::OP_EQ, rng.InRange(0, kUsers - 1)));
    add(Str("status", v1::OP_NE, "ok"));
  } else if (pick < 70) {  // T3: slow calls under an API path, some tenants
    add(Str("path", v1::OP_PREFIX,
            PathPrefix(1 + rng.Below(3), t.resources.Sample(rng))));
    v1::Predicate in = Pred("tenant", v1::OP_IN);
    for (uint64_t k = 2 + rng.Below(3); k > 0; --k) {
      in.mutable_string_values()->add_values(tenant());
    }
    add(std::move(in));
    add(Int("latency_ms", v1::OP_GT, rng.InRange(100, 5000)));
  } else if (pick < 80) {  // T4: a tenant's events outside some regions
    add(Str("tenant", v1::OP_EQ, tenant()));
    v1::Predicate out = Pred("region", v1::OP_NOT_IN);
    for (uint64_t k = 1 + rng.Below(2); k > 0; --k) {
      out.mutable_string_values()->add_values(
          RegionName(t.regions.Sample(rng)));
    }
    add(std::move(out));
    add(Pred("coupon", v1::OP_NOT_EXISTS));
  } else if (pick < 90) {  // T5: a tenant's urgent events with a coupon
    add(Str("tenant", v1::OP_EQ, tenant()));
    add(Int("priority", v1::OP_GE, rng.InRange(5, 9)));
    add(Pred("coupon", v1::OP_EXISTS));
  } else {  // T6: one type for a few users
    add(Str("type", v1::OP_EQ, TypeName(t.types.Sample(rng))));
    v1::Predicate in = Pred("user_id", v1::OP_IN);
    for (int k = 0; k < 3; ++k) {
      in.mutable_int64_values()->add_values(rng.InRange(0, kUsers - 1));
    }
    add(std::move(in));
  }
  return spec;
}

v1::Event Event(const Tables& t, Rng& rng) {
  v1::Event e;
  auto str = [&e](absl::string_view name, std::string value) {
    v1::Attribute* a = e.add_attributes();
    a->set_name(std::string(name));
    a->set_string_value(std::move(value));
  };
  auto num = [&e](absl::string_view name, int64_t value) {
    v1::Attribute* a = e.add_attributes();
    a->set_name(std::string(name));
    a->set_value(value);
  };
  str("type", TypeName(t.types.Sample(rng)));
  str("region", RegionName(t.regions.Sample(rng)));
  str("tenant", TenantName(t.tenants.Sample(rng)));
  str("path", absl::StrCat(PathPrefix(1 + rng.Below(3),
                                      t.resources.Sample(rng)),
                           rng.Below(1000)));
  str("source", SourceName(t.sources.Sample(rng)));
  str("status", kStatuses[t.statuses.Sample(rng)]);
  num("price", rng.InRange(0, 99999));
  num("quantity", rng.InRange(1, 100));
  num("priority", rng.InRange(0, 9));
  num("latency_ms", rng.InRange(0, 9999));
  num("size", rng.InRange(0, 999999));
  num("user_id", rng.InRange(0, kUsers - 1));
  if (rng.Below(10) == 0) {
    str("coupon", absl::StrFormat("C%04d", rng.Below(10000)));
  }
  return e;
}

}  // namespace

bool IsTypedPreset(absl::string_view preset) { return preset == "events-1m"; }

TypedWorkload GenerateEvents1m(int64_t subscriptions, int64_t events,
                               uint64_t seed) {
  TypedWorkload w;
  w.options.preset = "events-1m";
  w.options.subscriptions = subscriptions;
  w.options.events = events;
  w.options.seed = seed;
  w.options.attributes = 13;
  const Tables tables;
  Rng subscription_rng = StreamRng(seed, kTypedSubscriptionStream);
  w.subscriptions.reserve(subscriptions);
  for (int64_t n = 0; n < subscriptions; ++n) {
    w.subscriptions.push_back(Subscription(tables, subscription_rng, n));
  }
  Rng event_rng = StreamRng(seed, kTypedEventStream);
  w.events.reserve(events);
  for (int64_t n = 0; n < events; ++n) {
    w.events.push_back(Event(tables, event_rng));
  }
  return w;
}

absl::StatusOr<Workload> Lower(TypedWorkload typed) {
  service::Interner names(1u << 20);
  service::TypedAttributes attributes(&names, 1u << 24);
  service::Interner subscribers(1u << 24);
  service::Limits limits;
  Workload w;
  w.options = typed.options;
  w.subscriptions.reserve(typed.subscriptions.size());
  // A request per chunk, as clients send them.
  constexpr size_t kChunk = 1000;
  std::vector<service::SubscriptionInput> built;
  for (size_t first = 0; first < typed.subscriptions.size(); first += kChunk) {
    v1::SubscribeRequest request;
    const size_t end = std::min(typed.subscriptions.size(), first + kChunk);
    for (size_t i = first; i < end; ++i) {
      *request.add_subscriptions() = typed.subscriptions[i];
    }
    absl::Status s = service::ValidateSubscribe(request, limits);
    if (s.ok()) {
      s = service::BuildSubscriptions(request, &attributes, &subscribers,
                                      &built);
    }
    if (!s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "subscriptions ", first, " to ", end - 1, ": ", s.message()));
    }
    for (service::SubscriptionInput& input : built) {
      w.subscriptions.push_back(std::move(input.predicates));
    }
  }
  std::vector<std::vector<matcher::AttributeValue>> records;
  w.events.reserve(typed.events.size());
  for (size_t first = 0; first < typed.events.size(); first += kChunk) {
    v1::PublishRequest request;
    const size_t end = std::min(typed.events.size(), first + kChunk);
    for (size_t i = first; i < end; ++i) {
      *request.add_events() = typed.events[i];
    }
    if (absl::Status s = service::ValidatePublish(request, limits); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "events ", first, " to ", end - 1, ": ", s.message()));
    }
    service::BuildEvents(request, attributes, &records);
    for (auto& record : records) w.events.push_back(std::move(record));
  }
  for (uint32_t id = 0; id < names.size(); ++id) {
    w.attribute_names.push_back(names.Name(id));
  }
  w.options.attributes = static_cast<int64_t>(names.size());
  w.typed = std::make_shared<const TypedWorkload>(std::move(typed));
  return w;
}

absl::StatusOr<Workload> LoadOrGenerateAny(const std::string& path,
                                           const std::string& preset,
                                           int64_t subscriptions,
                                           int64_t events) {
  if (!path.empty() || !IsTypedPreset(preset)) {
    return LoadOrGenerate(path, preset, subscriptions, events);
  }
  return Lower(GenerateEvents1m(subscriptions >= 0 ? subscriptions : 1000000,
                                events >= 0 ? events : 100000, /*seed=*/1));
}

}  // namespace bench
}  // namespace cohort
