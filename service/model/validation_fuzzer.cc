// Fuzz target: the front stage's request checks and conversions
// (validation.h) on arbitrary protobuf bytes, followed through to the index.
//
// The input is a sequence of requests, each [kind byte][2-byte length]
// [serialised request], run in order against one pair of small Interners, an
// Index and a ReferenceMatcher, the way the front stage and a partition see
// them. The first byte picks the limits (the defaults or small ones, so that
// every limit is reachable). Properties checked (a failure aborts):
//   - a refused request gets INVALID_ARGUMENT (NOT_FOUND for an Unsubscribe
//     of id 0, RESOURCE_EXHAUSTED for a Subscribe's expansion past
//     --max_or_expansion) with a message naming the field;
//   - a request that passes its Validate* function converts: every
//     subscription keeps its subscriber, and its int64 predicates their
//     names, ops and bounds (read back from the Interners), an "or" one
//     (any_of) becomes as many branches as its groups' product, or
//     BuildSubscriptions fails with RESOURCE_EXHAUSTED and leaves *out
//     alone; every event keeps its interned int64 attributes, and its
//     records' attributes are distinct;
//   - the Index accepts every built subscription (validation admits nothing
//     the matcher refuses), and matches the built events as the reference
//     matcher does, and as the API's rules on the messages themselves say
//     (api_reference.h: strings, sets, prefixes, existence, types, and
//     JSON events: a request event matches what any of its records
//     matches, as ApiMatchesJson reads the document), or BuildEvents
//     refuses an event's combinations with RESOURCE_EXHAUSTED.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/stubs/logging.h"
#include "matcher/index.h"
#include "matcher/reference_matcher.h"
#include "matcher/types.h"
#include "proto/cohort/v1/pubsub.pb.h"
#include "service/model/api_reference.h"
#include "service/model/interner.h"
#include "service/model/ip_network.h"
#include "service/model/json_event.h"
#include "service/model/validation.h"
#include "service/model/wildcard.h"
#include "tools/fuzz/byte_reader.h"
#include "tools/fuzz/fail.h"

namespace cohort {
namespace service {
namespace {

// Small enough that a fuzzer fills them within one input.
constexpr size_t kMaxAttributes = 12;
constexpr size_t kMaxSubscribers = 6;
constexpr size_t kMaxStrings = 8;  // per derived attribute

using fuzz::Fail;

// A refusal must say which field, as the API promises.
void CheckRefusal(const absl::Status& status, absl::string_view field,
                  absl::string_view request) {
  // Only an Unsubscribe can name something that does not exist, and only
  // a Subscribe expand past --max_or_expansion.
  const bool not_found = status.code() == absl::StatusCode::kNotFound &&
                         request == "Unsubscribe";
  const bool expansion =
      status.code() == absl::StatusCode::kResourceExhausted &&
      request == "Subscribe" &&
      absl::StrContains(status.message(), "(--max_or_expansion)");
  if (status.code() != absl::StatusCode::kInvalidArgument && !not_found &&
      !expansion) {
    Fail(absl::StrCat(request, " refused with ", status.ToString()));
  }
  if (!absl::StrContains(status.message(), field)) {
    Fail(absl::StrCat(request, " refusal does not name ", field, ": ",
                      status.ToString()));
  }
}

// How many index predicates `p` lowers into: NOT_EXISTS and string ranges
// (LT, LE, GT, GE, BETWEEN on strings: the range and its order-count guard)
// lower into two, and so does an IPv6 network longer than /64 (both
// halves); a wildcard "a*b" with both sides lowers into three (prefix,
// suffix, length), and so does every OP_NOT_WILDCARD (a string, its
// pattern's attribute absent, the guard); every other op into one.
size_t Width(const v1::Predicate& p) {
  if (p.op() == v1::OP_CIDR) {
    const std::optional<IpNetwork> n = ParseIpNetwork(p.string_value());
    return n.has_value() && n->address.v6 && n->prefix_length > 64 ? 2 : 1;
  }
  if (p.op() == v1::OP_WILDCARD) {
    const absl::StatusOr<Wildcard> w = ParseWildcard(p.string_value());
    return w.ok() && w->stars == 1 && !w->left.empty() && !w->right.empty()
               ? 3
               : 1;
  }
  // A string value, the pattern's attribute absent, and its guard.
  if (p.op() == v1::OP_NOT_WILDCARD) return 3;
  const bool string_range =
      p.operand_case() == v1::Predicate::kStringValue &&
      (p.op() == v1::OP_LT || p.op() == v1::OP_LE || p.op() == v1::OP_GT ||
       p.op() == v1::OP_GE || p.op() == v1::OP_BETWEEN);
  // A BETWEEN with one bound a number with a fraction and the other an
  // integer: GE and LE on two attributes (typed_attributes.h, "$d:").
  const auto fraction = [](bool is_double, double d) {
    return is_double && std::trunc(d) != d;
  };
  const bool split_range =
      p.op() == v1::OP_BETWEEN &&
      p.operand_case() != v1::Predicate::kStringValue &&
      fraction(p.operand_case() == v1::Predicate::kDoubleValue,
               p.double_value()) !=
          fraction(p.upper_operand_case() == v1::Predicate::kDoubleUpper,
                   p.double_upper());
  return p.op() == v1::OP_NOT_EXISTS || string_range || split_range ? 2 : 1;
}

class Session {
 public:
  explicit Session(const Limits& limits) : limits_(limits) {}

