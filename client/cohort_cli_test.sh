#!/usr/bin/env bash
# The cohort CLI against a real cohortd on 127.0.0.1: subscribe, publish with
# and without ids, listen (delivery printed), unsubscribe, stats (table and
# JSON), strings, lists, prefixes and existence (a printed delivery pasted
# back into publish), and usage errors that point at the offending token
# (exit 2) or server errors (exit 1).
set -uo pipefail
readonly COHORTD=$1
readonly COHORT=$2
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/testing/checks.sh"
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/testing/cohortd.sh"

log=$(mktemp)
start_cohortd "${log}" "${COHORTD}" --listen=127.0.0.1:0 --partitions=2
pid=${COHORTD_PID}
port=${COHORTD_PORT}
trap 'kill -TERM ${pid} 2>/dev/null; rm -f "${log}"' EXIT
cohort() { "${COHORT}" --server="127.0.0.1:${port}" "$@"; }

# Waits (up to 10 s) until the server counts one open Listen stream.
wait_for_one_listener() {
  for _ in $(seq 100); do
    cohort stats --json | grep -q '"listeners": "1"' && return
    sleep 0.1
  done
}

out=$(cohort subscribe --subscriber=alice 'price <= 500 and kind = 7' 'price between 100 and 200')
check "subscribe prints two ids" test "$(wc -l <<<"${out}")" -eq 2
first_id=$(head -1 <<<"${out}" | cut -f1)
check "first id is 1" test "${first_id}" = 1

listen_out=$(mktemp)
cohort listen --subscriber=alice --count=1 >"${listen_out}" &
listen_pid=$!
wait_for_one_listener

out=$(cohort publish 'price=150 kind=7' --ids --payload=hello)
check "publish matches both subscriptions" grep -q "matched 2	1 2" <<<"${out}"
out=$(cohort publish 'price=600, kind=7')
check "publish without ids prints the count" grep -q "matched 0$" <<<"${out}"

wait "${listen_pid}"
check "listen exits 0 after --count deliveries" test $? -eq 0
check "listen printed the delivery" grep -q "seq 1	ids 1,2	price=150 kind=7	payload 5 bytes" "${listen_out}"
rm -f "${listen_out}"

out=$(cohort unsubscribe 2)
check "unsubscribe" grep -q "unsubscribed 1" <<<"${out}"
out=$(cohort unsubscribe 2 2>&1)
check "unsubscribe of a removed id exits 1" test $? -eq 1
check "... with NOT_FOUND" grep -q "NOT_FOUND" <<<"${out}"

out=$(cohort stats)
check "stats table lists the partitions" grep -q "^partition/1 " <<<"${out}"
check "stats shows 1 subscription" grep -q "^1 subscriptions, 2 events published" <<<"${out}"
check "stats shows admission" grep -q "^0 events in flight, admission limit [1-9]" <<<"${out}"
check "stats table has an expired column" grep -q " reject expired    drop$" <<<"${out}"

# Strings, lists, prefixes and existence: subscribe, publish matching and
# non-matching events, a delivery printed with its strings quoted and
# pasted back into publish, the stats table's string attributes.
out=$(cohort subscribe --subscriber=bob \
  'type = "order" and region in ["eu-west", "eu-north"] and not exists coupon' \
  'path prefix "/api/"')
check "typed subscribe prints two ids" test "$(wc -l <<<"${out}")" -eq 2
order_id=$(sed -n 1p <<<"${out}" | cut -f1)
prefix_id=$(sed -n 2p <<<"${out}" | cut -f1)
out=$(cohort publish --ids 'type="order" region="eu-north" path="/api/x"' \
  'type="order" region="eu-south"' 'type="order" region="eu-west" coupon=1' \
  'type="order" region="eu-west"' 'type=7 region="eu-west"' \
  'path="/ap"' 'path="/api/"')
both="region=\"eu-north\" path=\"/api/x\"	matched 2	${order_id} ${prefix_id}$"
check "strings: an event matching both" grep -q "${both}" <<<"${out}"
check "strings: a region not in the list" \
  grep -q "region=\"eu-south\"	matched 0	$" <<<"${out}"
check "strings: coupon present fails not exists" \
  grep -q "coupon=1	matched 0	$" <<<"${out}"
check "strings: eu-west without coupon" \
  grep -q "^type=\"order\" region=\"eu-west\"	matched 1	${order_id}$" \
  <<<"${out}"
check "strings: an int64 type never equals a string" \
  grep -q "^type=7 region=\"eu-west\"	matched 0	$" <<<"${out}"
