// Fuzz target: the indexes against the reference matcher. The input decodes
// into a sequence of Add, Remove and MatchCohort calls (the format is below)
// over a small attribute and value domain plus the int64 extremes, so that
// predicates share bounds and events hit them. Every call goes to an Index
// and to a PartitionedIndex of 3 partitions whose lists spread after 2 rows
// (so rows of one list land in every partition); any difference from
// ReferenceMatcher — a status, a match set, MatchEvent against MatchCohort,
// or the size — prints the step and aborts.
//
// Input format, repeated until the input ends (tools/fuzz/byte_reader.h):
//   op byte % 4: 0 Add; 1 Add through AddBatch (a run of them is one
//           batch of both indexes, applied before the next other op or the
//           end, each status checked); 2 Remove; 3 MatchCohort. The byte
//           / 4 % 3 says which ranges the rows planned from then on keep
//           inline, in both indexes: as the planner chooses, all, none
//           (InlineRanges); the byte / 12 % 3 which SIMD kernels run from
//           then on, as far as the CPU has them: all, AVX2 but not
//           AVX-512, none (simd.h)
//   Add:    id, predicate count (0 to 4; 0 must be refused), per predicate
//           attribute (0 to 5), op (EQ to BETWEEN, IN, NOT_IN, EXISTS,
//           NOT_EXISTS), then for IN and NOT_IN a count (1 to 4) and the
//           values, for EXISTS and NOT_EXISTS nothing, else a value and for
//           BETWEEN an upper bound (one byte in 16 swaps the bounds, which
//           must be refused)
//   Remove: id
//   Match:  event count (1 to 70, so cohorts cross the 64-event chunk),
//           per event a bit mask of its attributes and their values
//   id:     mostly 0 to 31; a few near kMaxSubscriptionId or above it (the
//           latter must be refused)
//   value:  a small number, a byte, an extreme (INT64_MIN, -1, 0, 1,
//           INT64_MAX, ...) or a full 8 bytes
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "matcher/index.h"
#include "matcher/partitioned_index.h"
#include "matcher/reference_matcher.h"
#include "matcher/simd.h"
#include "matcher/types.h"
#include "tools/fuzz/byte_reader.h"
#include "tools/fuzz/fail.h"

