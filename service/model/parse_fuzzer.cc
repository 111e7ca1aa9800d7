// Fuzz target: the CLI's subscription and event parsers (parse.h), and the
// Event Ruler pattern parser (pattern.h), on arbitrary text. The first byte
// picks subscription or event; a subscription text whose first character
// other than whitespace is '{' is a pattern, as ParseFilter reads it. The
// rest is the text. Properties checked (a failure aborts):
//   - an error is INVALID_ARGUMENT with the three-line message parse.h
//     describes ("column N: ...", the input, the carets), or for a pattern
//     one line starting "pattern: ";
//   - a subscription is a spec (ParseSubscriptionSpec, ParsePatternSpec)
//     with a predicate or a group, every group of two alternatives or
//     more, every alternative of one predicate or more;
//   - what parses is what the server accepts: the spec (or the attributes)
//     passes the server's ValidateSubscribe (ValidatePublish) with limits
//     large enough for its expanded conjunctions, string lengths and list
//     sizes (the parser applies the API's rules), if its groups expand
//     into at most kMaxOrExpansionLimit conjunctions (else it is
//     RESOURCE_EXHAUSTED), except the operands only the server checks
//     (CIDR networks, wildcard patterns, empty excluded prefixes and
//     suffixes), which it must refuse naming their string_value;
//   - printing the result back in the grammar's canonical form
//     (FormatSubscription, FormatEvent) and parsing it again gives the same
//     messages (for a pattern too: what it lowers to, "or" groups
//     included, reads back through the grammar).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "filter/parse.h"
#include "filter/pattern.h"
#include "proto/cohort/v1/pubsub.pb.h"
#include "service/model/limits.h"
#include "service/model/validation.h"
#include "tools/fuzz/byte_reader.h"
#include "tools/fuzz/fail.h"