check "prefix: a shorter path does not match" \
  grep -q "^path=\"/ap\"	matched 0	$" <<<"${out}"
check "prefix: the prefix itself matches" \
  grep -q "^path=\"/api/\"	matched 1	${prefix_id}$" <<<"${out}"

listen_out=$(mktemp)
cohort listen --subscriber=bob --count=1 >"${listen_out}" &
listen_pid=$!
wait_for_one_listener
out=$(cohort publish 'type="order" region="eu-west" note="a\"b\x01\\c"')
check "publish of escaped strings matches" grep -q "matched 1$" <<<"${out}"
wait "${listen_pid}"
# The event, with note="a\"b\x01\\c", as a grep pattern.
event='type="order" region="eu-west" note="a\\"b\\x01\\\\c"'
check "listen prints strings quoted and escaped" grep -q \
  "^seq 1	ids ${order_id}	${event}	payload 0 bytes$" "${listen_out}"
printed=$(cut -f3 "${listen_out}")
rm -f "${listen_out}"
out=$(cohort publish --ids "${printed}")
check "a printed event pastes back into publish" \
  grep -q "	matched 1	${order_id}$" <<<"${out}"

# JSON events: an argument starting with '{' (or every one, with --json),
# arrays of objects matched element by element, errors naming the place.
out=$(cohort subscribe --subscriber=carol \
  '{"detail": {"items": {"sku": ["x1"], "qty": [{"numeric": [">", 2]}]}}}')
json_id=$(cut -f1 <<<"${out}")
out=$(cohort publish --ids \
  '{"detail": {"items": [{"sku": "x1", "qty": 1}, {"sku": "y", "qty": 5}]}}' \
  '  {"detail": {"items": [{"sku": "y"}, {"sku": "x1", "qty": 2.5}]}}')
check "json: no element has both" grep -q '"qty": 5}]}}	matched 0	$' <<<"${out}"
check "json: one element has both" \
  grep -q "\"qty\": 2.5}]}}	matched 1	${json_id}$" <<<"${out}"
out=$(cohort publish --json '{"detail": {"items": {"sku": "x1", "qty": 3}}}')
check "json: --json publishes a document" grep -q "matched 1$" <<<"${out}"
out=$(cohort publish '{"detail": {"qty": 1, "qty": 2}}' 2>&1)
check "json: a duplicate key exits 1" test $? -eq 1
check "... naming the place" \
  grep -q "events\[0\].json: at detail.qty: the key is in its object twice" \
  <<<"${out}"

out=$(cohort subscribe --subscriber=bob 'name between "a" and "m"' 2>&1)
range_id=$(cut -f1 <<<"${out}")
out=$(cohort publish --ids 'name="kiwi"' 'name="m"' 'name="ma"' 'name=5')
check "a string range holds in byte order" \
  grep -q "^name=\"kiwi\"	matched 1	${range_id}$" <<<"${out}"
check "a string range includes its upper bound" \
  grep -q "^name=\"m\"	matched 1	${range_id}$" <<<"${out}"
check "a string range excludes what sorts after it" \
  grep -q "^name=\"ma\"	matched 0	$" <<<"${out}"
check "a string range never holds for an int64" \
  grep -q "^name=5	matched 0	$" <<<"${out}"
out=$(cohort subscribe --subscriber=bob 'type = "order' 2>&1)
check "an unterminated string exits 2" test $? -eq 2
check "... pointing at the string" grep -q "^         ^^^^^^$" <<<"${out}"
out=$(cohort subscribe --subscriber=bob 'file suffix ".png"' 2>&1)
suffix_id=$(cut -f1 <<<"${out}")
out=$(cohort publish --ids 'file="cat.png"' 'file="png"' 'file=5')
check "a suffix holds for a string ending with it" \
  grep -q "^file=\"cat.png\"	matched 1	${suffix_id}$" <<<"${out}"
check "... not for a shorter string" \
  grep -q "^file=\"png\"	matched 0	$" <<<"${out}"
check "... nor for an int64" grep -q "^file=5	matched 0	$" <<<"${out}"
out=$(cohort subscribe --subscriber=bob 'who equals-ignore-case "Zo\xC3\xAB"' 2>&1)
icase_id=$(cut -f1 <<<"${out}")
out=$(cohort publish --ids 'who="ZO\xC3\x8B"' 'who="zoe"')
check "equals-ignore-case folds both sides" \
  grep -q "^who=\"ZO\\\\xC3\\\\x8B\"	matched 1	${icase_id}$" <<<"${out}"
