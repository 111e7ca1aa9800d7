// Typed attributes at the API edge: how string values, prefixes and the
// existence operators of cohort.v1 become the matcher's int64 predicates
// (issue 19), so that phase 1 finds them with the lookups it already has
// and phase 2 never compares a string.
//
// Every attribute name a predicate names is interned in the attribute
// Interner as itself (its int64 values keep that id, as before strings).
// The other roles of a name get *derived* attributes, interned under names
// no client can send (they start with '$'):
//   "$s:<name>"       the name's string values, each as its *code*: a
//                     64-bit hash of its bytes, made unique among the
//                     strings subscriptions named on it (a collision moves
//                     the later string to the next free code). EQ, NE, IN
//                     and NOT_IN on strings compare codes.
//   "$p<L>:<name>"    the first L bytes of the name's string values, coded
//                     the same way: OP_PREFIX with an L-byte prefix is an
//                     equality on it (an event string of n bytes carries
//                     one value for each prefix length L <= n that some
//                     subscription uses). The empty prefix is "any string
//                     value": EXISTS on "$s:<name>".
//   "$x<L>:<name>"    the last L bytes of the name's string values, coded
//                     the same way: OP_SUFFIX as OP_PREFIX is, from the
//                     other end (issue 44). The empty suffix is EXISTS on
//                     "$s:<name>" too.
//   "$P<L>:<name>",   as "$p<L>:" and "$x<L>:", for OP_NOT_PREFIX and
//   "$X<L>:<name>"    OP_NOT_SUFFIX (NE on the code), except that an event
//                     string shorter than L carries the code of the empty
//                     string, which no L-byte string has, so NE holds for
//                     it. Apart from "$p"/"$x", so that events need not
//                     carry that code for the attributes of OP_PREFIX and
//                     OP_SUFFIX alone.
//   "$f<L>:<name>",   as "$p<L>:" and "$x<L>:", of the case fold of the
//   "$l<L>:<name>"    name's string values (case_fold.h; L bytes of the
//                     fold): OP_PREFIX_IGNORE_CASE and
//                     OP_SUFFIX_IGNORE_CASE are EQ on the code of the
//                     operand's fold (the empty one: EXISTS on "$s:").
//   "$ip4:<name>",    the name's string values that are IP addresses
//   "$ip6h:<name>",   (ip_network.h): an IPv4 address as its 32 bits on
//   "$ip6l:<name>"    "$ip4:", an IPv6 address as its two 64-bit halves
//                     on "$ip6h:" and "$ip6l:" (each XOR 2^63, so that
//                     int64 order is unsigned order). OP_CIDR is a
//                     BETWEEN on one of them, and for an IPv6 prefix
//                     longer than 64 bits an EQ on the high half too.
//   "$len:<name>"     the byte length of the name's string values: a
//                     one-star OP_WILDCARD "a*b" is EQ on "$p<|a|>:" and
//                     "$x<|b|>:" and GE |a| + |b| on it (wildcard.h).
//   "$w<k>:<name>"    the k-th pattern (k = 0, 1, ...) of an OP_WILDCARD
//                     with two stars or more, or of an OP_NOT_WILDCARD,
//                     on the name: present (value 1) iff the string value
//                     matches it. Its dictionary holds the pattern as
//                     written, its one string (so the journal keeps it).
//                     An event string finds its candidates by its first
//                     and last bytes (one lookup per pair of the patterns'
//                     first- and last-part lengths in use) and checks only
//                     those (WildcardMatches). OP_WILDCARD is EQ 1 on it;
//                     OP_NOT_WILDCARD is EXISTS on "$s:<name>" (a string
//                     value) and NOT_EXISTS on it, guarded as NOT_EXISTS
//                     is (below).
//   "$i:<name>"       the case folds of the name's string values
//                     (case_fold.h), coded the same way:
//                     OP_EQUALS_IGNORE_CASE is an equality on it.
//   "$o:<name>"       the name's string values as *order labels*, for the
//                     range operators on strings: each bound a range
//                     predicate names gets an int64 label when first
//                     named, in byte order with room between labels
//                     (placed by interpolating the bytes after the
//                     neighbours' common prefix, at least a quarter of the
//                     gap from either neighbour); an event's string gets
//                     its bound's label, or the label just above the
//                     greatest bound below it. Labels never change, so a
//                     bound that finds no room (two labels apart) fails
//                     the Subscribe with RESOURCE_EXHAUSTED (at least 150
//                     bounds nested in one gap, by construction; none in
//                     the tests' and presets' data).
//   "$ord"            the number of order bounds named when the event was
//                     encoded. A range predicate on strings also requires
//                     "$ord" >= the count just after its bounds were named:
//                     an event encoded earlier has labels that do not know
//                     those bounds (the Subscribe is concurrent with its
//                     Publish, so leaving it out is within the contract).
//   "$d:<name>"       the name's numbers as doubles, each as its
//                     OrderedKey (numbers.h; an int64 rounded to the
//                     nearest double): a comparison with an operand that
//                     has a fraction (19.99), and a list holding one, is
//                     on it. Exact: such an operand lies strictly between
//                     two integers below 2^52, and rounding an int64 to a
//                     double never carries it past one; the list's other
//                     integers are below 2^53 (validation refuses the
//                     rest). Integral operands stay on the name itself,
//                     where an event's number with a fraction is its
//                     floor marked "just above" (matcher/types.h).
//   "$lit:<name>"     the name's literal values (true, false, null), each
//                     as its v1::Literal number: EQ and NE with a
//                     literal_value operand are on it.
//   "$any:<name>"     present (value 0) whenever the event carries the
//                     name with any type: EXISTS and NOT_EXISTS.
//   "$names"          the number of attribute names interned when the event
//                     was encoded. NOT_EXISTS x also requires "$names" >
//                     the id of "$any:x": an event encoded before x was
//                     first named could not have carried "$any:x", and a
//                     NOT_EXISTS must not hold for it merely because of that
//                     (that subscription is concurrent with the event's
//                     Publish, so leaving it out is within the contract).
// An event string that no subscription named gets its hash as code, or the
// next free code if its hash is taken by another string: it can never equal
// a named string's code. (One case is not exact: a Publish concurrent with
// a Subscribe that first names a string s, where the event's string differs
// from s but its code equals s's new code: a 64-bit hash collision.)
//
// Codes and derived names are journaled (the names as attribute names, the
// strings as kStringValue records, journal_records.h), so recovery rebuilds
// the same codes; the hash (Hash64) is part of the storage format.
//
// Thread safety: every method may be called from any thread. Lower and
// Restore take an exclusive lock; Encode and FillStats a shared one, once
// per call. Lock order: this object's lock, then the Interner's.
#ifndef COHORT_SERVICE_MODEL_TYPED_ATTRIBUTES_H_
#define COHORT_SERVICE_MODEL_TYPED_ATTRIBUTES_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "matcher/types.h"
#include "proto/cohort/v1/pubsub.pb.h"
#include "service/model/interner.h"
#include "service/model/json_event.h"
#include "service/model/wildcard.h"