namespace cohort {
namespace service {
namespace {

[[noreturn]] void Fail(absl::string_view what, absl::string_view text) {
  fuzz::Fail(absl::StrCat(what, "\n  input: \"", absl::CHexEscape(text), "\""));
}

void CheckError(const absl::Status& status, absl::string_view text) {
  const std::vector<absl::string_view> lines =
      absl::StrSplit(status.message(), '\n');
  if (status.code() != absl::StatusCode::kInvalidArgument ||
      lines.size() != 3 || !absl::StartsWith(lines[0], "column ") ||
      !absl::StartsWith(lines[1], "  ") ||
      lines[2].find('^') == absl::string_view::npos) {
    Fail(absl::StrCat("malformed error: ", status.ToString()), text);
  }
}

// Parses `canonical` (the result printed back) with `parse` and checks it
// gives the same messages as `parsed`.
template <typename Message, typename Parser>
void CheckReparse(const std::vector<Message>& parsed,
                  const std::string& canonical, Parser parse,
                  absl::string_view text) {
  absl::StatusOr<std::vector<Message>> again = parse(canonical);
  if (!again.ok() || again->size() != parsed.size()) {
    Fail(absl::StrCat("canonical form does not parse: ", canonical), text);
  }
  for (size_t i = 0; i < parsed.size(); ++i) {
    if ((*again)[i].SerializeAsString() != parsed[i].SerializeAsString()) {
      Fail(absl::StrCat("canonical form parses differently: ", canonical),
           text);
    }
  }
}

// Checks that the server refuses the predicate `p`, whose operand only it
// checks, naming its string_value.
void CheckRefusedAlone(const v1::Predicate& p, const service::Limits& limits,
                       absl::string_view text) {
  v1::SubscribeRequest alone;
  v1::SubscriptionSpec* one = alone.add_subscriptions();
  one->set_subscriber("fuzz");
  *one->add_predicates() = p;
  const absl::Status s = service::ValidateSubscribe(alone, limits);
  if (s.code() != absl::StatusCode::kInvalidArgument ||
      !absl::StrContains(s.message(), "predicates[0].string_value")) {
    Fail(absl::StrCat("the server does not refuse a bad operand: ",
                      s.ToString()),
         text);
  }
}

// `predicates` without those only the server checks (each checked to be
// refused alone).
template <typename Predicates>
void KeepValid(Predicates* predicates, const service::Limits& limits,
               absl::string_view text) {
  Predicates kept;
  for (const v1::Predicate& p : *predicates) {
    if (CheckOperandRules(p).ok()) {
      *kept.Add() = p;
    } else {
      CheckRefusedAlone(p, limits, text);
    }
  }
  predicates->Swap(&kept);
}

// The spec's groups' expansion (the product of their sizes), at most
// kMaxOrExpansionLimit + 1, and its largest expanded conjunction.
void Expansion(const v1::SubscriptionSpec& spec, size_t* conjunctions,
               size_t* largest) {
  *conjunctions = 1;
  *largest = spec.predicates_size();
  for (const v1::AnyOf& group : spec.any_of()) {
    *conjunctions = std::min<size_t>(
        *conjunctions * group.alternatives_size(), kMaxOrExpansionLimit + 1);
    size_t most = 0;
    for (const v1::Conjunction& c : group.alternatives()) {
      most = std::max<size_t>(most, c.predicates_size());
    }
    *largest += most;
  }
}

void CheckSubscription(absl::string_view text) {
  const bool pattern = filter::IsPattern(text);
  absl::StatusOr<v1::SubscriptionSpec> parsed =
      pattern ? filter::ParsePatternSpec(text)
              : filter::ParseSubscriptionSpec(text);
  if (!parsed.ok()) {
    if (!pattern) return CheckError(parsed.status(), text);
    if (parsed.status().code() != absl::StatusCode::kInvalidArgument ||
        !absl::StartsWith(parsed.status().message(), "pattern: ") ||
        absl::StrContains(parsed.status().message(), "\n")) {
      Fail(absl::StrCat("malformed pattern error: ",
                        parsed.status().ToString()),
           text);
    }
    return;
  }
  if (parsed->predicates().empty() && parsed->any_of().empty()) {
    Fail("parsed no predicates and no groups", text);
  }
  for (const v1::AnyOf& group : parsed->any_of()) {
    if (group.alternatives_size() < 2) Fail("a group of one alternative", text);
    for (const v1::Conjunction& c : group.alternatives()) {
      if (c.predicates().empty()) Fail("an empty alternative", text);
    }
  }
  if (!parsed->subscriber().empty()) Fail("a subscriber was set", text);
  // No string or list can be longer than the input.
  service::Limits limits;
  limits.max_string_bytes = text.size();
  limits.max_set_size = text.size();
  size_t conjunctions = 0;
  Expansion(*parsed, &conjunctions, &limits.max_predicates);
  limits.max_or_expansion = kMaxOrExpansionLimit;
  // Everything that parses, the string ranges included, validates, but
  // for the operands only the server checks (those it must refuse).
  v1::SubscribeRequest request;
  v1::SubscriptionSpec* spec = request.add_subscriptions();
  *spec = *parsed;
  spec->set_subscriber("fuzz");
  KeepValid(spec->mutable_predicates(), limits, text);
  v1::SubscriptionSpec kept_groups;
  for (v1::AnyOf& group : *spec->mutable_any_of()) {
    v1::AnyOf* kept = kept_groups.add_any_of();
    for (v1::Conjunction& c : *group.mutable_alternatives()) {
      KeepValid(c.mutable_predicates(), limits, text);
      if (!c.predicates().empty()) *kept->add_alternatives() = c;
    }
    if (kept->alternatives().empty()) {
      kept_groups.mutable_any_of()->RemoveLast();
    }
  }
  spec->mutable_any_of()->Swap(kept_groups.mutable_any_of());
  if (!spec->predicates().empty() || !spec->any_of().empty()) {
    Expansion(*spec, &conjunctions, &limits.max_predicates);
    const absl::Status s = service::ValidateSubscribe(request, limits);
    if (conjunctions <= kMaxOrExpansionLimit && !s.ok()) {
      Fail(absl::StrCat("the server refuses what parsed: ", s.ToString()),
           text);
    }
    if (conjunctions > kMaxOrExpansionLimit &&
        s.code() != absl::StatusCode::kResourceExhausted) {
      Fail(absl::StrCat("the server does not refuse an expansion past ",
                        kMaxOrExpansionLimit, ": ", s.ToString()),
           text);
    }
  }
  const std::string canonical = filter::FormatSubscription(*parsed);
  absl::StatusOr<v1::SubscriptionSpec> again =
      filter::ParseSubscriptionSpec(canonical);
  if (!again.ok()) {
    Fail(absl::StrCat("canonical form does not parse: ", canonical), text);
  }
  if (again->SerializeAsString() != parsed->SerializeAsString()) {
    Fail(absl::StrCat("canonical form parses differently: ", canonical),
         text);
  }
}

void CheckEvent(absl::string_view text) {
  absl::StatusOr<std::vector<v1::Attribute>> parsed = filter::ParseEvent(text);
  if (!parsed.ok()) return CheckError(parsed.status(), text);
  if (parsed->empty()) Fail("parsed no attributes", text);
  v1::PublishRequest request;
  v1::Event* event = request.add_events();
  for (const v1::Attribute& a : *parsed) *event->add_attributes() = a;
  service::Limits limits;
  limits.max_event_attributes = parsed->size();
  limits.max_string_bytes = text.size();
  if (absl::Status s = service::ValidatePublish(request, limits); !s.ok()) {
    Fail(absl::StrCat("the server refuses what parsed: ", s.ToString()), text);
  }
  CheckReparse(*parsed, filter::FormatEvent(*event), filter::ParseEvent,
               text);
}

}  // namespace
}  // namespace service
}  // namespace cohort

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cohort::fuzz::ByteReader in(data, size);
  const bool event = in.Byte() % 2 == 1;
  const absl::string_view text = in.Rest();
  if (event) {
    cohort::service::CheckEvent(text);
  } else {
    cohort::service::CheckSubscription(text);
  }
  return 0;
}
