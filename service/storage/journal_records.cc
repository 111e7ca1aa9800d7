#include "service/storage/journal_records.h"

#include "absl/strings/str_cat.h"
#include "matcher/types.h"
#include "service/storage/journal_frame.h"

namespace cohort {
namespace service {
namespace {

// Reads little-endian values from a payload; once a read runs past the end
// every later read fails too, so callers check ok() once per record.
class Cursor {
 public:
  explicit Cursor(absl::string_view data) : data_(data) {}

  uint64_t Get(int bytes) {
    if (!ok_ || data_.size() - pos_ < static_cast<size_t>(bytes)) {
      ok_ = false;
      return 0;
    }
    const uint64_t v = LoadFixed(data_.data() + pos_, bytes);
    pos_ += bytes;
    return v;
  }
  uint32_t Get32() { return static_cast<uint32_t>(Get(4)); }
  uint64_t Get64() { return Get(8); }
  absl::string_view GetBytes(uint32_t n) {
    if (!ok_ || data_.size() - pos_ < n) {
      ok_ = false;
      return {};
    }
    absl::string_view out = data_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  // Whether `count` items of at least `each` bytes can still follow (guards
  // allocations against a corrupt count).
  bool Fits(uint64_t count, size_t each) const {
    return ok_ && count <= (data_.size() - pos_) / each;
  }
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == data_.size(); }