  void Subscribe(absl::string_view bytes) {
    v1::SubscribeRequest request;
    if (!ParseValid(bytes, ValidateSubscribe, "subscriptions", "Subscribe",
                    &request)) {
      return;
    }
    std::vector<SubscriptionInput> out;
    absl::Status s = BuildSubscriptions(request, &typed_, &subscribers_, &out);
    if (!s.ok()) {
      if (s.code() != absl::StatusCode::kResourceExhausted || !out.empty()) {
        Fail(absl::StrCat("BuildSubscriptions: ", s.ToString()));
      }
      return;
    }
    if (out.size() != static_cast<size_t>(request.subscriptions_size())) {
      Fail("BuildSubscriptions: wrong count");
    }
    for (size_t i = 0; i < out.size(); ++i) {
      CheckSubscription(request.subscriptions(i), out[i]);
      const matcher::SubscriptionId id = next_id_++;
      // An "or" subscription: a row per branch under ids of their own,
      // mapped back to `id` (as the engine's branch ids).
      std::vector<matcher::SubscriptionId> rows;
      for (size_t b = 0; b < out[i].conjunctions(); ++b) {
        const matcher::SubscriptionId row =
            out[i].branches.empty() ? id : next_branch_++;
        if (absl::Status added = index_.Add(row, out[i].conjunction(b));
            !added.ok()) {
          Fail(absl::StrCat("a validated subscription was refused: ",
                            added.ToString()));
        }
        reference_.Add(row, out[i].conjunction(b));
        rows.push_back(row);
        owner_[row] = id;
      }
      rows_[id] = rows;
      specs_.emplace(id, request.subscriptions(i));
    }
  }

  void Unsubscribe(absl::string_view bytes) {
    v1::UnsubscribeRequest request;
    if (!ParseValid(bytes, ValidateUnsubscribe, "subscription_ids",
                    "Unsubscribe", &request)) {
      return;
    }
    absl::flat_hash_set<uint64_t> seen;
    for (uint64_t id : request.subscription_ids()) {
      if (id == 0 || !seen.insert(id).second) {
        Fail(absl::StrCat("ValidateUnsubscribe passed id ", id));
      }
      auto live = rows_.find(id);
      if (live == rows_.end()) continue;
      for (matcher::SubscriptionId row : live->second) {
        if (!reference_.Remove(row) || !index_.Remove(row).ok()) {
          Fail(absl::StrCat("Remove(", row, ") failed"));
        }
        owner_.erase(row);
      }
      rows_.erase(live);
      specs_.erase(id);
    }
  }

