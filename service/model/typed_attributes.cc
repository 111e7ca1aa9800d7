#include "service/model/typed_attributes.h"

#include <algorithm>
#include <iterator>
#include <mutex>
#include <optional>
#include <tuple>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "service/model/case_fold.h"
#include "service/model/ip_network.h"
#include "service/model/numbers.h"
#include "service/model/wildcard.h"

namespace cohort {
namespace service {
namespace {

uint64_t Mix(uint64_t z) {
  z ^= z >> 30;
  z *= 0xbf58476d1ce4e5b9ull;
  z ^= z >> 27;
  z *= 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// An unsigned 64-bit half of an IPv6 address as an int64 in the same
// order.
int64_t Ordered(uint64_t word) {
  return static_cast<int64_t>(word ^ (uint64_t{1} << 63));
}

// The top `bits` bits set (0 to 64).
uint64_t TopBits(int bits) {
  return bits == 0 ? 0 : ~uint64_t{0} << (64 - bits);
}

constexpr absl::string_view kNamesEpoch = "$names";
constexpr absl::string_view kOrderCount = "$ord";
// Order labels stay within these (exclusive), so an event's label, one
// beyond a bound's, never overflows.
constexpr int64_t kLowestLabel = -(int64_t{1} << 62);
constexpr int64_t kHighestLabel = int64_t{1} << 62;

// Bytes [from, from + 8) of `s` as a big-endian number (zeros past its
// end).
uint64_t KeyAt(absl::string_view s, size_t from) {
  uint64_t key = 0;
  for (size_t i = 0; i < 8; ++i) {
    const size_t at = from + i;
    key = (key << 8) |
          (at < s.size() ? static_cast<unsigned char>(s[at]) : 0u);
  }
  return key;
}

}  // namespace

uint64_t Hash64(absl::string_view bytes) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ (bytes.size() * 0xff51afd7ed558ccdull);
  for (size_t i = 0; i < bytes.size(); i += 8) {
    uint64_t word = 0;  // little endian, whatever the host's order
    const size_t n = std::min<size_t>(8, bytes.size() - i);
    for (size_t k = 0; k < n; ++k) {
      word |= uint64_t{static_cast<unsigned char>(bytes[i + k])} << (8 * k);
    }
    h = Mix(h ^ word) + 0x9e3779b97f4a7c15ull;
  }
  return Mix(h);
}

TypedAttributes::TypedAttributes(Interner* names, size_t max_distinct_strings)
    : names_(names), max_distinct_strings_(max_distinct_strings) {}

int64_t TypedAttributes::Code(const Dictionary& dictionary,
                              absl::string_view bytes) {
  uint64_t code = Hash64(bytes);
  for (;;) {
    auto it = dictionary.find(static_cast<int64_t>(code));
    if (it == dictionary.end() || it->second == bytes) {
      return static_cast<int64_t>(code);
    }
    ++code;  // wraps
  }
}

absl::StatusOr<uint32_t> TypedAttributes::InternName(
    absl::string_view field, const std::string& name) {
  absl::StatusOr<uint32_t> id = names_->Intern(name);
  if (!id.ok()) {
    return absl::ResourceExhaustedError(
        absl::StrCat(field, ".attribute: cannot add a new attribute name: ",
                     id.status().message()));
  }
  return *id;
}

TypedAttributes::Derived& TypedAttributes::DerivedOf(uint32_t plain) {
  if (plain >= derived_.size()) derived_.resize(plain + 1);
  return derived_[plain];
}

uint32_t* TypedAttributes::Slot(Derived& d, absl::string_view role) {
  if (role == "s") return &d.strings;
  if (role == "any") return &d.any;
  if (role == "o") return &d.ordered;
  if (role == "i") return &d.folded;
  if (role == "ip4") return &d.ip4;
  if (role == "ip6h") return &d.ip6_high;
  if (role == "ip6l") return &d.ip6_low;
  if (role == "len") return &d.length;
  if (role == "d") return &d.doubles;
  if (role == "lit") return &d.literals;
  return nullptr;
}

absl::StatusOr<uint32_t> TypedAttributes::DerivedId(absl::string_view field,
                                                    uint32_t plain,
                                                    absl::string_view name,
                                                    absl::string_view role,
                                                    uint32_t length) {
  Derived& d = DerivedOf(plain);
  std::string derived_name;
  if (const uint32_t* slot = Slot(d, role); slot != nullptr) {
    if (*slot != kNone) return *slot;
    derived_name = absl::StrCat("$", role, ":", name);
  } else {  // one of the roles with lengths
    for (const auto& [l, id] : d.Lengths(role[0])) {
      if (l == length) return id;
    }
    derived_name = absl::StrCat("$", role, length, ":", name);
  }
  absl::StatusOr<uint32_t> id = InternName(field, derived_name);
  if (!id.ok()) return id.status();
  Adopt(*id, derived_name);
  return *id;
}

uint64_t TypedAttributes::EndsKey(absl::string_view left,
                                  absl::string_view right) {
  return Mix(Hash64(left)) ^ Hash64(right);
}

bool TypedAttributes::Know(Derived& d, uint32_t k, absl::string_view text) {
  absl::StatusOr<Wildcard> w = ParseWildcard(text);
  if (!w.ok()) return false;
  Derived::Pattern& pattern = d.patterns[k];
  if (pattern.known) return true;
  pattern.wildcard = *std::move(w);
  pattern.known = true;
  d.pattern_of.emplace(std::string(text), k);
  const Wildcard& wc = pattern.wildcard;
  const uint32_t left = static_cast<uint32_t>(wc.left.size());
  const uint32_t right = static_cast<uint32_t>(wc.right.size());
  auto ends = std::find_if(
      d.pattern_ends.begin(), d.pattern_ends.end(),
      [&](const Derived::PatternEnds& e) {
        return e.left == left && e.right == right;
      });
  if (ends == d.pattern_ends.end()) {
    d.pattern_ends.push_back({left, right, {}});
    ends = std::prev(d.pattern_ends.end());
  }
  ends->by_ends[EndsKey(wc.left, wc.right)].push_back(k);
  return true;
}

absl::StatusOr<uint32_t> TypedAttributes::PatternId(
    absl::string_view field, uint32_t plain, absl::string_view name,
    const std::string& pattern) {
  {
    Derived& d = DerivedOf(plain);
    auto it = d.pattern_of.find(pattern);
    if (it != d.pattern_of.end()) return d.patterns[it->second].attribute;
    if (d.patterns.size() >= max_distinct_strings_) {
      return absl::ResourceExhaustedError(absl::StrCat(
          field, ".string_value: attribute \"", name, "\" already has ",
          d.patterns.size(),
          " distinct wildcard patterns (of OP_NOT_WILDCARD, or with two "
          "stars or more) named by subscriptions; the limit is ",
          max_distinct_strings_, " (--max_distinct_strings)"));
    }
  }
  const uint32_t k = static_cast<uint32_t>(DerivedOf(plain).patterns.size());
  const std::string derived_name = absl::StrCat("$w", k, ":", name);
  absl::StatusOr<uint32_t> id = InternName(field, derived_name);
  if (!id.ok()) return id.status();
  Adopt(*id, derived_name);
  // The pattern as the attribute's one string: journaled, so recovery
  // knows it again (RestoreString).
  absl::StatusOr<int64_t> code = InternString(
      absl::StrCat(field, ".string_value"), *id, name, pattern);
  if (!code.ok()) return code.status();
  Know(DerivedOf(plain), k, pattern);
  return *id;
}

void TypedAttributes::Adopt(uint32_t id, absl::string_view name) {
  if (name == kNamesEpoch) {
    names_epoch_ = id;
    return;
  }
  if (name == kOrderCount) {
    order_count_id_ = id;
    return;
  }
  const size_t colon = name.find(':');
  if (name.empty() || name[0] != '$' || colon == absl::string_view::npos) {
    return;
  }
  const absl::string_view role = name.substr(1, colon - 1);
  const std::optional<uint32_t> plain = names_->Find(name.substr(colon + 1));
  if (!plain.has_value()) return;
  Derived& d = DerivedOf(*plain);
  if (uint32_t* slot = Slot(d, role); slot != nullptr) {
    *slot = id;
    // Roles of strings have a dictionary; "o" also an order.
    if (role == "s" || role == "o" || role == "i") dictionaries_[id];
    if (role == "o") orders_[id];
  } else if (uint32_t k = 0; !role.empty() && role[0] == 'w' &&
                                 absl::SimpleAtoi(role.substr(1), &k)) {
    // A pattern, read when its string is (PatternId, RestoreString).
    if (d.patterns.size() <= k) d.patterns.resize(k + 1);
    d.patterns[k].attribute = id;
    pattern_at_[id] = {*plain, k};
    dictionaries_[id];
  } else if (uint32_t length = 0;
             !role.empty() &&
             absl::string_view("pxPXfl").find(role[0]) !=
                 absl::string_view::npos &&
             absl::SimpleAtoi(role.substr(1), &length)) {
    auto& lengths = d.Lengths(role[0]);
    lengths.emplace_back(length, id);
    std::sort(lengths.begin(), lengths.end());
    dictionaries_[id];
  }
}

absl::StatusOr<int64_t> TypedAttributes::InternString(
    absl::string_view field, uint32_t attribute, absl::string_view name,
    absl::string_view bytes) {
  Dictionary& dictionary = dictionaries_[attribute];
  const int64_t code = Code(dictionary, bytes);
  if (dictionary.contains(code)) return code;
  if (dictionary.size() >= max_distinct_strings_) {
    const std::string derived = names_->Name(attribute);
    return absl::ResourceExhaustedError(absl::StrCat(
        field, ": attribute \"", name, "\" already has ", dictionary.size(),
        " distinct ",
        absl::StartsWith(derived, "$p")   ? "prefixes of this length"
        : absl::StartsWith(derived, "$x") ? "suffixes of this length"
        : absl::StartsWith(derived, "$P") ? "excluded prefixes of this length"
        : absl::StartsWith(derived, "$X") ? "excluded suffixes of this length"
        : absl::StartsWith(derived, "$f") ? "folded prefixes of this length"
        : absl::StartsWith(derived, "$l") ? "folded suffixes of this length"
        : absl::StartsWith(derived, "$i") ? "case folds"
                                          : "strings",
        " named by subscriptions; the limit is ", max_distinct_strings_,
        " (--max_distinct_strings)"));
  }
  dictionary.emplace(code, std::string(bytes));
  if (on_new_string_) on_new_string_(attribute, code, bytes);
  return code;
}

int64_t TypedAttributes::OrderLabel(const Order& order,
                                    absl::string_view bytes) {
  if (order.empty()) return 0;
  auto it = order.lower_bound(std::string(bytes));
  if (it != order.end() && it->first == bytes) return it->second.label;
  if (it == order.begin()) return it->second.label - 1;
  return std::prev(it)->second.label + 1;
}

absl::StatusOr<TypedAttributes::Bound> TypedAttributes::InternBound(
    absl::string_view field, uint32_t attribute, absl::string_view name,
    const std::string& bytes) {
  Order& order = orders_[attribute];
  auto next = order.lower_bound(bytes);
  if (next != order.end() && next->first == bytes) return next->second;
  Dictionary& dictionary = dictionaries_[attribute];
  if (dictionary.size() >= max_distinct_strings_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        field, ": attribute \"", name, "\" already has ", dictionary.size(),
        " distinct string range bounds named by subscriptions; the limit is ",
        max_distinct_strings_, " (--max_distinct_strings)"));
  }
  // The neighbours (or the ends of the label space) and their common
  // prefix; the new label interpolates the bytes after it.
  const bool has_low = next != order.begin();
  const bool has_high = next != order.end();
  const std::string* low = has_low ? &std::prev(next)->first : nullptr;
  const std::string* high = has_high ? &next->first : nullptr;
  const int64_t low_label = has_low ? std::prev(next)->second.label
                                    : kLowestLabel;
  const int64_t high_label = has_high ? next->second.label : kHighestLabel;
  size_t common = 0;
  if (low != nullptr && high != nullptr) {
    while (common < low->size() && common < high->size() &&
           (*low)[common] == (*high)[common]) {
      ++common;
    }
  }
  const long double a = low != nullptr ? KeyAt(*low, common) : 0.0L;
  const long double b =
      high != nullptr ? KeyAt(*high, common) : 18446744073709551615.0L;
  const long double v = KeyAt(bytes, common);
  long double fraction = b > a ? (v - a) / (b - a) : 0.5L;
  fraction = std::min(0.75L, std::max(0.25L, fraction));
  const long double gap = static_cast<long double>(high_label) -
                          static_cast<long double>(low_label);
  const int64_t label = low_label + static_cast<int64_t>(fraction * gap);
  if (label < low_label + 2 || label > high_label - 2) {
    return absl::ResourceExhaustedError(absl::StrCat(
        field, ": no room to order the string bound \"",
        absl::CHexEscape(bytes), "\" on attribute \"", name,
        "\" between the bounds named before it (order labels are never "
        "moved, and this gap is used up)"));
  }
  const Bound bound{label, ++order_count_};
  order.emplace(bytes, bound);
  dictionary.emplace(label, bytes);
  if (on_new_string_) on_new_string_(attribute, label, bytes);
  return bound;
}

