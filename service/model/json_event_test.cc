#include "service/model/json_event.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/cohort/v1/pubsub.pb.h"
#include "service/model/limits.h"

namespace cohort {
namespace service {
namespace {

using ::testing::HasSubstr;

// The status of flattening `json` as events[0]'s document.
absl::Status Flatten(const std::string& json, JsonGroup* out,
                     const Limits& limits = Limits()) {
  return FlattenJson("events[0]", json, limits, out);
}

std::string Message(const std::string& json,
                    const Limits& limits = Limits()) {
  JsonGroup g;
  const absl::Status s = Flatten(json, &g, limits);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << json << ": " << s;
  return std::string(s.message());
}

TEST(FlattenJson, NamesValuesByPathAndKeepsArrayElementsTogether) {
  JsonGroup g;
  ASSERT_TRUE(Flatten(R"({"detail": {"price": 19.99, "n": 3.0, "s": "x",
                          "ok": true, "none": null, "big": -9007199254740993},
                          "tags": ["a", ["b", "c"], []],
                          "o": [{"p": 1, "q": 2}, {"p": 3}, {}],
                          "e": [], "@t": 1, "x y": {"z": 2}})",
                      &g)
                  .ok());
  ASSERT_EQ(g.leaves.size(), 6u);  // "@t" and "x y.z" are no names
  EXPECT_EQ(g.leaves[0].path, "detail.price");
  EXPECT_EQ(g.leaves[0].value.kind, JsonValue::Kind::kDouble);
  EXPECT_EQ(g.leaves[0].value.d, 19.99);
  EXPECT_EQ(g.leaves[1].path, "detail.n");
  EXPECT_EQ(g.leaves[1].value.kind, JsonValue::Kind::kInt);  // 3.0 is 3
  EXPECT_EQ(g.leaves[1].value.i, 3);
  EXPECT_EQ(g.leaves[2].value.kind, JsonValue::Kind::kString);
  EXPECT_EQ(g.leaves[3].value.kind, JsonValue::Kind::kLiteral);
  EXPECT_EQ(g.leaves[3].value.i, v1::LITERAL_TRUE);
  EXPECT_EQ(g.leaves[4].value.i, v1::LITERAL_NULL);
  EXPECT_EQ(g.leaves[5].value.i, -9007199254740993);  // exact, not a double
  // "e": [] adds nothing; tags' nested array is spliced in.
  ASSERT_EQ(g.arrays.size(), 2u);
  ASSERT_EQ(g.arrays[0].size(), 3u);
  EXPECT_EQ(g.arrays[0][2].leaves[0].value.s, "c");
  ASSERT_EQ(g.arrays[1].size(), 3u);
  EXPECT_EQ(g.arrays[1][0].leaves.size(), 2u);  // p and q together
  EXPECT_EQ(g.arrays[1][1].leaves.size(), 1u);
  EXPECT_TRUE(g.arrays[1][2].leaves.empty());
  std::vector<absl::string_view> paths;
  CollectPaths(g, &paths);
  EXPECT_EQ(paths.size(), 6u + 3u + 3u);
}

TEST(FlattenJson, RefusesEachBadDocumentNamingThePlace) {
  EXPECT_THAT(Message("[1]"), HasSubstr("events[0].json: a JSON event is an "
                                        "object"));
  EXPECT_THAT(Message("{\"a\": 1"), HasSubstr("events[0].json: not a JSON "
                                              "document"));
  EXPECT_THAT(Message("{\"a\": \"\xff\"}"), HasSubstr("not a JSON document"));
  EXPECT_THAT(Message(R"({"a": {"b": 1, "b": 2}})"),
              HasSubstr("at a.b: the key is in its object twice"));
  EXPECT_THAT(Message(R"({"a.b": 1, "a": {"b": 2}})"),
              HasSubstr("at a.b: two places give this path at once"));
  EXPECT_THAT(Message(R"({"a": [{"b": 1}], "a.b": [2]})"),
              HasSubstr("at a.b: two places give this path at once"));
  EXPECT_THAT(Message(R"({"a": {"b": 1e30}})"),
              HasSubstr("at a.b: 1e+30 is beyond the int64 range"));
  EXPECT_THAT(Message(R"({"a": [1, 9223372036854775808]})"),
              HasSubstr("at a[1]: 9223372036854775808 is beyond the int64"));
  // Places inside arrays of objects and arrays of arrays, and after them
  // (the path is cut back to the object's).
  EXPECT_THAT(Message(R"({"o": {"x": [{"p": 1}, {"q": 2, "p": 1e30}]}})"),
              HasSubstr("at o.x[1].p: 1e+30 is beyond the int64 range"));
  EXPECT_THAT(Message(R"({"o": [[1], [2, [3, 1e30]]]})"),
              HasSubstr("at o[1][1][1]: 1e+30 is beyond the int64 range"));
  EXPECT_THAT(Message(R"({"o": {"x": [{"p": 1}], "y": {"z": 1e30}}})"),
              HasSubstr("at o.y.z: 1e+30 is beyond the int64 range"));
  EXPECT_THAT(Message(R"({"a": 1e400})"), HasSubstr("not a JSON document"));
  Limits limits;
  limits.max_json_depth = 3;
  EXPECT_TRUE([&] {
    JsonGroup g;
    return Flatten(R"({"a": {"b": [1]}})", &g, limits).ok();
  }());
  EXPECT_THAT(Message(R"({"a": {"b": [[1]]}})", limits),
              HasSubstr("at a.b[0]: nested 4 levels deep; the limit is 3 "
                        "(--max_json_depth)"));
  limits = Limits();
  limits.max_json_values = 3;
  EXPECT_THAT(Message(R"({"a": [1, 2], "b": {"c": null, "d": 4}})", limits),
              HasSubstr("at b.d: more than 3 values; the limit is 3 "
                        "(--max_json_values)"));
  limits = Limits();
  limits.max_json_bytes = 10;
  EXPECT_THAT(Message(R"({"a": 12345})", limits),
              HasSubstr("events[0].json: 12 bytes; the limit is 10 "
                        "(--max_json_bytes)"));
  // A control byte in a key is shown escaped, so the message is one line.
  EXPECT_THAT(Message("{\"a\\u0001\": {\"b\": 1, \"b\": 2}}"),
              HasSubstr("at a\\x01.b:"));
}

}  // namespace
}  // namespace service
}  // namespace cohort