  void Publish(absl::string_view bytes) {
    v1::PublishRequest request;
    if (!ParseValid(bytes, ValidatePublish, "events", "Publish", &request)) {
      return;
    }
    std::vector<JsonGroup> json;
    if (!ValidatePublishAndFlatten(request, limits_, &json).ok()) {
      Fail("ValidatePublishAndFlatten refused what ValidatePublish passed");
    }
    std::vector<std::vector<matcher::AttributeValue>> events;
    std::vector<uint32_t> event_of;
    const absl::Status built =
        BuildEvents(request, json, typed_, limits_, &events, &event_of);
    if (!built.ok()) {
      if (!absl::IsResourceExhausted(built) ||
          !absl::StrContains(built.message(), "].json: its arrays give")) {
        Fail(absl::StrCat("BuildEvents: ", built.ToString()));
      }
      return;
    }
    const auto request_event = [&](size_t r) {
      return event_of.empty() ? r : size_t{event_of[r]};
    };
    if (!event_of.empty() && event_of.size() != events.size()) {
      Fail("BuildEvents: event_of and records differ in size");
    }
    if (events.empty() ? request.events_size() != 0
                       : request_event(events.size() - 1) + 1 !=
                             static_cast<size_t>(request.events_size())) {
      Fail("BuildEvents: wrong count");
    }
    std::vector<matcher::EventView> views;
    for (size_t r = 0; r < events.size(); ++r) {
      if (r > 0 && request_event(r) != request_event(r - 1) &&
          request_event(r) != request_event(r - 1) + 1) {
        Fail("BuildEvents: an event without records, or records apart");
      }
      CheckEvent(request.events(static_cast<int>(request_event(r))),
                 events[r]);
      views.emplace_back(events[r]);
    }
    index_.MatchCohort(views, &matches_);
    // Per request event, what its records matched, once each.
    std::vector<std::vector<matcher::SubscriptionId>> got(
        request.events_size());
    for (size_t r = 0; r < views.size(); ++r) {
      std::sort(matches_[r].begin(), matches_[r].end());
      if (matches_[r] != reference_.Match(views[r])) {
        Fail(absl::StrCat("record ", r, " matched differently"));
      }
      auto& ids = got[request_event(r)];
      for (matcher::SubscriptionId row : matches_[r]) {
        ids.push_back(owner_.at(row));
      }
    }
    for (int i = 0; i < request.events_size(); ++i) {
      std::sort(got[i].begin(), got[i].end());
      got[i].erase(std::unique(got[i].begin(), got[i].end()), got[i].end());
      std::vector<matcher::SubscriptionId> api;
      for (const auto& [id, spec] : specs_) {
        if (ApiMatches(spec, request.events(i))) api.push_back(id);
      }
      if (got[i] != api) {
        Fail(absl::StrCat("event ", i, " matched ", got[i].size(),
                          " subscriptions; the API's rules say ", api.size(),
                          ": ", request.events(i).ShortDebugString()));
      }
    }
  }

  void Listen(absl::string_view bytes) {
    v1::ListenRequest request;
    if (!ParseValid(bytes, ValidateListen, "subscriber", "Listen", &request)) {
      return;
    }
    if (request.subscriber().empty() ||
        request.subscriber().size() > limits_.max_subscriber_bytes) {
      Fail("ValidateListen passed a bad subscriber name");
    }
  }

 private:
  // Parses `bytes` as a `name` request and validates it with `validate`;
  // a refusal must name `field` (CheckRefusal). True if it is valid.
  template <typename Request>
  bool ParseValid(absl::string_view bytes,
                  absl::Status (*validate)(const Request&, const Limits&),
                  absl::string_view field, absl::string_view name,
                  Request* request) const {
    if (!request->ParseFromArray(bytes.data(), bytes.size())) return false;
    absl::Status s = validate(*request, limits_);
    if (!s.ok()) CheckRefusal(s, field, name);
    return s.ok();
  }

  void CheckSubscription(const v1::SubscriptionSpec& spec,
                         const SubscriptionInput& in) const {
    if (subscribers_.Name(in.subscriber) != spec.subscriber()) {
      Fail("subscriber name changed");
    }
    size_t expected = 0;
    for (const v1::Predicate& p : spec.predicates()) expected += Width(p);
    if (spec.any_of_size() > 0) {
      // The expansion: one branch per choice of alternatives, the spec's
      // predicates first; checked by matching (ApiMatches evaluates the
      // groups themselves).
      size_t branches = 1;
      for (const v1::AnyOf& group : spec.any_of()) {
        branches *= static_cast<size_t>(group.alternatives_size());
      }
      if (branches > limits_.max_or_expansion ||
          in.conjunctions() != branches ||
          (branches == 1) != in.branches.empty()) {
        Fail("an \"or\" subscription's expansion changed");
      }
      for (size_t b = 0; b < in.conjunctions(); ++b) {
        if (in.conjunction(b).size() < expected ||
            in.conjunction(b).empty()) {
          Fail("a branch lost predicates");
        }
      }
      return;
    }
    if (in.predicates.size() != expected || in.predicates.empty() ||
        static_cast<size_t>(spec.predicates_size()) > limits_.max_predicates) {
      Fail("predicate count changed or out of limits");
    }
    size_t j = 0;
    for (const v1::Predicate& want : spec.predicates()) {
      const matcher::Predicate& got = in.predicates[j];
      j += Width(want);
      const auto operand = want.operand_case();
      if (want.op() > v1::OP_BETWEEN ||
          (operand != v1::Predicate::kValue &&
           operand != v1::Predicate::OPERAND_NOT_SET) ||
          want.upper_operand_case() == v1::Predicate::kDoubleUpper) {
        continue;  // typed: checked by matching (ApiMatches)
      }
      const bool between = want.op() == v1::OP_BETWEEN;
      if (attributes_.Name(got.attribute) != want.attribute() ||
          static_cast<int>(got.op) != static_cast<int>(want.op()) ||
          got.value != want.value() ||
          got.upper != (between ? want.upper() : 0) ||
          (between && got.value > got.upper)) {
        Fail(absl::StrCat("predicate ", want.ShortDebugString(),
                          " changed: ", matcher::DebugString(got)));
      }
    }
  }

