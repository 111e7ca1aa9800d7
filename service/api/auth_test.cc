// Tests of the token file (parsing, every malformed form with its file:line)
// and token lookup.
#include "service/api/auth.h"

#include <cstdio>
#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort {
namespace service {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// echo -n abc | sha256sum
constexpr char kAbcHash[] =
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

std::string Line(absl::string_view kind, absl::string_view name,
                 absl::string_view token) {
  return absl::StrCat(kind, " ", name, " ", Sha256Hex(token), "\n");
}

TEST(Sha256Hex, KnownVectors) {
  EXPECT_EQ(Sha256Hex("abc"), kAbcHash);
  EXPECT_EQ(Sha256Hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(DigestsEqual, ComparesWholeValues) {
  EXPECT_TRUE(DigestsEqual("abcd", "abcd"));
  EXPECT_FALSE(DigestsEqual("abcd", "abce"));
  EXPECT_FALSE(DigestsEqual("abcd", "Abcd"));
  EXPECT_FALSE(DigestsEqual("abcd", "abc"));
  EXPECT_TRUE(DigestsEqual("", ""));
  // Bytes after a NUL count too (memcmp, not strcmp).
  EXPECT_FALSE(
      DigestsEqual(absl::string_view("a\0b", 3), absl::string_view("a\0c", 3)));
}

TEST(TokenStore, ParsesAGoodFileAndFindsEachToken) {
  const std::string file = absl::StrCat(
      "# tokens for the test\n", "\n", "   # indented comment\n",
      Line("subscriber", "alice", "alice-secret"), "subscriber\tbob\t",
      Sha256Hex("bob-secret"), "  \r\n",                  // CRLF, tabs
      Line("subscriber", "alice", "alice-second-token"),  // rotation
      Line("publisher", "feed", "feed-secret"), "\n");
  absl::StatusOr<TokenStore> store = TokenStore::Parse(file, "tokens.txt");
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(store->subscriber_tokens(), 3u);
  EXPECT_EQ(store->publisher_tokens(), 1u);
  EXPECT_TRUE(store->publishing_needs_token());

  const Principal* alice = store->Find("alice-secret");
  ASSERT_NE(alice, nullptr);
  EXPECT_EQ(alice->role, Role::kSubscriber);
  EXPECT_EQ(alice->name, "alice");
  const Principal* alice2 = store->Find("alice-second-token");
  ASSERT_NE(alice2, nullptr);
  EXPECT_EQ(alice2->name, "alice");
  const Principal* bob = store->Find("bob-secret");
  ASSERT_NE(bob, nullptr);
  EXPECT_EQ(bob->name, "bob");
  const Principal* feed = store->Find("feed-secret");
  ASSERT_NE(feed, nullptr);
  EXPECT_EQ(feed->role, Role::kPublisher);
  EXPECT_EQ(feed->name, "feed");
}

TEST(TokenStore, UnknownTokensAreNotFound) {
  absl::StatusOr<TokenStore> store =
      TokenStore::Parse(Line("subscriber", "alice", "alice-secret"), "t");
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(store->Find("alice-secre"), nullptr);
  EXPECT_EQ(store->Find("alice-secret "), nullptr);
  EXPECT_EQ(store->Find("ALICE-SECRET"), nullptr);
  EXPECT_EQ(store->Find(""), nullptr);
  // The hash itself is not a token.
  EXPECT_EQ(store->Find(Sha256Hex("alice-secret")), nullptr);
  EXPECT_FALSE(store->publishing_needs_token());
}

struct BadFile {
  std::string contents;
  std::string error;  // the whole message
};

TEST(TokenStore, MalformedLinesNameFileAndLine) {
  const std::string good = Line("subscriber", "alice", "alice-secret");
  const std::string hash = Sha256Hex("other");
  std::string upper = hash;
  absl::AsciiStrToUpper(&upper);
  const BadFile cases[] = {
      {absl::StrCat("# c\n", good, "subscriber bob\n"),
       "t.txt:3: expected 3 fields (subscriber|publisher NAME SHA256HEX), "
       "found 2"},
      {absl::StrCat(good, "subscriber bob ", hash, " extra\n"),
       "t.txt:2: expected 3 fields (subscriber|publisher NAME SHA256HEX), "
       "found 4"},
      {absl::StrCat("admin root ", hash, "\n"),
       "t.txt:1: the first field must be subscriber or publisher"},
      {absl::StrCat("Subscriber bob ", hash, "\n"),
       "t.txt:1: the first field must be subscriber or publisher"},
      {absl::StrCat(good, "subscriber bob ", upper, "\n"),
       "t.txt:2: the hash has uppercase hex digits; write it in lowercase"},
      {absl::StrCat("subscriber bob ", hash.substr(1), "\n"),
       "t.txt:1: the hash has 63 characters; a SHA-256 is 64 lowercase hex "
       "digits (cohort token-hash prints it)"},
      {absl::StrCat("subscriber bob ", hash, "00\n"),
       "t.txt:1: the hash has 66 characters; a SHA-256 is 64 lowercase hex "
       "digits (cohort token-hash prints it)"},
      {absl::StrCat("subscriber bob ", hash.substr(1), "g\n"),
       "t.txt:1: the hash has a character that is not a hex digit"},
      {absl::StrCat("subscriber b\x01ob ", hash, "\n"),
       "t.txt:1: the name has a control character"},
      {absl::StrCat(good, "\n", "publisher feed ", Sha256Hex("alice-secret"),
                    "\n"),
       "t.txt:3: the same hash as line 1; every token must be different"},
      {"# only comments\n\n",
       "t.txt: no subscriber or publisher lines; every "
       "token would be refused"},
      {"",
       "t.txt: no subscriber or publisher lines; every token would be "
       "refused"},
  };
  for (const BadFile& c : cases) {
    absl::StatusOr<TokenStore> store = TokenStore::Parse(c.contents, "t.txt");
    ASSERT_FALSE(store.ok()) << c.contents;
    EXPECT_EQ(store.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(store.status().message(), c.error) << c.contents;
  }
}

TEST(TokenStore, ErrorsNeverQuoteATokenOrHash) {
  // An operator pasted the token itself where the hash belongs.
  const std::string token = "s3cr3t-token-value";
  absl::StatusOr<TokenStore> store =
      TokenStore::Parse(absl::StrCat("subscriber alice ", token, "\n"), "t");
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(store.status().message(), Not(HasSubstr(token)));
  // And a line with only a token on it.
  store = TokenStore::Parse(absl::StrCat(token, "\n"), "t");
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(store.status().message(), Not(HasSubstr(token)));
  // A duplicate names lines, not the hash.
  const std::string hash = Sha256Hex("x");
  store = TokenStore::Parse(
      absl::StrCat("subscriber a ", hash, "\n", "subscriber b ", hash, "\n"),
      "t");
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(store.status().message(), Not(HasSubstr(hash)));
  EXPECT_THAT(store.status().message(), Not(HasSubstr(hash.substr(0, 16))));
}

TEST(TokenStore, LoadReadsAFileAndNamesAMissingOne) {
  const std::string path =
      absl::StrCat(std::getenv("TEST_TMPDIR"), "/tokens.txt");
  {
    std::ofstream out(path);
    out << Line("publisher", "feed", "feed-secret");
  }
  absl::StatusOr<TokenStore> store = TokenStore::Load(path);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_NE(store->Find("feed-secret"), nullptr);

  const std::string missing = path + ".missing";
  store = TokenStore::Load(missing);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(store.status().message(),
              HasSubstr(absl::StrCat("cannot read ", missing)));

  // A parse error names the path it was loaded from.
  {
    std::ofstream out(path);
    out << "# header\nsubscriber alice\n";
  }
  store = TokenStore::Load(path);
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(store.status().message(), HasSubstr(absl::StrCat(path, ":2: ")));
  std::remove(path.c_str());
}

TEST(CheckToken, AcceptsPrintableAsciiOnly) {
  EXPECT_TRUE(CheckToken("abcDEF0123-_.~!").ok());
  EXPECT_TRUE(CheckToken(std::string(4096, 'a')).ok());
  EXPECT_FALSE(CheckToken("").ok());
  EXPECT_FALSE(CheckToken(std::string(4097, 'a')).ok());
  EXPECT_FALSE(CheckToken("two words").ok());
  EXPECT_FALSE(CheckToken("tab\there").ok());
  EXPECT_FALSE(CheckToken("new\nline").ok());
  EXPECT_FALSE(CheckToken("caf\xc3\xa9").ok());
  EXPECT_THAT(CheckToken("secret value").message(), Not(HasSubstr("secret")));
}

TEST(TokenLine, ParsesBackToThePrincipal) {
  const std::string line =
      TokenLine(Role::kPublisher, "feed", "the-token") + "\n";
  EXPECT_EQ(line,
            absl::StrCat("publisher feed ", Sha256Hex("the-token"), "\n"));
  absl::StatusOr<TokenStore> store = TokenStore::Parse(line, "t");
  ASSERT_TRUE(store.ok()) << store.status();
  const Principal* p = store->Find("the-token");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->role, Role::kPublisher);
  EXPECT_EQ(p->name, "feed");
}

}  // namespace
}  // namespace service
}  // namespace cohort