namespace cohort {
namespace matcher {
namespace {

constexpr uint32_t kAttributes = 6;
constexpr uint32_t kMaxEvents = 70;

using fuzz::Fail;

int64_t Value(fuzz::ByteReader& in) {
  static constexpr int64_t kExtremes[] = {
      std::numeric_limits<int64_t>::min(),
      std::numeric_limits<int64_t>::min() + 1,
      -1,
      0,
      1,
      std::numeric_limits<int64_t>::max() - 1,
      std::numeric_limits<int64_t>::max(),
  };
  switch (in.Below(4)) {
    case 0:
      return in.Below(16);
    case 1:
      return in.Signed(1);
    case 2:
      return kExtremes[in.Below(std::size(kExtremes))];
    default:
      return in.Signed(8);
  }
}

SubscriptionId Id(fuzz::ByteReader& in) {
  const uint32_t pick = in.Below(40);
  if (pick < 32) return pick;
  if (pick < 36) return kMaxSubscriptionId - (pick - 32);
  return kMaxSubscriptionId + 1 + (pick - 36);
}

std::string Text(absl::Span<const SubscriptionId> ids) {
  return absl::StrCat("{", absl::StrJoin(ids, ","), "}");
}

class Session {
 public:
  // Adds a subscription read from `in`, now or (batched) with the next
  // Flush.
  void Add(fuzz::ByteReader& in, bool batched) {
    if (!batched) Flush();
    const SubscriptionId id = Id(in);
    const uint32_t count = in.Below(5);
    std::vector<Predicate> predicates(count);
    bool swapped = false;
    for (Predicate& p : predicates) {
      p.attribute = in.Below(kAttributes);
      // EQ to BETWEEN, IN, NOT_IN, EXISTS, NOT_EXISTS (11, 12).
      const uint32_t op = 1 + in.Below(11);
      p.op = static_cast<Op>(op <= 9 ? op : op + 1);
      if (p.op == Op::kIn || p.op == Op::kNotIn) {
        // 1 to 4 values (an empty set is refused: none drawn here).
        for (uint32_t n = 1 + in.Below(4); n > 0; --n) {
          p.values.push_back(Value(in));
        }
        continue;
      }
      if (p.op == Op::kExists || p.op == Op::kNotExists) continue;
      p.value = Value(in);
      if (p.op == Op::kBetween) {
        p.upper = Value(in);
        if (p.value > p.upper) std::swap(p.value, p.upper);
        if (in.Below(16) == 0 && p.value != p.upper) {
          std::swap(p.value, p.upper);
          swapped = true;
        }
      }
    }
    // Index::Add checks the id's range, then its presence, then the
    // predicates.
    const bool bad_id = id > kMaxSubscriptionId;
    absl::StatusCode want = absl::StatusCode::kOk;
    if (!bad_id && live_.contains(id)) {
      want = absl::StatusCode::kAlreadyExists;
    } else if (bad_id || count == 0 || swapped) {
      want = absl::StatusCode::kInvalidArgument;
    }
    if (batched) {
      // A batch's statuses are Adds' in order: want counts the earlier
      // entries (live_ below).
      pending_.push_back({id, std::move(predicates), want});
      if (want == absl::StatusCode::kOk) {
        if (!reference_.Add(id, pending_.back().predicates)) {
          Fail("reference Add refused");
        }
        live_.insert(id);
      }
      return;
    }
    const absl::Status status = index_.Add(id, predicates);
    const absl::Status split = partitioned_.Add(id, predicates);
    if (status.code() != want || split.code() != want) {
      Fail(absl::StrCat("Add(", id, ") of ", count,
                        " predicates: ", status.ToString(), " and ",
                        split.ToString(), ", want ",
                        absl::StatusCodeToString(want)));
    }
    if (want == absl::StatusCode::kOk) {
      if (!reference_.Add(id, predicates)) Fail("reference Add refused");
      live_.insert(id);
    }
  }

  // Applies the pending batch to both indexes with AddBatch.
  void Flush() {
    if (pending_.empty()) return;
    std::vector<Index::NewSubscription> batch;
    for (const Pending& p : pending_) batch.push_back({p.id, p.predicates});
    const std::vector<absl::Status> got = index_.AddBatch(batch);
    const std::vector<absl::Status> split = partitioned_.AddBatch(batch);
    if (got.size() != batch.size() || split.size() != batch.size()) {
      Fail("AddBatch: wrong status count");
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      if (got[i].code() != pending_[i].want ||
          split[i].code() != pending_[i].want) {
        Fail(absl::StrCat("AddBatch entry ", i, " of ", batch.size(), " (id ",
                          batch[i].id, "): ", got[i].ToString(), " and ",
                          split[i].ToString(), ", want ",
                          absl::StatusCodeToString(pending_[i].want)));
      }
    }
    pending_.clear();
  }

  void Remove(fuzz::ByteReader& in) {
    Flush();
    const SubscriptionId id = Id(in);
    const bool present = live_.erase(id) > 0;
    if (present && !reference_.Remove(id)) Fail("reference Remove refused");
    for (const absl::Status& status :
         {index_.Remove(id), partitioned_.Remove(id)}) {
      if (status.ok() != present ||
          (!present && status.code() != absl::StatusCode::kNotFound)) {
        Fail(absl::StrCat("Remove(", id, "): ", status.ToString(),
                          present ? ", but it was present"
                                  : ", want NOT_FOUND"));
      }
    }
    if (index_.Contains(id) || partitioned_.Contains(id)) {
      Fail(absl::StrCat("Remove(", id, ") left it"));
    }
  }

