#include "filter/parse.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "filter/any_of.h"
#include "filter/spellings.h"

namespace cohort {
namespace filter {
namespace {

// Same as service::kMaxAttributeNameLength; client/ does not depend on
// service/, and the rule is part of the API (pubsub.proto), so it is fixed.
constexpr size_t kMaxAttributeNameLength = 64;

constexpr absl::string_view kOperatorList =
    "(=, !=, <, <=, >, >=, between, in, not in, prefix, suffix, "
    "equals-ignore-case, prefix-ignore-case, suffix-ignore-case, cidr, "
    "wildcard)";

constexpr absl::string_view kEscapeList =
    "the escapes are \\\" \\\\ \\n \\t \\r \\0 and \\xHH";

// ---------------------------------------------------------------------------
// Tokens

enum class TokenKind {
  kWord,    // a name, a number, a keyword, or junk: a run of other characters
  kSymbol,  // one of kSymbols
  kString,  // a string literal, quotes included
  kError,   // a string literal that cannot be read; always the last but kEnd
  kEnd,     // end of input; `pos` is text.size()
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  absl::string_view text;  // points into the parsed text; empty for kEnd
  size_t pos = 0;          // byte offset of the token in the parsed text
  // kString: the bytes the literal stands for. kError: what is wrong; `text`
  // is then the unterminated literal or the bad escape.
  std::string value;

