// Fuzz target: the CLI's subscription and event parsers (parse.h), and the
// Event Ruler pattern parser (pattern.h), on arbitrary text. The first byte
// picks subscription or event; a subscription text whose first character
// other than whitespace is '{' is a pattern, as ParseFilter reads it. The
// rest is the text. Properties checked (a failure aborts):
//   - an error is INVALID_ARGUMENT with the three-line message parse.h
//     describes ("column N: ...", the input, the carets), or for a pattern
//     one line starting "pattern: ";
//   - what parses is what the server accepts: the predicates (or attributes)
//     pass the server's ValidateSubscribe (ValidatePublish) with limits
//     large enough for their count, string lengths and list sizes (the
//     parser applies the API's rules), except the operands only the server
//     checks (CIDR networks, wildcard patterns, empty excluded prefixes
//     and suffixes), which it must refuse naming their string_value;
//   - printing the result back in the grammar's canonical form
//     (FormatSubscription, FormatEvent) and parsing it again gives the same
//     messages (for a pattern too: what it lowers to reads back through
//     the grammar).
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

void CheckSubscription(absl::string_view text) {
  const bool pattern = filter::IsPattern(text);
  absl::StatusOr<std::vector<v1::Predicate>> parsed =
      pattern ? filter::ParsePattern(text) : filter::ParseSubscription(text);
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
  if (parsed->empty()) Fail("parsed no predicates", text);
  // No string or list can be longer than the input.
  service::Limits limits;
  limits.max_predicates = parsed->size();
  limits.max_string_bytes = text.size();
  limits.max_set_size = text.size();
  // Everything that parses, the string ranges included, validates, but
  // for the operands only the server checks (those it must refuse).
  v1::SubscribeRequest request;
  v1::SubscriptionSpec* spec = request.add_subscriptions();
  spec->set_subscriber("fuzz");
  for (const v1::Predicate& p : *parsed) {
    if (!CheckOperandRules(p).ok()) {  // only the server checks these
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
      continue;
    }
    *spec->add_predicates() = p;
  }
  if (spec->predicates_size() == 0) return;
  if (absl::Status s = service::ValidateSubscribe(request, limits); !s.ok()) {
    Fail(absl::StrCat("the server refuses what parsed: ", s.ToString()), text);
  }
  v1::SubscriptionSpec all;
  for (const v1::Predicate& p : *parsed) *all.add_predicates() = p;
  CheckReparse(*parsed, filter::FormatSubscription(all),
               filter::ParseSubscription, text);
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