 private:
  absl::string_view data_;
  size_t pos_ = 0;
  bool ok_ = true;
};

absl::Status Bad(uint8_t type, absl::string_view what) {
  return absl::DataLossError(
      absl::StrCat("journal ", RecordTypeName(type), " record: ", what));
}

constexpr size_t kPredicateBytes = 4 + 1 + 8 + 8;
// The API's OP_PREFIX, which the matcher never sees (typed_attributes.h).
constexpr uint8_t kNotAMatcherOp = 10;

}  // namespace

std::string RecordTypeName(uint8_t type) {
  switch (type) {
    case kAttributeName:
      return "attribute name";
    case kSubscriberName:
      return "subscriber name";
    case kSubscribe:
      return "subscribe";
    case kSubscribeOr:
      return "subscribe or";
    case kUnsubscribe:
      return "unsubscribe";
    case kStringValue:
      return "string value";
    case kLogPosition:
      return "log position";
  }
  return absl::StrCat("unknown record type ", type);
}

std::string EncodeLogPosition(uint64_t position) {
  std::string out;
  PutFixed64(position, &out);
  return out;
}

absl::Status DecodeLogPosition(absl::string_view payload, uint64_t* out) {
  if (payload.size() != 8) {
    return Bad(kLogPosition, absl::StrCat("payload of ", payload.size(),
                                          " bytes, not 8"));
  }
  *out = LoadFixed(payload.data(), 8);
  return absl::OkStatus();
}

std::string EncodeName(uint32_t id, absl::string_view name) {
  std::string out;
  out.reserve(8 + name.size());
  PutFixed32(id, &out);
  PutFixed32(static_cast<uint32_t>(name.size()), &out);
  out.append(name.data(), name.size());
  return out;
}

namespace {

void PutPredicates(const std::vector<matcher::Predicate>& predicates,
                   std::string* out) {
  PutFixed32(static_cast<uint32_t>(predicates.size()), out);
  for (const matcher::Predicate& p : predicates) {
    PutFixed32(p.attribute, out);
    out->push_back(static_cast<char>(p.op));
    if (p.op == matcher::Op::kIn || p.op == matcher::Op::kNotIn) {
      PutFixed64(p.values.size(), out);
      PutFixed64(0, out);
      for (int64_t v : p.values) PutFixed64(static_cast<uint64_t>(v), out);
      continue;
    }
    PutFixed64(static_cast<uint64_t>(p.value), out);
    PutFixed64(static_cast<uint64_t>(p.upper), out);
  }
}

size_t PredicatesBytes(const std::vector<matcher::Predicate>& predicates) {
  size_t size = 4 + predicates.size() * kPredicateBytes;
  for (const matcher::Predicate& p : predicates) size += 8 * p.values.size();
  return size;
}

// A count of predicates and the predicates (PutPredicates), for `type`'s
// messages.
absl::Status GetPredicates(uint8_t type, Cursor* c,
                           std::vector<matcher::Predicate>* out) {
  const uint32_t m = c->Get32();
  if (!c->Fits(m, kPredicateBytes)) {
    return Bad(type, "predicate count too large");
  }
  if (m == 0) return Bad(type, "a subscription without predicates");
  out->resize(m);
  for (matcher::Predicate& p : *out) {
    p.attribute = c->Get32();
    const uint8_t op = static_cast<uint8_t>(c->Get(1));
    if (op < static_cast<uint8_t>(matcher::Op::kEq) ||
        op > static_cast<uint8_t>(matcher::Op::kNotExists) ||
        op == kNotAMatcherOp) {
      return Bad(type, absl::StrCat("unknown operator ", op));
    }
    p.op = static_cast<matcher::Op>(op);
    p.value = static_cast<int64_t>(c->Get64());
    p.upper = static_cast<int64_t>(c->Get64());
    if (p.op == matcher::Op::kIn || p.op == matcher::Op::kNotIn) {
      const uint64_t count = static_cast<uint64_t>(p.value);
      if (count == 0 || !c->Fits(count, 8)) {
        return Bad(type, absl::StrCat("a set of ", count, " values"));
      }
      p.values.resize(count);
      for (int64_t& v : p.values) v = static_cast<int64_t>(c->Get64());
      p.value = 0;
    }
  }
  return absl::OkStatus();
}

}  // namespace

bool HasBranches(absl::Span<const SubscriptionInput> subscriptions) {
  for (const SubscriptionInput& s : subscriptions) {
    if (!s.branches.empty()) return true;
  }
  return false;
}

std::string EncodeSubscribe(uint64_t first_id,
                            absl::Span<const SubscriptionInput> subscriptions) {
  const bool branches = HasBranches(subscriptions);
  std::string out;
  size_t size = 12;
  for (const SubscriptionInput& s : subscriptions) {
    size += 8;
    for (size_t b = 0; b < s.conjunctions(); ++b) {
      size += PredicatesBytes(s.conjunction(b));
    }
  }
  out.reserve(size);
  PutFixed64(first_id, &out);
  PutFixed32(static_cast<uint32_t>(subscriptions.size()), &out);
  for (const SubscriptionInput& s : subscriptions) {
    PutFixed32(s.subscriber, &out);
    if (branches) {
      PutFixed32(static_cast<uint32_t>(s.conjunctions()), &out);
    }
    for (size_t b = 0; b < s.conjunctions(); ++b) {
      PutPredicates(s.conjunction(b), &out);
    }
  }
  return out;
}

std::string EncodeUnsubscribe(absl::Span<const uint64_t> ids) {
  std::string out;
  out.reserve(4 + 8 * ids.size());
  PutFixed32(static_cast<uint32_t>(ids.size()), &out);
  for (uint64_t id : ids) PutFixed64(id, &out);
  return out;
}

absl::Status DecodeName(uint8_t type, absl::string_view payload,
                        NameRecord* out) {
  Cursor c(payload);
  out->id = c.Get32();
  const uint32_t length = c.Get32();
  out->name = std::string(c.GetBytes(length));
  if (!c.ok()) return Bad(type, "shorter than its lengths");
  if (!c.at_end()) return Bad(type, "bytes after the name");
  return absl::OkStatus();
}

absl::Status DecodeSubscribe(uint8_t type, absl::string_view payload,
                             SubscribeRecord* out) {
  Cursor c(payload);
  out->first_id = c.Get64();
  const uint32_t n = c.Get32();
  if (!c.Fits(n, 8)) return Bad(type, "subscription count too large");
  if (out->first_id == 0) return Bad(type, "first id 0");
  out->subscriptions.assign(n, SubscriptionInput());
  for (SubscriptionInput& s : out->subscriptions) {
    s.subscriber = c.Get32();
    if (type == kSubscribe) {
      if (absl::Status st = GetPredicates(type, &c, &s.predicates); !st.ok()) {
        return st;
      }
      continue;
    }
    const uint32_t b = c.Get32();
    if (b == 0 || !c.Fits(b, 4 + kPredicateBytes)) {
      return Bad(type, absl::StrCat("a subscription of ", b,
                                    " conjunctions"));
    }
    if (b == 1) {
      if (absl::Status st = GetPredicates(type, &c, &s.predicates); !st.ok()) {
        return st;
      }
      continue;
    }
    s.branches.resize(b);
    for (std::vector<matcher::Predicate>& branch : s.branches) {
      if (absl::Status st = GetPredicates(type, &c, &branch); !st.ok()) {
        return st;
      }
    }
  }
  if (!c.ok()) return Bad(type, "shorter than its counts");
  if (!c.at_end()) return Bad(type, "bytes after the last subscription");
  return absl::OkStatus();
}

std::string EncodeString(uint32_t attribute, int64_t code,
                         absl::string_view bytes) {
  std::string out;
  out.reserve(16 + bytes.size());
  PutFixed32(attribute, &out);
  PutFixed64(static_cast<uint64_t>(code), &out);
  PutFixed32(static_cast<uint32_t>(bytes.size()), &out);
  out.append(bytes.data(), bytes.size());
  return out;
}

absl::Status DecodeString(absl::string_view payload, StringRecord* out) {
  Cursor c(payload);
  out->attribute = c.Get32();
  out->code = static_cast<int64_t>(c.Get64());
  const uint32_t length = c.Get32();
  out->bytes = std::string(c.GetBytes(length));
  if (!c.ok()) return Bad(kStringValue, "shorter than its length");
  if (!c.at_end()) return Bad(kStringValue, "bytes after the string");
  return absl::OkStatus();
}

absl::Status DecodeUnsubscribe(absl::string_view payload,
                               std::vector<uint64_t>* out) {
  Cursor c(payload);
  const uint32_t n = c.Get32();
  if (!c.Fits(n, 8)) return Bad(kUnsubscribe, "id count too large");
  out->assign(n, 0);
  for (uint64_t& id : *out) id = c.Get64();
  if (!c.ok()) return Bad(kUnsubscribe, "shorter than its count");
  if (!c.at_end()) return Bad(kUnsubscribe, "bytes after the last id");
  return absl::OkStatus();
}

}  // namespace service
}  // namespace cohort
