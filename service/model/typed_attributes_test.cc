#include "service/model/typed_attributes.h"

#include <cstdint>
#include <iostream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "matcher/index.h"
#include "proto/cohort/v1/pubsub.pb.h"
#include "service/model/api_reference.h"
#include "service/model/interner.h"
#include "service/model/json_event.h"
#include "service/model/validation.h"

namespace cohort {
namespace service {
namespace {

using ::testing::HasSubstr;

// A front stage (Interner, TypedAttributes) and an Index, driven the way
// the service drives them.
class Front {
 public:
  explicit Front(size_t max_strings = 1000)
      : names_(1 << 16), typed_(&names_, max_strings), subscribers_(16) {}

  // Subscribes `spec` as id `id`; the status of validation or lowering.
  absl::Status Subscribe(matcher::SubscriptionId id,
                         const v1::SubscriptionSpec& spec) {
    v1::SubscribeRequest request;
    *request.add_subscriptions() = spec;
    absl::Status s = ValidateSubscribe(request, Limits());
    if (!s.ok()) return s;
    std::vector<SubscriptionInput> out;
    s = BuildSubscriptions(request, &typed_, &subscribers_, &out);
    if (!s.ok()) return s;
    if (out[0].branches.empty()) {
      s = index_.Add(id, out[0].predicates);
    } else {
      // An "or" subscription: a row per branch, under ids of their own
      // that Match maps back to `id` (as the engine's branch ids).
      for (const auto& branch : out[0].branches) {
        const matcher::SubscriptionId row = next_branch_++;
        s = index_.Add(row, branch);
        if (!s.ok()) return s;
        owner_[row] = id;
        branches_[id].push_back(row);
      }
    }
    if (s.ok()) specs_[id] = spec;
    return s;
  }
  void Unsubscribe(matcher::SubscriptionId id) {
    auto it = branches_.find(id);
    if (it == branches_.end()) {
      ASSERT_TRUE(index_.Remove(id).ok());
    } else {
      for (matcher::SubscriptionId row : it->second) {
        ASSERT_TRUE(index_.Remove(row).ok());
        owner_.erase(row);
      }
      branches_.erase(it);
    }
    specs_.erase(id);
  }
  std::vector<std::vector<matcher::AttributeValue>> Encode(
      const v1::PublishRequest& request) const {
    std::vector<std::vector<matcher::AttributeValue>> records;
    BuildEvents(request, typed_, &records);
    return records;
  }
  std::vector<std::vector<matcher::SubscriptionId>> Match(
      const std::vector<std::vector<matcher::AttributeValue>>& records) {
    std::vector<matcher::EventView> views(records.begin(), records.end());
    std::vector<std::vector<matcher::SubscriptionId>> got;
    index_.MatchCohort(views, &got);
    for (auto& ids : got) {
      for (matcher::SubscriptionId& id : ids) {
        if (id >= kFirstBranch) id = owner_.at(id);
      }
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    }
    return got;
  }
  std::vector<matcher::SubscriptionId> MatchOne(const v1::Event& event) {
    v1::PublishRequest request;
    *request.add_events() = event;
    return Match(Encode(request))[0];
  }
  // Per request event, the ids its records matched (each once), for
  // events with json; or the status of validation or BuildEvents.
  absl::StatusOr<std::vector<std::vector<matcher::SubscriptionId>>> MatchJson(
      const v1::PublishRequest& request, const Limits& limits = Limits()) {
    std::vector<JsonGroup> json;
    absl::Status s = ValidatePublishAndFlatten(request, limits, &json);
    if (!s.ok()) return s;
    std::vector<std::vector<matcher::AttributeValue>> records;
    std::vector<uint32_t> event_of;
    s = BuildEvents(request, json, typed_, limits, &records, &event_of);
    if (!s.ok()) return s;
    if (!event_of.empty()) {
      EXPECT_EQ(event_of.size(), records.size());
    }
    records_ += records.size();
    const auto got = Match(records);
    std::vector<std::vector<matcher::SubscriptionId>> out(
        request.events_size());
    for (size_t r = 0; r < got.size(); ++r) {
      auto& ids = out[event_of.empty() ? r : event_of[r]];
      ids.insert(ids.end(), got[r].begin(), got[r].end());
    }
    for (auto& ids : out) {
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    }
    return out;
  }
  // Records matched by MatchJson so far.
  size_t records() const { return records_; }
  const std::map<matcher::SubscriptionId, v1::SubscriptionSpec>& specs()
      const {
    return specs_;
  }

  // What the API's rules say `event` matches among the live subscriptions.
  std::vector<matcher::SubscriptionId> Expected(const v1::Event& event) const {
    std::vector<matcher::SubscriptionId> ids;
    for (const auto& [id, spec] : specs_) {
      if (ApiMatches(spec, event)) ids.push_back(id);
    }
    return ids;
  }

  Interner& names() { return names_; }
  TypedAttributes& typed() { return typed_; }

 private:
  static constexpr matcher::SubscriptionId kFirstBranch = 1u << 30;

