// The "or" of both front ends (parse.cc's parentheses and `or`,
// pattern.cc's "$or" and lists of several kinds of condition): a
// conjunction as written, whose terms are predicates and "or" groups, and
// its distribution into disjunctive normal form, capped so that one filter
// cannot make the parser allocate without bound.
// Internal to filter/; pure functions, callable from any thread.
#ifndef COHORT_FILTER_ANY_OF_H_
#define COHORT_FILTER_ANY_OF_H_

#include <cstddef>
#include <string>
#include <vector>

#include "proto/cohort/v1/pubsub.pb.h"

namespace cohort {
namespace filter {
namespace internal {

// Most predicates, over all its alternatives, that distributing one group
// may write. kMaxOrAlternatives (parse.h) alone does not bound memory: a
// 64 KiB filter holds some 16,000 predicates, and 1,024 copies of them
// would be over a gigabyte. 64 per alternative at the full 1,024
// alternatives, twice the default --max_predicates, is more than any
// server would accept of one group.
inline constexpr size_t kMaxOrPredicates = size_t{1} << 16;

// Alternatives in disjunctive normal form: each the predicates of one
// conjunction, in the order written.
using Alternatives = std::vector<std::vector<v1::Predicate>>;

// One term of a conjunction: a predicate, or an "or" group of two
// alternatives or more (already distributed).
struct Term {
  bool is_group = false;
  v1::Predicate predicate;  // unless is_group
  Alternatives group;       // if is_group
};

// AppendDistributed()
//
// Appends to `out` the alternatives of the conjunction `terms`: one for
// each way of taking one alternative from every group (a predicate is a
// group of one), its predicates in the order of `terms`; the first term's
// choice varies slowest. Returns "" or, leaving `out` in an unspecified
// state, why the result would pass kMaxOrAlternatives alternatives or
// kMaxOrPredicates predicates ("it expands into more than 1024
// alternatives ...").
std::string AppendDistributed(const std::vector<Term>& terms,
                              Alternatives* out);

// AddTerms()
//
// Adds `terms`, a conjunction as written, to `spec`: each predicate to
// its predicates and each group to its any_of, in order.
void AddTerms(std::vector<Term> terms, v1::SubscriptionSpec* spec);

// AddGroup()
//
// Adds `alternatives` to `spec` as one group of any_of.
void AddGroup(Alternatives alternatives, v1::SubscriptionSpec* spec);

}  // namespace internal
}  // namespace filter
}  // namespace cohort

#endif  // COHORT_FILTER_ANY_OF_H_
