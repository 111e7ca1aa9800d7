#include "workload/typed_workload.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <istream>
#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "filter/parse.h"
#include "filter/pattern.h"
#include "service/model/interner.h"
#include "service/model/typed_attributes.h"
#include "service/model/validation.h"
#include "workload/workload_file.h"

namespace cohort {
namespace workload {
namespace {

using internal::Rng;
using internal::StreamRng;
using internal::ZipfTable;

// Stream tags of events-1m (apart from workload.h's 1 to 4).
constexpr uint64_t kTypedSubscriptionStream = 12;
constexpr uint64_t kTypedEventStream = 13;

// The value spaces of events-1m (workload/presets.md).
constexpr uint32_t kTypes = 200;
constexpr uint32_t kRegions = 20;
constexpr uint32_t kTenants = 100000;
constexpr uint32_t kResources = 50;
constexpr uint32_t kSources = 30;
constexpr int64_t kUsers = 1000000;

using internal::kEntities;
using internal::kStatuses;
using internal::RegionName;

}  // namespace

namespace internal {

const char* const kEntities[40] = {
    "order",   "payment", "refund",  "invoice",  "cart",     "user",
    "account", "session", "login",   "shipment", "delivery", "return",
    "stock",   "price",   "coupon",  "review",   "ticket",   "message",
    "file",    "job",     "build",   "deploy",   "alert",    "metric",
    "report",  "export",  "import",  "sync",     "webhook",  "email",
    "sms",     "push",    "search",  "click",    "view",     "like",
    "comment", "follow",  "upload",  "download"};
const char* const kStatuses[5] = {"ok", "error", "retry", "timeout",
                                  "cancelled"};

std::string RegionName(uint32_t i) {
  static const char* const kAreas[] = {"eu-west", "eu-north", "us-east",
                                       "us-west", "ap-south"};
  return absl::StrCat(kAreas[i % 5], "-", 1 + i / 5);
}

}  // namespace internal

namespace {

const char* const kVerbs[] = {"created", "updated", "deleted", "failed",
                              "completed"};

std::string TypeName(uint32_t i) {
  return absl::StrCat(kEntities[i % 40], ".", kVerbs[i / 40 % 5]);
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

// Subscription n's subscriber, as `cohort load` names them: the text
// format does not record it.
std::string SubscriberName(int64_t n) { return absl::StrCat("s", n % 1000); }

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
  spec.set_subscriber(SubscriberName(n));
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

bool IsTypedPreset(absl::string_view preset) {
  return preset == "events-1m" || preset == "events-10m" ||
         preset == "eventbridge-1m";
}

int64_t TypedPresetSubscriptions(absl::string_view preset) {
  return preset == "events-10m" ? 10000000 : 1000000;
}

TypedWorkload GenerateTyped(absl::string_view preset, int64_t subscriptions,
                            int64_t events, uint64_t seed) {
  if (preset == "eventbridge-1m") {
    return GenerateEventBridge1m(subscriptions, events, seed);
  }
  TypedWorkload w = GenerateEvents1m(subscriptions, events, seed);
  w.options.preset = std::string(preset);  // events-10m: the same streams
  return w;
}

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
  auto lowering = std::make_shared<Lowering>();
  service::Interner& names = lowering->names;
  service::TypedAttributes& attributes = lowering->attributes;
  const service::Limits& limits = lowering->limits;
  service::Interner subscribers(1u << 24);
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
    for (size_t i = 0; i < built.size(); ++i) {
      service::SubscriptionInput& input = built[i];
      if (input.branches.empty()) {
        w.subscriptions.push_back(std::move(input.predicates));
        if (!w.subscription_of_row.empty()) {
          w.subscription_of_row.push_back(static_cast<uint32_t>(first + i));
        }
        continue;
      }
      if (w.subscription_of_row.empty()) {
        // The rows so far were one per subscription.
        for (uint32_t r = 0; r < w.subscriptions.size(); ++r) {
          w.subscription_of_row.push_back(r);
        }
      }
      for (auto& branch : input.branches) {
        w.subscriptions.push_back(std::move(branch));
        w.subscription_of_row.push_back(static_cast<uint32_t>(first + i));
      }
    }
  }
  // As the front stage does for every Publish: an event with JSON becomes
  // its records, one or more.
  std::vector<std::vector<matcher::AttributeValue>> records;
  std::vector<service::JsonGroup> json;
  std::vector<uint32_t> event_of;
  w.events.reserve(typed.events.size());
  for (size_t first = 0; first < typed.events.size(); first += kChunk) {
    v1::PublishRequest request;
    const size_t end = std::min(typed.events.size(), first + kChunk);
    for (size_t i = first; i < end; ++i) {
      *request.add_events() = typed.events[i];
    }
    absl::Status s = service::ValidatePublishAndFlatten(request, limits, &json);
    if (s.ok()) {
      s = service::BuildEvents(request, json, attributes, limits, &records,
                               &event_of);
    }
    if (!s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "events ", first, " to ", end - 1, ": ", s.message()));
    }
    for (size_t r = 0; r < records.size(); ++r) {
      w.event_of_record.push_back(static_cast<uint32_t>(
          first + (event_of.empty() ? r : event_of[r])));
      w.events.push_back(std::move(records[r]));
    }
  }
  if (w.event_of_record.size() == typed.events.size()) {
    w.event_of_record.clear();  // one record per event
  }
  for (uint32_t id = 0; id < names.size(); ++id) {
    w.attribute_names.push_back(names.Name(id));
  }
  w.options.attributes = static_cast<int64_t>(names.size());
  w.typed = std::make_shared<const TypedWorkload>(std::move(typed));
  w.lowering = std::move(lowering);
  return w;
}