  Interner names_;
  TypedAttributes typed_;
  Interner subscribers_;
  matcher::Index index_;
  std::map<matcher::SubscriptionId, v1::SubscriptionSpec> specs_;
  // "Or" subscriptions: their rows' ids, and back.
  matcher::SubscriptionId next_branch_ = kFirstBranch;
  std::map<matcher::SubscriptionId, std::vector<matcher::SubscriptionId>>
      branches_;
  std::map<matcher::SubscriptionId, matcher::SubscriptionId> owner_;
  size_t records_ = 0;
};

v1::SubscriptionSpec Spec(std::vector<v1::Predicate> predicates) {
  v1::SubscriptionSpec spec;
  spec.set_subscriber("s");
  for (v1::Predicate& p : predicates) *spec.add_predicates() = std::move(p);
  return spec;
}

v1::Predicate Int(const std::string& name, v1::Op op, int64_t value) {
  v1::Predicate p;
  p.set_attribute(name);
  p.set_op(op);
  p.set_value(value);
  return p;
}

v1::Predicate Str(const std::string& name, v1::Op op,
                  const std::string& value) {
  v1::Predicate p;
  p.set_attribute(name);
  p.set_op(op);
  p.set_string_value(value);
  return p;
}

v1::Predicate Strs(const std::string& name, v1::Op op,
                   std::vector<std::string> values) {
  v1::Predicate p;
  p.set_attribute(name);
  p.set_op(op);
  for (std::string& v : values) p.mutable_string_values()->add_values(v);
  return p;
}

v1::Predicate Bare(const std::string& name, v1::Op op) {
  v1::Predicate p;
  p.set_attribute(name);
  p.set_op(op);
  return p;
}

// An event from (name, value) pairs: a value starting with '#' is the
// int64 after it, anything else a string.
v1::Event Event(std::vector<std::pair<std::string, std::string>> attributes) {
  v1::Event e;
  for (const auto& [name, value] : attributes) {
    v1::Attribute* a = e.add_attributes();
    a->set_name(name);
    if (!value.empty() && value[0] == '#') {
      a->set_value(std::stoll(value.substr(1)));
    } else {
      a->set_string_value(value);
    }
  }
  return e;
}

using Ids = std::vector<matcher::SubscriptionId>;

TEST(TypedAttributes, StringOperatorsHoldAsDocumented) {
  Front f;
  ASSERT_TRUE(f.Subscribe(1, Spec({Str("type", v1::OP_EQ, "order")})).ok());
  ASSERT_TRUE(f.Subscribe(2, Spec({Str("type", v1::OP_NE, "order")})).ok());
  ASSERT_TRUE(
      f.Subscribe(3, Spec({Strs("region", v1::OP_IN, {"eu-west", "eu-north"})}))
          .ok());
  ASSERT_TRUE(
      f.Subscribe(4, Spec({Strs("region", v1::OP_NOT_IN, {"eu-west"})})).ok());
  ASSERT_TRUE(f.Subscribe(5, Spec({Str("path", v1::OP_PREFIX, "/api/")})).ok());
  ASSERT_TRUE(f.Subscribe(6, Spec({Str("path", v1::OP_PREFIX, "")})).ok());
  ASSERT_TRUE(f.Subscribe(7, Spec({Bare("coupon", v1::OP_NOT_EXISTS)})).ok());
  ASSERT_TRUE(f.Subscribe(8, Spec({Bare("coupon", v1::OP_EXISTS)})).ok());
  ASSERT_TRUE(f.Subscribe(9, Spec({Int("type", v1::OP_EQ, 5)})).ok());

  EXPECT_EQ(f.MatchOne(Event({{"type", "order"}})), (Ids{1, 7}));
  EXPECT_EQ(f.MatchOne(Event({{"type", "refund"}})), (Ids{2, 7}));
  // Types never cross: the int64 5 is no string, the string "5" no int64.
  EXPECT_EQ(f.MatchOne(Event({{"type", "#5"}})), (Ids{7, 9}));
  EXPECT_EQ(f.MatchOne(Event({{"type", "5"}})), (Ids{2, 7}));
  EXPECT_EQ(f.MatchOne(Event({{"region", "eu-north"}, {"coupon", "#0"}})),
            (Ids{3, 4, 8}));
  EXPECT_EQ(f.MatchOne(Event({{"region", "eu-west"}, {"coupon", "x"}})),
            (Ids{3, 8}));
  // NOT_IN, like NE, needs the attribute (of its type).
  EXPECT_EQ(f.MatchOne(Event({{"region", "#1"}})), (Ids{7}));
  EXPECT_EQ(f.MatchOne(Event({{"path", "/api/v1"}})), (Ids{5, 6, 7}));
  EXPECT_EQ(f.MatchOne(Event({{"path", "/ap"}})), (Ids{6, 7}));
  EXPECT_EQ(f.MatchOne(Event({{"path", ""}})), (Ids{6, 7}));
  EXPECT_EQ(f.MatchOne(Event({{"path", "#1"}})), (Ids{7}));
}

// Issue 44: OP_SUFFIX, as OP_PREFIX from the other end, with several
// lengths on one name, next to prefixes of the same length.
TEST(TypedAttributes, SuffixesHoldAsDocumented) {
  Front f;
  ASSERT_TRUE(f.Subscribe(1, Spec({Str("file", v1::OP_SUFFIX, ".png")})).ok());
  ASSERT_TRUE(f.Subscribe(2, Spec({Str("file", v1::OP_SUFFIX, "g")})).ok());
  ASSERT_TRUE(f.Subscribe(3, Spec({Str("file", v1::OP_SUFFIX, "")})).ok());
  ASSERT_TRUE(f.Subscribe(4, Spec({Str("file", v1::OP_PREFIX, ".png")})).ok());
  ASSERT_TRUE(f.Subscribe(5, Spec({Str("file", v1::OP_SUFFIX, "a.png"),
                                   Str("file", v1::OP_PREFIX, "a")}))
                  .ok());
  ASSERT_TRUE(f.Subscribe(6, Spec({Str("file", v1::OP_SUFFIX, "\xff")})).ok());

  EXPECT_EQ(f.MatchOne(Event({{"file", "cat.png"}})), (Ids{1, 2, 3}));
  EXPECT_EQ(f.MatchOne(Event({{"file", "a.png"}})), (Ids{1, 2, 3, 5}));
  EXPECT_EQ(f.MatchOne(Event({{"file", ".png"}})), (Ids{1, 2, 3, 4}));
  // Shorter than a suffix: that suffix cannot hold, the shorter ones can.
  EXPECT_EQ(f.MatchOne(Event({{"file", "png"}})), (Ids{2, 3}));
  EXPECT_EQ(f.MatchOne(Event({{"file", ""}})), (Ids{3}));
  EXPECT_EQ(f.MatchOne(Event({{"file", "x.PNG"}})), (Ids{3}));  // bytes
  EXPECT_EQ(f.MatchOne(Event({{"file", "\x01\xff"}})), (Ids{3, 6}));
  // An int64 has no suffix, not even the empty one.
  EXPECT_EQ(f.MatchOne(Event({{"file", "#7"}})), (Ids{}));
  EXPECT_EQ(f.MatchOne(Event({{"other", "cat.png"}})), (Ids{}));
}

// Issue 44: OP_EQUALS_IGNORE_CASE compares simple case folds
// (case_fold.h), beside an exact EQ on the same name.
TEST(TypedAttributes, EqualsIgnoreCaseHoldsAsDocumented) {
  Front f;
  const v1::Op kIcase = v1::OP_EQUALS_IGNORE_CASE;
  ASSERT_TRUE(f.Subscribe(1, Spec({Str("name", kIcase, "Caf\xC3\xA9")})).ok());
  ASSERT_TRUE(
      f.Subscribe(2, Spec({Str("name", v1::OP_EQ, "caf\xC3\xA9")})).ok());
  ASSERT_TRUE(f.Subscribe(3, Spec({Str("name", kIcase, "")})).ok());
  ASSERT_TRUE(
      f.Subscribe(4, Spec({Str("name", kIcase, "stra\xC3\x9F" "e")})).ok());
  ASSERT_TRUE(f.Subscribe(5, Spec({Str("name", kIcase, "\xFF" "A")})).ok());

  EXPECT_EQ(f.MatchOne(Event({{"name", "CAF\xC3\x89"}})), (Ids{1}));
  EXPECT_EQ(f.MatchOne(Event({{"name", "caf\xC3\xA9"}})), (Ids{1, 2}));
  EXPECT_EQ(f.MatchOne(Event({{"name", "cafe"}})), (Ids{}));
  EXPECT_EQ(f.MatchOne(Event({{"name", ""}})), (Ids{3}));
  // ẞ folds to ß; "SS" does not (simple folding).
  EXPECT_EQ(f.MatchOne(Event({{"name", "STRA\xE1\xBA\x9E" "E"}})), (Ids{4}));
  EXPECT_EQ(f.MatchOne(Event({{"name", "STRASSE"}})), (Ids{}));
  // A byte that is not UTF-8 compares as it is; the letter after it folds.
  EXPECT_EQ(f.MatchOne(Event({{"name", "\xFF" "a"}})), (Ids{5}));
  EXPECT_EQ(f.MatchOne(Event({{"name", "\xFE" "a"}})), (Ids{}));
  EXPECT_EQ(f.MatchOne(Event({{"name", "#0"}})), (Ids{}));  // an int64
}

// Lists of either, and the negation (Event Ruler's anything-but
// equals-ignore-case): folds in a set.
TEST(TypedAttributes, FoldedListsAndExclusionsHoldAsDocumented) {
  Front f;
  ASSERT_TRUE(f.Subscribe(1, Spec({Strs("c", v1::OP_EQUALS_IGNORE_CASE,
                                        {"Red", "GREEN"})}))
                  .ok());
  ASSERT_TRUE(f.Subscribe(2, Spec({Strs("c", v1::OP_NOT_EQUALS_IGNORE_CASE,
                                        {"red", "Blue"})}))
                  .ok());
  ASSERT_TRUE(
      f.Subscribe(3, Spec({Str("c", v1::OP_NOT_EQUALS_IGNORE_CASE, "BLUE")}))
          .ok());
  EXPECT_EQ(f.MatchOne(Event({{"c", "rED"}})), (Ids{1, 3}));
  EXPECT_EQ(f.MatchOne(Event({{"c", "green"}})), (Ids{1, 2, 3}));
  EXPECT_EQ(f.MatchOne(Event({{"c", "blue"}})), (Ids{}));
  EXPECT_EQ(f.MatchOne(Event({{"c", "teal"}})), (Ids{2, 3}));
  // Like NE: a string is needed.
  EXPECT_EQ(f.MatchOne(Event({{"c", "#1"}})), (Ids{}));
  EXPECT_EQ(f.MatchOne(Event({{"d", "teal"}})), (Ids{}));
}

// Issue 44: OP_NOT_PREFIX and OP_NOT_SUFFIX (anything-but prefix and
// suffix) hold for strings shorter than their operand, and apart from
// OP_PREFIX of the same length.
TEST(TypedAttributes, ExcludedPrefixesAndSuffixesHoldAsDocumented) {
  Front f;
  const v1::Op kNotPrefix = v1::OP_NOT_PREFIX;
  const v1::Op kNotSuffix = v1::OP_NOT_SUFFIX;
  ASSERT_TRUE(f.Subscribe(1, Spec({Str("p", kNotPrefix, "/int/")})).ok());
  ASSERT_TRUE(f.Subscribe(2, Spec({Str("p", v1::OP_PREFIX, "/api/")})).ok());
  ASSERT_TRUE(f.Subscribe(3, Spec({Str("p", kNotSuffix, ".tmp")})).ok());
  ASSERT_TRUE(f.Subscribe(4, Spec({Str("p", kNotPrefix, "/"),
                                   Str("p", kNotSuffix, "/")}))
                  .ok());

  EXPECT_EQ(f.MatchOne(Event({{"p", "/int/x"}})), (Ids{3}));
  EXPECT_EQ(f.MatchOne(Event({{"p", "/api/x"}})), (Ids{1, 2, 3}));
  EXPECT_EQ(f.MatchOne(Event({{"p", "/api/x.tmp"}})), (Ids{1, 2}));
  EXPECT_EQ(f.MatchOne(Event({{"p", "x"}})), (Ids{1, 3, 4}));  // short
  EXPECT_EQ(f.MatchOne(Event({{"p", ""}})), (Ids{1, 3, 4}));
  EXPECT_EQ(f.MatchOne(Event({{"p", "a/"}})), (Ids{1, 3}));
  // Like NE: not for an int64, nor for an event without the attribute.
  EXPECT_EQ(f.MatchOne(Event({{"p", "#1"}})), (Ids{}));
  EXPECT_EQ(f.MatchOne(Event({{"q", "x"}})), (Ids{}));
  v1::Stats stats;
  f.typed().FillStats(&stats);
  ASSERT_EQ(stats.attributes_size(), 1);
  EXPECT_EQ(stats.attributes(0).distinct_prefixes(), 3u);  // 2 excluded
  EXPECT_EQ(stats.attributes(0).prefix_lengths(), 3u);  // /int/ /api/ /
  EXPECT_EQ(stats.attributes(0).distinct_suffixes(), 2u);
  EXPECT_EQ(stats.attributes(0).suffix_lengths(), 2u);
}

// Literals (true, false, null) are a type of their own: EQ and NE with a
// literal operand compare literals only, and only EXISTS sees them
// otherwise.
TEST(TypedAttributes, LiteralsHoldAsDocumented) {
  Front f;
  auto literal = [](const std::string& name, v1::Op op, v1::Literal l) {
    v1::Predicate p;
    p.set_attribute(name);
    p.set_op(op);
    p.set_literal_value(l);
    return p;
  };
  ASSERT_TRUE(f.Subscribe(1, Spec({literal("ok", v1::OP_EQ,
                                           v1::LITERAL_TRUE)})).ok());
  ASSERT_TRUE(f.Subscribe(2, Spec({literal("ok", v1::OP_NE,
                                           v1::LITERAL_TRUE)})).ok());
  ASSERT_TRUE(f.Subscribe(3, Spec({literal("ok", v1::OP_EQ,
                                           v1::LITERAL_NULL)})).ok());
  ASSERT_TRUE(f.Subscribe(4, Spec({Str("ok", v1::OP_EQ, "true")})).ok());
  ASSERT_TRUE(f.Subscribe(5, Spec({Str("ok", v1::OP_NE, "x")})).ok());
  ASSERT_TRUE(f.Subscribe(6, Spec({Bare("ok", v1::OP_EXISTS)})).ok());
  ASSERT_TRUE(f.Subscribe(7, Spec({Bare("ok", v1::OP_NOT_EXISTS)})).ok());
  ASSERT_TRUE(f.Subscribe(8, Spec({Int("ok", v1::OP_NE, 1)})).ok());
  auto event = [](v1::Literal l) {
    v1::Event e;
    v1::Attribute* a = e.add_attributes();
    a->set_name("ok");
    a->set_literal_value(l);
    return e;
  };
  EXPECT_EQ(f.MatchOne(event(v1::LITERAL_TRUE)), (Ids{1, 6}));
  EXPECT_EQ(f.MatchOne(event(v1::LITERAL_FALSE)), (Ids{2, 6}));
  EXPECT_EQ(f.MatchOne(event(v1::LITERAL_NULL)), (Ids{2, 3, 6}));
  EXPECT_EQ(f.MatchOne(Event({{"ok", "true"}})), (Ids{4, 5, 6}));
  EXPECT_EQ(f.MatchOne(Event({{"ok", "#1"}})), (Ids{6}));
  EXPECT_EQ(f.MatchOne(Event({{"other", "#1"}})), (Ids{7}));
  // A JSON event's literals are the same values.
  v1::Event json;
  json.set_json(R"({"ok": [null, false]})");
  v1::PublishRequest request;
  *request.add_events() = json;
  auto got = f.MatchJson(request);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)[0], (Ids{2, 3, 6}));
  EXPECT_EQ(f.Expected(json), (Ids{2, 3, 6}));
}

// Issue 44: OP_CIDR, IPv4 and IPv6 apart, prefixes on either side of the
// 64-bit halves of an IPv6 address.
TEST(TypedAttributes, CidrHoldsAsDocumented) {
  Front f;
  const v1::Op kCidr = v1::OP_CIDR;
  ASSERT_TRUE(f.Subscribe(1, Spec({Str("ip", kCidr, "10.0.0.0/8")})).ok());
  ASSERT_TRUE(f.Subscribe(2, Spec({Str("ip", kCidr, "10.1.2.3")})).ok());
  ASSERT_TRUE(f.Subscribe(3, Spec({Str("ip", kCidr, "0.0.0.0/0")})).ok());
  ASSERT_TRUE(f.Subscribe(4, Spec({Str("ip", kCidr, "2001:db8::/32")})).ok());
  ASSERT_TRUE(
      f.Subscribe(5, Spec({Str("ip", kCidr, "2001:db8::8000:0:0:0/65")}))
          .ok());
  ASSERT_TRUE(f.Subscribe(6, Spec({Str("ip", kCidr, "255.0.0.0/8")})).ok());

  EXPECT_EQ(f.MatchOne(Event({{"ip", "10.1.2.3"}})), (Ids{1, 2, 3}));
  EXPECT_EQ(f.MatchOne(Event({{"ip", "10.255.255.255"}})), (Ids{1, 3}));
  EXPECT_EQ(f.MatchOne(Event({{"ip", "11.0.0.0"}})), (Ids{3}));
  EXPECT_EQ(f.MatchOne(Event({{"ip", "255.255.255.255"}})), (Ids{3, 6}));
  EXPECT_EQ(f.MatchOne(Event({{"ip", "2001:db8::1"}})), (Ids{4}));
  EXPECT_EQ(f.MatchOne(Event({{"ip", "2001:db8::8000:0:0:1"}})), (Ids{4, 5}));
  EXPECT_EQ(f.MatchOne(Event({{"ip", "2001:db9::"}})), (Ids{}));
  // The low half of /65, under another high half.
  EXPECT_EQ(f.MatchOne(Event({{"ip", "2001:db9::8000:0:0:1"}})), (Ids{}));
  // IPv4 in IPv6 is IPv6; what is no address holds nothing.
  EXPECT_EQ(f.MatchOne(Event({{"ip", "::ffff:10.1.2.3"}})), (Ids{}));
  EXPECT_EQ(f.MatchOne(Event({{"ip", "10.1.2.3 "}})), (Ids{}));
  EXPECT_EQ(f.MatchOne(Event({{"ip", "#167838211"}})), (Ids{}));  // int64
  const absl::Status bad = f.Subscribe(7, Spec({Str("ip", kCidr, "10.0/8")}));
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
}

// Issue 44: OP_WILDCARD with one star is a prefix, a suffix and a length.
TEST(TypedAttributes, WildcardsHoldAsDocumented) {
  Front f;
  const v1::Op kWild = v1::OP_WILDCARD;
  ASSERT_TRUE(f.Subscribe(1, Spec({Str("f", kWild, "img-*.png")})).ok());
  ASSERT_TRUE(f.Subscribe(2, Spec({Str("f", kWild, "a*a")})).ok());
  ASSERT_TRUE(f.Subscribe(3, Spec({Str("f", kWild, "*")})).ok());
  ASSERT_TRUE(f.Subscribe(4, Spec({Str("f", kWild, "*.png")})).ok());
  ASSERT_TRUE(f.Subscribe(5, Spec({Str("f", kWild, "x\\*")})).ok());
  ASSERT_TRUE(f.Subscribe(6, Spec({Str("f", kWild, "\\\\*")})).ok());

  EXPECT_EQ(f.MatchOne(Event({{"f", "img-1.png"}})), (Ids{1, 3, 4}));
  EXPECT_EQ(f.MatchOne(Event({{"f", "img-.png"}})), (Ids{1, 3, 4}));
  EXPECT_EQ(f.MatchOne(Event({{"f", "img.png"}})), (Ids{3, 4}));  // short
  EXPECT_EQ(f.MatchOne(Event({{"f", "a"}})), (Ids{3}));  // "a*a": 2 bytes
  EXPECT_EQ(f.MatchOne(Event({{"f", "aa"}})), (Ids{2, 3}));
  EXPECT_EQ(f.MatchOne(Event({{"f", "x*"}})), (Ids{3, 5}));  // a literal *
  EXPECT_EQ(f.MatchOne(Event({{"f", "xy"}})), (Ids{3}));
  EXPECT_EQ(f.MatchOne(Event({{"f", "\\tmp"}})), (Ids{3, 6}));
  EXPECT_EQ(f.MatchOne(Event({{"f", "#5"}})), (Ids{}));  // an int64
  for (const char* bad : {"a**b", "a\\", "a\\b", "*1*2*3*4*5*6*7*8*"}) {
    const absl::Status s = f.Subscribe(7, Spec({Str("f", kWild, bad)}));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

// Issue 44: prefixes and suffixes of the case fold (Event Ruler's prefix
// and suffix with equals-ignore-case inside).
TEST(TypedAttributes, FoldedPrefixesAndSuffixesHoldAsDocumented) {
  Front f;
  const v1::Op kPre = v1::OP_PREFIX_IGNORE_CASE;
  const v1::Op kSuf = v1::OP_SUFFIX_IGNORE_CASE;
  ASSERT_TRUE(f.Subscribe(1, Spec({Str("f", kPre, "Img-")})).ok());
  ASSERT_TRUE(f.Subscribe(2, Spec({Str("f", kSuf, ".PNG")})).ok());
  ASSERT_TRUE(f.Subscribe(3, Spec({Str("f", kPre, "CAF\xc3\x89")})).ok());
  ASSERT_TRUE(f.Subscribe(4, Spec({Str("f", kSuf, "")})).ok());  // any
  ASSERT_TRUE(f.Subscribe(5, Spec({Str("f", kPre, "img"),
                                   Str("f", kSuf, "G")})).ok());
  EXPECT_EQ(f.MatchOne(Event({{"f", "IMG-1.png"}})), (Ids{1, 2, 4, 5}));
  EXPECT_EQ(f.MatchOne(Event({{"f", "img-1.Png"}})), (Ids{1, 2, 4, 5}));
  EXPECT_EQ(f.MatchOne(Event({{"f", "im"}})), (Ids{4}));  // short
  EXPECT_EQ(f.MatchOne(Event({{"f", "caf\xc3\xa9 noir"}})), (Ids{3, 4}));
  EXPECT_EQ(f.MatchOne(Event({{"f", "Caf"}})), (Ids{4}));
  EXPECT_EQ(f.MatchOne(Event({{"f", "#5"}})), (Ids{}));  // an int64
  EXPECT_EQ(f.MatchOne(Event({{"g", "img-"}})), (Ids{}));
}

// Issue 44: OP_WILDCARD with several stars and OP_NOT_WILDCARD: the
// pattern's own attribute, set for the candidates its ends select.
TEST(TypedAttributes, SeveralStarsAndNotWildcardHoldAsDocumented) {
  Front f;
  const v1::Op kWild = v1::OP_WILDCARD;
  const v1::Op kNot = v1::OP_NOT_WILDCARD;
  ASSERT_TRUE(f.Subscribe(1, Spec({Str("f", kWild, "img-*-*.png")})).ok());
  ASSERT_TRUE(f.Subscribe(2, Spec({Str("f", kWild, "*ab*ab*")})).ok());
  ASSERT_TRUE(f.Subscribe(3, Spec({Str("f", kNot, "img-*.png")})).ok());
  ASSERT_TRUE(f.Subscribe(4, Spec({Str("f", kNot, "x")})).ok());
  ASSERT_TRUE(f.Subscribe(5, Spec({Str("f", kWild, "a*ab*b")})).ok());
  ASSERT_TRUE(f.Subscribe(6, Spec({Str("f", kNot, "*a*b*")})).ok());
  // The same pattern again: the same attribute.
  ASSERT_TRUE(f.Subscribe(7, Spec({Str("f", kWild, "img-*-*.png")})).ok());
  // Six patterns: 1 and 7 share "$w0:f".
  EXPECT_TRUE(f.names().Find("$w5:f").has_value());
  EXPECT_FALSE(f.names().Find("$w6:f").has_value());

  EXPECT_EQ(f.MatchOne(Event({{"f", "img-1-2.png"}})), (Ids{1, 4, 6, 7}));
  EXPECT_EQ(f.MatchOne(Event({{"f", "img--.png"}})), (Ids{1, 4, 6, 7}));
  EXPECT_EQ(f.MatchOne(Event({{"f", "img-1.png"}})), (Ids{4, 6}));
  EXPECT_EQ(f.MatchOne(Event({{"f", "abab"}})), (Ids{2, 3, 4}));
  EXPECT_EQ(f.MatchOne(Event({{"f", "aba"}})), (Ids{3, 4}));
  // "a*ab*b": the middle "ab" may not overlap the first "a".
  EXPECT_EQ(f.MatchOne(Event({{"f", "aabb"}})), (Ids{3, 4, 5}));
  EXPECT_EQ(f.MatchOne(Event({{"f", "abb"}})), (Ids{3, 4}));
  EXPECT_EQ(f.MatchOne(Event({{"f", "x"}})), (Ids{3, 6}));
  EXPECT_EQ(f.MatchOne(Event({{"f", ""}})), (Ids{3, 4, 6}));
  EXPECT_EQ(f.MatchOne(Event({{"f", "#5"}})), (Ids{}));  // an int64
  EXPECT_EQ(f.MatchOne(Event({{"g", "x"}})), (Ids{}));   // absent
}

v1::Predicate StrBetween(const std::string& name, const std::string& low,
                         const std::string& high) {
  v1::Predicate p = Str(name, v1::OP_BETWEEN, low);
  p.set_string_upper(high);
  return p;
}

TEST(TypedAttributes, StringRangesHoldInByteOrder) {
  Front f;
  ASSERT_TRUE(f.Subscribe(1, Spec({Str("n", v1::OP_LT, "m")})).ok());
  ASSERT_TRUE(f.Subscribe(2, Spec({Str("n", v1::OP_GE, "b")})).ok());
  ASSERT_TRUE(f.Subscribe(3, Spec({StrBetween("n", "a", "abc")})).ok());
  ASSERT_TRUE(f.Subscribe(4, Spec({Str("n", v1::OP_GT, "\x7f")})).ok());
  ASSERT_TRUE(f.Subscribe(5, Spec({Str("n", v1::OP_LE, "")})).ok());
  ASSERT_TRUE(f.Subscribe(6, Spec({StrBetween("n", "ab", "ab")})).ok());
  EXPECT_EQ(f.MatchOne(Event({{"n", "ab"}})), (Ids{1, 3, 6}));
  EXPECT_EQ(f.MatchOne(Event({{"n", "abcd"}})), (Ids{1}));
  EXPECT_EQ(f.MatchOne(Event({{"n", "b"}})), (Ids{1, 2}));
  EXPECT_EQ(f.MatchOne(Event({{"n", "m"}})), (Ids{2}));
  EXPECT_EQ(f.MatchOne(Event({{"n", ""}})), (Ids{1, 5}));
  // Bytes compare unsigned: 0x80 and 0xff sort after every ASCII byte.
  EXPECT_EQ(f.MatchOne(Event({{"n", "\x80"}})), (Ids{2, 4}));
  EXPECT_EQ(f.MatchOne(Event({{"n", "\xff\xff"}})), (Ids{2, 4}));
  EXPECT_TRUE(f.MatchOne(Event({{"n", "#5"}})).empty());  // an int64
  for (const char* value : {"a", "aa", "abc", "abca", "l", "lzzz", "m\x01"}) {
    const v1::Event e = Event({{"n", value}});
    EXPECT_EQ(f.MatchOne(e), f.Expected(e)) << value;
  }
}

// Bounds nested ever closer to one neighbour use up the gap between two
// labels; the Subscribe that finds no room fails, naming the bound, and
// what was subscribed before still matches exactly.
TEST(TypedAttributes, AnExhaustedGapIsResourceExhausted) {
  Front f;
  ASSERT_TRUE(f.Subscribe(1, Spec({Str("n", v1::OP_LT, "a")})).ok());
  ASSERT_TRUE(f.Subscribe(2, Spec({Str("n", v1::OP_GE, "b")})).ok());
  std::string bound = "a";
  absl::Status status;
  matcher::SubscriptionId id = 3;
  for (; id < 300; ++id) {
    bound += "\xff";  // just below "b", ever closer
    status = f.Subscribe(id, Spec({Str("n", v1::OP_LE, bound)}));
    if (!status.ok()) break;
  }
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  EXPECT_GT(id, 100u);  // at least a hundred nested bounds fit
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("subscriptions[0].predicates[0].string_value: no "
                        "room to order the string bound"));
  for (const std::string& value :
       {std::string("a"), std::string("a\xff\xff"), std::string("b"),
        bound.substr(0, 60), std::string("a\xfe")}) {
    const v1::Event e = Event({{"n", value}});
    EXPECT_EQ(f.MatchOne(e), f.Expected(e));
  }
}

// A string range named after an event was encoded does not hold for it
// (the event's label could not know the new bound), and does afterwards.
TEST(TypedAttributes, StringRangesIgnoreEventsEncodedBeforeTheirBounds) {
  Front f;
  ASSERT_TRUE(f.Subscribe(1, Spec({Str("n", v1::OP_GE, "a")})).ok());
  v1::PublishRequest early;
  *early.add_events() = Event({{"n", "mango"}});
  const auto early_records = f.Encode(early);
  ASSERT_TRUE(f.Subscribe(2, Spec({Str("n", v1::OP_LT, "melon")})).ok());
  EXPECT_EQ(f.Match(early_records)[0], (Ids{1}));
  EXPECT_EQ(f.Match(f.Encode(early))[0], (Ids{1, 2}));
}

// An event encoded before a subscription first names its attribute must not
// match its NOT_EXISTS merely because the encoding could not carry it.
TEST(TypedAttributes, NotExistsIgnoresEventsEncodedBeforeItsName) {
  Front f;
  v1::PublishRequest early;
  *early.add_events() = Event({{"coupon", "x"}});
  *early.add_events() = Event({{"other", "#1"}});
  const auto early_records = f.Encode(early);
  ASSERT_TRUE(f.Subscribe(1, Spec({Bare("coupon", v1::OP_NOT_EXISTS)})).ok());
  const auto got = f.Match(early_records);
  EXPECT_TRUE(got[0].empty());
  EXPECT_TRUE(got[1].empty());  // concurrent with the Subscribe: left out
  const auto late = f.Match(f.Encode(early));
  EXPECT_TRUE(late[0].empty());
  EXPECT_EQ(late[1], Ids{1});
}

TEST(TypedAttributes, DistinctStringsAreBoundedPerAttribute) {
  Front f(/*max_strings=*/2);
  ASSERT_TRUE(f.Subscribe(1, Spec({Str("t", v1::OP_EQ, "a")})).ok());
  ASSERT_TRUE(f.Subscribe(2, Spec({Strs("t", v1::OP_IN, {"a", "b"})})).ok());
  const absl::Status s = f.Subscribe(3, Spec({Str("t", v1::OP_NE, "c")}));
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("subscriptions[0].predicates[0].string_value: "
                        "attribute \"t\" already has 2 distinct strings"));
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("the limit is 2 (--max_distinct_strings)"));
  // Another attribute, prefixes and range bounds count apart.
  EXPECT_TRUE(f.Subscribe(4, Spec({Str("u", v1::OP_EQ, "c")})).ok());
  EXPECT_TRUE(f.Subscribe(5, Spec({Str("t", v1::OP_PREFIX, "c")})).ok());
  EXPECT_TRUE(f.Subscribe(6, Spec({StrBetween("t", "d", "e")})).ok());
  // Suffixes of one length count apart from prefixes of that length.
  EXPECT_TRUE(f.Subscribe(8, Spec({Str("t", v1::OP_SUFFIX, "c")})).ok());
  EXPECT_TRUE(f.Subscribe(9, Spec({Str("t", v1::OP_SUFFIX, "d")})).ok());
  EXPECT_TRUE(f.Subscribe(10, Spec({Str("t", v1::OP_SUFFIX, "xy")})).ok());
  const absl::Status suffixes =
      f.Subscribe(11, Spec({Str("t", v1::OP_SUFFIX, "e")}));
  EXPECT_EQ(suffixes.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(suffixes.message()),
              HasSubstr("subscriptions[0].predicates[0].string_value: "
                        "attribute \"t\" already has 2 distinct suffixes of "
                        "this length"));
  // Case folds count apart too; "Q" and "q" are one fold.
  const v1::Op kIcase = v1::OP_EQUALS_IGNORE_CASE;
  EXPECT_TRUE(f.Subscribe(12, Spec({Str("t", kIcase, "Q")})).ok());
  EXPECT_TRUE(f.Subscribe(13, Spec({Str("t", kIcase, "q")})).ok());
  EXPECT_TRUE(f.Subscribe(14, Spec({Str("t", kIcase, "r")})).ok());
  const absl::Status folds = f.Subscribe(15, Spec({Str("t", kIcase, "S")}));
  EXPECT_EQ(folds.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(folds.message()),
              HasSubstr("attribute \"t\" already has 2 distinct case folds"));
  const absl::Status bounds = f.Subscribe(7, Spec({Str("t", v1::OP_GT, "f")}));
  EXPECT_EQ(bounds.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(bounds.message()),
              HasSubstr("already has 2 distinct string range bounds"));
  v1::Stats stats;
  f.typed().FillStats(&stats);
  ASSERT_EQ(stats.attributes_size(), 2);
  EXPECT_EQ(stats.attributes(0).name(), "t");
  EXPECT_EQ(stats.attributes(0).distinct_strings(), 2u);
  EXPECT_EQ(stats.attributes(0).distinct_prefixes(), 1u);
  EXPECT_EQ(stats.attributes(0).prefix_lengths(), 1u);
  EXPECT_EQ(stats.attributes(0).range_bounds(), 2u);
  EXPECT_EQ(stats.attributes(0).distinct_suffixes(), 3u);
  EXPECT_EQ(stats.attributes(0).distinct_folded(), 2u);
  EXPECT_EQ(stats.attributes(0).suffix_lengths(), 2u);
  EXPECT_EQ(stats.attributes(1).name(), "u");
  EXPECT_EQ(stats.attributes(1).distinct_strings(), 1u);
}