absl::Status TypedAttributes::Lower(absl::string_view field,
                                    const v1::Predicate& p,
                                    std::vector<matcher::Predicate>* out) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  const std::string& name = p.attribute();
  absl::StatusOr<uint32_t> plain = InternName(field, name);
  if (!plain.ok()) return plain.status();
  matcher::Predicate q;
  q.attribute = *plain;
  q.op = static_cast<matcher::Op>(p.op());
  const bool strings = p.operand_case() == v1::Predicate::kStringValue ||
                       p.operand_case() == v1::Predicate::kStringValues;
  // EQ on the code of `affix` in the derived attribute of `role` ("p",
  // "x", "P" or "X") and its length.
  auto affix_equality =
      [&](absl::string_view role,
          const std::string& affix) -> absl::StatusOr<matcher::Predicate> {
    absl::StatusOr<uint32_t> id = DerivedId(
        field, *plain, name, role, static_cast<uint32_t>(affix.size()));
    if (!id.ok()) return id.status();
    absl::StatusOr<int64_t> code = InternString(
        absl::StrCat(field, ".string_value"), *id, name, affix);
    if (!code.ok()) return code.status();
    matcher::Predicate eq;
    eq.attribute = *id;
    eq.op = matcher::Op::kEq;
    eq.value = *code;
    return eq;
  };
  auto string_attribute = [&]() -> absl::Status {
    absl::StatusOr<uint32_t> id = DerivedId(field, *plain, name, "s", 0);
    if (!id.ok()) return id.status();
    q.attribute = *id;
    return absl::OkStatus();
  };
  // NOT_EXISTS on derived attribute `id`, and the guard "$names" > id: an
  // event encoded before `id` was named could not carry it.
  auto absent = [&](uint32_t id) -> absl::Status {
    if (names_epoch_ == kNone) {
      absl::StatusOr<uint32_t> epoch =
          InternName(field, std::string(kNamesEpoch));
      if (!epoch.ok()) return epoch.status();
      names_epoch_ = *epoch;
    }
    matcher::Predicate missing;
    missing.attribute = id;
    missing.op = matcher::Op::kNotExists;
    out->push_back(std::move(missing));
    matcher::Predicate guard;
    guard.attribute = names_epoch_;
    guard.op = matcher::Op::kGe;
    guard.value = int64_t{id} + 1;
    out->push_back(std::move(guard));
    return absl::OkStatus();
  };
  // "$d:<name>", where operands with fractions are compared.
  auto doubles_attribute = [&]() -> absl::StatusOr<uint32_t> {
    return DerivedId(field, *plain, name, "d", 0);
  };
  switch (p.op()) {
    case v1::OP_IN:
    case v1::OP_NOT_IN:
      if (p.operand_case() == v1::Predicate::kDoubleValues) {
        // Integers alone stay on the name; with a fraction among them, the
        // whole list goes on "$d:" (validation keeps its integers below
        // 2^53, exact as doubles).
        const auto& values = p.double_values().values();
        int64_t integer;
        const bool integral =
            std::all_of(values.begin(), values.end(),
                        [&](double d) { return IntegralDouble(d, &integer); });
        if (!integral) {
          absl::StatusOr<uint32_t> id = doubles_attribute();
          if (!id.ok()) return id.status();
          q.attribute = *id;
        }
        for (double d : values) {
          if (integral) {
            IntegralDouble(d, &integer);
            q.values.push_back(integer);
          } else {
            q.values.push_back(OrderedKey(d));
          }
        }
        break;
      }
      if (!strings) {
        q.values.assign(p.int64_values().values().begin(),
                        p.int64_values().values().end());
        break;
      }
      if (absl::Status s = string_attribute(); !s.ok()) return s;
      for (int i = 0; i < p.string_values().values_size(); ++i) {
        absl::StatusOr<int64_t> code = InternString(
            absl::StrCat(field, ".string_values.values[", i, "]"),
            q.attribute, name, p.string_values().values(i));
        if (!code.ok()) return code.status();
        q.values.push_back(*code);
      }
      break;
    case v1::OP_PREFIX_IGNORE_CASE:
    case v1::OP_SUFFIX_IGNORE_CASE: {  // EQ on the fold's first (last) bytes
      const std::string fold = FoldCase(p.string_value());
      if (fold.empty()) {  // any string value
        if (absl::Status s = string_attribute(); !s.ok()) return s;
        q.op = matcher::Op::kExists;
        break;
      }
      absl::StatusOr<matcher::Predicate> eq = affix_equality(
          p.op() == v1::OP_PREFIX_IGNORE_CASE ? "f" : "l", fold);
      if (!eq.ok()) return eq.status();
      q = *std::move(eq);
      break;
    }
    case v1::OP_PREFIX:
    case v1::OP_SUFFIX:
    case v1::OP_NOT_PREFIX:
    case v1::OP_NOT_SUFFIX: {  // EQ (NE) on the first (last) L bytes' code
      const std::string& affix = p.string_value();  // NOT_*: not empty
      if (affix.empty()) {  // any string value
        if (absl::Status s = string_attribute(); !s.ok()) return s;
        q.op = matcher::Op::kExists;
        break;
      }
      const absl::string_view role = p.op() == v1::OP_PREFIX       ? "p"
                                     : p.op() == v1::OP_SUFFIX     ? "x"
                                     : p.op() == v1::OP_NOT_PREFIX ? "P"
                                                                   : "X";
      absl::StatusOr<matcher::Predicate> eq = affix_equality(role, affix);
      if (!eq.ok()) return eq.status();
      q = *std::move(eq);
      if (role == "P" || role == "X") q.op = matcher::Op::kNe;
      break;
    }
    case v1::OP_CIDR: {  // a range of addresses (ValidateSubscribe parsed it)
      const std::optional<IpNetwork> network =
          ParseIpNetwork(p.string_value());
      if (!network.has_value()) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, ".string_value: not an IP network"));
      }
      const IpWords words = WordsOf(network->address);
      const int length = network->prefix_length;
      q.op = matcher::Op::kBetween;
      if (!network->address.v6) {  // the 32 bits in the low half of `high`
        absl::StatusOr<uint32_t> id = DerivedId(field, *plain, name, "ip4", 0);
        if (!id.ok()) return id.status();
        const uint64_t mask = TopBits(length) >> 32;
        const uint64_t host = ~mask & 0xFFFFFFFFu;
        q.attribute = *id;
        q.value = static_cast<int64_t>(words.high & mask);
        q.upper = static_cast<int64_t>((words.high & mask) | host);
        break;
      }
      // Both halves exist once any IPv6 network names the name, so that
      // every IPv6 event string carries both.
      absl::StatusOr<uint32_t> high = DerivedId(field, *plain, name, "ip6h", 0);
      if (!high.ok()) return high.status();
      absl::StatusOr<uint32_t> low = DerivedId(field, *plain, name, "ip6l", 0);
      if (!low.ok()) return low.status();
      if (length <= 64) {
        const uint64_t mask = TopBits(length);
        q.attribute = *high;
        q.value = Ordered(words.high & mask);
        q.upper = Ordered(words.high | ~mask);
        break;
      }
      matcher::Predicate same_high;
      same_high.attribute = *high;
      same_high.op = matcher::Op::kEq;
      same_high.value = Ordered(words.high);
      out->push_back(std::move(same_high));
      const uint64_t mask = TopBits(length - 64);
      q.attribute = *low;
      q.value = Ordered(words.low & mask);
      q.upper = Ordered(words.low | ~mask);
      break;
    }
    case v1::OP_WILDCARD:  // a prefix, a suffix and a length, or
    case v1::OP_NOT_WILDCARD: {  // the pattern's own attribute
      const absl::StatusOr<Wildcard> w = ParseWildcard(p.string_value());
      if (!w.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, ".string_value: ", w.status().message()));
      }
      if (p.op() == v1::OP_NOT_WILDCARD || w->stars >= 2) {
        absl::StatusOr<uint32_t> id =
            PatternId(field, *plain, name, p.string_value());
        if (!id.ok()) return id.status();
        if (p.op() == v1::OP_WILDCARD) {
          q.attribute = *id;
          q.op = matcher::Op::kEq;
          q.value = 1;
          break;
        }
        // A string value, and not one the pattern matches (guarded: an
        // event encoded before the pattern was named lacks "$w<k>:").
        if (absl::Status s = string_attribute(); !s.ok()) return s;
        q.op = matcher::Op::kExists;
        out->push_back(q);
        return absent(*id);
      }
      if (!w->star || (w->left.empty() && w->right.empty())) {
        // The string itself, or any string.
        if (absl::Status s = string_attribute(); !s.ok()) return s;
        if (!w->star) {
          absl::StatusOr<int64_t> code =
              InternString(absl::StrCat(field, ".string_value"), q.attribute,
                           name, w->left);
          if (!code.ok()) return code.status();
          q.op = matcher::Op::kEq;
          q.value = *code;
        } else {
          q.op = matcher::Op::kExists;
        }
        break;
      }
      // "a*b": prefix a, suffix b, and at least |a| + |b| bytes (else "a"
      // would match "a*a"). One part empty: the other alone.
      for (const auto& [part, role] :
           {std::make_pair(&w->left, "p"), std::make_pair(&w->right, "x")}) {
        if (part->empty()) continue;
        absl::StatusOr<matcher::Predicate> eq = affix_equality(role, *part);
        if (!eq.ok()) return eq.status();
        out->push_back(*std::move(eq));
      }
      if (w->left.empty() || w->right.empty()) return absl::OkStatus();
      absl::StatusOr<uint32_t> length =
          DerivedId(field, *plain, name, "len", 0);
      if (!length.ok()) return length.status();
      q.attribute = *length;
      q.op = matcher::Op::kGe;
      q.value = static_cast<int64_t>(w->left.size() + w->right.size());
      break;
    }
    case v1::OP_EQUALS_IGNORE_CASE:
    case v1::OP_NOT_EQUALS_IGNORE_CASE: {  // EQ, NE, IN, NOT_IN on folds
      absl::StatusOr<uint32_t> id = DerivedId(field, *plain, name, "i", 0);
      if (!id.ok()) return id.status();
      q.attribute = *id;
      const bool equal = p.op() == v1::OP_EQUALS_IGNORE_CASE;
      if (p.operand_case() == v1::Predicate::kStringValue) {
        absl::StatusOr<int64_t> code =
            InternString(absl::StrCat(field, ".string_value"), *id, name,
                         FoldCase(p.string_value()));
        if (!code.ok()) return code.status();
        q.op = equal ? matcher::Op::kEq : matcher::Op::kNe;
        q.value = *code;
        break;
      }
      for (int i = 0; i < p.string_values().values_size(); ++i) {
        absl::StatusOr<int64_t> code = InternString(
            absl::StrCat(field, ".string_values.values[", i, "]"), *id, name,
            FoldCase(p.string_values().values(i)));
        if (!code.ok()) return code.status();
        q.values.push_back(*code);
      }
      q.op = equal ? matcher::Op::kIn : matcher::Op::kNotIn;
      break;
    }
    case v1::OP_EXISTS:
    case v1::OP_NOT_EXISTS: {
      absl::StatusOr<uint32_t> any = DerivedId(field, *plain, name, "any", 0);
      if (!any.ok()) return any.status();
      q.attribute = *any;
      if (p.op() == v1::OP_EXISTS) break;
      return absent(*any);
    }
    default:  // EQ to BETWEEN
      if (p.operand_case() == v1::Predicate::kLiteralValue) {
        // EQ or NE (validation) on "$lit:<name>", the literal's number.
        absl::StatusOr<uint32_t> id = DerivedId(field, *plain, name, "lit", 0);
        if (!id.ok()) return id.status();
        q.attribute = *id;
        q.value = p.literal_value();
        break;
      }
      if (!strings) {
        // Each bound an integer on the name, or with a fraction on "$d:".
        struct Bound {
          bool fraction;
          int64_t value;  // the integer, or the OrderedKey
        };
        const auto bound = [](bool is_double, int64_t integer, double d) {
          int64_t n;
          if (!is_double) return Bound{false, integer};
          if (IntegralDouble(d, &n)) return Bound{false, n};
          return Bound{true, OrderedKey(d)};
        };
        const Bound low =
            bound(p.operand_case() == v1::Predicate::kDoubleValue, p.value(),
                  p.double_value());
        const Bound high =
            p.op() == v1::OP_BETWEEN
                ? bound(p.upper_operand_case() == v1::Predicate::kDoubleUpper,
                        p.upper(), p.double_upper())
                : Bound{false, 0};
        uint32_t doubles = kNone;
        if (low.fraction || high.fraction) {
          absl::StatusOr<uint32_t> id = doubles_attribute();
          if (!id.ok()) return id.status();
          doubles = *id;
        }
        q.value = low.value;
        q.upper = high.value;
        if (p.op() != v1::OP_BETWEEN || low.fraction == high.fraction) {
          if (low.fraction) q.attribute = doubles;
          break;
        }
        // One bound of each kind: two predicates, each on its attribute.
        matcher::Predicate ge;
        ge.attribute = low.fraction ? doubles : *plain;
        ge.op = matcher::Op::kGe;
        ge.value = low.value;
        out->push_back(std::move(ge));
        q.attribute = high.fraction ? doubles : *plain;
        q.op = matcher::Op::kLe;
        q.value = high.value;
        q.upper = 0;
        break;
      }
      if (p.op() != v1::OP_EQ && p.op() != v1::OP_NE) {  // a string range
        absl::StatusOr<uint32_t> id = DerivedId(field, *plain, name, "o", 0);
        if (!id.ok()) return id.status();
        q.attribute = *id;
        absl::StatusOr<Bound> low = InternBound(
            absl::StrCat(field, ".string_value"), *id, name, p.string_value());
        if (!low.ok()) return low.status();
        q.value = low->label;
        uint64_t count = low->count;
        if (p.op() == v1::OP_BETWEEN) {
          absl::StatusOr<Bound> high =
              InternBound(absl::StrCat(field, ".string_upper"), *id, name,
                          p.string_upper());
          if (!high.ok()) return high.status();
          q.upper = high->label;
          count = std::max(count, high->count);
        }
        if (order_count_id_ == kNone) {
          absl::StatusOr<uint32_t> counter =
              InternName(field, std::string(kOrderCount));
          if (!counter.ok()) return counter.status();
          order_count_id_ = *counter;
        }
        out->push_back(std::move(q));
        matcher::Predicate guard;
        guard.attribute = order_count_id_;
        guard.op = matcher::Op::kGe;
        guard.value = static_cast<int64_t>(count);
        out->push_back(std::move(guard));
        return absl::OkStatus();
      }
      if (absl::Status s = string_attribute(); !s.ok()) return s;
      absl::StatusOr<int64_t> code = InternString(
          absl::StrCat(field, ".string_value"), q.attribute, name,
          p.string_value());
      if (!code.ok()) return code.status();
      q.value = *code;
  }
  out->push_back(std::move(q));
  return absl::OkStatus();
}