  size_t end() const { return pos + text.size(); }
};

// Punctuation, longest first so that "<=" is not read as "<" then "=". The
// single "!", "&" and "|" are here only to be reported as what they are.
constexpr absl::string_view kSymbols[] = {
    "==", "!=", "<>", "<=", ">=", "&&", "||", "..", "=", "<",
    ">",  "[",  "]",  ",",  "(",  ")",  "!",  "&",  "|",
};

// Characters that end a word. Every one of them starts a symbol or a string
// (or is whitespace), so the lexer always makes progress.
bool EndsWord(char c) {
  return absl::ascii_isspace(static_cast<unsigned char>(c)) ||
         absl::string_view(",=!<>&|[]()\"").find(c) != absl::string_view::npos;
}

// Length in bytes of the character that starts at s[i]: a whole UTF-8
// sequence (lead byte and continuation bytes), else 1.
size_t CharLength(absl::string_view s, size_t i) {
  size_t n = 1;
  if (static_cast<unsigned char>(s[i]) < 0x80) return n;
  while (i + n < s.size() &&
         (static_cast<unsigned char>(s[i + n]) & 0xC0) == 0x80) {
    ++n;
  }
  return n;
}

// The character that starts at s[i], for a message: 'x', 'ï' (a UTF-8
// sequence is shown whole), or "byte 0x01" for a control character.
std::string DescribeCharAt(absl::string_view s, size_t i) {
  const unsigned char byte = static_cast<unsigned char>(s[i]);
  if (byte <= 0x20 || byte == 0x7f) {
    return absl::StrFormat("byte 0x%02X", byte);
  }
  return absl::StrCat("'", s.substr(i, CharLength(s, i)), "'");
}

// The value of the hex digit `c`, or -1 if it is not one.
int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Reads the string literal that starts at text[pos] (a '"'): a kString
// token with the bytes it stands for, or a kError token over the literal if
// it is not closed, or over its first bad escape.
Token LexString(absl::string_view text, size_t pos) {
  const absl::string_view rest = text.substr(pos);
  Token token;
  size_t i = 1;
  while (i < rest.size() && rest[i] != '"') {
    if (rest[i] != '\\') {
      token.value.push_back(rest[i++]);
      continue;
    }
    if (i + 1 == rest.size()) break;  // a '\\' that escapes nothing
    const char c = rest[i + 1];
    switch (c) {
      case '"':
      case '\\':
        token.value.push_back(c);
        break;
      case 'n':
        token.value.push_back('\n');
        break;
      case 't':
        token.value.push_back('\t');
        break;
      case 'r':
        token.value.push_back('\r');
        break;
      case '0':
        token.value.push_back('\0');
        break;
      case 'x': {
        const int high = i + 2 < rest.size() ? HexDigit(rest[i + 2]) : -1;
        const int low = i + 3 < rest.size() ? HexDigit(rest[i + 3]) : -1;
        if (high >= 0 && low >= 0) {
          token.value.push_back(static_cast<char>(high * 16 + low));
          i += 4;
          continue;
        }
        // Under the carets: \x and the (at most two) bytes after it, short
        // of the closing quote.
        size_t n = 2;
        while (n < 4 && i + n < rest.size() && rest[i + n] != '"') ++n;
        return {TokenKind::kError, rest.substr(i, n), pos + i,
                "bad escape \\x: it takes two hex digits (\\x00 to \\xFF)"};
      }
      default: {
        const unsigned char byte = static_cast<unsigned char>(c);
        const std::string what =
            byte > 0x20 && byte < 0x7f
                ? absl::StrCat("bad escape \\", std::string(1, c))
                : absl::StrCat("bad escape: \\ followed by ",
                               DescribeCharAt(rest, i + 1));
        return {TokenKind::kError,
                rest.substr(i, 1 + CharLength(rest, i + 1)), pos + i,
                absl::StrCat(what, "; ", kEscapeList)};
      }
    }
    i += 2;
  }
  if (i >= rest.size() || rest[i] != '"') {
    return {TokenKind::kError, rest, pos,
            "unterminated string: no closing '\"' before the end of the "
            "input"};
  }
  token.kind = TokenKind::kString;
  token.text = rest.substr(0, i + 1);
  token.pos = pos;
  return token;
}

// Splits `text` into tokens, the last one kEnd. A word that starts like a
// number also ends at "..", so that `1..5` is three tokens; a name keeps its
// dots (`a..b` is a valid attribute name). A string literal that cannot be
// read ends the input: its kError token is followed by kEnd.
std::vector<Token> Lex(absl::string_view text) {
  std::vector<Token> tokens;
  size_t pos = 0;
  while (true) {
    while (pos < text.size() &&
           absl::ascii_isspace(static_cast<unsigned char>(text[pos]))) {
      ++pos;
    }
    if (pos == text.size()) break;
    const absl::string_view rest = text.substr(pos);
    if (rest[0] == '"') {
      tokens.push_back(LexString(text, pos));
      if (tokens.back().kind == TokenKind::kError) break;
      pos = tokens.back().end();
      continue;
    }
    bool is_symbol = false;
    for (absl::string_view symbol : kSymbols) {
      if (absl::StartsWith(rest, symbol)) {
        tokens.push_back(
            {TokenKind::kSymbol, rest.substr(0, symbol.size()), pos});
        pos += symbol.size();
        is_symbol = true;
        break;
      }
    }
    if (is_symbol) continue;
    const bool numeric =
        absl::ascii_isdigit(static_cast<unsigned char>(rest[0])) ||
        rest[0] == '+' || rest[0] == '-';
    size_t n = 1;
    while (n < rest.size() && !EndsWord(rest[n]) &&
           !(numeric && absl::StartsWith(rest.substr(n), ".."))) {
      ++n;
    }
    tokens.push_back({TokenKind::kWord, rest.substr(0, n), pos});
    pos += n;
  }
  tokens.push_back({TokenKind::kEnd, absl::string_view(), text.size()});
  return tokens;
}

bool IsWord(const Token& token, absl::string_view keyword) {
  return token.kind == TokenKind::kWord &&
         absl::EqualsIgnoreCase(token.text, keyword);
}

bool IsSymbol(const Token& token, absl::string_view symbol) {
  return token.kind == TokenKind::kSymbol && token.text == symbol;
}

// `"is"`, or `end of input`, for "got ..." in messages. Control characters,
// '"' and '\\' are escaped; other bytes are kept, so UTF-8 reads as typed.
std::string Describe(const Token& token) {
  if (token.kind == TokenKind::kEnd) return "end of input";
  std::string out = "\"";
  for (char c : token.text) {
    const unsigned char byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      absl::StrAppend(&out, absl::StrFormat("\\x%02X", byte));
    } else {
      if (c == '"' || c == '\\') out.push_back('\\');
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

// ---------------------------------------------------------------------------
// Names and numbers

bool IsNameStart(char c) {
  return absl::ascii_isalpha(static_cast<unsigned char>(c)) || c == '_';
}

bool IsNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' ||
         c == '.' || c == '-';
}

}  // namespace

namespace internal {

std::string WhyBadName(absl::string_view name) {
  if (name.empty()) return "it is empty";
  if (!IsNameStart(name[0])) {
    return absl::StrCat("it starts with ", DescribeCharAt(name, 0),
                        "; a name starts with a letter or '_'");
  }
  for (size_t i = 0; i < name.size(); ++i) {
    if (!IsNameChar(name[i])) {
      return absl::StrCat("it contains ", DescribeCharAt(name, i),
                          "; a name has only ASCII letters, digits, '_', '.' "
                          "and '-'");
    }
  }
  if (name.size() > kMaxAttributeNameLength) {
    return absl::StrCat("it is ", name.size(),
                        " characters long; the limit is ",
                        kMaxAttributeNameLength);
  }
  return "";
}

}  // namespace internal

namespace {

using internal::WhyBadName;

// `word` without its leading '+' or '-', if it has one.
absl::string_view WithoutSign(absl::string_view word) {
  if (absl::StartsWith(word, "+") || absl::StartsWith(word, "-")) {
    word.remove_prefix(1);
  }
  return word;
}

// True iff `word` is [+-]?digit(_?digit)*: digits, with '_' only between two.
bool IsIntegerSyntax(absl::string_view word) {
  word = WithoutSign(word);
  if (word.empty()) return false;
  for (size_t i = 0; i < word.size(); ++i) {
    if (absl::ascii_isdigit(static_cast<unsigned char>(word[i]))) continue;
    const bool between_digits =
        word[i] == '_' && i > 0 && i + 1 < word.size() &&
        absl::ascii_isdigit(static_cast<unsigned char>(word[i - 1])) &&
        absl::ascii_isdigit(static_cast<unsigned char>(word[i + 1]));
    if (!between_digits) return false;
  }
  return true;
}

// True iff `word` is an optional sign, then digits and '_' only.
bool IsDigitsAndUnderscores(absl::string_view word) {
  word = WithoutSign(word);
  if (word.empty()) return false;
  for (char c : word) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c)) && c != '_') {
      return false;
    }
  }
  return true;
}

// Converts a word that IsIntegerSyntax() accepts. False if the value is
// outside the int64 range.
bool ToInt64(absl::string_view word, int64_t* out) {
  const bool negative = word[0] == '-';
  word = WithoutSign(word);
  // |INT64_MIN| = INT64_MAX + 1 fits in a uint64.
  const uint64_t limit =
      static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + negative;
  uint64_t magnitude = 0;
  for (char c : word) {
    if (c == '_') continue;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (magnitude > (limit - digit) / 10) return false;
    magnitude = magnitude * 10 + digit;
  }
  if (!negative) {
    *out = static_cast<int64_t>(magnitude);
  } else if (magnitude == limit) {
    *out = std::numeric_limits<int64_t>::min();
  } else {
    *out = -static_cast<int64_t>(magnitude);
  }
  return true;
}