// A string whose hash another string holds gets the next free code, and
// both compare exactly.
TEST(TypedAttributes, HashCollisionsMoveTheLaterString) {
  Front f;
  ASSERT_TRUE(f.Subscribe(1, Spec({Str("t", v1::OP_EQ, "z")})).ok());
  const uint32_t strings = *f.names().Find("$s:t");
  // "b" takes the code that is "a"'s hash, as if they collided.
  ASSERT_TRUE(f.typed()
                  .RestoreString(strings, static_cast<int64_t>(Hash64("a")),
                                 "b")
                  .ok());
  EXPECT_EQ(f.typed()
                .RestoreString(strings, static_cast<int64_t>(Hash64("a")), "c")
                .code(),
            absl::StatusCode::kDataLoss);
  ASSERT_TRUE(f.Subscribe(2, Spec({Str("t", v1::OP_EQ, "a")})).ok());
  ASSERT_TRUE(f.Subscribe(3, Spec({Str("t", v1::OP_NE, "a")})).ok());
  EXPECT_EQ(f.MatchOne(Event({{"t", "a"}})), (Ids{2}));
  EXPECT_EQ(f.MatchOne(Event({{"t", "b"}})), (Ids{3}));
  EXPECT_EQ(f.typed().DistinctStrings(strings), 3u);
}