void TypedAttributes::EncodeValue(uint32_t id, const ValueRef& v,
                                  std::vector<matcher::AttributeValue>* record)
    const {
  const Derived* d = id < derived_.size() ? &derived_[id] : nullptr;
  if (v.kind == JsonValue::Kind::kDouble) {
    // An integer as itself; with a fraction, its floor marked "just
    // above" (validation keeps it finite and within the int64 range).
    int64_t n;
    if (IntegralDouble(v.d, &n)) {
      record->push_back({id, n});
    } else {
      record->push_back({id, FloorOf(v.d), /*half_above=*/true});
    }
    if (d != nullptr && d->doubles != kNone) {
      record->push_back({d->doubles, OrderedKey(v.d)});
    }
  } else if (v.kind == JsonValue::Kind::kInt) {
    record->push_back({id, v.i});
    if (d != nullptr && d->doubles != kNone) {
      record->push_back({d->doubles, OrderedKey(static_cast<double>(v.i))});
    }
  } else if (v.kind == JsonValue::Kind::kString && d != nullptr) {
    const absl::string_view s = v.s;
    if (d->strings != kNone) {
      record->push_back(
          {d->strings, Code(dictionaries_.find(d->strings)->second, s)});
    }
    if (d->ordered != kNone) {
      record->push_back(
          {d->ordered, OrderLabel(orders_.find(d->ordered)->second, s)});
    }
    // The codes of s's first (last) L bytes, one per length in use.
    // Excluded prefixes and suffixes also give a string shorter than L
    // a value: the code of the empty string, which no L-byte string
    // has, so that NE holds for it; the others skip those lengths.
    const auto add_affixes = [&](absl::string_view of,
                                 const LengthIds& lengths, bool last,
                                 bool short_too) {
      for (const auto& [length, affix_id] : lengths) {
        if (length > of.size() && !short_too) break;  // sorted by L
        const absl::string_view affix =
            length > of.size() ? absl::string_view()
            : last             ? of.substr(of.size() - length)
                               : of.substr(0, length);
        record->push_back(
            {affix_id, Code(dictionaries_.find(affix_id)->second, affix)});
      }
    };
    add_affixes(s, d->prefixes, /*last=*/false, /*short_too=*/false);
    add_affixes(s, d->suffixes, /*last=*/true, /*short_too=*/false);
    add_affixes(s, d->not_prefixes, /*last=*/false, /*short_too=*/true);
    add_affixes(s, d->not_suffixes, /*last=*/true, /*short_too=*/true);
    // s's case fold, once, for its affixes and itself.
    const bool fold_affixes =
        !d->fold_prefixes.empty() || !d->fold_suffixes.empty();
    const std::string fold =
        fold_affixes || d->folded != kNone ? FoldCase(s) : std::string();
    if (fold_affixes) {
      add_affixes(fold, d->fold_prefixes, /*last=*/false, /*short_too=*/false);
      add_affixes(fold, d->fold_suffixes, /*last=*/true, /*short_too=*/false);
    }
    if (d->folded != kNone) {
      record->push_back(
          {d->folded, Code(dictionaries_.find(d->folded)->second, fold)});
    }
    if (d->length != kNone) {
      record->push_back({d->length, static_cast<int64_t>(s.size())});
    }
    // Patterns: the candidates of s's ends, checked.
    for (const Derived::PatternEnds& ends : d->pattern_ends) {
      if (size_t{ends.left} + ends.right > s.size()) continue;
      auto it = ends.by_ends.find(EndsKey(
          s.substr(0, ends.left), s.substr(s.size() - ends.right)));
      if (it == ends.by_ends.end()) continue;
      for (uint32_t k : it->second) {
        const Derived::Pattern& pattern = d->patterns[k];
        if (WildcardMatches(pattern.wildcard, s)) {
          record->push_back({pattern.attribute, 1});
        }
      }
    }
    if (d->ip4 != kNone || d->ip6_high != kNone) {
      const std::optional<IpAddress> ip = ParseIpAddress(s);
      if (ip.has_value()) {
        const IpWords words = WordsOf(*ip);
        if (!ip->v6 && d->ip4 != kNone) {
          record->push_back({d->ip4, static_cast<int64_t>(words.high)});
        } else if (ip->v6 && d->ip6_high != kNone) {
          record->push_back({d->ip6_high, Ordered(words.high)});
          record->push_back({d->ip6_low, Ordered(words.low)});
        }
      }
    }
  }
  if (v.kind == JsonValue::Kind::kLiteral && d != nullptr &&
      d->literals != kNone) {
    record->push_back({d->literals, v.i});  // a v1::Literal's number
  }
}