// A value as read: a number (an int64, or a double with a fraction) or a
// string of bytes.
struct Operand {
  bool is_string = false;
  bool is_double = false;
  v1::Literal literal = v1::LITERAL_UNSPECIFIED;  // set for true/false/null
  int64_t number = 0;
  double d = 0;
  std::string bytes;
};

// True iff `word` is a decimal number written with a fraction or an
// exponent: [+-]?D(.D)?([eE][+-]?D)?, D as IsIntegerSyntax reads it
// without a sign, and at least one of the two parts.
bool IsDecimalSyntax(absl::string_view word) {
  word = WithoutSign(word);
  const auto digits = [](absl::string_view part) {
    return !part.empty() && part[0] != '+' && part[0] != '-' &&
           IsIntegerSyntax(part);
  };
  const size_t exponent = word.find_first_of("eE");
  const absl::string_view mantissa = word.substr(0, exponent);
  const size_t dot = mantissa.find('.');
  if (!digits(mantissa.substr(0, dot))) return false;
  if (dot != absl::string_view::npos && !digits(mantissa.substr(dot + 1))) {
    return false;
  }
  if (exponent == absl::string_view::npos) {
    return dot != absl::string_view::npos;
  }
  const absl::string_view power = word.substr(exponent + 1);
  return IsIntegerSyntax(power);  // a sign allowed
}

// Converts the word `token` to `*out`; returns "" or the error message.
std::string ParseNumber(const Token& token, Operand* out) {
  const char first = token.text[0];
  if (!absl::ascii_isdigit(static_cast<unsigned char>(first)) &&
      first != '+' && first != '-') {
    // Not a number at all: perhaps a string without its quotes. A word that
    // starts like a name has only printable ASCII, so it can be quoted as is.
    return absl::StrCat(
        "bad value ", Describe(token),
        ": expected a number (42, -7, 1_000, 19.99) or a string in double "
        "quotes",
        IsNameStart(first) ? absl::StrCat(" (", Describe(token), ")") : "");
  }
  if (IsDecimalSyntax(token.text)) {
    // A number with a fraction, or written with one ("3.0", "1e3"): an
    // integer in range stays an integer, so that text prints back as it
    // reads (FormatPredicate).
    std::string digits(token.text);
    digits.erase(std::remove(digits.begin(), digits.end(), '_'),
                 digits.end());
    if (digits[0] == '+') digits.erase(0, 1);
    double d = 0;
    // Syntax checked above; SimpleAtod rounds to nearest, gives an
    // infinity past the largest double and 0 below the smallest.
    if (!absl::SimpleAtod(digits, &d) || std::isinf(d) || d < -0x1p63 ||
        d >= 0x1p63) {
      return absl::StrCat("number ", token.text,
                          " is out of the int64 range numbers compare in "
                          "(-2^63 to 2^63, 2^63 excluded)");
    }
    if (std::trunc(d) == d) {
      out->number = static_cast<int64_t>(d);
    } else {
      out->is_double = true;
      out->d = d;
    }
    return "";
  }
  if (!IsIntegerSyntax(token.text)) {
    return absl::StrCat("bad number ", Describe(token), ": ",
                        IsDigitsAndUnderscores(token.text)
                            ? "'_' may only separate two digits"
                            : "expected a number such as 42, -7, 1_000 or "
                              "19.99");
  }
  if (!ToInt64(token.text, &out->number)) {
    return absl::StrCat("number ", token.text, " is out of the int64 range [",
                        std::numeric_limits<int64_t>::min(), ", ",
                        std::numeric_limits<int64_t>::max(), "]");
  }
  return "";
}

// The v1::Op a comparison operator stands for, or OP_UNSPECIFIED.
v1::Op ComparisonOp(const Token& token) {
  for (const internal::Spelling& s : internal::kSpellings) {
    if (IsSymbol(token, s.symbol) || IsWord(token, s.word)) return s.op;
  }
  return v1::OP_UNSPECIFIED;
}

// True iff `token` is what may follow the name of a predicate: a
// comparison, "between", "in", "not" (in, or a negated word of
// kStringOps), or a word of kStringOps ("prefix", "cidr", ...).
bool StartsOperator(const Token& token) {
  if (ComparisonOp(token) != v1::OP_UNSPECIFIED || IsWord(token, "between") ||
      IsWord(token, "in") || IsWord(token, "not")) {
    return true;
  }
  for (const internal::StringOpSpelling& s : internal::kStringOps) {
    if (IsWord(token, s.word)) return true;
  }
  return false;
}

bool IsConnector(const Token& token) {
  return IsWord(token, "and") || IsSymbol(token, "&&") || IsSymbol(token, ",");
}

bool IsOr(const Token& token) {
  return IsWord(token, "or") || IsSymbol(token, "||");
}

// True iff `token` may follow a complete term: a connector, "or", ")", or
// the end. None of them is a value, so none can end a predicate.
bool EndsTerm(const Token& token) {
  return token.kind == TokenKind::kEnd || IsConnector(token) ||
         IsOr(token) || IsSymbol(token, ")");
}

// ---------------------------------------------------------------------------
// Values

// "5" or "19.99": a number operand, an int64 or a double with a fraction.
std::string NumberText(const Operand& v) {
  return v.is_double ? FormatDouble(v.d) : absl::StrCat(v.number);
}