namespace cohort {
namespace service {

// The 64-bit hash of string values (stable across versions: part of the
// storage format).
uint64_t Hash64(absl::string_view bytes);

class TypedAttributes {
 public:
  // `names` (not owned) is the attribute Interner; `max_distinct_strings`
  // bounds the strings of one derived attribute (--max_distinct_strings).
  TypedAttributes(Interner* names, size_t max_distinct_strings);

  TypedAttributes(const TypedAttributes&) = delete;
  TypedAttributes& operator=(const TypedAttributes&) = delete;

  // Lower()
  //
  // Appends to *out the matcher predicates of the validated predicate `p`
  // (one, or two for NOT_EXISTS), interning its name, derived names and
  // strings. `field` names `p` in messages ("subscriptions[0].predicates[2]").
  // RESOURCE_EXHAUSTED (naming the field and the limit) when a dictionary
  // is full; names and strings interned before stay interned.
  // REQUIRES: p passed ValidateSubscribe.
  absl::Status Lower(absl::string_view field, const v1::Predicate& p,
                     std::vector<matcher::Predicate>* out);

  // Encode()
  //
  // The matcher's records of `request`'s events (validation.h BuildEvents),
  // with json[i] the flattened Event.json of events[i] (json may be empty:
  // none has one). An event without json is one record. An event with
  // json is one record per distinct combination of its arrays' elements
  // (json_event.h), counting only the values of paths some predicate
  // names; each record holds the event's attributes, the combination's
  // values, and "$any:" for every named path with a value anywhere in the
  // event (EXISTS and NOT_EXISTS see the whole event). *event_of as
  // BuildEvents says. RESOURCE_EXHAUSTED when an event has more than
  // `max_combinations` combinations.
  absl::Status Encode(const v1::PublishRequest& request,
                      absl::Span<const JsonGroup> json,
                      size_t max_combinations,
                      std::vector<std::vector<matcher::AttributeValue>>* out,
                      std::vector<uint32_t>* event_of) const;

