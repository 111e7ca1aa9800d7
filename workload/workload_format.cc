#include "workload/workload.h"

// The workload text format described in workload.h: the writer
// (WriteWorkloadChunks and the functions built on it) and the reader
// (ReadWorkload, ReadWorkloadFile), with the knob table both share. The
// generator and the report are in workload.cc.

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <istream>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "matcher/types.h"

namespace cohort {
namespace workload {

using matcher::AttributeValue;
using matcher::Op;
using matcher::Predicate;

// ---------------------------------------------------------------------------
// The knobs line, and options equality over the same knob table.

namespace {

// The knobs, in the order of the "# knobs" line. Exactly one member pointer
// is set.
struct KnobField {
  absl::string_view name;
  int64_t WorkloadOptions::* integer;
  double WorkloadOptions::* real;
  uint64_t WorkloadOptions::* unsigned_integer;
};

using W = WorkloadOptions;
constexpr KnobField kKnobs[] = {
    {"subscriptions", &W::subscriptions, nullptr, nullptr},
    {"events", &W::events, nullptr, nullptr},
    {"seed", nullptr, nullptr, &W::seed},
    {"attributes", &W::attributes, nullptr, nullptr},
    {"domain", &W::domain, nullptr, nullptr},
    {"min_predicates", &W::min_predicates, nullptr, nullptr},
    {"max_predicates", &W::max_predicates, nullptr, nullptr},
    {"eq_fraction", nullptr, &W::eq_fraction, nullptr},
    {"zipf_attributes", nullptr, &W::zipf_attributes, nullptr},
    {"zipf_values", nullptr, &W::zipf_values, nullptr},
    {"event_attributes", &W::event_attributes, nullptr, nullptr},
    {"between_max_width", &W::between_max_width, nullptr, nullptr},
    {"payload_bytes", &W::payload_bytes, nullptr, nullptr},
};

std::string KnobValue(const WorkloadOptions& o, const KnobField& k) {
  if (k.integer != nullptr) return absl::StrCat(o.*k.integer);
  if (k.real != nullptr) return internal::FormatKnobValue(o.*k.real);
  return absl::StrCat(o.*k.unsigned_integer);
}

bool ParseKnobValue(absl::string_view text, const KnobField& k,
                    WorkloadOptions* o) {
  if (k.integer != nullptr) return absl::SimpleAtoi(text, &(o->*k.integer));
  if (k.real != nullptr) return absl::SimpleAtod(text, &(o->*k.real));
  return absl::SimpleAtoi(text, &(o->*k.unsigned_integer));
}

}  // namespace

bool operator==(const WorkloadOptions& a, const WorkloadOptions& b) {
  if (a.preset != b.preset) return false;
  for (const KnobField& k : kKnobs) {
    const bool same = k.integer != nullptr ? a.*k.integer == b.*k.integer
                      : k.real != nullptr
                          ? a.*k.real == b.*k.real
                          : a.*k.unsigned_integer == b.*k.unsigned_integer;
    if (!same) return false;
  }
  return true;
}

namespace internal {

std::string FormatKnobValue(double x) {
  for (int precision = 1; precision < 17; ++precision) {
    std::string text = absl::StrFormat("%.*g", precision, x);
    double parsed = 0;
    if (absl::SimpleAtod(text, &parsed) && parsed == x) return text;
  }
  return absl::StrFormat("%.17g", x);
}

}  // namespace internal

// ---------------------------------------------------------------------------
// Writing.

namespace {

// Chunk size handed to the sink: large enough to amortize stream writes,
// small enough that a 1M-subscription file is never held in memory twice.
constexpr size_t kWriteChunkBytes = size_t{1} << 20;

std::string HeaderLines(const WorkloadOptions& o) {
  std::string out = absl::StrCat("# cohort-workload v1 preset=", o.preset,
                                 " seed=", o.seed, "\n# knobs");
  for (const KnobField& k : kKnobs) {
    absl::StrAppend(&out, " ", k.name, "=", KnobValue(o, k));
  }
  return out + "\n";
}

}  // namespace

void WriteWorkloadChunks(const Workload& w,
                         absl::FunctionRef<void(absl::string_view)> sink) {
  std::string buffer = HeaderLines(w.options);
  buffer.reserve(kWriteChunkBytes + 4096);
  auto flush_if_full = [&]() {
    if (buffer.size() < kWriteChunkBytes) return;
    sink(buffer);
    buffer.clear();
  };
  for (const std::vector<Predicate>& subscription : w.subscriptions) {
    absl::StrAppend(&buffer, "S ", subscription.size());
    for (const Predicate& p : subscription) {
      absl::StrAppend(&buffer, " ", w.attribute_names[p.attribute], " ",
                      matcher::OpName(p.op), " ", p.value);
      if (p.op == Op::kBetween) absl::StrAppend(&buffer, " ", p.upper);
    }
    buffer.push_back('\n');
    flush_if_full();
  }
  for (const std::vector<AttributeValue>& event : w.events) {
    absl::StrAppend(&buffer, "E ", event.size());
    for (const AttributeValue& av : event) {
      absl::StrAppend(&buffer, " ", w.attribute_names[av.attribute], " ",
                      av.value);
    }
    buffer.push_back('\n');
    flush_if_full();
  }
  if (!buffer.empty()) sink(buffer);
}

void WriteWorkload(const Workload& workload, std::ostream& out) {
  WriteWorkloadChunks(workload, [&out](absl::string_view chunk) {
    out.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  });
}

std::string WorkloadText(const Workload& workload) {
  std::string text;
  WriteWorkloadChunks(workload, [&text](absl::string_view chunk) {
    text.append(chunk.data(), chunk.size());
  });
  return text;
}

// ---------------------------------------------------------------------------
// Reading.

namespace {

absl::Status LineError(int64_t line, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("line ", line, ": ", message));
}

// A letter or '_', then letters, digits, '_', '.' or '-'.
bool IsAttributeName(absl::string_view name) {
  if (name.empty() || !(absl::ascii_isalpha(name[0]) || name[0] == '_')) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return absl::ascii_isalnum(c) || c == '_' || c == '.' || c == '-';
  });
}

