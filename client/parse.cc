#include "client/parse.h"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace cohort {
namespace client {
namespace {

// Same as service::kMaxAttributeNameLength; client/ does not depend on
// service/, and the rule is part of the API (pubsub.proto), so it is fixed.
constexpr size_t kMaxAttributeNameLength = 64;

constexpr absl::string_view kOperatorList =
    "(=, !=, <, <=, >, >=, between, in)";

// ---------------------------------------------------------------------------
// Tokens

enum class TokenKind {
  kWord,    // a name, a number, a keyword, or junk: a run of other characters
  kSymbol,  // one of kSymbols
  kEnd,     // end of input; `pos` is text.size()
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  absl::string_view text;  // points into the parsed text; empty for kEnd
  size_t pos = 0;          // byte offset of the token in the parsed text

  size_t end() const { return pos + text.size(); }
};

// Punctuation, longest first so that "<=" is not read as "<" then "=". The
// single "!", "&" and "|" are here only to be reported as what they are.
constexpr absl::string_view kSymbols[] = {
    "==", "!=", "<>", "<=", ">=", "&&", "||", "..", "=",
    "<",  ">",  "[",  "]",  ",",  "!",  "&",  "|",
};

// Characters that end a word. Every one of them starts a symbol (or is
// whitespace), so the lexer always makes progress.
bool EndsWord(char c) {
  return absl::ascii_isspace(static_cast<unsigned char>(c)) ||
         absl::string_view(",=!<>&|[]").find(c) != absl::string_view::npos;
}

// Splits `text` into tokens, the last one kEnd. A word that starts like a
// number also ends at "..", so that `1..5` is three tokens; a name keeps its
// dots (`a..b` is a valid attribute name).
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

// The character that starts at name[i], for a message: 'x', 'ï' (a UTF-8
// sequence is shown whole), or "byte 0x01" for a control character.
std::string DescribeCharAt(absl::string_view name, size_t i) {
  const unsigned char byte = static_cast<unsigned char>(name[i]);
  if (byte <= 0x20 || byte == 0x7f) {
    return absl::StrFormat("byte 0x%02X", byte);
  }
  size_t n = 1;
  while (byte >= 0x80 && i + n < name.size() &&
         (static_cast<unsigned char>(name[i + n]) & 0xC0) == 0x80) {
    ++n;
  }
  return absl::StrCat("'", name.substr(i, n), "'");
}

// Why `name` breaks the API's rule [A-Za-z_][A-Za-z0-9_.-]{0,63}, or "" if it
// does not. `name` is never empty (it is a word).
std::string WhyBadName(absl::string_view name) {
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

// Converts the word `token` to `*out`; returns "" or the error message.
std::string ParseNumber(const Token& token, int64_t* out) {
  if (!IsIntegerSyntax(token.text)) {
    return absl::StrCat("bad number ", Describe(token), ": ",
                        IsDigitsAndUnderscores(token.text)
                            ? "'_' may only separate two digits"
                            : "expected a decimal integer such as 42, -7 or "
                              "1_000");
  }
  if (!ToInt64(token.text, out)) {
    return absl::StrCat("number ", token.text, " is out of the int64 range [",
                        std::numeric_limits<int64_t>::min(), ", ",
                        std::numeric_limits<int64_t>::max(), "]");
  }
  return "";
}

// The v1::Op a comparison operator stands for, or OP_UNSPECIFIED.
v1::Op ComparisonOp(const Token& token) {
  struct Spelling {
    absl::string_view symbol;
    absl::string_view word;
    v1::Op op;
  };
  static constexpr Spelling kSpellings[] = {
      {"=", "eq", v1::OP_EQ},  {"==", "eq", v1::OP_EQ}, {"!=", "ne", v1::OP_NE},
      {"<>", "ne", v1::OP_NE}, {"<", "lt", v1::OP_LT},  {"<=", "le", v1::OP_LE},
      {">", "gt", v1::OP_GT},  {">=", "ge", v1::OP_GE},
  };
  for (const Spelling& s : kSpellings) {
    if (IsSymbol(token, s.symbol) || IsWord(token, s.word)) return s.op;
  }
  return v1::OP_UNSPECIFIED;
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

  absl::StatusOr<std::vector<v1::Predicate>> Subscription();
  absl::StatusOr<std::vector<v1::Attribute>> Event();

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

  absl::Status Error(const Token& at, absl::string_view message) const {
    return SpanError(text_, at.pos, at.end(), message);
  }

  absl::StatusOr<std::string> Name();
  // Reads an int64; `context` completes "missing value <context>".
  absl::StatusOr<int64_t> Value(absl::string_view context);
  // Consumes the next token if it is `symbol`; else fails with "expected
  // <symbol> <context>, got ...".
  absl::Status Expect(absl::string_view symbol, absl::string_view context);

  // Subscriptions.
  absl::Status Predicate(v1::Predicate* out);
  // The rest of a predicate after its "between" or "in" keyword.
  absl::Status Between(const Token& keyword, v1::Predicate* out);
  absl::Status In(const Token& keyword, v1::Predicate* out);
  // Makes `out` a BETWEEN, or fails pointing at text_[begin, end).
  absl::Status Bounds(int64_t lower, int64_t upper, size_t begin, size_t end,
                      v1::Predicate* out) const;
  // Consumes a connector (`*done` false) or sees the end (`*done` true).
  absl::Status AfterPredicate(bool* done);

  // Events. `seen` maps each name read so far to its 1-based column.
  using NameColumns = absl::flat_hash_map<absl::string_view, size_t>;
  absl::Status Pair(NameColumns* seen, v1::Attribute* out);

  absl::string_view text_;
  std::vector<Token> tokens_;
  size_t next_ = 0;  // index of the next unread token
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

absl::StatusOr<int64_t> Parser::Value(absl::string_view context) {
  const Token& token = Next();
  if (token.kind == TokenKind::kEnd) {
    return Error(token, absl::StrCat("missing value ", context));
  }
  if (token.kind == TokenKind::kSymbol) {
    return Error(token, absl::StrCat("expected an integer value ", context,
                                     ", got ", Describe(token)));
  }
  int64_t value = 0;
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

absl::Status Parser::Predicate(v1::Predicate* out) {
  absl::StatusOr<std::string> name = Name();
  if (!name.ok()) return name.status();
  out->set_attribute(*std::move(name));
  const Token& op = Next();
  if (IsWord(op, "between")) return Between(op, out);
  if (IsWord(op, "in")) return In(op, out);
  const v1::Op comparison = ComparisonOp(op);
  if (comparison == v1::OP_UNSPECIFIED) {
    return Error(op, absl::StrCat("expected an operator ", kOperatorList,
                                  ", got ", Describe(op)));
  }
  absl::StatusOr<int64_t> value = Value(absl::StrCat("after ", Describe(op)));
  if (!value.ok()) return value.status();
  out->set_op(comparison);
  out->set_value(*value);
  return absl::OkStatus();
}

absl::Status Parser::Between(const Token& keyword, v1::Predicate* out) {
  const Token& first = Peek();
  absl::StatusOr<int64_t> lower =
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
  absl::StatusOr<int64_t> upper =
      Value(absl::StrCat("after ", Describe(and_token)));
  if (!upper.ok()) return upper.status();
  return Bounds(*lower, *upper, first.pos, last.end(), out);
}

absl::Status Parser::In(const Token& keyword, v1::Predicate* out) {
  const Token& first = Peek();
  const bool bracketed = IsSymbol(first, "[");
  if (bracketed) Next();
  absl::StatusOr<int64_t> lower =
      Value(absl::StrCat("after ", Describe(bracketed ? first : keyword)));
  if (!lower.ok()) return lower.status();
  absl::Status status =
      bracketed ? Expect(",", "between the bounds of \"in [lo, hi]\"")
                : Expect("..", "between the bounds of \"in lo..hi\"");
  if (!status.ok()) return status;
  const Token& last = Peek();
  absl::StatusOr<int64_t> upper =
      Value(absl::StrCat("after ", bracketed ? "\",\"" : "\"..\""));
  if (!upper.ok()) return upper.status();
  size_t end = last.end();
  if (bracketed) {
    end = Peek().end();
    status = Expect("]", "to close \"in [lo, hi]\"");
    if (!status.ok()) return status;
  }
  return Bounds(*lower, *upper, first.pos, end, out);
}

absl::Status Parser::Bounds(int64_t lower, int64_t upper, size_t begin,
                            size_t end, v1::Predicate* out) const {
  if (lower > upper) {
    return SpanError(text_, begin, end,
                     absl::StrCat("empty range: the lower bound ", lower,
                                  " is greater than the upper bound ", upper));
  }
  out->set_op(v1::OP_BETWEEN);
  out->set_value(lower);
  out->set_upper(upper);
  return absl::OkStatus();
}

absl::Status Parser::AfterPredicate(bool* done) {
  const Token& token = Peek();
  *done = token.kind == TokenKind::kEnd;
  if (*done) return absl::OkStatus();
  if (IsWord(token, "and") || IsSymbol(token, "&&") || IsSymbol(token, ",")) {
    Next();
    if (Peek().kind != TokenKind::kEnd) return absl::OkStatus();
    return Error(Peek(), absl::StrCat("expected a predicate after ",
                                      Describe(token), ", got end of input"));
  }
  // `price = 5 kind = 7`: a name followed by an operator starts a predicate.
  const Token& after = Peek(1);
  if (token.kind == TokenKind::kWord &&
      (ComparisonOp(after) != v1::OP_UNSPECIFIED || IsWord(after, "between") ||
       IsWord(after, "in"))) {
    return Error(token, absl::StrCat("missing \"and\" between predicates: "
                                     "expected \"and\", \"&&\" or \",\" "
                                     "before ",
                                     Describe(token)));
  }
  return Error(token, absl::StrCat("unexpected ", Describe(token),
                                   " after a complete predicate; expected "
                                   "\"and\", \"&&\", \",\" or end of input"));
}

absl::StatusOr<std::vector<v1::Predicate>> Parser::Subscription() {
  if (Peek().kind == TokenKind::kEnd) {
    return Error(Peek(),
                 "empty subscription: expected at least one predicate, such "
                 "as \"price <= 500\"");
  }
  std::vector<v1::Predicate> predicates;
  bool done = false;
  while (!done) {
    predicates.emplace_back();
    absl::Status status = Predicate(&predicates.back());
    if (!status.ok()) return status;
    status = AfterPredicate(&done);
    if (!status.ok()) return status;
  }
  return predicates;
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
  // `a= b=2`: report the missing value, not a bad number "b".
  if (Peek().kind == TokenKind::kWord && IsNameStart(Peek().text[0]) &&
      IsSymbol(Peek(1), "=")) {
    return Error(Peek(),
                 absl::StrCat("missing value ", context, "; ", Describe(Peek()),
                              " starts the next pair"));
  }
  absl::StatusOr<int64_t> value = Value(context);
  if (!value.ok()) return value.status();
  out->set_name(*std::move(name));
  out->set_value(*value);
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
    const Token& token = Peek();
    if (token.kind == TokenKind::kEnd) return attributes;
    if (IsSymbol(token, ",")) {
      Next();
      if (Peek().kind != TokenKind::kEnd) continue;
      return Error(Peek(),
                   "expected a name=value pair after \",\", got end "
                   "of input");
    }
    // After a value comes whitespace, so a word here starts the next pair.
    if (token.kind != TokenKind::kWord) {
      return Error(token, absl::StrCat("expected \",\" or whitespace between "
                                       "name=value pairs, got ",
                                       Describe(token)));
    }
  }
}

}  // namespace

absl::StatusOr<std::vector<v1::Predicate>> ParseSubscription(
    absl::string_view text) {
  return Parser(text).Subscription();
}

absl::StatusOr<std::vector<v1::Attribute>> ParseEvent(absl::string_view text) {
  return Parser(text).Event();
}

}  // namespace client
}  // namespace cohort