std::string TypedWorkloadText(const TypedWorkload& typed) {
  const WorkloadOptions& o = typed.options;
  std::string out = absl::StrCat(
      "# cohort-workload v2 preset=", o.preset, " seed=", o.seed, " typed\n",
      "# knobs subscriptions=", typed.subscriptions.size(),
      " events=", typed.events.size(), " seed=", o.seed, "\n");
  if (!typed.patterns.empty()) {
    for (const std::string& p : typed.patterns) {
      absl::StrAppend(&out, "P ", p, "\n");
    }
  } else {
    for (const v1::SubscriptionSpec& s : typed.subscriptions) {
      absl::StrAppend(&out, "S ", filter::FormatSubscription(s), "\n");
    }
  }
  for (const v1::Event& e : typed.events) {
    if (e.attributes_size() == 0 && !e.json().empty()) {
      absl::StrAppend(&out, "J ", e.json(), "\n");
    } else {
      absl::StrAppend(&out, "E ", filter::FormatEvent(e), "\n");
    }
  }
  return out;
}

namespace {

absl::Status BadLine(int64_t line, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("line ", line, ": ", what));
}

// The value of the " key=value" field of a header line.
bool Field(absl::string_view line, absl::string_view key, std::string* out) {
  for (absl::string_view f : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
    if (absl::ConsumePrefix(&f, key) && absl::ConsumePrefix(&f, "=")) {
      *out = std::string(f);
      return true;
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<TypedWorkload> ReadTypedWorkload(std::istream& in) {
  TypedWorkload w;
  std::string line;
  int64_t number = 0;
  int64_t want_subscriptions = -1;
  int64_t want_events = -1;
  bool header = false;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!header) {
      std::string seed;
      if (!absl::StartsWith(line, "# cohort-workload v2 ") ||
          !Field(line, "preset", &w.options.preset) ||
          !Field(line, "seed", &seed) ||
          !absl::SimpleAtoi(seed, &w.options.seed)) {
        return BadLine(number,
                       "expected the header \"# cohort-workload v2 "
                       "preset=<preset> seed=<seed> typed\"");
      }
      header = true;
      continue;
    }
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::string n;
      if (absl::StartsWith(line, "# knobs ") &&
          (!Field(line, "subscriptions", &n) ||
           !absl::SimpleAtoi(n, &want_subscriptions) ||
           !Field(line, "events", &n) ||
           !absl::SimpleAtoi(n, &want_events))) {
        return BadLine(number,
                       "the knobs line needs subscriptions= and events=");
      }
      continue;
    }
    // The record after its "S " or "E " (columns in messages count from
    // there).
    const absl::string_view rest =
        absl::string_view(line).substr(std::min<size_t>(2, line.size()));
    const bool pattern = absl::StartsWith(line, "P ");
    if (pattern || absl::StartsWith(line, "S ")) {
      if (!w.events.empty()) {
        return BadLine(number, "a subscription after the first event");
      }
      if (!w.subscriptions.empty() && pattern != !w.patterns.empty()) {
        return BadLine(number,
                       "\"S \" and \"P \" lines mixed in one file");
      }
      absl::StatusOr<v1::SubscriptionSpec> parsed =
          pattern ? filter::ParsePatternSpec(rest)
                  : filter::ParseSubscriptionSpec(rest);
      if (!parsed.ok()) return BadLine(number, parsed.status().message());
      v1::SubscriptionSpec& spec = w.subscriptions.emplace_back();
      spec = *std::move(parsed);
      spec.set_subscriber(
          SubscriberName(static_cast<int64_t>(w.subscriptions.size() - 1)));
      if (pattern) w.patterns.emplace_back(rest);
    } else if (absl::StartsWith(line, "J ")) {
      if (rest.empty()) return BadLine(number, "an empty JSON event");
      w.events.emplace_back().set_json(std::string(rest));
    } else if (absl::StartsWith(line, "E ")) {
      absl::StatusOr<std::vector<v1::Attribute>> attributes =
          filter::ParseEvent(rest);
      if (!attributes.ok()) {
        return BadLine(number, attributes.status().message());
      }
      v1::Event& event = w.events.emplace_back();
      for (v1::Attribute& a : *attributes) {
        *event.add_attributes() = std::move(a);
      }
    } else {
      return BadLine(number,
                     "expected a line starting with \"S \", \"P \", "
                     "\"E \" or \"J \"");
    }
  }
  if (!header) return BadLine(1, "empty: no header");
  if (want_subscriptions >= 0 &&
      (want_subscriptions != static_cast<int64_t>(w.subscriptions.size()) ||
       want_events != static_cast<int64_t>(w.events.size()))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the knobs line promises ", want_subscriptions, " subscriptions and ",
        want_events, " events; the file has ", w.subscriptions.size(), " and ",
        w.events.size()));
  }
  w.options.subscriptions = static_cast<int64_t>(w.subscriptions.size());
  w.options.events = static_cast<int64_t>(w.events.size());
  return w;
}

