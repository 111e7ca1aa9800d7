// The eventbridge-1m preset (workload/presets.md): Event Ruler patterns
// over EventBridge-shaped JSON events, every operator of issue 44 in the
// mix that table gives. Patterns are generated as the JSON text a user
// writes and read back with filter::ParsePatternSpec, so the workload's
// specs are exactly what ParseFilter makes of its patterns.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "filter/pattern.h"
#include "workload/typed_workload.h"

namespace cohort {
namespace workload {
namespace {

using internal::Rng;
using internal::StreamRng;
using internal::kStatuses;
using internal::RegionName;
using internal::ZipfTable;

// Stream tags of eventbridge-1m (events-1m has 12 and 13).
constexpr uint64_t kBridgePatternStream = 14;
constexpr uint64_t kBridgeEventStream = 15;

// Value spaces.
constexpr uint32_t kAccounts = 100000;
constexpr int64_t kUsers = 1000000;
constexpr uint32_t kSkus = 100000;
constexpr uint32_t kDomains = 200;
constexpr uint32_t kRegions = 20;

// The 40 sources: 30 services of an application ("com.acme.orders") and
// 10 of AWS ("aws.ec2"); each has five detail-types ("Order Created").
// The first 30 of the entities (typed_workload.h): "order", "payment", ...
const char* const* const kServices = internal::kEntities;
const char* const kAwsServices[] = {"ec2", "s3",  "lambda", "rds",
                                    "ecs", "sqs", "sns",    "dynamodb",
                                    "cloudwatch", "iam"};
constexpr uint32_t kSources = 40;
const char* const kVerbs[] = {"Created", "Updated", "Deleted", "Failed",
                              "Completed"};
const char* const kStates[] = {"running", "stopped", "pending",
                               "terminated"};
const char* const kTiers[] = {"basic", "silver", "gold", "platinum"};
const char* const kCurrencies[] = {"USD", "EUR", "GBP", "JPY",
                                   "CAD", "AUD", "CHF", "SEK"};
const char* const kTags[] = {"prod",   "staging", "dev",      "blue",
                             "green",  "pci",     "web",      "db",
                             "batch",  "eu",      "us",       "ap",
                             "canary", "beta",    "gpu",      "spot",
                             "edge",   "internal", "public",  "legacy"};
constexpr uint32_t kTagCount = 20;
// Syllables of user names; two are not ASCII, so that the ignore-case
// operators fold more than ASCII letters.
const char* const kSyllables[] = {"al", "be", "ca", "da", "él", "fi", "ga",
                                  "ha", "io", "ju", "ka", "li", "mo", "na",
                                  "ol", "pe", "ñu", "ri", "sa", "to"};
const char* const kKeyDirs[] = {"uploads", "exports", "tmp"};
const char* const kKeyExts[] = {"png", "jpg", "csv", "json", "tmp"};
// The few multi-star wildcards patterns use (users repeat a handful).
const char* const kKeyWildcards[] = {
    "tmp/*/*.tmp",         "uploads/*/img-1*.png", "exports/*/report-*.csv",
    "uploads/*/*-9*.jpg",  "*/2026/*.json",        "tmp/*-1*"};
const char* const kExcludedKeys[] = {"tmp/*", "*.tmp", "*/2024/*",
                                     "exports/*/*.json"};

std::string SourceName(uint32_t i) {
  return i < 30 ? absl::StrCat("com.acme.", kServices[i], "s")
                : absl::StrCat("aws.", kAwsServices[i - 30]);
}
std::string DetailType(uint32_t source, uint32_t verb) {
  std::string entity = source < 30 ? std::string(kServices[source])
                                   : absl::AsciiStrToUpper(
                                         kAwsServices[source - 30]);
  entity[0] = absl::ascii_toupper(entity[0]);
  return absl::StrCat(entity, " ", kVerbs[verb]);
}
std::string AccountId(uint32_t i) {
  return absl::StrFormat("%012d", int64_t{100000000000} + int64_t{i} * 7919);
}
std::string Domain(uint32_t i) {
  static const char* const kTlds[] = {"com", "net", "io", "de"};
  return absl::StrFormat("corp%03d.%s", i, kTlds[i % 4]);
}
std::string UserName(int64_t user) {
  std::string name;
  for (int k = 0; k < 3; ++k) {
    name += kSyllables[user % 20];
    user /= 20;
  }
  name[0] = absl::ascii_toupper(name[0]);  // "él..." stays lower: 0xC3
  return name;
}
std::string Sku(uint32_t i) { return absl::StrFormat("sku-%05d", i); }
// A number of cents as JSON writes a price: 1999 is 19.99, 2000 is 20.
std::string Cents(int64_t cents) {
  return cents % 100 == 0
             ? absl::StrCat(cents / 100)
             : absl::StrFormat("%d.%02d", cents / 100, cents % 100);
}
std::string Quote(absl::string_view s) { return absl::StrCat("\"", s, "\""); }
std::string Resource(uint32_t aws, absl::string_view region,
                     absl::string_view account, uint32_t id) {
  return absl::StrFormat("arn:aws:%s:%s:%s:%s/r-%06x", kAwsServices[aws],
                         region, account, aws == 0 ? "instance" : "resource",
                         id);
}
// `s` with the case of an ASCII letter flipped now and then (one in 3).
std::string RandomCase(Rng& rng, absl::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (absl::ascii_isalpha(c) && rng.Below(3) == 0) {
      c = absl::ascii_isupper(c) ? absl::ascii_tolower(c)
                                 : absl::ascii_toupper(c);
    }
  }
  return out;
}

struct Tables {
  ZipfTable sources{kSources, 1.0};
  ZipfTable verbs{5, 1.0};
  ZipfTable accounts{kAccounts, 0.5};
  ZipfTable regions{kRegions, 0.5};
  ZipfTable skus{kSkus, 0.5};
  ZipfTable domains{kDomains, 1.0};
  ZipfTable resources{30, 1.0};
  ZipfTable statuses{5, 1.5};
  ZipfTable states{4, 1.0};
  ZipfTable tiers{4, 1.0};
  ZipfTable currencies{8, 1.0};
  ZipfTable tags{kTagCount, 0.8};
  ZipfTable aws{10, 1.0};
};

std::string Account(const Tables& t, Rng& rng) {
  return AccountId(t.accounts.Sample(rng));
}

// One pattern, as its JSON text (the template table of presets.md).
std::string Pattern(const Tables& t, Rng& rng) {
  const uint64_t pick = rng.Below(100);
  if (pick < 25) {  // P1: an account's events of a source, 1 or 2 types
    const uint32_t source = t.sources.Sample(rng);
    std::vector<std::string> types = {
        Quote(DetailType(source, t.verbs.Sample(rng)))};
    if (rng.Below(2) == 0) {
      std::string other = Quote(DetailType(source, t.verbs.Sample(rng)));
      if (other != types[0]) types.push_back(std::move(other));
    }
    return absl::StrCat("{\"source\":[", Quote(SourceName(source)),
                        "],\"detail-type\":[", absl::StrJoin(types, ","),
                        "],\"account\":[", Quote(Account(t, rng)), "]}");
  }
  if (pick < 35) {  // P2: an account's orders above, or within, a total
    const int64_t low = rng.InRange(100, 400000);
    const int64_t high = low + rng.InRange(100, 100000);
    std::string numeric;
    const uint64_t shape = rng.Below(4);
    if (shape == 0) {
      numeric = absl::StrCat("\">=\",", Cents(low));
    } else if (shape == 1) {
      numeric = absl::StrCat("\">=\",", Cents(low), ",\"<=\",", Cents(high));
    } else if (shape == 2) {
      numeric = absl::StrCat("\">\",", Cents(low), ",\"<=\",", Cents(high));
    } else {
      numeric = absl::StrCat("\">=\",", Cents(low), ",\"<\",", Cents(high));
    }
    return absl::StrCat(
        "{\"source\":[\"com.acme.orders\"],\"account\":[",
        Quote(Account(t, rng)), "],\"detail\":{\"order\":{\"total\":[",
        "{\"numeric\":[", numeric, "]}]}}}");
  }
  if (pick < 45) {  // P3: one user's failures
    return absl::StrCat("{\"detail\":{\"user\":{\"id\":[",
                        rng.InRange(0, kUsers - 1),
                        "]},\"status\":[{\"anything-but\":\"ok\"}]}}");
  }
  if (pick < 53) {  // P4: slow calls under an API path, some accounts
    std::vector<std::string> accounts;
    for (uint64_t k = 2 + rng.Below(3); k > 0; --k) {
      accounts.push_back(Quote(Account(t, rng)));
    }
    return absl::StrCat(
        "{\"account\":[", absl::StrJoin(accounts, ","),
        "],\"detail\":{\"path\":[{\"prefix\":\"/api/v", 1 + rng.Below(3), "/",
        kServices[t.resources.Sample(rng)], "s/\"}],\"latency_ms\":[",
        "{\"numeric\":[\">\",", rng.InRange(100, 5000), "]}]}}");
  }
  if (pick < 59) {  // P5: an account's calls from a network
    std::string cidr;
    const uint64_t kind = rng.Below(10);
    if (kind < 6) {
      cidr = absl::StrCat("10.", rng.Below(16), ".0.0/16");
    } else if (kind < 8) {
      cidr = absl::StrCat("192.168.", rng.Below(256), ".0/24");
    } else if (kind < 9) {
      cidr = "172.16.0.0/12";
    } else {
      cidr = absl::StrFormat("2001:db8:%x::/48", rng.Below(256));
    }
    return absl::StrCat("{\"account\":[", Quote(Account(t, rng)),
                        "],\"detail\":{\"ip\":[{\"cidr\":", Quote(cidr),
                        "}]}}");
  }
  if (pick < 66) {  // P6: orders with an item of a SKU (array of objects)
    std::string more;
    if (rng.Below(10) < 3) {
      more = absl::StrCat(",\"price\":[{\"numeric\":[\"<\",",
                          Cents(rng.InRange(100, 99999)), "]}]");
    }
    return absl::StrCat(
        "{\"detail\":{\"order\":{\"items\":{\"sku\":[",
        Quote(Sku(t.skus.Sample(rng))), "],\"qty\":[{\"numeric\":[\">=\",",
        rng.InRange(1, 5), "]}]", more, "}}}}");
  }
  if (pick < 71) {  // P7: an account's users of a mail domain
    const std::string domain = absl::StrCat("@", Domain(t.domains.Sample(rng)));
    const std::string suffix =
        rng.Below(10) < 4
            ? absl::StrCat("{\"suffix\":{\"equals-ignore-case\":",
                           Quote(RandomCase(rng, domain)), "}}")
            : absl::StrCat("{\"suffix\":", Quote(domain), "}");
    return absl::StrCat("{\"account\":[", Quote(Account(t, rng)),
                        "],\"detail\":{\"user\":{\"email\":[", suffix,
                        "]}}}");
  }
  if (pick < 76) {  // P8: one user's events of a type, any case
    const uint32_t source = t.sources.Sample(rng);
    return absl::StrCat(
        "{\"detail-type\":[{\"equals-ignore-case\":",
        Quote(RandomCase(rng, DetailType(source, t.verbs.Sample(rng)))),
        "}],\"detail\":{\"user\":{\"id\":[", rng.InRange(0, kUsers - 1),
        "]}}}");
  }
  if (pick < 81) {  // P9: an account's resources (one-star wildcards)
    const std::string account = Account(t, rng);
    const uint32_t aws = t.aws.Sample(rng);
    const std::string wildcard =
        rng.Below(5) < 4
            ? absl::StrFormat("arn:aws:%s:%s:%s:*", kAwsServices[aws],
                              RegionName(t.regions.Sample(rng)), account)
            : absl::StrFormat("arn:aws:%s:*:%s:%s/r-%06x", kAwsServices[aws],
                              account, aws == 0 ? "instance" : "resource",
                              rng.Below(1 << 20));
    return absl::StrCat("{\"source\":[", Quote(SourceName(30 + aws)),
                        "],\"resources\":[{\"wildcard\":", Quote(wildcard),
                        "}]}");
  }
  if (pick < 87) {  // P10: an account's errors or slow calls ("$or")
    return absl::StrCat(
        "{\"account\":[", Quote(Account(t, rng)),
        "],\"$or\":[{\"detail\":{\"status\":[\"error\",\"timeout\"]}},",
        "{\"detail\":{\"latency_ms\":[{\"numeric\":[\">=\",",
        rng.InRange(1000, 9000), "]}]}}]}");
  }
  if (pick < 91) {  // P11: tagged events without a coupon, by flag
    static const char* const kFlags[] = {"true", "false", "null"};
    return absl::StrCat(
        "{\"account\":[", Quote(Account(t, rng)),
        "],\"detail\":{\"coupon\":[{\"exists\":false}],\"tags\":[",
        Quote(kTags[t.tags.Sample(rng)]), "],\"flag\":[",
        kFlags[rng.Below(3)], "]}}");
  }
  if (pick < 95) {  // P12: orders with a coupon in other currencies
    return absl::StrCat(
        "{\"account\":[", Quote(Account(t, rng)),
        "],\"detail\":{\"coupon\":[{\"exists\":true}],\"order\":{",
        "\"currency\":[{\"anything-but\":[\"USD\",\"EUR\"]}]}}}");
  }
  if (pick < 98) {  // P13: one user unless basic, by name's start
    const int64_t user = rng.InRange(0, kUsers - 1);
    return absl::StrCat(
        "{\"detail\":{\"user\":{\"id\":[", user,
        "],\"tier\":[{\"anything-but\":{\"equals-ignore-case\":\"BASIC\"}}],",
        "\"name\":[{\"prefix\":{\"equals-ignore-case\":",
        Quote(absl::AsciiStrToUpper(UserName(user).substr(0, 2))), "}}]}}}");
  }
  // P14: an account's files outside /internal/ and some keys
  std::string key;
  const uint64_t kind = rng.Below(3);
  if (kind == 0) {
    key = "{\"anything-but\":{\"suffix\":\".tmp\"}}";
  } else if (kind == 1) {
    key = absl::StrCat("{\"anything-but\":{\"wildcard\":",
                       Quote(kExcludedKeys[rng.Below(4)]), "}}");
  } else {
    key = absl::StrCat("{\"wildcard\":", Quote(kKeyWildcards[rng.Below(6)]),
                       "}");
  }
  return absl::StrCat(
      "{\"account\":[", Quote(Account(t, rng)),
      "],\"detail\":{\"path\":[",
      "{\"anything-but\":{\"prefix\":\"/internal/\"}}],",
      "\"object\":{\"key\":[", key, "]}}}");
}

// One event, as its JSON text (presets.md's field table).
std::string Event(const Tables& t, Rng& rng) {
  const uint32_t source = t.sources.Sample(rng);
  const std::string account = Account(t, rng);
  const std::string region = RegionName(t.regions.Sample(rng));
  std::string out = absl::StrFormat(
      "{\"version\":\"0\",\"id\":\"%08x-%04x-%04x-%04x-%012x\",",
      rng.Below(uint64_t{1} << 32), rng.Below(1 << 16), rng.Below(1 << 16),
      rng.Below(1 << 16), rng.Below(uint64_t{1} << 48));
  absl::StrAppend(&out, "\"detail-type\":",
                  Quote(DetailType(source, t.verbs.Sample(rng))),
                  ",\"source\":", Quote(SourceName(source)),
                  ",\"account\":", Quote(account),
                  absl::StrFormat(",\"time\":\"2026-11-29T%02d:%02d:%02dZ\"",
                                  rng.Below(24), rng.Below(60), rng.Below(60)),
                  ",\"region\":", Quote(region), ",\"resources\":[");
  for (uint64_t k = rng.Below(100) < 85 ? 1 : 2, first = 1; k > 0;
       --k, first = 0) {
    const uint32_t aws =
        source >= 30 && first ? source - 30 : t.aws.Sample(rng);
    absl::StrAppend(&out, first ? "" : ",",
                    Quote(Resource(aws, region, account, rng.Below(1 << 20))));
  }
  const int64_t user = rng.InRange(0, kUsers - 1);
  absl::StrAppend(
      &out, "],\"detail\":{\"state\":", Quote(kStates[t.states.Sample(rng)]),
      ",\"status\":", Quote(kStatuses[t.statuses.Sample(rng)]),
      ",\"user\":{\"id\":", user, ",\"name\":", Quote(UserName(user)),
      ",\"email\":",
      Quote(absl::StrCat("user", user, "@", Domain(t.domains.Sample(rng)))),
      ",\"tier\":", Quote(kTiers[t.tiers.Sample(rng)]), "}");
  absl::StrAppend(
      &out, ",\"order\":{\"id\":",
      Quote(absl::StrFormat("o-%08d", rng.Below(100000000))),
      ",\"total\":", Cents(rng.InRange(1, 500000)),
      ",\"currency\":", Quote(kCurrencies[t.currencies.Sample(rng)]),
      ",\"items\":[");
  const uint64_t item_pick = rng.Below(10);
  const int items = item_pick < 6 ? 1 : item_pick < 9 ? 2 : 3;
  for (int k = 0; k < items; ++k) {
    absl::StrAppend(&out, k == 0 ? "" : ",", "{\"sku\":",
                    Quote(Sku(t.skus.Sample(rng))), ",\"qty\":",
                    rng.InRange(1, 10), ",\"price\":",
                    Cents(rng.InRange(1, 99999)), "}");
  }
  std::string path;
  if (rng.Below(10) == 0) {
    path = absl::StrCat("/internal/", kServices[rng.Below(30)], "/health");
  } else {
    path = absl::StrCat("/api/v", 1 + rng.Below(3), "/",
                        kServices[t.resources.Sample(rng)], "s/",
                        rng.Below(1000));
  }
  std::string ip;
  const uint64_t ip_kind = rng.Below(10);
  if (ip_kind < 6) {
    ip = absl::StrCat("10.", rng.Below(16), ".", rng.Below(256), ".",
                      rng.Below(256));
  } else if (ip_kind < 8) {
    ip = absl::StrCat("192.168.", rng.Below(256), ".", rng.Below(256));
  } else if (ip_kind < 9) {
    ip = absl::StrCat("172.", rng.InRange(16, 31), ".", rng.Below(256), ".",
                      rng.Below(256));
  } else {
    ip = absl::StrFormat("2001:db8:%x::%x", rng.Below(256),
                         rng.Below(1 << 16));
  }
  absl::StrAppend(&out, "]},\"path\":", Quote(path), ",\"ip\":", Quote(ip),
                  ",\"latency_ms\":", rng.InRange(0, 9999),
                  ",\"score\":0.", absl::StrFormat("%03d", rng.Below(1000)),
                  ",\"tags\":[");
  const uint64_t tag_pick = rng.Below(10);
  const int tags = tag_pick < 2 ? 0 : tag_pick < 6 ? 1 : tag_pick < 9 ? 2 : 3;
  std::vector<uint32_t> chosen;
  while (static_cast<int>(chosen.size()) < tags) {
    const uint32_t tag = t.tags.Sample(rng);
    if (std::find(chosen.begin(), chosen.end(), tag) == chosen.end()) {
      chosen.push_back(tag);
    }
  }
  for (size_t k = 0; k < chosen.size(); ++k) {
    absl::StrAppend(&out, k == 0 ? "" : ",", Quote(kTags[chosen[k]]));
  }
  const uint64_t flag = rng.Below(20);
  absl::StrAppend(&out, "],\"flag\":",
                  flag < 9 ? "true" : flag < 18 ? "false" : "null");
  if (rng.Below(10) == 0) {
    absl::StrAppend(&out, ",\"coupon\":",
                    Quote(absl::StrFormat("C%04d", rng.Below(10000))));
  }
  if (rng.Below(10) < 3) {
    absl::StrAppend(
        &out, ",\"object\":{\"key\":",
        Quote(absl::StrFormat("%s/%d/%s-%d.%s", kKeyDirs[rng.Below(3)],
                              rng.InRange(2024, 2026),
                              rng.Below(2) == 0 ? "img" : "report",
                              rng.Below(1000), kKeyExts[rng.Below(5)])),
        "}");
  }
  absl::StrAppend(&out, "}}");
  return out;
}

}  // namespace

TypedWorkload GenerateEventBridge1m(int64_t subscriptions, int64_t events,
                                    uint64_t seed) {
  TypedWorkload w;
  w.options.preset = "eventbridge-1m";
  w.options.subscriptions = subscriptions;
  w.options.events = events;
  w.options.seed = seed;
  const Tables tables;
  Rng pattern_rng = StreamRng(seed, kBridgePatternStream);
  w.patterns.reserve(subscriptions);
  w.subscriptions.reserve(subscriptions);
  for (int64_t n = 0; n < subscriptions; ++n) {
    w.patterns.push_back(Pattern(tables, pattern_rng));
    absl::StatusOr<v1::SubscriptionSpec> spec =
        filter::ParsePatternSpec(w.patterns.back());
    // The generator writes only patterns the parser takes (the preset's
    // test reads a sample of each template back).
    if (!spec.ok()) {
      std::fprintf(stderr, "eventbridge-1m: %s: %s\n",
                   w.patterns.back().c_str(),
                   std::string(spec.status().message()).c_str());
      std::abort();
    }
    spec->set_subscriber(absl::StrCat("s", n % 1000));
    w.subscriptions.push_back(*std::move(spec));
  }
  Rng event_rng = StreamRng(seed, kBridgeEventStream);
  w.events.reserve(events);
  for (int64_t n = 0; n < events; ++n) {
    w.events.emplace_back().set_json(Event(tables, event_rng));
  }
  return w;
}

}  // namespace workload
}  // namespace cohort