check "... and keeps the letters apart" \
  grep -q "^who=\"zoe\"	matched 0	$" <<<"${out}"
out=$(cohort subscribe --subscriber=bob \
  'who not equals-ignore-case ["ANN", "bo"]' 2>&1)
not_icase_id=$(cut -f1 <<<"${out}")
out=$(cohort publish --ids 'who="Bo"' 'who="eve"')
check "not equals-ignore-case excludes a list" \
  grep -q "^who=\"Bo\"	matched 0	$" <<<"${out}"
check "... and holds for the rest" \
  grep -q "^who=\"eve\"	matched 1	${not_icase_id}$" <<<"${out}"
out=$(cohort subscribe --subscriber=bob 'doc prefix-ignore-case "/Api/"' 2>&1)
check "prefix-ignore-case prints back" \
  grep -q "	doc prefix-ignore-case \"/Api/\"$" <<<"${out}"
pic_id=$(cut -f1 <<<"${out}")
out=$(cohort publish --ids 'doc="/API/v1"' 'doc="/ap/"' 'doc=5')
check "prefix-ignore-case folds both sides" \
  grep -q "^doc=\"/API/v1\"	matched 1	${pic_id}$" <<<"${out}"
check "... not for another prefix" \
  grep -q "^doc=\"/ap/\"	matched 0	$" <<<"${out}"
check "... nor for an int64" grep -q "^doc=5	matched 0	$" <<<"${out}"
out=$(cohort subscribe --subscriber=bob \
  '{"pic": [{"suffix": {"equals-ignore-case": ".PNG"}}]}' 2>&1)
check "a suffix with equals-ignore-case inside is suffix-ignore-case" \
  grep -q "	pic suffix-ignore-case \".PNG\"$" <<<"${out}"
sic_id=$(cut -f1 <<<"${out}")
out=$(cohort publish --ids 'pic="Cat.Png"' 'pic="png"')
check "suffix-ignore-case folds both sides" \
  grep -q "^pic=\"Cat.Png\"	matched 1	${sic_id}$" <<<"${out}"
check "... not for a shorter string" \
  grep -q "^pic=\"png\"	matched 0	$" <<<"${out}"
out=$(cohort subscribe --subscriber=bob 'file not suffix ".tmp"' 2>&1)
not_suffix_id=$(cut -f1 <<<"${out}")
out=$(cohort publish --ids 'file="a.txt"' 'file="a.tmp"' 'file="tmp"')
check "not suffix holds for another ending" \
  grep -q "^file=\"a.txt\"	matched 1	${not_suffix_id}$" <<<"${out}"
check "... not for the excluded one" \
  grep -q "^file=\"a.tmp\"	matched 0	$" <<<"${out}"
check "... and for a string shorter than it" \
  grep -q "^file=\"tmp\"	matched 1	${not_suffix_id}$" <<<"${out}"
out=$(cohort subscribe --subscriber=bob 'src cidr "10.0.0.0/8"' 2>&1)
cidr_id=$(cut -f1 <<<"${out}")
out=$(cohort publish --ids 'src="10.9.8.7"' 'src="11.0.0.1"' \
  'src="::ffff:10.0.0.1"')
check "cidr holds for an address in the network" \
  grep -q "^src=\"10.9.8.7\"	matched 1	${cidr_id}$" <<<"${out}"
check "... not for one outside it" \
  grep -q "^src=\"11.0.0.1\"	matched 0	$" <<<"${out}"
check "... nor for IPv6" \
  grep -q "^src=\"::ffff:10.0.0.1\"	matched 0	$" <<<"${out}"
out=$(cohort subscribe --subscriber=bob 'img wildcard "img-*.png"' 2>&1)
wildcard_id=$(cut -f1 <<<"${out}")
out=$(cohort publish --ids 'img="img-7.png"' 'img="img.png"')
check "a wildcard holds for what it matches" \
  grep -q "^img=\"img-7.png\"	matched 1	${wildcard_id}$" <<<"${out}"
check "... not for a string too short for both sides" \
  grep -q "^img=\"img.png\"	matched 0	$" <<<"${out}"
out=$(cohort subscribe --subscriber=bob 'img wildcard "a*b*c"' 2>&1)
check "a wildcard of several stars subscribes" test $? -eq 0
stars_id=$(cut -f1 <<<"${out}")
out=$(cohort publish --ids 'img="abc"' 'img="a-b-b-c"' 'img="acb"')
check "... holds for its parts in order" \
  grep -q "^img=\"abc\"	matched 1	${stars_id}$" <<<"${out}"
