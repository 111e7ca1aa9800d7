#include "filter/any_of.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "filter/parse.h"

namespace cohort {
namespace filter {
namespace internal {
namespace {

size_t PredicateCount(const Alternatives& alternatives) {
  size_t n = 0;
  for (const auto& alternative : alternatives) n += alternative.size();
  return n;
}

std::string TooMany(absl::string_view what, size_t limit) {
  return absl::StrCat("it expands into more than ", limit, " ", what,
                      " (every \"and\" of groups taken one alternative of "
                      "each); the limit is ",
                      limit);
}

}  // namespace

std::string AppendDistributed(const std::vector<Term>& terms,
                              Alternatives* out) {
  // Counts are checked before each product is written, so nothing past the
  // limits is ever allocated; the factors are at most the limits, so the
  // products fit in 64 bits.
  const size_t before = PredicateCount(*out);
  Alternatives product(1);
  size_t predicates = 0;
  for (const Term& term : terms) {
    if (!term.is_group) {
      for (auto& alternative : product) alternative.push_back(term.predicate);
      predicates += product.size();
    } else {
      const uint64_t count =
          uint64_t{product.size()} * uint64_t{term.group.size()};
      const uint64_t written =
          uint64_t{term.group.size()} * predicates +
          uint64_t{product.size()} * PredicateCount(term.group);
      if (count + out->size() > kMaxOrAlternatives) {
        return TooMany("alternatives", kMaxOrAlternatives);
      }
      if (written + before > kMaxOrPredicates) {
        return TooMany("predicates", kMaxOrPredicates);
      }
      Alternatives next;
      next.reserve(count);
      for (const auto& left : product) {
        for (const auto& right : term.group) {
          std::vector<v1::Predicate>& both = next.emplace_back(left);
          both.insert(both.end(), right.begin(), right.end());
        }
      }
      product = std::move(next);
      predicates = written;
    }
    if (predicates + before > kMaxOrPredicates) {
      return TooMany("predicates", kMaxOrPredicates);
    }
  }
  if (product.size() + out->size() > kMaxOrAlternatives) {
    return TooMany("alternatives", kMaxOrAlternatives);
  }
  for (auto& alternative : product) out->push_back(std::move(alternative));
  return "";
}

void AddGroup(Alternatives alternatives, v1::SubscriptionSpec* spec) {
  v1::AnyOf* group = spec->add_any_of();
  for (auto& alternative : alternatives) {
    v1::Conjunction* conjunction = group->add_alternatives();
    for (v1::Predicate& p : alternative) {
      *conjunction->add_predicates() = std::move(p);
    }
  }
}

void AddTerms(std::vector<Term> terms, v1::SubscriptionSpec* spec) {
  for (Term& term : terms) {
    if (term.is_group) {
      AddGroup(std::move(term.group), spec);
    } else {
      *spec->add_predicates() = std::move(term.predicate);
    }
  }
}

}  // namespace internal
}  // namespace filter
}  // namespace cohort