absl::string_view TypeName(bool is_string) {
  return is_string ? "a string" : "a number";
}

// "the number 5", "the string \"a\"", for messages.
std::string DescribeOperand(const Operand& v) {
  return v.is_string ? absl::StrCat("the string ", FormatString(v.bytes))
                     : absl::StrCat("the number ", NumberText(v));
}

// "5" or "\"a\"", for messages.
std::string OperandText(const Operand& v) {
  return v.is_string ? FormatString(v.bytes) : NumberText(v);
}

// Exact order of two numbers: long double (x87) holds every int64 and
// every double.
long double NumberOf(const Operand& v) {
  return v.is_double ? static_cast<long double>(v.d)
                     : static_cast<long double>(v.number);
}

// ---------------------------------------------------------------------------
// Error messages

// Number of UTF-8 code points in `s` (bytes that are not continuation bytes),
// which is where a terminal puts the caret for most text.
size_t CodePoints(absl::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

// "column 7: <message>\n  <text>\n  <carets under text[begin, end)>".
absl::Status SpanError(absl::string_view text, size_t begin, size_t end,
                       absl::string_view message) {
  std::string echo(text);
  for (char& c : echo) {
    const unsigned char byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) c = ' ';
  }
  const size_t indent = CodePoints(text.substr(0, begin));
  size_t width = CodePoints(text.substr(begin, end - begin));
  if (width == 0) width = 1;
  return absl::InvalidArgumentError(
      absl::StrCat("column ", begin + 1, ": ", message, "\n  ", echo, "\n  ",
                   std::string(indent, ' '), std::string(width, '^')));
}

// ---------------------------------------------------------------------------
// Parser

// Recursive descent over the tokens of one input, for either grammar.
class Parser {
 public:
  explicit Parser(absl::string_view text) : text_(text), tokens_(Lex(text)) {}

  absl::StatusOr<v1::SubscriptionSpec> Spec();
  absl::StatusOr<std::vector<v1::Attribute>> Event();

  // The error of a filter with "or" where only predicates are read, under
  // its first "or" or "||". REQUIRES: Spec() returned a spec with any_of.
  absl::Status OrError() const {
    return Error(*first_or_,
                 absl::StrCat(Describe(*first_or_),
                              " is not supported here: expected predicates "
                              "joined by \"and\" only"));
  }

 private:
  const Token& Peek(size_t ahead = 0) const {
    const size_t i = next_ + ahead;
    return i < tokens_.size() ? tokens_[i] : tokens_.back();
  }
  const Token& Next() {
    const Token& token = Peek();
    if (next_ + 1 < tokens_.size()) ++next_;
    return token;
  }

  // An error under `at`. A kError token is reported as what is wrong with
  // it, whatever `message` says: no rule takes it, so every path that meets
  // it ends here.
  absl::Status Error(const Token& at, absl::string_view message) const {
    return SpanError(text_, at.pos, at.end(),
                     at.kind == TokenKind::kError ? at.value : message);
  }

  absl::StatusOr<std::string> Name();
  // Reads an integer or a string; `context` completes "missing value
  // <context>".
  // A value; `literals`: true, false and null are values here (= and !=,
  // an event's pair), else an error.
  absl::StatusOr<Operand> Value(absl::string_view context,
                                bool literals = false);
  // Consumes the next token if it is `symbol`; else fails with "expected
  // <symbol> <context>, got ...".
  absl::Status Expect(absl::string_view symbol, absl::string_view context);

  // Subscriptions.
  absl::Status Predicate(v1::Predicate* out);
  // True if the "exists" that comes next is the keyword, not a name.
  bool ExistsIsKeyword() const;
  // The rest of a predicate after its "between", "in", "not", "prefix",
  // "suffix" or "equals-ignore-case".
  absl::Status Between(const Token& keyword, v1::Predicate* out);
  absl::Status In(const Token& keyword, v1::Predicate* out);
  // "not in", "not prefix", "not suffix", "not equals-ignore-case" and
  // "not wildcard".
  absl::Status Not(const Token& keyword, v1::Predicate* out);
  // "prefix", "suffix", "equals-ignore-case", "prefix-ignore-case",
  // "suffix-ignore-case", "cidr", "wildcard" and the negations ("not
  // prefix", ...): `op` with a string.
  absl::Status Affix(const Token& keyword, v1::Op op, v1::Predicate* out);
  // Reads "[" value { "," value } "]" into `out` as the list of `op`
  // (spelled `spelling` in messages).
  absl::Status List(v1::Op op, absl::string_view spelling, v1::Predicate* out);
  // Makes `out` a BETWEEN of the values read from the tokens `first` and
  // `last`, or fails pointing at them.
  absl::Status Bounds(const Operand& lower, const Operand& upper,
                      const Token& first, const Token& last,
                      v1::Predicate* out) const;
  // How a conjunction ended: at an "or" (consumed), a ")" (not consumed)
  // or the end.
  enum class Ending { kOr, kClose, kEnd };
  using Conjunctions = std::vector<std::vector<internal::Term>>;
  // Reads a disjunction inside the parentheses opened by `open` (nullptr: at
  // the top), `depth` levels deep, up to its ")" or the end.
  absl::Status Disjunction(const Token* open, size_t depth,
                           Conjunctions* out);
  absl::Status Conjunction(const Token* open, size_t depth,
                           std::vector<internal::Term>* out, Ending* ending);
  // A predicate, or a parenthesized disjunction: one group, or the terms of
  // its one alternative, appended to `out`.
  absl::Status ReadTerm(size_t depth, std::vector<internal::Term>* out);
  // After a term: consumes a connector (`*more`), or ends the conjunction
  // at an "or", a ")" or the end.
  absl::Status AfterTerm(const Token* open, bool* more, Ending* ending);