check "... with anything between them" \
  grep -q "^img=\"a-b-b-c\"	matched 1	${stars_id}$" <<<"${out}"
check "... not for them out of order" \
  grep -q "^img=\"acb\"	matched 0	$" <<<"${out}"
out=$(cohort subscribe --subscriber=bob 'img wildcard "a**b"' 2>&1)
check "two stars in a row exit 1" test $? -eq 1
check "... naming them" grep -q "two stars in a row" <<<"${out}"
out=$(cohort subscribe --subscriber=bob 'img wildcard "*1*2*3*4*5*6*7*8*"' 2>&1)
check "a ninth star exits 1" test $? -eq 1
check "... naming the limit" grep -q "more than 8 stars" <<<"${out}"
out=$(cohort subscribe --subscriber=bob 'jar not wildcard "*/bin/*.jar"' 2>&1)
check "not wildcard subscribes, printed back" \
  grep -q '^[0-9]*	jar not wildcard "\*/bin/\*.jar"$' <<<"${out}"
not_wildcard_id=$(cut -f1 <<<"${out}")
out=$(cohort publish --ids 'jar="/usr/bin/x.jar"' 'jar="/usr/lib/x.jar"' \
  'jar=5')
check "not wildcard excludes what the pattern matches" \
  grep -q "^jar=\"/usr/bin/x.jar\"	matched 0	$" <<<"${out}"
check "... holds for another string" \
  grep -q "^jar=\"/usr/lib/x.jar\"	matched 1	${not_wildcard_id}$" \
  <<<"${out}"
check "... not for an int64" grep -q "^jar=5	matched 0	$" <<<"${out}"
out=$(cohort subscribe --subscriber=bob 'src cidr "10.0.0.0/33"' 2>&1)
check "a bad network exits 1" test $? -eq 1
check "... naming it" grep -q \
  'string_value: "10.0.0.0/33" is not an IPv4 or IPv6 network' <<<"${out}"
out=$(cohort subscribe --subscriber=bob 'file not prefix ""' 2>&1)
check "an empty excluded prefix exits 1" test $? -eq 1
check "... naming the field and the rule" grep -q \
  'predicates\[0\].string_value: empty; OP_NOT_PREFIX needs 1 byte or more' \
  <<<"${out}"
out=$(cohort stats)
header="^attribute  *strings  *prefixes prefix lengths  *range bounds"
check "stats lists the string attributes" \
  grep -q "${header}  *suffixes suffix lengths  *case folds$" <<<"${out}"
check "... region with 2 strings" \
  grep -q "^region  *2  *0  *0  *0  *0  *0  *0$" <<<"${out}"
check "... path with 1 prefix of 1 length" \
  grep -q "^path  *0  *1  *1  *0  *0  *0  *0$" <<<"${out}"
check "... name with the 2 bounds of its range" \
  grep -q "^name  *0  *0  *0  *2  *0  *0  *0$" <<<"${out}"
check "... file with 2 suffixes of 2 lengths (one excluded)" \
  grep -q "^file  *0  *0  *0  *0  *2  *2  *0$" <<<"${out}"
check "... who with 3 case folds" \
  grep -q "^who  *0  *0  *0  *0  *0  *0  *3$" <<<"${out}"

# Event Ruler patterns and SNS policies: as an argument, from --pattern
# files and from stdin; each id is printed with what the pattern became.
rule=$(mktemp)
printf '%s' '{"detail": {"state": [{"anything-but": "init"}],
  "n": [{"numeric": [">", 0, "<=", 5]}]}}' >"${rule}"
out=$(cohort subscribe --subscriber=carol '{"src": [{"cidr": "10.0.0.0/8"}]}' \
  --pattern="${rule},-" <<<'{"tag": ["a", "b"]}')
check "patterns subscribe: three ids" test "$(wc -l <<<"${out}")" -eq 3
check "... an argument shown as its predicates" \
  grep -q '^[0-9]*	src cidr "10.0.0.0/8"$' <<<"${out}"
check "... a file" grep -q \
  '^[0-9]*	detail.state != "init" and detail.n > 0 and detail.n <= 5$' \
  <<<"${out}"
check "... stdin" grep -q '^[0-9]*	tag in \["a", "b"\]$' <<<"${out}"
rule_id=$(sed -n 2p <<<"${out}" | cut -f1)
out=$(cohort publish --ids 'detail.state="up" detail.n=5' \
  'detail.state="init" detail.n=5' 'detail.state="up" detail.n=0')