namespace {

bool Less(const matcher::AttributeValue& a, const matcher::AttributeValue& b) {
  return std::tie(a.attribute, a.value, a.half_above) <
         std::tie(b.attribute, b.value, b.half_above);
}

bool Same(const matcher::AttributeValue& a, const matcher::AttributeValue& b) {
  return a.attribute == b.attribute && a.value == b.value &&
         a.half_above == b.half_above;
}

}  // namespace

bool TypedAttributes::Combine(
    const JsonGroup& group, absl::Span<const std::optional<uint32_t>> ids,
    size_t* k, size_t max, std::vector<Record>* out,
    std::vector<uint32_t>* anys) const {
  Record own;
  for (const JsonLeaf& leaf : group.leaves) {
    const std::optional<uint32_t>& id = ids[(*k)++];
    if (!id.has_value()) continue;  // no predicate names it
    const Derived* d = *id < derived_.size() ? &derived_[*id] : nullptr;
    if (d != nullptr && d->any != kNone) anys->push_back(d->any);
    EncodeValue(*id,
                ValueRef{leaf.value.kind, leaf.value.i, leaf.value.d,
                         leaf.value.s},
                &own);
  }
  out->clear();
  out->push_back(std::move(own));
  std::vector<Record> alternatives;
  std::vector<Record> element;
  std::vector<Record> product;
  for (const std::vector<JsonGroup>& array : group.arrays) {
    alternatives.clear();
    for (const JsonGroup& e : array) {
      if (!Combine(e, ids, k, max, &element, anys)) return false;
      for (Record& r : element) alternatives.push_back(std::move(r));
    }
    // Distinct alternatives only; and one with no values is matched by
    // nothing its siblings' are not (every operator but NOT_EXISTS needs
    // a value, and EXISTS and NOT_EXISTS look at the whole event).
    for (Record& r : alternatives) std::sort(r.begin(), r.end(), Less);
    std::sort(alternatives.begin(), alternatives.end(),
              [](const Record& a, const Record& b) {
                return std::lexicographical_compare(a.begin(), a.end(),
                                                    b.begin(), b.end(), Less);
              });
    alternatives.erase(
        std::unique(alternatives.begin(), alternatives.end(),
                    [](const Record& a, const Record& b) {
                      return std::equal(a.begin(), a.end(), b.begin(),
                                        b.end(), Same);
                    }),
        alternatives.end());
    if (alternatives.size() > 1 && alternatives.front().empty()) {
      alternatives.erase(alternatives.begin());  // the empty one sorts first
    }
    if (alternatives.size() == 1 && alternatives.front().empty()) continue;
    if (out->size() * alternatives.size() > max) return false;
    product.clear();
    for (const Record& left : *out) {
      for (const Record& right : alternatives) {
        Record r = left;
        r.insert(r.end(), right.begin(), right.end());
        product.push_back(std::move(r));
      }
    }
    out->swap(product);
  }
  return true;
}

