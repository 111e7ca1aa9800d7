#include "service/api/typed_attributes.h"

#include <algorithm>
#include <mutex>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"

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

constexpr absl::string_view kNamesEpoch = "$names";

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

absl::StatusOr<uint32_t> TypedAttributes::DerivedId(absl::string_view field,
                                                    uint32_t plain,
                                                    absl::string_view name,
                                                    char role,
                                                    uint32_t length) {
  Derived& d = DerivedOf(plain);
  if (role == 's' && d.strings != kNone) return d.strings;
  if (role == 'a' && d.any != kNone) return d.any;
  if (role == 'p') {
    for (const auto& [l, id] : d.prefixes) {
      if (l == length) return id;
    }
  }
  std::string derived_name;
  switch (role) {
    case 's':
      derived_name = absl::StrCat("$s:", name);
      break;
    case 'a':
      derived_name = absl::StrCat("$any:", name);
      break;
    default:
      derived_name = absl::StrCat("$p", length, ":", name);
  }
  absl::StatusOr<uint32_t> id = InternName(field, derived_name);
  if (!id.ok()) return id.status();
  Adopt(*id, derived_name);
  return *id;
}

void TypedAttributes::Adopt(uint32_t id, absl::string_view name) {
  if (name == kNamesEpoch) {
    names_epoch_ = id;
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
  if (role == "s") {
    d.strings = id;
    dictionaries_[id];
  } else if (role == "any") {
    d.any = id;
  } else if (uint32_t length = 0; absl::StartsWith(role, "p") &&
                                   absl::SimpleAtoi(role.substr(1), &length)) {
    d.prefixes.emplace_back(length, id);
    std::sort(d.prefixes.begin(), d.prefixes.end());
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
    return absl::ResourceExhaustedError(absl::StrCat(
        field, ": attribute \"", name, "\" already has ", dictionary.size(),
        " distinct ", absl::StartsWith(names_->Name(attribute), "$p")
                          ? "prefixes of this length"
                          : "strings",
        " named by subscriptions; the limit is ", max_distinct_strings_,
        " (--max_distinct_strings)"));
  }
  dictionary.emplace(code, std::string(bytes));
  if (on_new_string_) on_new_string_(attribute, code, bytes);
  return code;
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
  auto string_attribute = [&]() -> absl::Status {
    absl::StatusOr<uint32_t> id = DerivedId(field, *plain, name, 's', 0);
    if (!id.ok()) return id.status();
    q.attribute = *id;
    return absl::OkStatus();
  };
  switch (p.op()) {
    case v1::OP_IN:
    case v1::OP_NOT_IN:
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
    case v1::OP_PREFIX: {
      const std::string& prefix = p.string_value();
      if (prefix.empty()) {  // any string value
        if (absl::Status s = string_attribute(); !s.ok()) return s;
        q.op = matcher::Op::kExists;
        break;
      }
      const uint32_t length = static_cast<uint32_t>(prefix.size());
      absl::StatusOr<uint32_t> id = DerivedId(field, *plain, name, 'p', length);
      if (!id.ok()) return id.status();
      absl::StatusOr<int64_t> code = InternString(
          absl::StrCat(field, ".string_value"), *id, name, prefix);
      if (!code.ok()) return code.status();
      q.attribute = *id;
      q.op = matcher::Op::kEq;
      q.value = *code;
      break;
    }
    case v1::OP_EXISTS:
    case v1::OP_NOT_EXISTS: {
      absl::StatusOr<uint32_t> any = DerivedId(field, *plain, name, 'a', 0);
      if (!any.ok()) return any.status();
      q.attribute = *any;
      if (p.op() == v1::OP_EXISTS) break;
      if (names_epoch_ == kNone) {
        absl::StatusOr<uint32_t> epoch =
            InternName(field, std::string(kNamesEpoch));
        if (!epoch.ok()) return epoch.status();
        names_epoch_ = *epoch;
      }
      out->push_back(q);
      matcher::Predicate guard;
      guard.attribute = names_epoch_;
      guard.op = matcher::Op::kGe;
      guard.value = int64_t{*any} + 1;
      out->push_back(std::move(guard));
      return absl::OkStatus();
    }
    default:  // EQ to BETWEEN
      if (!strings) {
        q.value = p.value();
        q.upper = p.op() == v1::OP_BETWEEN ? p.upper() : 0;
        break;
      }
      // Validation admits only EQ and NE on strings.
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

void TypedAttributes::Encode(
    const v1::PublishRequest& request,
    std::vector<std::vector<matcher::AttributeValue>>* out) const {
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
  ids.resize(names.size());
  names_->FindAll(names, absl::MakeSpan(ids));

  out->resize(request.events_size());
  size_t k = 0;
  for (int i = 0; i < request.events_size(); ++i) {
    std::vector<matcher::AttributeValue>& record = (*out)[i];
    record.clear();
    for (const v1::Attribute& attribute : request.events(i).attributes()) {
      const std::optional<uint32_t>& id = ids[k++];
      if (!id.has_value()) continue;  // no predicate names it
      const Derived* d = *id < derived_.size() ? &derived_[*id] : nullptr;
      if (attribute.kind_case() != v1::Attribute::kStringValue) {
        record.push_back({*id, attribute.value()});
      } else if (d != nullptr) {
        const absl::string_view s = attribute.string_value();
        if (d->strings != kNone) {
          record.push_back(
              {d->strings, Code(dictionaries_.find(d->strings)->second, s)});
        }
        for (const auto& [length, prefix] : d->prefixes) {
          if (length > s.size()) break;
          record.push_back(
              {prefix, Code(dictionaries_.find(prefix)->second,
                            s.substr(0, length))});
        }
      }
      if (d != nullptr && d->any != kNone) record.push_back({d->any, 0});
    }
    if (names_epoch_ != kNone) record.push_back({names_epoch_, epoch});
  }
  names.clear();  // the views point into `request`
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
      if (d.strings == kNone && d.prefixes.empty()) continue;
      v1::AttributeStats entry;
      entry.set_name(names_->Name(plain));
      if (d.strings != kNone) {
        entry.set_distinct_strings(
            dictionaries_.find(d.strings)->second.size());
      }
      uint64_t prefixes = 0;
      for (const auto& [length, id] : d.prefixes) {
        prefixes += dictionaries_.find(id)->second.size();
      }
      entry.set_distinct_prefixes(prefixes);
      entry.set_prefix_lengths(static_cast<uint32_t>(d.prefixes.size()));
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
