// JSON events (Event.json, issue 44; docs/DESIGN.md section 1.7): a JSON
// object flattened into the attributes it names by path, Event Ruler's
// convention ("detail.price" for {"detail": {"price": 5}}).
//
// Numbers, strings, true, false and null are values; an object's fields
// are named by their path. An array gives its path several values, one
// per element (an array nested in an array adds its elements to the
// outer one), and an array of objects keeps each element's fields
// together: the event matches a subscription iff one *combination*, one
// element of every array taken at once, matches it (so, as in Event
// Ruler, {"o": [{"p": 1, "q": 3}, {"p": 3, "q": 2}]} does not match
// o.p = 1 and o.q = 2). An empty array adds nothing.
//
// FlattenJson parses and checks a document and returns it as a JsonGroup
// tree; TypedAttributes::Encode (typed_attributes.h) turns the tree into
// the matcher's records, one per distinct combination of the values that
// subscriptions name.
//
// Thread safety: pure functions (a per-thread parser is reused).
#ifndef COHORT_SERVICE_MODEL_JSON_EVENT_H_
#define COHORT_SERVICE_MODEL_JSON_EVENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "service/model/limits.h"

namespace cohort {
namespace service {

// One value of a JSON event.
struct JsonValue {
  enum class Kind : uint8_t { kInt, kDouble, kString, kLiteral };
  Kind kind = Kind::kInt;
  // kInt: the number (an integral double too: 3.0, -0.0 is 0); kLiteral:
  // its v1::Literal number (LITERAL_TRUE, LITERAL_FALSE, LITERAL_NULL).
  int64_t i = 0;
  double d = 0;      // kDouble: has a fraction, finite, in the int64 range
  std::string s;     // kString: the bytes
};

// One value with its path ("detail.price").
struct JsonLeaf {
  std::string path;
  JsonValue value;
};

// Values that come together. A combination of the group takes every leaf
// and, for each of `arrays` that has elements, one combination of one of
// its elements. Paths are distinct within every combination.
struct JsonGroup {
  std::vector<JsonLeaf> leaves;
  std::vector<std::vector<JsonGroup>> arrays;
};

// FlattenJson()
//
// Parses `json`, the Event.json of the event `field` names
// ("events[3]"), into *out. Values whose path is not an attribute name
// ([A-Za-z_][A-Za-z0-9_.-]{0,63}, limits.h IsValidAttributeName) are
// left out: no subscription can name them. Strings may be any length
// within the document. INVALID_ARGUMENT, naming "<field>.json" and the
// place, for: more than limits.max_json_bytes bytes; not JSON (invalid
// UTF-8 included); anything but an object at the top; objects and arrays
// nested deeper than limits.max_json_depth; more than
// limits.max_json_values values; a key twice in one object; a path that
// two places give in one combination ({"a.b": 1, "a": {"b": 2}}); a number
// outside the int64 range (or NaN, or beyond a double).
absl::Status FlattenJson(absl::string_view field, absl::string_view json,
                         const Limits& limits, JsonGroup* out);

// The paths of every leaf of `group`, in no particular order, repeats
// included.
void CollectPaths(const JsonGroup& group,
                  std::vector<absl::string_view>* out);

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_MODEL_JSON_EVENT_H_