check "a pattern matches as Event Ruler's would" \
  grep -q "^detail.state=\"up\" detail.n=5	matched 1	${rule_id}$" <<<"${out}"
check "... not the excluded state" \
  grep -q '^detail.state="init" detail.n=5	matched 0	$' <<<"${out}"
check "... nor a number outside the range" \
  grep -q '^detail.state="up" detail.n=0	matched 0	$' <<<"${out}"
out=$(cohort subscribe --subscriber=carol \
  '{"aw": [{"anything-but": {"wildcard": ["a*", "*b"]}}]}' 2>&1)
check "anything-but wildcard with a list: a predicate each" grep -q \
  '^[0-9]*	aw not wildcard "a\*" and aw not wildcard "\*b"$' <<<"${out}"
aw_id=$(cut -f1 <<<"${out}")
out=$(cohort publish --ids 'aw="xay"' 'aw="ax"' 'aw="xb"')
check "... holds when none of them matches" \
  grep -q "^aw=\"xay\"	matched 1	${aw_id}$" <<<"${out}"
check "... not when one does" grep -q '^aw="ax"	matched 0	$' <<<"${out}"
check "... nor the other" grep -q '^aw="xb"	matched 0	$' <<<"${out}"
out=$(cohort subscribe --subscriber=carol \
  '{"p": [{"anything-but": {"cidr": "10.0.0.0/8"}}]}' 2>&1)
check "a pattern Cohort cannot express exits 2" test $? -eq 2
check "... naming the place" grep -q \
  '^cohort: pattern: at p\[0\].anything-but.cidr: anything-but' \
  <<<"${out}"
out=$(cohort subscribe --subscriber=carol --pattern=/nonexistent 2>&1)
check "an unreadable --pattern file exits 2" test $? -eq 2
check "... naming it" grep -q "cannot read /nonexistent" <<<"${out}"
rm -f "${rule}"

# "or": a filter with "or" and a pattern whose list has several kinds of
# entry are one subscription each, matched at most once per event.
out=$(cohort subscribe --subscriber=dave \
  'ork = 70 or (orp < 10 and ork = 71) or orp = 1' '{"orq": [19.99, "a"]}')
check "or subscribe: two ids" test "$(wc -l <<<"${out}")" -eq 2
check "... a pattern shown with its or" \
  grep -q '^[0-9]*	orq = 19.99 or orq = "a"$' <<<"${out}"
or_id=$(sed -n 1p <<<"${out}" | cut -f1)
orq_id=$(sed -n 2p <<<"${out}" | cut -f1)
out=$(cohort publish --ids 'ork=70 orp=1' 'ork=71 orp=5' 'ork=71 orp=50' \
  'orq="a"' 'orq=19.99' 'orq=20')
check "either alternative matches, once" \
  grep -q "^ork=70 orp=1	matched 1	${or_id}$" <<<"${out}"
check "... the other" grep -q "^ork=71 orp=5	matched 1	${or_id}$" <<<"${out}"
check "... neither" grep -q '^ork=71 orp=50	matched 0	$' <<<"${out}"
check "a pattern's string alternative" \
  grep -q "^orq=\"a\"	matched 1	${orq_id}$" <<<"${out}"
check "... its number" grep -q "^orq=19.99	matched 1	${orq_id}$" <<<"${out}"
check "... not another" grep -q '^orq=20	matched 0	$' <<<"${out}"
out=$(cohort subscribe --subscriber=dave '(ork = 1 or ork = 2' 2>&1)
check "an unclosed parenthesis exits 2" test $? -eq 2
check "... under it" grep -q '^cohort: column 1: unclosed "("' <<<"${out}"

out=$(cohort subscribe --subscriber=alice 'price is 5' 2>&1)
check "parse error exits 2" test $? -eq 2
check "parse error points at the token" grep -q "^ *\^\^$" <<<"${out}"
out=$(cohort publish 'price=1 price=2' 2>&1)
check "duplicate event attribute exits 2" test $? -eq 2
out=$(cohort frobnicate 2>&1)
check "unknown command exits 2" test $? -eq 2
out=$("${COHORT}" --server=127.0.0.1:1 --deadline_ms=500 stats 2>&1)
check "unreachable server exits 1" test $? -eq 1
check "... naming the target" grep -q "127.0.0.1:1" <<<"${out}"

finish_checks cohort_cli_test