// Recovery: the derived names come back from the Interner and the strings
// with their codes, and matching is as before.
TEST(TypedAttributes, RestoredFromNamesAndStrings) {
  Front f;
  std::vector<std::tuple<uint32_t, int64_t, std::string>> strings;
  f.typed().SetOnNewString(
      [&](uint32_t attribute, int64_t code, absl::string_view bytes) {
        strings.emplace_back(attribute, code, std::string(bytes));
      });
  v1::SubscribeRequest request;
  *request.add_subscriptions() =
      Spec({Strs("t", v1::OP_IN, {"a", "b"}), Str("p", v1::OP_PREFIX, "/x"),
            Bare("c", v1::OP_NOT_EXISTS), Str("t", v1::OP_LT, "bb"),
            StrBetween("p", "/a", "/z"), Str("p", v1::OP_SUFFIX, "y"),
            Str("t", v1::OP_EQUALS_IGNORE_CASE, "B"),
            Str("p", v1::OP_NOT_PREFIX, "/a"),
            Str("p", v1::OP_NOT_SUFFIX, "z"),
            Str("ip", v1::OP_CIDR, "10.0.0.0/8"),
            Str("ip6", v1::OP_CIDR, "2001:db8::1:0:0:0/80"),
            Str("p", v1::OP_WILDCARD, "/x*y*y"),
            Str("q", v1::OP_NOT_WILDCARD, "n*o")});
  Interner subscribers(4);
  std::vector<SubscriptionInput> built;
  ASSERT_TRUE(BuildSubscriptions(request, &f.typed(), &subscribers, &built)
                  .ok());
  // 2 codes, a prefix, 3 order bounds, a suffix, a case fold, an excluded
  // prefix and suffix, two patterns
  ASSERT_EQ(strings.size(), 12u);

  Interner names(1 << 16);
  for (uint32_t id = 0; id < f.names().size(); ++id) {
    ASSERT_EQ(*names.Intern(f.names().Name(id)), id);
  }
  TypedAttributes restored(&names, 1000);
  restored.RestoreNames();
  for (const auto& [attribute, code, bytes] : strings) {
    ASSERT_TRUE(restored.RestoreString(attribute, code, bytes).ok());
  }
  matcher::Index index;
  ASSERT_TRUE(index.Add(1, built[0].predicates).ok());
  v1::PublishRequest publish;
  // Each event but the first breaks one predicate.
  auto event = [&](const std::string& name, const std::string& value) {
    std::vector<std::pair<std::string, std::string>> attributes = {
        {"t", "b"},      {"p", "/xyy"},  {"ip", "10.9.9.9"},
        {"ip6", "2001:db8::1:2:3:4"},    {"q", "nx"}};
    for (auto& [n, v] : attributes) {
      if (n == name) v = value;
    }
    if (name == "c") attributes.emplace_back("c", value);
    return Event(attributes);
  };
  *publish.add_events() = event("", "");
  *publish.add_events() = event("c", "#1");
  *publish.add_events() = event("t", "c");
  *publish.add_events() = event("p", "/xz");
  *publish.add_events() = event("ip", "11.0.0.1");
  *publish.add_events() = event("ip6", "2001:db8::2:0:0:0");
  *publish.add_events() = event("p", "/xy");   // the pattern "/x*y*y"
  *publish.add_events() = event("q", "nxo");   // anything-but "n*o"
  *publish.add_events() = event("q", "#3");    // not a string
  std::vector<std::vector<matcher::AttributeValue>> records;
  BuildEvents(publish, restored, &records);
  std::vector<matcher::EventView> views(records.begin(), records.end());
  std::vector<std::vector<matcher::SubscriptionId>> got;
  index.MatchCohort(views, &got);
  EXPECT_EQ(got[0], Ids{1});
  EXPECT_TRUE(got[1].empty());
  EXPECT_TRUE(got[2].empty());
  EXPECT_TRUE(got[3].empty());  // the suffix "y" no longer holds
  EXPECT_TRUE(got[4].empty());  // nor the IPv4 network
  EXPECT_TRUE(got[5].empty());  // nor the IPv6 one
  EXPECT_TRUE(got[6].empty());  // nor the pattern
  EXPECT_TRUE(got[7].empty());  // nor its anything-but
  EXPECT_TRUE(got[8].empty());
}