absl::Status TypedAttributes::Encode(
    const v1::PublishRequest& request, absl::Span<const JsonGroup> json,
    size_t max_combinations,
    std::vector<std::vector<matcher::AttributeValue>>* out,
    std::vector<uint32_t>* event_of) const {
  // Scratch for one FindAll over the whole request, kept per thread so that
  // the front stage does not allocate per request once warmed up.
  thread_local std::vector<absl::string_view> names;
  thread_local std::vector<std::optional<uint32_t>> ids;
  std::shared_lock<std::shared_mutex> lock(mu_);
  // Before the lookups: every name with a smaller id is found by them.
  const int64_t epoch = static_cast<int64_t>(names_->size());
  names.clear();
  for (const v1::Event& event : request.events()) {
    for (const v1::Attribute& attribute : event.attributes()) {
      names.push_back(attribute.name());
    }
  }
  for (const JsonGroup& group : json) CollectPaths(group, &names);
  ids.resize(names.size());
  names_->FindAll(names, absl::MakeSpan(ids));

  // The tail every record ends with.
  Record tail;
  if (names_epoch_ != kNone) tail.push_back({names_epoch_, epoch});
  if (order_count_id_ != kNone) {
    tail.push_back({order_count_id_, static_cast<int64_t>(order_count_)});
  }
  size_t records = 0;
  event_of->clear();
  const auto next_record = [&](int event) -> Record& {
    if (out->size() <= records) out->emplace_back();
    event_of->push_back(static_cast<uint32_t>(event));
    Record& record = (*out)[records++];
    record.clear();
    return record;
  };
  size_t k = 0;
  size_t kj = 0;  // the json paths' ids start after every attribute's
  for (const v1::Event& event : request.events()) kj += event.attributes_size();
  std::vector<Record> combinations;
  std::vector<uint32_t> anys;
  for (int i = 0; i < request.events_size(); ++i) {
    const v1::Event& event = request.events(i);
    const bool has_json = static_cast<size_t>(i) < json.size() &&
                          (!json[i].leaves.empty() || !json[i].arrays.empty());
    Record base;
    Record& record = has_json ? base : next_record(i);
    for (const v1::Attribute& attribute : event.attributes()) {
      const std::optional<uint32_t>& id = ids[k++];
      if (!id.has_value()) continue;  // no predicate names it
      switch (attribute.kind_case()) {
        case v1::Attribute::kDoubleValue:
          EncodeValue(*id, ValueRef{JsonValue::Kind::kDouble, 0,
                                    attribute.double_value(), {}},
                      &record);
          break;
        case v1::Attribute::kStringValue:
          EncodeValue(*id, ValueRef{JsonValue::Kind::kString, 0, 0,
                                    attribute.string_value()},
                      &record);
          break;
        case v1::Attribute::kLiteralValue:
          EncodeValue(*id, ValueRef{JsonValue::Kind::kLiteral,
                                    attribute.literal_value(), 0, {}},
                      &record);
          break;
        default:
          EncodeValue(*id, ValueRef{JsonValue::Kind::kInt, attribute.value(),
                                    0, {}},
                      &record);
          break;
      }
      const Derived* d = *id < derived_.size() ? &derived_[*id] : nullptr;
      if (d != nullptr && d->any != kNone) record.push_back({d->any, 0});
    }
    if (!has_json) {
      record.insert(record.end(), tail.begin(), tail.end());
      continue;
    }
    anys.clear();
    if (!Combine(json[i], ids, &kj, max_combinations, &combinations, &anys)) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "events[", i, "].json: its arrays give more than ", max_combinations,
          " combinations of the values subscriptions name; the limit is ",
          max_combinations, " (--max_json_combinations)"));
    }
    // EXISTS and NOT_EXISTS see a path with a value anywhere in the event.
    std::sort(anys.begin(), anys.end());
    anys.erase(std::unique(anys.begin(), anys.end()), anys.end());
    for (const uint32_t any : anys) base.push_back({any, 0});
    for (const Record& c : combinations) {
      Record& r = next_record(i);
      r.insert(r.end(), base.begin(), base.end());
      r.insert(r.end(), c.begin(), c.end());
      r.insert(r.end(), tail.begin(), tail.end());
    }
  }
  out->resize(records);
  if (records == static_cast<size_t>(request.events_size())) {
    event_of->clear();
  }
  names.clear();  // the views point into `request` and `json`
  return absl::OkStatus();
}