  // Events. `seen` maps each name read so far to its 1-based column.
  using NameColumns = absl::flat_hash_map<absl::string_view, size_t>;
  absl::Status Pair(NameColumns* seen, v1::Attribute* out);

  absl::string_view text_;
  std::vector<Token> tokens_;
  size_t next_ = 0;  // index of the next unread token
  const Token* first_or_ = nullptr;  // the first "or" or "||" read
};

absl::StatusOr<std::string> Parser::Name() {
  const Token& token = Next();
  if (token.kind != TokenKind::kWord) {
    return Error(token, absl::StrCat("expected an attribute name, got ",
                                     Describe(token)));
  }
  const std::string why = WhyBadName(token.text);
  if (!why.empty()) {
    return Error(
        token, absl::StrCat("bad attribute name ", Describe(token), ": ", why));
  }
  return std::string(token.text);
}

absl::StatusOr<Operand> Parser::Value(absl::string_view context,
                                      bool literals) {
  const Token& token = Next();
  Operand value;
  switch (token.kind) {
    case TokenKind::kEnd:
      return Error(token, absl::StrCat("missing value ", context));
    case TokenKind::kError:
      return Error(token, "");
    case TokenKind::kSymbol:
      return Error(token, absl::StrCat("expected a value ", context, ", got ",
                                       Describe(token)));
    case TokenKind::kString:
      value.is_string = true;
      value.bytes = token.value;
      return value;
    case TokenKind::kWord:
      break;
  }
  for (const auto& [word, literal] :
       {std::pair<absl::string_view, v1::Literal>{"true", v1::LITERAL_TRUE},
        {"false", v1::LITERAL_FALSE},
        {"null", v1::LITERAL_NULL}}) {
    if (token.text != word) continue;
    if (!literals) {
      return Error(token, absl::StrCat(Describe(token),
                                       " is a literal (true, false, null), "
                                       "which only = and != compare"));
    }
    value.literal = literal;
    return value;
  }
  const std::string error = ParseNumber(token, &value);
  if (!error.empty()) return Error(token, error);
  return value;
}

absl::Status Parser::Expect(absl::string_view symbol,
                            absl::string_view context) {
  const Token& token = Peek();
  if (IsSymbol(token, symbol)) {
    Next();
    return absl::OkStatus();
  }
  return Error(token, absl::StrCat("expected \"", symbol, "\" ", context,
                                   ", got ", Describe(token)));
}

bool Parser::ExistsIsKeyword() const {
  const Token& next = Peek(1);
  if (!StartsOperator(next)) return true;
  // `exists in` and `exists not, x = 1`: the name reading would lack an
  // operand, since what ends a term is no value.
  return next.kind == TokenKind::kWord && EndsTerm(Peek(2));
}