// The differential test: random typed subscriptions (every operator, int64
// and string operands on the same names) and random
// events (either type per attribute, or none), subscribed, removed and
// matched in cohorts, against the API's rules on the messages.
v1::Predicate Dbl(const std::string& name, v1::Op op, double value) {
  v1::Predicate p = Bare(name, op);
  p.set_double_value(value);
  return p;
}

v1::Event Numbers(std::vector<std::pair<std::string, double>> attributes) {
  v1::Event e;
  for (const auto& [name, value] : attributes) {
    v1::Attribute* a = e.add_attributes();
    a->set_name(name);
    a->set_double_value(value);
  }
  return e;
}

TEST(TypedAttributes, NumbersCompareExactlyAcrossInt64AndDouble) {
  Front f;
  // The issue's examples: price <= 20 holds for 19.99 and for 20; x = 3
  // for 3.0.
  ASSERT_TRUE(f.Subscribe(1, Spec({Int("price", v1::OP_LE, 20)})).ok());
  ASSERT_TRUE(f.Subscribe(2, Spec({Int("x", v1::OP_EQ, 3)})).ok());
  ASSERT_TRUE(f.Subscribe(3, Spec({Int("price", v1::OP_LT, 20)})).ok());
  ASSERT_TRUE(f.Subscribe(4, Spec({Int("price", v1::OP_GT, 19)})).ok());
  ASSERT_TRUE(f.Subscribe(5, Spec({Dbl("price", v1::OP_LE, 19.99)})).ok());
  ASSERT_TRUE(f.Subscribe(6, Spec({Dbl("price", v1::OP_GT, 19.99)})).ok());
  ASSERT_TRUE(f.Subscribe(7, Spec({Int("price", v1::OP_NE, 19)})).ok());
  ASSERT_TRUE(f.Subscribe(8, Spec({Dbl("price", v1::OP_EQ, 19.99)})).ok());
  EXPECT_EQ(f.MatchOne(Numbers({{"price", 19.99}})), Ids({1, 3, 4, 5, 7, 8}));
  EXPECT_EQ(f.MatchOne(Numbers({{"price", 20}})), Ids({1, 4, 6, 7}));
  EXPECT_EQ(f.MatchOne(Event({{"price", "#20"}})), Ids({1, 4, 6, 7}));
  EXPECT_EQ(f.MatchOne(Numbers({{"price", 19}})), Ids({1, 3, 5}));
  EXPECT_EQ(f.MatchOne(Numbers({{"price", 19.995}})), Ids({1, 3, 4, 6, 7}));
  EXPECT_EQ(f.MatchOne(Numbers({{"price", 20.5}})), Ids({4, 6, 7}));
  EXPECT_EQ(f.MatchOne(Numbers({{"x", 3.0}})), Ids({2}));
  EXPECT_EQ(f.MatchOne(Numbers({{"x", 3.0000000000000004}})), Ids({}));
  EXPECT_EQ(f.MatchOne(Event({{"price", "19.99"}})), Ids({}));  // a string

  // Edges, each against the API's rules (api_reference.h): -0.0,
  // subnormals, 2^53 +- 1, int64 extremes next to doubles.
  Front g;
  const int64_t two53 = int64_t{1} << 53;
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  const std::vector<v1::Predicate> operands = {
      Int("n", v1::OP_EQ, 0),          Dbl("n", v1::OP_LT, -0.0),
      Dbl("n", v1::OP_LE, 5e-324),     Dbl("n", v1::OP_GT, -5e-324),
      Int("n", v1::OP_EQ, two53 + 1),  Int("n", v1::OP_GE, two53 + 1),
      Dbl("n", v1::OP_EQ, 0x1p53),     Int("n", v1::OP_LT, two53),
      Int("n", v1::OP_LE, kMin),       Int("n", v1::OP_GE, kMax),
      Dbl("n", v1::OP_LT, -0x1p63),    Dbl("n", v1::OP_GE, -0x1p63),
      Dbl("n", v1::OP_GT, 0x1p62 + 0.0), Dbl("n", v1::OP_LT, 0.5),
      Dbl("n", v1::OP_GT, -0.5),       Dbl("n", v1::OP_NE, 0.5),
      Int("n", v1::OP_GT, kMax - 1),   Int("n", v1::OP_LT, kMin + 1),
  };
  matcher::SubscriptionId id = 1;
  for (const v1::Predicate& p : operands) {
    ASSERT_TRUE(g.Subscribe(id++, Spec({p})).ok()) << p.ShortDebugString();
  }
  v1::Predicate between;
  between.set_attribute("n");
  between.set_op(v1::OP_BETWEEN);
  between.set_double_value(-0.25);
  between.set_upper(two53);
  ASSERT_TRUE(g.Subscribe(id++, Spec({between})).ok());
  v1::Predicate mixed;
  mixed.set_attribute("n");
  mixed.set_op(v1::OP_IN);
  for (double d : {0.5, -0.0, 0x1p53 - 1, -1.75}) {
    mixed.mutable_double_values()->add_values(d);
  }
  ASSERT_TRUE(g.Subscribe(id++, Spec({mixed})).ok());
  std::vector<v1::Event> events;
  for (double d : {0.0, -0.0, 5e-324, -5e-324, 0.5, -0.5, 0x1p53, 0x1p62,
                   -0x1p63, 0x1p63 - 1024, -1.75, 0x1p52 + 0.5, 1e-300}) {
    events.push_back(Numbers({{"n", d}}));
  }
  for (int64_t n : {int64_t{0}, two53 - 1, two53, two53 + 1, kMin, kMin + 1,
                    kMax - 1, kMax, int64_t{1} << 62}) {
    v1::Event e;
    v1::Attribute* a = e.add_attributes();
    a->set_name("n");
    a->set_value(n);
    events.push_back(e);
  }
  for (const v1::Event& e : events) {
    EXPECT_EQ(g.MatchOne(e), g.Expected(e)) << e.ShortDebugString();
  }
  // Spot checks of what the rules say, so that the reference is held too.
  EXPECT_EQ(g.Expected(Numbers({{"n", -0.0}})),
            g.Expected(Numbers({{"n", 0.0}})));
  v1::Event two53_plus_one;
  v1::Attribute* a = two53_plus_one.add_attributes();
  a->set_name("n");
  a->set_value(two53 + 1);
  EXPECT_THAT(g.MatchOne(two53_plus_one), ::testing::Contains(5));
  EXPECT_THAT(g.MatchOne(two53_plus_one),
              ::testing::Not(::testing::Contains(7)));
}

