#include "service/model/numbers.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "filter/parse.h"

namespace cohort {
namespace service {

std::string WhyNotComparable(double d) {
  if (std::isnan(d)) {
    return "nan is not a number (numbers must be finite, within the int64 "
           "range)";
  }
  if (d < -0x1p63 || d >= 0x1p63) {
    return absl::StrCat(filter::FormatDouble(d),
                        " is beyond the int64 range numbers compare in "
                        "(-2^63 to 2^63, 2^63 excluded)");
  }
  return "";
}

bool IntegralDouble(double d, int64_t* n) {
  if (!(d >= -0x1p63 && d < 0x1p63) || std::trunc(d) != d) return false;
  *n = static_cast<int64_t>(d);  // exact: d is an integer in range
  return true;
}

int64_t FloorOf(double d) { return static_cast<int64_t>(std::floor(d)); }

int64_t OrderedKey(double d) {
  if (d == 0) d = 0.0;  // -0.0 too
  int64_t bits;
  std::memcpy(&bits, &d, sizeof(bits));
  // Positive doubles order as their bits; negative ones the other way
  // round, below every positive one.
  return bits >= 0 ? bits : bits ^ INT64_MAX;
}

int CompareNumbers(bool a_double, int64_t a_int, double a, bool b_double,
                   int64_t b_int, double b) {
  // long double (x87: a 64-bit significand) holds every int64 and every
  // double exactly.
  const long double x = a_double ? a : a_int;
  const long double y = b_double ? b : b_int;
  return x < y ? -1 : (x > y ? 1 : 0);
}

}  // namespace service
}  // namespace cohort
