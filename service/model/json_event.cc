#include "service/model/json_event.h"

#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "filter/pattern.h"
#include "proto/cohort/v1/pubsub.pb.h"
#include "service/model/numbers.h"

namespace cohort {
namespace service {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

absl::string_view Sv(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

// Where a value is, for messages ("o[1].p"): a chain of object keys and
// array indexes on the stack, spelled out only when an error names it.
struct Crumb {
  const Crumb* parent = nullptr;
  std::string_view key;  // an object's field, unless `element`
  size_t index = 0;      // an array's element, when `element`
  bool element = false;
};

std::string Spell(const Crumb* at) {
  if (at == nullptr) return std::string();
  std::string place = Spell(at->parent);
  if (at->element) {
    absl::StrAppend(&place, "[", at->index, "]");
  } else {
    absl::StrAppend(&place, place.empty() ? "" : ".", Sv(at->key));
  }
  return place;
}

// Flattens one document. The path of the value at hand ("o.p", keys alone)
// is one buffer, grown by a key on the way down and cut back on the way up,
// and the place shown in messages is spelled from the crumbs on error only:
// a document costs an allocation per leaf (its path) and per long string,
// not one per key and array element.
class Flattener {
 public:
  Flattener(absl::string_view field, const Limits& limits)
      : field_(field), limits_(limits) {}

  absl::Status Run(const element& root, JsonGroup* out) {
    if (root.type() != element_type::OBJECT) {
      return Error(nullptr, "a JSON event is an object");
    }
    path_.clear();
    absl::Status s = Object(root, nullptr, 1, out);
    if (!s.ok()) return s;
    // Keys are distinct within each object, so only a key with a '.' in it
    // can give a path twice in one combination.
    if (!dotted_) return absl::OkStatus();
    absl::flat_hash_set<absl::string_view> reach;
    return CheckDistinct(*out, &reach);
  }

 private:
  absl::Status Error(const Crumb* at, absl::string_view what) const {
    return ErrorAt(Spell(at), what);
  }
  absl::Status ErrorAt(absl::string_view place, absl::string_view what) const {
    if (place.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field_, ".json: ", what));
    }
    return absl::InvalidArgumentError(
        absl::StrCat(field_, ".json: at ", filter::ShowControlBytes(place),
                     ": ", what));
  }

  absl::Status Deeper(const Crumb* at, size_t depth) const {
    if (depth <= limits_.max_json_depth) return absl::OkStatus();
    return Error(at, absl::StrCat("nested ", depth,
                                  " levels deep; the limit is ",
                                  limits_.max_json_depth,
                                  " (--max_json_depth)"));
  }

