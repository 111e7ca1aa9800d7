// Numbers at the API edge (issue 44): an int64 and a double compare as
// numbers, exactly (pubsub.proto, Op). A double that is an integer is that
// int64; a double with a fraction reaches the matcher as its floor marked
// "just above" (matcher/types.h, AttributeValue), and an operand with a
// fraction is compared on the derived attribute "$d:<name>"
// (typed_attributes.h) through OrderedKey.
//
// Thread safety: pure functions.
#ifndef COHORT_SERVICE_MODEL_NUMBERS_H_
#define COHORT_SERVICE_MODEL_NUMBERS_H_

#include <cstdint>
#include <string>

namespace cohort {
namespace service {

// Integers at or past this magnitude cannot share a list with a number
// with a fraction (pubsub.proto, DoubleList): on "$d:" they would be
// rounded to doubles, and 2^53 + 1 would equal 2^53.
inline constexpr double kExactDoubleIntegers = 0x1p53;

// Why `d` is no number the API compares, as the end of a message ("nan is
// not a number", "inf is beyond the int64 range numbers compare in"), or
// the empty string if it is one: finite and within [-2^63, 2^63).
std::string WhyNotComparable(double d);

// True iff `d` is an integer within the int64 range; then *n is it.
bool IntegralDouble(double d, int64_t* n);

// floor(d). REQUIRES: WhyNotComparable(d) is empty.
int64_t FloorOf(double d);

// An int64 in the order of doubles: a < b iff OrderedKey(a) <
// OrderedKey(b), and -0.0 has 0.0's key. REQUIRES: d is not NaN.
int64_t OrderedKey(double d);

// Compares two numbers exactly, each an int64 (is_double false) or a
// double: -1, 0 or 1. REQUIRES: the doubles are comparable.
int CompareNumbers(bool a_double, int64_t a_int, double a,
                   bool b_double, int64_t b_int, double b);

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_MODEL_NUMBERS_H_