absl::Status Parser::Predicate(v1::Predicate* out) {
  const Token& first = Peek();
  if (IsWord(first, "exists") && ExistsIsKeyword()) {
    Next();
    absl::StatusOr<std::string> name = Name();
    if (!name.ok()) return name.status();
    out->set_attribute(*std::move(name));
    out->set_op(v1::OP_EXISTS);
    return absl::OkStatus();
  }
  if (IsWord(first, "not") && !StartsOperator(Peek(1))) {
    Next();
    const Token& exists = Next();
    if (!IsWord(exists, "exists")) {
      return Error(exists,
                   absl::StrCat("expected \"exists\" after \"not\" at the "
                                "start of a predicate, got ",
                                Describe(exists)));
    }
    absl::StatusOr<std::string> name = Name();
    if (!name.ok()) return name.status();
    out->set_attribute(*std::move(name));
    out->set_op(v1::OP_NOT_EXISTS);
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> name = Name();
  if (!name.ok()) return name.status();
  out->set_attribute(*std::move(name));
  const Token& op = Next();
  const bool joiner = IsWord(first, "or") || IsWord(first, "and");
  if (IsWord(op, "between")) return Between(op, out);
  if (IsWord(op, "in")) return In(op, out);
  if (IsWord(op, "not")) return Not(op, out);
  for (const internal::StringOpSpelling& s : internal::kStringOps) {
    if (IsWord(op, s.word)) return Affix(op, s.op, out);
  }
  const v1::Op comparison = ComparisonOp(op);
  if (comparison == v1::OP_UNSPECIFIED) {
    // `coupon exists`: say where the keyword goes.
    // `or a = 1`: say why "or" was read as a name.
    const std::string hint =
        IsWord(op, "exists")
            ? absl::StrCat("; \"exists\" goes before the name: exists ",
                           out->attribute())
        : joiner ? absl::StrCat("; ", Describe(first),
                                " is read as an attribute name here, where a "
                                "predicate starts")
                 : "";
    return Error(op, absl::StrCat("expected an operator ", kOperatorList,
                                  ", got ", Describe(op), hint));
  }
  const bool equality = comparison == v1::OP_EQ || comparison == v1::OP_NE;
  absl::StatusOr<Operand> value =
      Value(absl::StrCat("after ", Describe(op)), equality);
  if (!value.ok()) return value.status();
  out->set_op(comparison);
  if (value->literal != v1::LITERAL_UNSPECIFIED) {
    out->set_literal_value(value->literal);
  } else if (value->is_string) {
    out->set_string_value(std::move(value->bytes));
  } else if (value->is_double) {
    out->set_double_value(value->d);
  } else {
    out->set_value(value->number);
  }
  return absl::OkStatus();
}

absl::Status Parser::Between(const Token& keyword, v1::Predicate* out) {
  const Token& first = Peek();
  absl::StatusOr<Operand> lower =
      Value(absl::StrCat("after ", Describe(keyword)));
  if (!lower.ok()) return lower.status();
  const Token& and_token = Next();
  if (!IsWord(and_token, "and")) {
    return Error(and_token,
                 absl::StrCat("expected \"and\" between the bounds of "
                              "\"between lo and hi\", got ",
                              Describe(and_token)));
  }
  const Token& last = Peek();
  absl::StatusOr<Operand> upper =
      Value(absl::StrCat("after ", Describe(and_token)));
  if (!upper.ok()) return upper.status();
  return Bounds(*lower, *upper, first, last, out);
}

absl::Status Parser::In(const Token& keyword, v1::Predicate* out) {
  if (IsSymbol(Peek(), "[")) return List(v1::OP_IN, "in", out);
  const Token& first = Peek();
  absl::StatusOr<Operand> lower =
      Value(absl::StrCat("after ", Describe(keyword)));
  if (!lower.ok()) return lower.status();
  absl::Status status = Expect("..", "between the bounds of \"in lo..hi\"");
  if (!status.ok()) return status;
  const Token& last = Peek();
  absl::StatusOr<Operand> upper = Value("after \"..\"");
  if (!upper.ok()) return upper.status();
  return Bounds(*lower, *upper, first, last, out);
}

absl::Status Parser::Not(const Token& keyword, v1::Predicate* out) {
  const Token& in = Next();
  for (const internal::StringOpSpelling& s : internal::kStringOps) {
    if (s.negated != v1::OP_UNSPECIFIED && IsWord(in, s.word)) {
      return Affix(in, s.negated, out);
    }
  }
  if (!IsWord(in, "in")) {
    const std::string hint =
        IsWord(in, "exists")
            ? absl::StrCat("; \"not exists\" goes before the name: not "
                           "exists ",
                           out->attribute())
            : "";
    return Error(in, absl::StrCat("expected \"in\", \"prefix\", \"suffix\", "
                                  "\"equals-ignore-case\" or \"wildcard\" "
                                  "after ",
                                  Describe(keyword), ", got ", Describe(in),
                                  hint));
  }
  return List(v1::OP_NOT_IN, "not in", out);
}

absl::Status Parser::Affix(const Token& keyword, v1::Op op,
                           v1::Predicate* out) {
  const Token& token = Peek();
  if ((op == v1::OP_EQUALS_IGNORE_CASE ||
       op == v1::OP_NOT_EQUALS_IGNORE_CASE) &&
      IsSymbol(token, "[")) {  // a list of strings
    const std::string spelling =
        absl::StrCat(op == v1::OP_NOT_EQUALS_IGNORE_CASE ? "not " : "",
                     "equals-ignore-case");
    absl::Status status = List(op, spelling, out);
    if (!status.ok()) return status;
    if (out->operand_case() != v1::Predicate::kStringValues) {
      return Error(token, absl::StrCat("expected a list of strings after ",
                                       Describe(keyword), ", got numbers"));
    }
    return absl::OkStatus();
  }
  absl::StatusOr<Operand> value =
      Value(absl::StrCat("after ", Describe(keyword)));
  if (!value.ok()) return value.status();
  if (!value->is_string) {
    return Error(token, absl::StrCat("expected a string after ",
                                     Describe(keyword), ", got ",
                                     DescribeOperand(*value)));
  }
  out->set_op(op);
  out->set_string_value(std::move(value->bytes));
  return absl::OkStatus();
}

absl::Status Parser::List(v1::Op op, absl::string_view spelling,
                          v1::Predicate* out) {
  const Token& open = Peek();
  absl::Status status = Expect(
      "[", absl::StrCat("to start the list of \"", spelling, "\" (\"",
                        spelling, " [1, 2]\")"));
  if (!status.ok()) return status;
  if (IsSymbol(Peek(), "]")) {
    return SpanError(text_, open.pos, Peek().end(),
                     absl::StrCat("empty list: \"", spelling,
                                  "\" needs at least one value"));
  }
  bool is_string = false;
  std::vector<std::pair<Operand, const Token*>> numbers;
  for (size_t i = 0;; ++i) {
    const Token& token = Peek();
    absl::StatusOr<Operand> value =
        Value(i == 0 ? "after \"[\"" : "after \",\"");
    if (!value.ok()) return value.status();
    if (i == 0) {
      is_string = value->is_string;
    } else if (value->is_string != is_string) {
      return Error(token, absl::StrCat("mixed types in the list: expected ",
                                       TypeName(is_string),
                                       " like the first value, got ",
                                       DescribeOperand(*value)));
    }
    if (is_string) {
      out->mutable_string_values()->add_values(std::move(value->bytes));
    } else {
      numbers.push_back({*value, &token});
    }
    const Token& after = Next();
    if (IsSymbol(after, "]")) break;
    if (!IsSymbol(after, ",")) {
      return Error(after,
                   absl::StrCat("expected \",\" or \"]\" after a value of "
                                "the list, got ",
                                Describe(after)));
    }
  }
  // Numbers: int64_values, or double_values once one has a fraction, where
  // an integer must be exact as a double (below 2^53 in magnitude).
  const bool fractions =
      std::any_of(numbers.begin(), numbers.end(),
                  [](const auto& n) { return n.first.is_double; });
  for (const auto& [number, token] : numbers) {
    if (!fractions) {
      out->mutable_int64_values()->add_values(number.number);
      continue;
    }
    if (!number.is_double &&
        (number.number >= (int64_t{1} << 53) ||
         number.number <= -(int64_t{1} << 53))) {
      return Error(*token,
                   absl::StrCat("the integer ", number.number,
                                " cannot share a list with a number with a "
                                "fraction (integers there must be below 2^53 "
                                "in magnitude); give it a predicate of its "
                                "own"));
    }
    out->mutable_double_values()->add_values(
        number.is_double ? number.d : static_cast<double>(number.number));
  }
  out->set_op(op);
  return absl::OkStatus();
}

absl::Status Parser::Bounds(const Operand& lower, const Operand& upper,
                            const Token& first, const Token& last,
                            v1::Predicate* out) const {
  if (lower.is_string != upper.is_string) {
    return Error(last, absl::StrCat("bounds of mixed types: the lower bound "
                                    "is ",
                                    DescribeOperand(lower), ", the upper ",
                                    DescribeOperand(upper),
                                    "; both must be numbers or both "
                                    "strings"));
  }
  // std::string compares bytes as unsigned char, as the API does.
  const bool empty = lower.is_string ? lower.bytes > upper.bytes
                                     : NumberOf(lower) > NumberOf(upper);
  if (empty) {
    return SpanError(text_, first.pos, last.end(),
                     absl::StrCat("empty range: the lower bound ",
                                  OperandText(lower),
                                  " is greater than the upper bound ",
                                  OperandText(upper)));
  }
  out->set_op(v1::OP_BETWEEN);
  if (lower.is_string) {
    out->set_string_value(lower.bytes);
    out->set_string_upper(upper.bytes);
  } else {
    if (lower.is_double) {
      out->set_double_value(lower.d);
    } else {
      out->set_value(lower.number);
    }
    if (upper.is_double) {
      out->set_double_upper(upper.d);
    } else {
      out->set_upper(upper.number);
    }
  }
  return absl::OkStatus();
}

absl::Status Parser::AfterTerm(const Token* open, bool* more,
                               Ending* ending) {
  const Token& token = Peek();
  *more = false;
  if (token.kind == TokenKind::kEnd) {
    if (open != nullptr) {
      return Error(*open, "unclosed \"(\": no \")\" before the end of the "
                          "input");
    }
    *ending = Ending::kEnd;
    return absl::OkStatus();
  }
  if (IsConnector(token)) {
    Next();
    *more = true;
    return absl::OkStatus();
  }
  if (IsOr(token)) {
    if (first_or_ == nullptr) first_or_ = &token;
    Next();
    *ending = Ending::kOr;
    return absl::OkStatus();
  }
  if (IsSymbol(token, ")")) {
    if (open == nullptr) {
      return Error(token, "unmatched \")\": no \"(\" is open");
    }
    *ending = Ending::kClose;
    return absl::OkStatus();
  }
  if (IsSymbol(token, "(")) {
    return Error(token, "missing \"and\" or \"or\" before \"(\"");
  }
  // `price = 5 kind = 7`: a name followed by an operator starts a predicate,
  // and so do `exists name` and `not exists`.
  const Token& after = Peek(1);
  if (token.kind == TokenKind::kWord &&
      (StartsOperator(after) ||
       (IsWord(token, "exists") && after.kind == TokenKind::kWord) ||
       (IsWord(token, "not") && IsWord(after, "exists")))) {
    return Error(token, absl::StrCat("missing \"and\" between predicates: "
                                     "expected \"and\", \"&&\" or \",\" "
                                     "before ",
                                     Describe(token)));
  }
  return Error(token,
               absl::StrCat("unexpected ", Describe(token),
                            " after a complete predicate; expected \"and\", "
                            "\"&&\", \",\", \"or\", \"||\" or ",
                            open != nullptr ? "\")\"" : "end of input"));
}

absl::Status Parser::ReadTerm(size_t depth,
                              std::vector<internal::Term>* out) {
  const Token& token = Peek();
  if (token.kind == TokenKind::kEnd || IsSymbol(token, ")")) {
    if (next_ == 0) {
      return Error(token, "unmatched \")\": no \"(\" is open");
    }
    const Token& before = tokens_[next_ - 1];
    if (IsSymbol(before, "(") && IsSymbol(token, ")")) {
      return SpanError(text_, before.pos, token.end(),
                       "empty parentheses: expected a predicate between "
                       "\"(\" and \")\"");
    }
    return Error(token, absl::StrCat("expected a predicate after ",
                                     Describe(before), ", got ",
                                     Describe(token)));
  }
  if (!IsSymbol(token, "(")) {
    return Predicate(&out->emplace_back().predicate);
  }
  const Token& open = Next();
  if (depth == kMaxParenDepth) {
    return Error(open, absl::StrCat("parentheses nested more than ",
                                    kMaxParenDepth, " deep"));
  }
  Conjunctions inner;
  absl::Status status = Disjunction(&open, depth + 1, &inner);
  if (!status.ok()) return status;
  const Token& close = Next();  // the ")" the disjunction stopped at
  if (inner.size() == 1) {  // `(a and b)`: no "or" to keep apart
    for (internal::Term& term : inner[0]) out->push_back(std::move(term));
    return absl::OkStatus();
  }
  internal::Term group;
  group.is_group = true;
  for (const std::vector<internal::Term>& conjunction : inner) {
    const std::string why =
        internal::AppendDistributed(conjunction, &group.group);
    if (!why.empty()) {
      return SpanError(text_, open.pos, close.end(),
                       absl::StrCat("the group in these parentheses is too "
                                    "large: ",
                                    why));
    }
  }
  out->push_back(std::move(group));
  return absl::OkStatus();
}

absl::Status Parser::Conjunction(const Token* open, size_t depth,
                                 std::vector<internal::Term>* out,
                                 Ending* ending) {
  bool more = true;
  while (more) {
    absl::Status status = ReadTerm(depth, out);
    if (!status.ok()) return status;
    status = AfterTerm(open, &more, ending);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status Parser::Disjunction(const Token* open, size_t depth,
                                 Conjunctions* out) {
  Ending ending = Ending::kOr;
  while (ending == Ending::kOr) {
    absl::Status status =
        Conjunction(open, depth, &out->emplace_back(), &ending);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::SubscriptionSpec> Parser::Spec() {
  if (Peek().kind == TokenKind::kEnd) {
    return Error(Peek(),
                 "empty subscription: expected at least one predicate, such "
                 "as \"price <= 500\"");
  }
  Conjunctions conjunctions;
  absl::Status status = Disjunction(nullptr, 0, &conjunctions);
  if (!status.ok()) return status;
  v1::SubscriptionSpec spec;
  if (conjunctions.size() == 1) {
    internal::AddTerms(std::move(conjunctions[0]), &spec);
    return spec;
  }
  internal::Alternatives alternatives;
  for (const std::vector<internal::Term>& conjunction : conjunctions) {
    const std::string why =
        internal::AppendDistributed(conjunction, &alternatives);
    if (!why.empty()) {
      // Under the whole filter: tokens_ ends with kEnd after the last one.
      return SpanError(text_, tokens_.front().pos,
                       tokens_[tokens_.size() - 2].end(),
                       absl::StrCat("the filter is too large: ", why));
    }
  }
  internal::AddGroup(std::move(alternatives), &spec);
  return spec;
}

absl::Status Parser::Pair(NameColumns* seen, v1::Attribute* out) {
  const Token& name_token = Peek();
  absl::StatusOr<std::string> name = Name();
  if (!name.ok()) return name.status();
  const auto [first, inserted] =
      seen->emplace(name_token.text, name_token.pos + 1);
  if (!inserted) {
    return Error(name_token,
                 absl::StrCat("duplicate attribute ", Describe(name_token),
                              " (first given at column ", first->second, ")"));
  }
  const Token& equals = Peek();
  if (!IsSymbol(equals, "=")) {
    return Error(equals,
                 absl::StrCat("expected \"=\" after ", Describe(name_token),
                              ", got ", Describe(equals)));
  }
  Next();
  // Name() checked the name, so it needs no escaping.
  const std::string context = absl::StrCat("after \"", name_token.text, "=\"");
  // `a= b=2`: report the missing value, not a bad value "b".
  if (Peek().kind == TokenKind::kWord && IsNameStart(Peek().text[0]) &&
      IsSymbol(Peek(1), "=")) {
    return Error(Peek(),
                 absl::StrCat("missing value ", context, "; ", Describe(Peek()),
                              " starts the next pair"));
  }
  absl::StatusOr<Operand> value = Value(context, /*literals=*/true);
  if (!value.ok()) return value.status();
  out->set_name(*std::move(name));
  if (value->literal != v1::LITERAL_UNSPECIFIED) {
    out->set_literal_value(value->literal);
  } else if (value->is_string) {
    out->set_string_value(std::move(value->bytes));
  } else if (value->is_double) {
    out->set_double_value(value->d);
  } else {
    out->set_value(value->number);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<v1::Attribute>> Parser::Event() {
  if (Peek().kind == TokenKind::kEnd) {
    return Error(Peek(),
                 "empty event: expected name=value pairs, such as "
                 "\"price=420 kind=7\"");
  }
  std::vector<v1::Attribute> attributes;
  NameColumns seen;
  while (true) {
    attributes.emplace_back();
    absl::Status status = Pair(&seen, &attributes.back());
    if (!status.ok()) return status;
    const size_t value_end = tokens_[next_ - 1].end();
    const Token& token = Peek();
    if (token.kind == TokenKind::kEnd) return attributes;
    if (IsSymbol(token, ",")) {
      Next();
      if (Peek().kind != TokenKind::kEnd) continue;
      return Error(Peek(),
                   "expected a name=value pair after \",\", got end "
                   "of input");
    }
    // A word right after a string (`a="x"b=1`) is not separated from it; a
    // word right after a number would be part of the number's word.
    if (token.kind != TokenKind::kWord || token.pos == value_end) {
      return Error(token, absl::StrCat("expected \",\" or whitespace between "
                                       "name=value pairs, got ",
                                       Describe(token)));
    }
  }
}
}  // namespace

absl::StatusOr<v1::SubscriptionSpec> ParseSubscriptionSpec(
    absl::string_view text) {
  return Parser(text).Spec();
}

absl::StatusOr<std::vector<v1::Predicate>> ParseSubscription(
    absl::string_view text) {
  Parser parser(text);
  absl::StatusOr<v1::SubscriptionSpec> spec = parser.Spec();
  if (!spec.ok()) return spec.status();
  if (spec->any_of_size() > 0) return parser.OrError();
  return std::vector<v1::Predicate>(
      std::make_move_iterator(spec->mutable_predicates()->begin()),
      std::make_move_iterator(spec->mutable_predicates()->end()));
}

absl::StatusOr<std::vector<v1::Attribute>> ParseEvent(absl::string_view text) {
  return Parser(text).Event();
}

}  // namespace filter
}  // namespace cohort