// Parses one workload file line by line; see ReadWorkload.
class Parser {
 public:
  absl::Status Line(absl::string_view line);
  absl::StatusOr<Workload> Finish();

 private:
  absl::Status Header(const std::vector<absl::string_view>& tokens);
  absl::Status Knobs(const std::vector<absl::string_view>& tokens);
  absl::Status Knob(absl::string_view key, absl::string_view value);
  absl::Status SubscriptionLine(const std::vector<absl::string_view>& tokens);
  absl::Status EventLine(const std::vector<absl::string_view>& tokens);
  absl::StatusOr<int64_t> Count(const std::vector<absl::string_view>& tokens);
  absl::StatusOr<matcher::AttributeId> Attribute(absl::string_view token);
  absl::StatusOr<int64_t> Integer(absl::string_view what,
                                  absl::string_view token);

  int64_t line_number_ = 0;
  bool seen_knobs_ = false;
  Workload w_;
  absl::flat_hash_map<std::string, matcher::AttributeId> ids_;
  std::vector<int64_t> seen_in_event_;  // per attribute id: last event + 1
};

absl::Status Parser::Line(absl::string_view line) {
  ++line_number_;
  absl::ConsumeSuffix(&line, "\r");
  const std::vector<absl::string_view> tokens =
      absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (line_number_ == 1) return Header(tokens);
  if (tokens.empty()) return absl::OkStatus();  // blank lines are ignored
  if (tokens[0][0] == '#') {
    if (tokens[0] == "#" && tokens.size() > 1 && tokens[1] == "knobs") {
      return Knobs(tokens);
    }
    return absl::OkStatus();
  }
  if (tokens[0] == "S") return SubscriptionLine(tokens);
  if (tokens[0] == "E") return EventLine(tokens);
  return LineError(
      line_number_,
      absl::StrCat("unknown record type '", tokens[0], "' (expected S or E)"));
}