// Random draws for the randomized tests: values from small pools (so
// that matches are common) and predicates of every op over `names`.
class Draws {
 public:
  Draws(uint64_t seed, std::vector<std::string> names)
      : state_(seed), names_(std::move(names)) {}

  uint64_t next(uint64_t n) {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (z ^ (z >> 31)) % n;
  }

  static constexpr const char* kStrings[] = {
      "",           "a",       "ab",         "abc",         "b",
      "ba",         "\xff",   "a\xff",     "abd",         "A",
      "aB",         "\xc3\x89", "\xc3\xa9", "10.1.2.3",   "10.200.0.1",
      "2001:db8::1", "2001:db8::8000:0:0:1", "::ffff:10.1.2.3",
      "2001:db9::8000:0:0:1"};
  static constexpr const char* kNetworks[] = {
      "10.0.0.0/8",  "10.1.0.0/16",   "0.0.0.0/0",       "10.1.2.3",
      "::/0",        "2001:db8::/32", "2001:db8::1/128", "2001:db8::/64",
      "2001:db8::8000:0:0:0/65"};
  // One star or none, and several (issue 44's candidates by their ends).
  static constexpr const char* kPatterns[] = {
      "*",     "a*",    "*b",     "a*b",   "a*a",    "ab",   "\\*",
      "*\xff", "b\\**", "*c",    "a*b*",  "*a*b",   "a*a*a", "*b*",
      "a*\xff*b", "*a*a*", "\\**\\*", "ab*a*b"};
  std::string string_value() { return std::string(kStrings[next(19)]); }
  int64_t int_value() { return static_cast<int64_t>(next(7)) - 3; }
  // Numbers with fractions between the integers above, and integral
  // doubles (3.0, -0.0) that must act as the int64s.
  double double_value() {
    static constexpr double kDoubles[] = {-2.5, -1.5, -0.5, 0.5,  1.25,
                                          1.5,  2.75, 3.0,  -0.0, -3.25};
    return kDoubles[next(10)];
  }
  // A literal now and then: true, false or null.
  v1::Literal literal() {
    return static_cast<v1::Literal>(v1::LITERAL_TRUE + next(3));
  }

