#include "service/model/case_fold.h"

#include <algorithm>
#include <iterator>

namespace cohort {
namespace service {
namespace {

struct CaseFoldPair {
  uint32_t from;
  uint32_t to;
};

#include "service/model/case_fold_table.inc"

// The code point of the well-formed UTF-8 sequence at bytes[i], and its
// length; length 0 if the bytes there are not one (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF).
struct Decoded {
  uint32_t code_point;
  size_t length;
};

Decoded Decode(absl::string_view bytes, size_t i) {
  const auto byte = [&](size_t k) {
    return static_cast<unsigned char>(bytes[k]);
  };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return {lead, 1};
  size_t length;
  uint32_t c;
  uint32_t lowest;
  if ((lead & 0xE0) == 0xC0) {
    length = 2, c = lead & 0x1F, lowest = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, c = lead & 0x0F, lowest = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, c = lead & 0x07, lowest = 0x10000;
  } else {
    return {0, 0};
  }
  if (i + length > bytes.size()) return {0, 0};
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return {0, 0};
    c = (c << 6) | (byte(i + k) & 0x3F);
  }
  if (c < lowest || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) {
    return {0, 0};
  }
  return {c, length};
}

void Encode(uint32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

}  // namespace

absl::string_view CaseFoldVersion() { return kCaseFoldUnicodeVersion; }

uint32_t FoldCodePoint(uint32_t c) {
  if (c >= 'A' && c <= 'Z') return c + ('a' - 'A');
  if (c < 0x80) return c;
  const auto* end = std::end(kCaseFoldPairs);
  const auto* it = std::lower_bound(
      std::begin(kCaseFoldPairs), end, c,
      [](const CaseFoldPair& p, uint32_t v) { return p.from < v; });
  return it != end && it->from == c ? it->to : c;
}

std::string FoldCase(absl::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    const Decoded d = Decode(bytes, i);
    if (d.length == 0) {  // not UTF-8 here: the byte as it is
      out.push_back(bytes[i]);
      ++i;
      continue;
    }
    Encode(FoldCodePoint(d.code_point), &out);
    i += d.length;
  }
  return out;
}

}  // namespace service
}  // namespace cohort