absl::Status Parser::Header(const std::vector<absl::string_view>& tokens) {
  if (tokens.size() < 3 || tokens[0] != "#" || tokens[1] != "cohort-workload") {
    return LineError(1, "expected header '# cohort-workload v1 ...'");
  }
  if (tokens[2] != "v1") {
    return LineError(
        1, absl::StrCat("unsupported version '", tokens[2], "' (expected v1)"));
  }
  w_.options.preset = "unknown";
  for (size_t i = 3; i < tokens.size(); ++i) {
    const std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(tokens[i], absl::MaxSplits('=', 1));
    if (kv.first == "preset" && !kv.second.empty()) {
      w_.options.preset = std::string(kv.second);
    } else if (kv.first != "seed" ||
               !absl::SimpleAtoi(kv.second, &w_.options.seed)) {
      return LineError(1, absl::StrCat("bad header token '", tokens[i], "'"));
    }
  }
  return absl::OkStatus();
}

absl::Status Parser::Knobs(const std::vector<absl::string_view>& tokens) {
  if (seen_knobs_ || !w_.subscriptions.empty() || !w_.events.empty()) {
    return LineError(line_number_,
                     "'# knobs' line must appear once, before any record");
  }
  seen_knobs_ = true;
  for (size_t i = 2; i < tokens.size(); ++i) {
    const std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(tokens[i], absl::MaxSplits('=', 1));
    absl::Status status = Knob(kv.first, kv.second);
    if (!status.ok()) {
      return LineError(line_number_, absl::StrCat("bad knob '", tokens[i],
                                                  "': ", status.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status Parser::Knob(absl::string_view key, absl::string_view value) {
  for (const KnobField& k : kKnobs) {
    if (k.name != key) continue;
    if (ParseKnobValue(value, k, &w_.options)) return absl::OkStatus();
    return absl::InvalidArgumentError("not a number");
  }
  return absl::InvalidArgumentError("unknown knob");
}

absl::StatusOr<int64_t> Parser::Integer(absl::string_view what,
                                        absl::string_view token) {
  int64_t value = 0;
  if (absl::SimpleAtoi(token, &value)) return value;
  return LineError(line_number_,
                   absl::StrCat(what, " '", token, "' is not an integer"));
}

absl::StatusOr<int64_t> Parser::Count(
    const std::vector<absl::string_view>& tokens) {
  int64_t n = -1;
  if (tokens.size() < 2 || !absl::SimpleAtoi(tokens[1], &n) || n < 0) {
    return LineError(line_number_,
                     absl::StrCat("count '", tokens.size() < 2 ? "" : tokens[1],
                                  "' is not a non-negative integer"));
  }
  return n;
}

absl::StatusOr<matcher::AttributeId> Parser::Attribute(
    absl::string_view token) {
  auto it = ids_.find(token);
  if (it != ids_.end()) return it->second;
  if (!IsAttributeName(token)) {
    return LineError(line_number_,
                     absl::StrCat("invalid attribute name '", token, "'"));
  }
  const auto id = static_cast<matcher::AttributeId>(w_.attribute_names.size());
  w_.attribute_names.emplace_back(token);
  ids_.emplace(std::string(token), id);
  seen_in_event_.push_back(0);
  return id;
}

absl::Status Parser::SubscriptionLine(
    const std::vector<absl::string_view>& tokens) {
  if (!w_.events.empty()) {
    return LineError(line_number_, "S line after E lines");
  }
  absl::StatusOr<int64_t> n = Count(tokens);
  if (!n.ok()) return n.status();
  std::vector<Predicate> predicates;
  size_t t = 2;
  for (int64_t i = 0; i < *n; ++i) {
    if (t + 3 > tokens.size()) {
      return LineError(
          line_number_,
          absl::StrCat("S line declares ", *n, " predicates but has only ", i));
    }
    Predicate p;
    absl::StatusOr<matcher::AttributeId> id = Attribute(tokens[t]);
    if (!id.ok()) return id.status();
    p.attribute = *id;
    if (!matcher::ParseOp(tokens[t + 1], &p.op)) {
      return LineError(line_number_,
                       absl::StrCat("unknown operator '", tokens[t + 1], "'"));
    }
    absl::StatusOr<int64_t> value = Integer("value", tokens[t + 2]);
    if (!value.ok()) return value.status();
    p.value = *value;
    t += 3;
    if (p.op == Op::kBetween) {
      if (t >= tokens.size()) {
        return LineError(line_number_, "BETWEEN without an upper bound");
      }
      absl::StatusOr<int64_t> upper = Integer("upper bound", tokens[t++]);
      if (!upper.ok()) return upper.status();
      p.upper = *upper;
      if (p.value > p.upper) {
        return LineError(line_number_,
                         absl::StrCat("BETWEEN lower ", p.value, " > upper ",
                                      p.upper, " on '", tokens[t - 4], "'"));
      }
    }
    predicates.push_back(p);
  }
  if (t < tokens.size()) {
    return LineError(line_number_, absl::StrCat("extra token '", tokens[t],
                                                "' after ", *n, " predicates"));
  }
  w_.subscriptions.push_back(std::move(predicates));
  return absl::OkStatus();
}

absl::Status Parser::EventLine(const std::vector<absl::string_view>& tokens) {
  absl::StatusOr<int64_t> n = Count(tokens);
  if (!n.ok()) return n.status();
  const uint64_t expected = 2 * static_cast<uint64_t>(*n);  // name, value
  if (tokens.size() - 2 != expected) {
    return LineError(line_number_,
                     absl::StrCat("E line declares ", *n, " values but has ",
                                  tokens.size() - 2, " tokens after the count",
                                  " (expected ", expected, ")"));
  }
  const int64_t event_mark = static_cast<int64_t>(w_.events.size()) + 1;
  std::vector<AttributeValue> event(static_cast<size_t>(*n));
  for (size_t i = 0; i < event.size(); ++i) {
    absl::string_view name = tokens[2 + 2 * i];
    absl::StatusOr<matcher::AttributeId> id = Attribute(name);
    if (!id.ok()) return id.status();
    if (seen_in_event_[*id] == event_mark) {
      return LineError(line_number_,
                       absl::StrCat("event repeats attribute '", name, "'"));
    }
    seen_in_event_[*id] = event_mark;
    absl::StatusOr<int64_t> value = Integer("value", tokens[3 + 2 * i]);
    if (!value.ok()) return value.status();
    event[i] = {*id, *value};
  }
  w_.events.push_back(std::move(event));
  return absl::OkStatus();
}

absl::StatusOr<Workload> Parser::Finish() {
  if (line_number_ == 0) return LineError(1, "empty file (no header)");
  const auto subscriptions = static_cast<int64_t>(w_.subscriptions.size());
  const auto events = static_cast<int64_t>(w_.events.size());
  if (!seen_knobs_) {
    w_.options.subscriptions = subscriptions;
    w_.options.events = events;
    w_.options.attributes = static_cast<int64_t>(w_.attribute_names.size());
  } else if (w_.options.subscriptions != subscriptions ||
             w_.options.events != events) {
    return LineError(
        line_number_,
        absl::StrCat(
            "end of file: knobs say subscriptions=", w_.options.subscriptions,
            " events=", w_.options.events, " but the", " file has ",
            subscriptions, " S lines and ", events, " E lines"));
  }
  return std::move(w_);
}

}  // namespace

absl::StatusOr<Workload> ReadWorkload(std::istream& in) {
  Parser parser;
  std::string line;
  while (std::getline(in, line)) {
    absl::Status status = parser.Line(line);
    if (!status.ok()) return status;
  }
  if (in.bad()) return absl::DataLossError("read error");
  return parser.Finish();
}

absl::StatusOr<Workload> ReadWorkloadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  absl::StatusOr<Workload> workload = ReadWorkload(in);
  if (!workload.ok()) {
    return absl::Status(workload.status().code(),
                        absl::StrCat(path, ": ", workload.status().message()));
  }
  return workload;
}

}  // namespace workload
}  // namespace cohort