void TypedAttributes::RestoreNames() {
  std::unique_lock<std::shared_mutex> lock(mu_);
  const size_t n = names_->size();
  for (uint32_t id = 0; id < n; ++id) {
    const std::string name = names_->Name(id);
    if (!name.empty() && name[0] == '$') Adopt(id, name);
  }
}

absl::Status TypedAttributes::RestoreString(uint32_t attribute, int64_t code,
                                            absl::string_view bytes) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  auto it = dictionaries_.find(attribute);
  if (it == dictionaries_.end()) {
    return absl::DataLossError(
        absl::StrCat("string value of attribute id ", attribute,
                     ", which is not a string attribute"));
  }
  auto [at, inserted] = it->second.emplace(code, std::string(bytes));
  if (!inserted && at->second != bytes) {
    return absl::DataLossError(absl::StrCat(
        "string value code ", code, " of attribute id ", attribute,
        " is taken by another string"));
  }
  if (auto pattern = pattern_at_.find(attribute);
      pattern != pattern_at_.end()) {
    const auto [plain, k] = pattern->second;
    if (it->second.size() != 1 || !Know(derived_[plain], k, bytes)) {
      return absl::DataLossError(absl::StrCat(
          "wildcard attribute id ", attribute, ": a second string, or one "
          "that is not a pattern"));
    }
  }
  auto order = orders_.find(attribute);
  if (order != orders_.end() && inserted) {  // an order bound, in order
    const std::string key(bytes);
    auto next = order->second.lower_bound(key);
    if ((next != order->second.end() && next->second.label <= code) ||
        (next != order->second.begin() &&
         std::prev(next)->second.label >= code)) {
      return absl::DataLossError(absl::StrCat(
          "string order label ", code, " of attribute id ", attribute,
          " is out of byte order"));
    }
    order->second.emplace(key, Bound{code, ++order_count_});
  }
  return absl::OkStatus();
}