  // Recovery: after the attribute names are restored, rebuilds the derived
  // attributes from them (RestoreNames), then each string with its
  // journaled code (RestoreString). DATA_LOSS if a string does not fit
  // (an unknown attribute id, a code taken by another string).
  void RestoreNames();
  absl::Status RestoreString(uint32_t attribute, int64_t code,
                             absl::string_view bytes);

  // Calls hook(attribute, code, bytes) each time a string is added to a
  // derived attribute, under the exclusive lock (the journal's order).
  // REQUIRES: called before the object is shared between threads.
  void SetOnNewString(
      std::function<void(uint32_t, int64_t, absl::string_view)> hook) {
    on_new_string_ = std::move(hook);
  }

  // Adds one Stats.attributes entry per name with string operands,
  // prefixes, suffixes, case folds or string range bounds, by name.
  void FillStats(v1::Stats* stats) const;

  // Distinct strings of derived attribute `attribute` (0 if none).
  size_t DistinctStrings(uint32_t attribute) const;

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  // (L, id of a derived attribute of L-byte prefixes or suffixes), by L.
  using LengthIds = std::vector<std::pair<uint32_t, uint32_t>>;
  // The derived attributes of one name (by the name's own id).
  struct Derived {
    uint32_t strings = kNone;  // "$s:<name>"
    uint32_t any = kNone;      // "$any:<name>"
    uint32_t ordered = kNone;  // "$o:<name>"
    uint32_t folded = kNone;   // "$i:<name>"
    uint32_t ip4 = kNone;      // "$ip4:<name>"
    uint32_t ip6_high = kNone;  // "$ip6h:<name>"
    uint32_t ip6_low = kNone;   // "$ip6l:<name>"
    uint32_t length = kNone;    // "$len:<name>"
    uint32_t doubles = kNone;   // "$d:<name>"
    uint32_t literals = kNone;  // "$lit:<name>"
    LengthIds prefixes;      // "$p<L>:<name>"
    LengthIds suffixes;      // "$x<L>:<name>"
    LengthIds not_prefixes;  // "$P<L>:<name>"
    LengthIds not_suffixes;  // "$X<L>:<name>"
    // Patterns ("$w<k>:<name>"): by k, the k of each pattern as written,
    // and the candidates by the lengths of their first and last parts.
    struct Pattern {
      uint32_t attribute = kNone;
      Wildcard wildcard;
      bool known = false;  // the pattern is read (Lower, RestoreString)
    };
    struct PatternEnds {
      uint32_t left;   // |first part|
      uint32_t right;  // |last part|
      // EndsKey(first part, last part) -> k of the patterns with them.
      absl::flat_hash_map<uint64_t, std::vector<uint32_t>> by_ends;
    };
    std::vector<Pattern> patterns;
    absl::flat_hash_map<std::string, uint32_t> pattern_of;
    std::vector<PatternEnds> pattern_ends;
    LengthIds fold_prefixes;  // "$f<L>:<name>"
    LengthIds fold_suffixes;  // "$l<L>:<name>"
    // The lengths of `role` ('p', 'x', 'P', 'X', 'f' or 'l').
    LengthIds& Lengths(char role) {
      switch (role) {
        case 'p':
          return prefixes;
        case 'x':
          return suffixes;
        case 'P':
          return not_prefixes;
        case 'f':
          return fold_prefixes;
        case 'l':
          return fold_suffixes;
        default:
          return not_suffixes;
      }
    }
  };
  using Record = std::vector<matcher::AttributeValue>;
  // One value to encode: a JsonValue's parts, or an Attribute's.
  struct ValueRef {
    JsonValue::Kind kind;
    int64_t i;
    double d;
    absl::string_view s;
  };
  // Appends the records of value `v` of plain attribute `id` (the value and
  // its derived attributes' values, but not "$any:") to *record.
  void EncodeValue(uint32_t id, const ValueRef& v, Record* record) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // The distinct combinations of `group` (json_event.h) into *out, taking
  // the ids of its paths from ids[*k] on (CollectPaths' order), and the
  // "$any:" ids of its named paths into *anys. False when there would be
  // more than `max`.
  bool Combine(const JsonGroup& group,
               absl::Span<const std::optional<uint32_t>> ids, size_t* k,
               size_t max, std::vector<Record>* out,
               std::vector<uint32_t>* anys) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);