  void CheckEvent(const v1::Event& event,
                  const std::vector<matcher::AttributeValue>& got) const {
    absl::flat_hash_set<matcher::AttributeId> ids;
    for (const matcher::AttributeValue& av : got) {
      if (!ids.insert(av.attribute).second) {
        Fail(absl::StrCat("event record repeats attribute ", av.attribute));
      }
    }
    for (const v1::Attribute& a : event.attributes()) {
      // Strings, doubles and literals: checked by matching (ApiMatches).
      if (a.kind_case() == v1::Attribute::kStringValue ||
          a.kind_case() == v1::Attribute::kDoubleValue ||
          a.kind_case() == v1::Attribute::kLiteralValue) {
        continue;
      }
      const auto id = attributes_.Find(a.name());
      if (!id.has_value()) continue;  // never named by a subscription
      if (std::find_if(got.begin(), got.end(),
                       [&](const matcher::AttributeValue& av) {
                         return av.attribute == *id && av.value == a.value();
                       }) == got.end()) {
        Fail(absl::StrCat("event attribute ", a.name(), " changed"));
      }
    }
  }

  Limits limits_;
  Interner attributes_{kMaxAttributes};
  TypedAttributes typed_{&attributes_, kMaxStrings};
  Interner subscribers_{kMaxSubscribers};
  absl::btree_map<matcher::SubscriptionId, v1::SubscriptionSpec> specs_;
  matcher::Index index_;
  matcher::ReferenceMatcher reference_;
  matcher::SubscriptionId next_id_ = 1;
  // Rows: a plain subscription's is its id; an "or" one's branches get
  // ids from 2^30 (as the engine's branch ids); and back.
  matcher::SubscriptionId next_branch_ = matcher::SubscriptionId{1} << 30;
  absl::btree_map<matcher::SubscriptionId,
                  std::vector<matcher::SubscriptionId>>
      rows_;
  absl::btree_map<matcher::SubscriptionId, matcher::SubscriptionId> owner_;
  std::vector<std::vector<matcher::SubscriptionId>> matches_;
};

Limits PickLimits(uint8_t choice) {
  Limits limits;  // the server's defaults
  if (choice % 2 == 1) {
    limits.max_predicates = 3;
    limits.max_event_attributes = 4;
    limits.max_payload_bytes = 8;
    limits.max_batch = 4;
    limits.max_subscriber_bytes = 5;
    limits.max_string_bytes = 4;
    limits.max_set_size = 3;
    limits.max_json_bytes = 64;
    limits.max_json_depth = 3;
    limits.max_json_values = 6;
    limits.max_json_combinations = 4;
    limits.max_or_expansion = 4;
  }
  return limits;
}

}  // namespace
}  // namespace service
}  // namespace cohort

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Most inputs are not valid protobuf; parse errors are expected.
  static google::protobuf::LogSilencer silence_parse_errors;
  cohort::fuzz::ByteReader in(data, size);
  cohort::service::Session session(cohort::service::PickLimits(in.Byte()));
  while (!in.empty()) {
    const uint8_t kind = in.Byte();
    const size_t length = in.Byte() | (size_t{in.Byte()} << 8);
    const absl::string_view request = in.Bytes(length);
    switch (kind % 4) {
      case 0:
        session.Subscribe(request);
        break;
      case 1:
        session.Unsubscribe(request);
        break;
      case 2:
        session.Publish(request);
        break;
      default:
        session.Listen(request);
        break;
    }
  }
  return 0;
}