size_t TypedAttributes::DistinctStrings(uint32_t attribute) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  auto it = dictionaries_.find(attribute);
  return it == dictionaries_.end() ? 0 : it->second.size();
}

void TypedAttributes::FillStats(v1::Stats* stats) const {
  std::vector<v1::AttributeStats> entries;
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    for (uint32_t plain = 0; plain < derived_.size(); ++plain) {
      const Derived& d = derived_[plain];
      if (d.strings == kNone && d.prefixes.empty() && d.suffixes.empty() &&
          d.not_prefixes.empty() && d.not_suffixes.empty() &&
          d.ordered == kNone && d.folded == kNone) {
        continue;
      }
      v1::AttributeStats entry;
      entry.set_name(names_->Name(plain));
      if (d.strings != kNone) {
        entry.set_distinct_strings(
            dictionaries_.find(d.strings)->second.size());
      }
      // Distinct strings over the derived attributes of one role pair
      // (prefixes and excluded ones), and how many there are.
      const auto count = [&](const LengthIds& a, const LengthIds& b) {
        uint64_t n = 0;
        for (const LengthIds* lengths : {&a, &b}) {
          for (const auto& [length, id] : *lengths) {
            n += dictionaries_.find(id)->second.size();
          }
        }
        return std::make_pair(n, static_cast<uint32_t>(a.size() + b.size()));
      };
      const auto [prefixes, prefix_lengths] =
          count(d.prefixes, d.not_prefixes);
      entry.set_distinct_prefixes(prefixes);
      entry.set_prefix_lengths(prefix_lengths);
      const auto [suffixes, suffix_lengths] =
          count(d.suffixes, d.not_suffixes);
      entry.set_distinct_suffixes(suffixes);
      entry.set_suffix_lengths(suffix_lengths);
      if (d.folded != kNone) {
        entry.set_distinct_folded(dictionaries_.find(d.folded)->second.size());
      }
      if (d.ordered != kNone) {
        entry.set_range_bounds(orders_.find(d.ordered)->second.size());
      }
      entries.push_back(std::move(entry));
    }
  }
  std::sort(entries.begin(), entries.end(),
            [](const v1::AttributeStats& a, const v1::AttributeStats& b) {
              return a.name() < b.name();
            });
  for (v1::AttributeStats& e : entries) {
    *stats->add_attributes() = std::move(e);
  }
}

}  // namespace service
}  // namespace cohort