  // The strings of one derived attribute, by code.
  using Dictionary = absl::flat_hash_map<int64_t, std::string>;
  // The bounds of one "$o:" attribute: label and the "$ord" count just
  // after it was named, in byte order.
  struct Bound {
    int64_t label;
    uint64_t count;
  };
  using Order = std::map<std::string, Bound>;

  // The label an event's string `bytes` gets in `order`.
  static int64_t OrderLabel(const Order& order, absl::string_view bytes);
  // The bound `bytes` of "$o:" attribute `attribute`, named if new.
  absl::StatusOr<Bound> InternBound(absl::string_view field,
                                    uint32_t attribute, absl::string_view name,
                                    const std::string& bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // The code of `bytes` in `dictionary`: its own if named, else one no
  // named string has.
  static int64_t Code(const Dictionary& dictionary, absl::string_view bytes);
  absl::StatusOr<uint32_t> InternName(absl::string_view field,
                                      const std::string& name)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The key of a pattern's (or a string's) first and last parts.
  static uint64_t EndsKey(absl::string_view left, absl::string_view right);
  // "$w<k>:<name>" for `pattern` (as written, valid), interned with the
  // pattern as its string if new.
  absl::StatusOr<uint32_t> PatternId(absl::string_view field, uint32_t plain,
                                     absl::string_view name,
                                     const std::string& pattern)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Makes pattern k of `d` the pattern `text` and a candidate by its ends.
  // False if `text` is not a pattern.
  static bool Know(Derived& d, uint32_t k, absl::string_view text);
  // The id of `d`'s derived attribute of `role` ("s", "any", "o", "i",
  // "ip4", "ip6h", "ip6l", "len", "d" or "lit"), or nullptr for the roles with
  // lengths ("p", "x", "P", "X").
  static uint32_t* Slot(Derived& d, absl::string_view role);
  // The id of the derived name "$<role>:<name>" (a role with lengths:
  // "$<role><length>:<name>"), interned (and recorded in derived_) if new.
  absl::StatusOr<uint32_t> DerivedId(absl::string_view field, uint32_t plain,
                                     absl::string_view name,
                                     absl::string_view role, uint32_t length)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<int64_t> InternString(absl::string_view field,
                                       uint32_t attribute,
                                       absl::string_view name,
                                       absl::string_view bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Derived& DerivedOf(uint32_t plain) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records a derived name found in the Interner (RestoreNames).
  void Adopt(uint32_t id, absl::string_view name)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Interner* const names_;
  const size_t max_distinct_strings_;
  std::function<void(uint32_t, int64_t, absl::string_view)> on_new_string_;

  mutable std::shared_mutex mu_;
  std::vector<Derived> derived_ ABSL_GUARDED_BY(mu_);  // by plain name id
  absl::flat_hash_map<uint32_t, Dictionary> dictionaries_ ABSL_GUARDED_BY(mu_);
  uint32_t names_epoch_ ABSL_GUARDED_BY(mu_) = kNone;  // "$names"
  absl::flat_hash_map<uint32_t, Order> orders_ ABSL_GUARDED_BY(mu_);
  // "$w<k>:<name>" attribute id -> (plain name id, k).
  absl::flat_hash_map<uint32_t, std::pair<uint32_t, uint32_t>> pattern_at_
      ABSL_GUARDED_BY(mu_);
  uint32_t order_count_id_ ABSL_GUARDED_BY(mu_) = kNone;  // "$ord"
  uint64_t order_count_ ABSL_GUARDED_BY(mu_) = 0;  // bounds named
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_MODEL_TYPED_ATTRIBUTES_H_