absl::StatusOr<WorkloadReport> GenerateTypedWorkloadFile(
    absl::string_view preset, int64_t subscriptions, int64_t events,
    uint64_t seed, const std::string& path, size_t report_sample) {
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  auto start = Clock::now();
  TypedWorkload typed = GenerateTyped(preset, subscriptions, events, seed);
  const double generate_seconds = seconds(start);
  start = Clock::now();
  absl::StatusOr<WrittenFile> written = WriteTextFile(
      path, [&](absl::FunctionRef<void(absl::string_view)> sink) {
        sink(TypedWorkloadText(typed));
      });
  if (!written.ok()) return written.status();
  const double write_seconds = seconds(start);
  absl::StatusOr<Workload> lowered = Lower(std::move(typed));
  if (!lowered.ok()) return lowered.status();
  WorkloadReport report = Summarize(*lowered, written->sha256, report_sample);
  report.text_bytes = written->bytes;
  report.generate_seconds = generate_seconds;
  report.write_seconds = write_seconds;
  return report;
}

absl::StatusOr<Workload> LoadOrGenerateAny(const std::string& path,
                                           const std::string& preset,
                                           int64_t subscriptions,
                                           int64_t events) {
  if (!path.empty()) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
    std::string first;
    std::getline(in, first);
    if (!absl::StartsWith(first, "# cohort-workload v2 ")) {
      return ReadWorkloadFile(path);
    }
    in.seekg(0);
    absl::StatusOr<TypedWorkload> typed = ReadTypedWorkload(in);
    if (!typed.ok()) {
      return absl::Status(typed.status().code(),
                          absl::StrCat(path, ": ", typed.status().message()));
    }
    return Lower(*std::move(typed));
  }
  if (!IsTypedPreset(preset)) {
    return LoadOrGenerate(path, preset, subscriptions, events);
  }
  return Lower(GenerateTyped(
      preset,
      subscriptions >= 0 ? subscriptions : TypedPresetSubscriptions(preset),
      events >= 0 ? events : 100000, /*seed=*/1));
}


}  // namespace workload
}  // namespace cohort