  void Match(fuzz::ByteReader& in) {
    Flush();
    const uint32_t count = 1 + in.Below(kMaxEvents);
    std::vector<std::vector<AttributeValue>> events(count);
    for (auto& event : events) {
      const uint32_t mask = in.Below(1u << kAttributes);
      for (AttributeId a = 0; a < kAttributes; ++a) {
        if ((mask & (1u << a)) == 0) continue;
        AttributeValue av{a, Value(in)};
        // Now and then a number with a fraction, just above the value.
        av.half_above = av.value != std::numeric_limits<int64_t>::max() &&
                        in.Below(4) == 0;
        event.push_back(av);
      }
    }
    std::vector<EventView> views(events.begin(), events.end());
    index_.MatchCohort(views, &matches_);
    partitioned_.MatchCohort(views, &split_matches_);
    if (matches_.size() != count || split_matches_.size() != count) {
      Fail("MatchCohort: wrong result count");
    }
    for (uint32_t i = 0; i < count; ++i) {
      std::vector<SubscriptionId>& got = matches_[i];
      std::sort(got.begin(), got.end());
      std::vector<SubscriptionId>& split = split_matches_[i];
      std::sort(split.begin(), split.end());
      const std::vector<SubscriptionId> want = reference_.Match(views[i]);
      if (got != want || split != want) {
        Fail(absl::StrCat("MatchCohort event ", i, " of ", count, ": got ",
                          Text(got), " and (partitioned) ", Text(split),
                          ", want ", Text(want)));
      }
      index_.MatchEvent(views[i], &scratch_, &single_);
      std::sort(single_.begin(), single_.end());
      if (single_ != want) {
        Fail(absl::StrCat("MatchEvent event ", i, ": got ", Text(single_),
                          ", want ", Text(want)));
      }
    }
  }

  // The sizes, once no batch is pending.
  void CheckSize() const {
    if (!pending_.empty()) return;
    if (index_.size() != reference_.size() ||
        partitioned_.size() != reference_.size()) {
      Fail(absl::StrCat("size ", index_.size(), " and ", partitioned_.size(),
                        ", want ", reference_.size()));
    }
  }

  // Which ranges the rows planned from now on keep inline, in both.
  void SetInline(internal::InlineRanges mode) {
    index_.set_inline_ranges(mode);
    partitioned_.set_inline_ranges(mode);
  }

 private:
  struct Pending {
    SubscriptionId id;
    std::vector<Predicate> predicates;
    absl::StatusCode want;
  };

  Index index_;
  PartitionedIndex partitioned_{3, /*spread_rows=*/2};
  ReferenceMatcher reference_;
  absl::flat_hash_set<SubscriptionId> live_;
  MatchScratch scratch_;
  std::vector<std::vector<SubscriptionId>> matches_;
  std::vector<std::vector<SubscriptionId>> split_matches_;
  std::vector<SubscriptionId> single_;
  std::vector<Pending> pending_;  // Adds for the next AddBatch
};

}  // namespace
}  // namespace matcher
}  // namespace cohort

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cohort::fuzz::ByteReader in(data, size);
  cohort::matcher::Session session;
  while (!in.empty()) {
    const uint32_t byte = in.Byte();
    const uint32_t op = byte % 4;
    static constexpr cohort::matcher::internal::InlineRanges kInline[] = {
        cohort::matcher::internal::InlineRanges::kAuto,
        cohort::matcher::internal::InlineRanges::kAlways,
        cohort::matcher::internal::InlineRanges::kNever};
    session.SetInline(kInline[byte / 4 % 3]);
    cohort::matcher::internal::UseKernelsForTest(byte / 12 % 3);
    switch (op) {
      case 0:
      case 1:
        session.Add(in, /*batched=*/op == 1);
        break;
      case 2:
        session.Remove(in);
        break;
      default:
        session.Match(in);
        break;
    }
    session.CheckSize();
  }
  session.Flush();
  session.CheckSize();
  return 0;
}