  v1::Predicate predicate() {
    v1::Predicate p;
    p.set_attribute(names_[next(names_.size())]);
    if (next(10) == 0) {  // EQ or NE on a literal
      p.set_op(next(2) == 0 ? v1::OP_EQ : v1::OP_NE);
      p.set_literal_value(literal());
      return p;
    }
    const bool strings = next(2) == 0;
    static const v1::Op kOps[] = {
        v1::OP_EQ,     v1::OP_NE,     v1::OP_LT,     v1::OP_LE,
        v1::OP_GT,     v1::OP_GE,     v1::OP_BETWEEN, v1::OP_IN,
        v1::OP_NOT_IN, v1::OP_PREFIX, v1::OP_EXISTS, v1::OP_NOT_EXISTS,
        v1::OP_SUFFIX, v1::OP_EQUALS_IGNORE_CASE, v1::OP_NOT_PREFIX,
        v1::OP_NOT_SUFFIX, v1::OP_CIDR, v1::OP_WILDCARD,
        v1::OP_NOT_EQUALS_IGNORE_CASE, v1::OP_NOT_WILDCARD,
        v1::OP_PREFIX_IGNORE_CASE, v1::OP_SUFFIX_IGNORE_CASE};
    v1::Op op = kOps[next(22)];
    const bool excluded =
        op == v1::OP_NOT_PREFIX || op == v1::OP_NOT_SUFFIX;
    const bool folds = op == v1::OP_EQUALS_IGNORE_CASE ||
                       op == v1::OP_NOT_EQUALS_IGNORE_CASE ||
                       op == v1::OP_PREFIX_IGNORE_CASE ||
                       op == v1::OP_SUFFIX_IGNORE_CASE;
    if (!strings && (op == v1::OP_PREFIX || op == v1::OP_SUFFIX || folds ||
                     excluded)) {
      op = v1::OP_NE;
    }
    p.set_op(op);
    if (op == v1::OP_CIDR) {  // strings or not
      p.set_string_value(kNetworks[next(9)]);
      return p;
    }
    if (op == v1::OP_WILDCARD || op == v1::OP_NOT_WILDCARD) {
      p.set_string_value(kPatterns[next(18)]);
      return p;
    }
    if ((op == v1::OP_EQUALS_IGNORE_CASE ||
         op == v1::OP_NOT_EQUALS_IGNORE_CASE) &&
        next(2) == 0) {  // a list
      for (uint64_t n = 1 + next(3); n > 0; --n) {
        p.mutable_string_values()->add_values(string_value());
      }
      return p;
    }
    if (op == v1::OP_EXISTS || op == v1::OP_NOT_EXISTS) return p;
    // Numbers: now and then a double operand (with a fraction or not).
    const bool doubles = !strings && next(3) == 0;
    if (op == v1::OP_IN || op == v1::OP_NOT_IN) {
      for (uint64_t n = 1 + next(3); n > 0; --n) {
        if (strings) {
          p.mutable_string_values()->add_values(string_value());
        } else if (doubles) {
          p.mutable_double_values()->add_values(
              next(2) == 0 ? double_value()
                           : static_cast<double>(int_value()));
        } else {
          p.mutable_int64_values()->add_values(int_value());
        }
      }
      return p;
    }
    if (strings) {
      std::string low = string_value();
      while (excluded && low.empty()) low = string_value();
      if (op == v1::OP_BETWEEN) {
        std::string high = string_value();
        if (high < low) std::swap(low, high);
        p.set_string_upper(high);
      }
      p.set_string_value(low);
      return p;
    }
    if (doubles) {
      double low = double_value();
      if (op == v1::OP_BETWEEN) {
        // The upper bound an int64 or a double, not below the lower one.
        const int64_t high = int_value();
        if (next(2) == 0 && high >= low) {
          p.set_upper(high);
        } else {
          double d = double_value();
          if (d < low) std::swap(d, low);
          p.set_double_upper(d);
        }
      }
      p.set_double_value(low);
      return p;
    }
    p.set_value(int_value());
    if (op == v1::OP_BETWEEN) {
      if (next(3) == 0 && double_value() >= p.value()) {
        // An int64 lower bound, a double upper one.
        double d = double_value();
        while (d < p.value()) d += 1;
        p.set_double_upper(d);
      } else {
        p.set_upper(p.value() + next(3));
      }
    }
    return p;
  }