  // The fields of `object` (at `depth`, reached by `at`; path_ is its
  // path) into `group`.
  absl::Status Object(const element& object, const Crumb* at, size_t depth,
                      JsonGroup* group) {
    // (Copied out: value_unsafe() on a temporary result returns a reference
    // into it.)
    const simdjson::dom::object fields = object.get_object().value_unsafe();
    group->leaves.reserve(group->leaves.size() + fields.size());
    // Repeated keys: a scan of those before, or a set for large objects.
    constexpr size_t kScan = 16;
    const bool scan = fields.size() <= kScan;
    absl::InlinedVector<std::string_view, kScan> seen;
    absl::flat_hash_set<std::string_view> keys;
    const size_t mark = path_.size();
    for (const auto [key, value] : fields) {
      const Crumb child{at, key};
      const bool repeated =
          scan ? std::find(seen.begin(), seen.end(), key) != seen.end()
               : !keys.insert(key).second;
      if (repeated) return Error(&child, "the key is in its object twice");
      if (scan) seen.push_back(key);
      dotted_ = dotted_ || key.find('.') != std::string_view::npos;
      if (mark > 0) path_.push_back('.');
      path_.append(key);
      absl::Status s = Value(value, &child, depth, group);
      path_.resize(mark);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // The value `e` (reached by `at`; path_ is its path), inside a container
  // at `depth`, into `group`.
  absl::Status Value(const element& e, const Crumb* at, size_t depth,
                     JsonGroup* group) {
    switch (e.type()) {
      case element_type::OBJECT: {
        absl::Status s = Deeper(at, depth + 1);
        if (!s.ok()) return s;
        return Object(e, at, depth + 1, group);
      }
      case element_type::ARRAY: {
        absl::Status s = Deeper(at, depth + 1);
        if (!s.ok()) return s;
        std::vector<JsonGroup> elements;
        s = Elements(e, at, depth + 1, &elements);
        if (!s.ok()) return s;
        if (!elements.empty()) group->arrays.push_back(std::move(elements));
        return absl::OkStatus();
      }
      default:
        break;
    }
    if (++values_ > limits_.max_json_values) {
      return Error(at, absl::StrCat("more than ", limits_.max_json_values,
                                    " values; the limit is ",
                                    limits_.max_json_values,
                                    " (--max_json_values)"));
    }
    JsonValue v;
    switch (e.type()) {
      case element_type::INT64:
        v.kind = JsonValue::Kind::kInt;
        v.i = e.get_int64().value_unsafe();
        break;
      case element_type::UINT64:
      case element_type::DOUBLE: {
        const double d =
            e.type() == element_type::UINT64
                ? static_cast<double>(e.get_uint64().value_unsafe())
                : e.get_double().value_unsafe();
        if (const std::string why = WhyNotComparable(d); !why.empty()) {
          return Error(at, why);
        }
        if (IntegralDouble(d, &v.i)) {
          v.kind = JsonValue::Kind::kInt;
        } else {
          v.kind = JsonValue::Kind::kDouble;
          v.d = d;
        }
        break;
      }
      case element_type::STRING:
        v.kind = JsonValue::Kind::kString;
        v.s = std::string(e.get_string().value_unsafe());
        break;
      case element_type::BOOL:
        v.kind = JsonValue::Kind::kLiteral;
        v.i = e.get_bool().value_unsafe() ? v1::LITERAL_TRUE
                                          : v1::LITERAL_FALSE;
        break;
      default:
        v.kind = JsonValue::Kind::kLiteral;
        v.i = v1::LITERAL_NULL;
        break;
    }
    if (IsValidAttributeName(path_)) {
      group->leaves.push_back(JsonLeaf{path_, std::move(v)});
    }
    return absl::OkStatus();
  }

  // The elements of `array` (at `depth`, reached by `at`), each a group of
  // its own; an array element's elements are the outer array's.
  absl::Status Elements(const element& array, const Crumb* at, size_t depth,
                        std::vector<JsonGroup>* out) {
    size_t k = 0;
    const simdjson::dom::array elements = array.get_array().value_unsafe();
    for (const element e : elements) {
      Crumb crumb{at};
      crumb.index = k++;
      crumb.element = true;
      if (e.type() == element_type::ARRAY) {
        absl::Status s = Deeper(&crumb, depth + 1);
        if (!s.ok()) return s;
        s = Elements(e, &crumb, depth + 1, out);
        if (!s.ok()) return s;
        continue;
      }
      JsonGroup g;
      absl::Status s = Value(e, &crumb, depth, &g);
      if (!s.ok()) return s;
      out->push_back(std::move(g));
    }
    return absl::OkStatus();
  }

  // OK iff no combination of `group` holds a path twice; adds every path
  // under `group` to *reach.
  absl::Status CheckDistinct(const JsonGroup& group,
                             absl::flat_hash_set<absl::string_view>* reach) {
    for (const JsonLeaf& leaf : group.leaves) {
      if (!reach->insert(leaf.path).second) return Twice(leaf.path);
    }
    for (const std::vector<JsonGroup>& array : group.arrays) {
      // The elements may share paths; the array as a whole may not share
      // one with the rest of the group.
      absl::flat_hash_set<absl::string_view> mine;
      for (const JsonGroup& element : array) {
        absl::flat_hash_set<absl::string_view> one;
        absl::Status s = CheckDistinct(element, &one);
        if (!s.ok()) return s;
        mine.insert(one.begin(), one.end());
      }
      for (const absl::string_view path : mine) {
        if (!reach->insert(path).second) return Twice(path);
      }
    }
    return absl::OkStatus();
  }

  absl::Status Twice(absl::string_view path) const {
    return ErrorAt(path,
                   "two places give this path at once (a key with '.' in it "
                   "names the same attribute as nested keys)");
  }

  const absl::string_view field_;
  const Limits& limits_;
  std::string path_;  // the path of the value at hand
  size_t values_ = 0;
  bool dotted_ = false;  // some key has a '.'
};

void Collect(const JsonGroup& group, std::vector<absl::string_view>* out) {
  for (const JsonLeaf& leaf : group.leaves) out->push_back(leaf.path);
  for (const std::vector<JsonGroup>& array : group.arrays) {
    for (const JsonGroup& element : array) Collect(element, out);
  }
}

}  // namespace

absl::Status FlattenJson(absl::string_view field, absl::string_view json,
                         const Limits& limits, JsonGroup* out) {
  *out = JsonGroup();
  if (json.size() > limits.max_json_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".json: ", json.size(), " bytes; the limit is ",
        limits.max_json_bytes, " (--max_json_bytes)"));
  }
  thread_local simdjson::dom::parser parser;
  element root;
  const simdjson::error_code error =
      parser.parse(json.data(), json.size()).get(root);
  if (error != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".json: not a JSON document: ",
                     simdjson::error_message(error)));
  }
  return Flattener(field, limits).Run(root, out);
}

void CollectPaths(const JsonGroup& group,
                  std::vector<absl::string_view>* out) {
  Collect(group, out);
}

}  // namespace service
}  // namespace cohort