 private:
  uint64_t state_;
  std::vector<std::string> names_;
};

// One round of churn: 150 random subscriptions of 1 to 3 predicates added
// (ids from *id on), one in five with "or" (0 to 2 predicates and 1 or 2
// groups of 2 or 3 alternatives of 1 or 2 predicates), then 40 of the live
// ones removed.
void Churn(Front* f, Draws* draw, matcher::SubscriptionId* id,
           std::vector<matcher::SubscriptionId>* live) {
  for (int i = 0; i < 150; ++i) {
    const bool any_of = draw->next(5) == 0;
    std::vector<v1::Predicate> ps;
    for (uint64_t n = any_of ? draw->next(3) : 1 + draw->next(3); n > 0; --n) {
      ps.push_back(draw->predicate());
    }
    v1::SubscriptionSpec spec = Spec(ps);
    for (uint64_t g = any_of ? 1 + draw->next(2) : 0; g > 0; --g) {
      v1::AnyOf* group = spec.add_any_of();
      for (uint64_t k = 2 + draw->next(2); k > 0; --k) {
        v1::Conjunction* alternative = group->add_alternatives();
        for (uint64_t n = 1 + draw->next(2); n > 0; --n) {
          *alternative->add_predicates() = draw->predicate();
        }
      }
    }
    const absl::Status s = f->Subscribe(*id, spec);
    ASSERT_TRUE(s.ok()) << s;
    live->push_back((*id)++);
  }
  for (int i = 0; i < 40 && !live->empty(); ++i) {
    const size_t at = draw->next(live->size());
    f->Unsubscribe((*live)[at]);
    live->erase(live->begin() + at);
  }
}

TEST(TypedAttributes, RandomizedAgainstTheApiRules) {
  static const char* const kNames[] = {"a", "b", "c", "d"};
  uint64_t pairs = 0, matches = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Draws draw(seed, {"a", "b", "c", "d"});
    Front f;
    matcher::SubscriptionId id = 1;
    std::vector<matcher::SubscriptionId> live;
    for (int round = 0; round < 6; ++round) {
      ASSERT_NO_FATAL_FAILURE(Churn(&f, &draw, &id, &live));
      v1::PublishRequest request;
      for (int e = 0; e < 200; ++e) {
        v1::Event* event = request.add_events();
        for (const char* name : kNames) {
          const uint64_t kind = draw.next(7);
          if (kind == 0 || kind == 1) continue;
          v1::Attribute* a = event->add_attributes();
          a->set_name(name);
          if (kind == 2) {
            a->set_literal_value(draw.literal());
          } else if (kind <= 4) {
            if (draw.next(3) == 0) {
              a->set_double_value(draw.double_value());
            } else {
              a->set_value(draw.int_value());
            }
          } else {
            a->set_string_value(draw.string_value());
          }
        }
      }
      const auto got = f.Match(f.Encode(request));
      for (int e = 0; e < request.events_size(); ++e) {
        const Ids want = f.Expected(request.events(e));
        ASSERT_EQ(got[e], want)
            << "seed " << seed << " round " << round << ": "
            << request.events(e).ShortDebugString();
        pairs += live.size();
        matches += want.size();
      }
    }
  }
  std::cout << "checked " << pairs << " (subscription, event) pairs, "
            << matches << " matches\n";
  EXPECT_GE(pairs, 1'000'000u);
  EXPECT_GT(matches, pairs / 100);
}

// JSON events (Event.json): random documents with nesting, arrays of
// scalars, arrays of arrays and arrays of objects, literals, ints, doubles
// and strings, beside attributes now and then, against ApiMatchesJson
// (api_reference.h, which reads the document its own way).
class JsonDraws {
 public:
  explicit JsonDraws(Draws* draw) : draw_(*draw) {}

  std::string Scalar() {
    switch (draw_.next(8)) {
      case 0:
      case 1:
        return absl::StrCat(draw_.int_value());
      case 2:
        return absl::StrFormat("%.17g", draw_.double_value());
      case 3:
        return std::string(kLiterals[draw_.next(3)]);
      default: {
        // The pool's strings that are UTF-8 (a document must be).
        std::string s = draw_.string_value();
        while (s.find('\xff') != std::string::npos) s = draw_.string_value();
        return absl::StrCat("\"", s, "\"");
      }
    }
  }
  // A scalar, or now and then an array of 0 to 3 of them (an element
  // itself an array one time in five).
  std::string Value() {
    if (draw_.next(3) != 0) return Scalar();
    std::vector<std::string> parts;
    for (uint64_t n = draw_.next(4); n > 0; --n) {
      parts.push_back(draw_.next(5) == 0 ? absl::StrCat("[", Scalar(), "]")
                                         : Scalar());
    }
    return absl::StrCat("[", absl::StrJoin(parts, ","), "]");
  }
  std::string Object() {
    std::vector<std::string> fields;
    for (const char* key : {"p", "q"}) {
      if (draw_.next(3) != 0) {
        fields.push_back(absl::StrCat("\"", key, "\":", Value()));
      }
    }
    return absl::StrCat("{", absl::StrJoin(fields, ","), "}");
  }
  // A document over a, b, c, o.p, o.q (o an object or an array of them),
  // and a key no attribute name can be; `skip` is left out (an
  // attribute's name).
  std::string Document(const std::string& skip) {
    std::vector<std::string> fields;
    for (const char* key : {"a", "b", "c"}) {
      if (key != skip && draw_.next(4) != 0) {
        fields.push_back(absl::StrCat("\"", key, "\":", Value()));
      }
    }
    switch (draw_.next(3)) {
      case 0:
        fields.push_back(absl::StrCat("\"o\":", Object()));
        break;
      case 1: {
        std::vector<std::string> objects;
        for (uint64_t n = draw_.next(4); n > 0; --n) {
          objects.push_back(Object());
        }
        fields.push_back(
            absl::StrCat("\"o\":[", absl::StrJoin(objects, ","), "]"));
        break;
      }
      default:
        break;
    }
    if (draw_.next(4) == 0) fields.push_back("\"x y\":1");
    return absl::StrCat("{", absl::StrJoin(fields, ","), "}");
  }

 private:
  static constexpr const char* kLiterals[] = {"true", "false", "null"};
  Draws& draw_;
};

TEST(TypedAttributes, JsonEventsRandomizedAgainstTheApiRules) {
  uint64_t pairs = 0, matches = 0, records = 0, events = 0;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    Draws draw(seed, {"a", "b", "c", "d", "o.p", "o.q"});
    JsonDraws json(&draw);
    Front f;
    matcher::SubscriptionId id = 1;
    std::vector<matcher::SubscriptionId> live;
    for (int round = 0; round < 6; ++round) {
      ASSERT_NO_FATAL_FAILURE(Churn(&f, &draw, &id, &live));
      v1::PublishRequest request;
      for (int e = 0; e < 200; ++e) {
        v1::Event* event = request.add_events();
        std::string skip;
        if (draw.next(4) == 0) {  // an attribute beside the document
          skip = draw.next(2) == 0 ? "c" : "d";
          v1::Attribute* a = event->add_attributes();
          a->set_name(skip);
          a->set_value(draw.int_value());
        }
        event->set_json(json.Document(skip));
      }
      const auto got = f.MatchJson(request);
      ASSERT_TRUE(got.ok()) << got.status();
      for (int e = 0; e < request.events_size(); ++e) {
        const ApiJsonEvent reference(request.events(e));
        Ids want;
        for (const auto& [sid, spec] : f.specs()) {
          if (reference.Matches(spec)) want.push_back(sid);
        }
        ASSERT_EQ((*got)[e], want)
            << "seed " << seed << " round " << round << ": "
            << request.events(e).ShortDebugString();
        pairs += live.size();
        matches += want.size();
      }
      events += request.events_size();
    }
    records += f.records();
  }
  std::cout << "checked " << pairs << " (subscription, JSON event) pairs, "
            << matches << " matches, " << records << " records for "
            << events << " events\n";
  EXPECT_GE(pairs, 1'000'000u);
  EXPECT_GT(matches, pairs / 100);
  EXPECT_GT(records, events * 3 / 2);  // arrays did combine
}

}  // namespace
}  // namespace service
}  // namespace cohort
