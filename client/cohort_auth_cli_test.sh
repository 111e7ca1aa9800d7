#!/usr/bin/env bash
# cohortd with --tls_cert/--tls_key/--auth_tokens and the cohort CLI with
# --tls_ca/--token_file (and COHORT_TOKEN) end to end: token-hash builds the
# token file, the owner's calls succeed, another subscriber's and a
# plaintext or tokenless client's are refused with the right status, bad
# security flags are usage errors, and no token or hash appears in cohortd's
# output.
set -uo pipefail
readonly COHORTD=$1
readonly COHORT=$2
readonly TLS="${TEST_SRCDIR}/${TEST_WORKSPACE}/service/api/testdata/tls"
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/testing/checks.sh"
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/testing/cohortd.sh"

dir=$(mktemp -d)
log="${dir}/cohortd.log"
trap 'kill -TERM ${pid:-0} 2>/dev/null; rm -rf "${dir}"' EXIT

# Tokens as an operator makes them; the files end in a newline, as echo
# leaves them.
readonly ALICE_TOKEN=alice-5b1e0c9d7a3f4e28
readonly FEED_TOKEN=feed-8c2d4f6a1b3e5d70
echo "${ALICE_TOKEN}" >"${dir}/alice.token"
echo "${FEED_TOKEN}" >"${dir}/feed.token"
{
  echo "# cohortd tokens (test)"
  "${COHORT}" token-hash --subscriber=alice --token_file="${dir}/alice.token"
  echo "${FEED_TOKEN}" | "${COHORT}" token-hash --publisher=feed
} >"${dir}/tokens"
check "token-hash prints the SHA-256 of the token" \
  test "$(printf %s "${ALICE_TOKEN}" | "${COHORT}" token-hash)" = \
  "$(printf %s "${ALICE_TOKEN}" | sha256sum | cut -d' ' -f1)"
check "token-hash writes the token file's lines" \
  grep -q "^publisher feed $(printf %s "${FEED_TOKEN}" | sha256sum | cut -d' ' -f1)$" "${dir}/tokens"

start_cohortd "${log}" "${COHORTD}" --listen=127.0.0.1:0 --partitions=2 \
  --tls_cert="${TLS}/server.pem" --tls_key="${TLS}/server.key" \
  --auth_tokens="${dir}/tokens" || exit 1
pid=${COHORTD_PID}
port=${COHORTD_PORT}
check "the startup line says TLS and auth are on" \
  grep -q "serving on port ${port} .*; TLS on, auth on (1 subscriber tokens, 1 publisher tokens))$" "${log}"
check "no plaintext warning on a loopback address" \
  bash -c "! grep -q warning '${log}'"

# 127.0.0.1, not localhost: resolving a name makes c-ares leak a few bytes,
# which fails the CLI under LeakSanitizer. --tls_server_name checks the name.
as_alice() {
  "${COHORT}" --server="127.0.0.1:${port}" --tls_ca="${TLS}/ca.pem" \
    --tls_server_name=localhost --token_file="${dir}/alice.token" "$@"
}

out=$(as_alice subscribe --subscriber=alice 'kind = 7' 2>&1)
check "alice subscribes as alice over TLS" test $? -eq 0
id=$(cut -f1 <<<"${out}")
out=$(as_alice subscribe --subscriber=bob 'kind = 7' 2>&1)
check "alice cannot subscribe as bob (exit 1)" test $? -eq 1
check "... PERMISSION_DENIED naming the field" \
  grep -q "PERMISSION_DENIED: subscriptions\[0\].subscriber" <<<"${out}"
out=$(as_alice publish 'kind=7' 2>&1)
check "alice's token cannot publish when there are publisher tokens" \
  grep -q "PERMISSION_DENIED: the token is subscriber \"alice\"'s" <<<"${out}"
out=$(COHORT_TOKEN=${FEED_TOKEN} "${COHORT}" --server="127.0.0.1:${port}" \
  --tls_ca="${TLS}/ca.pem" publish 'kind=7' 2>&1)
check "the publisher's token (COHORT_TOKEN) publishes and matches" \
  grep -q "matched 1$" <<<"${out}"
out=$("${COHORT}" --server="127.0.0.1:${port}" --tls_ca="${TLS}/ca.pem" \
  unsubscribe "${id}" 2>&1)
check "no token: UNAUTHENTICATED" grep -q "^cohort: UNAUTHENTICATED: no token" <<<"${out}"
out=$("${COHORT}" --server="127.0.0.1:${port}" --deadline_ms=3000 \
  --token_file="${dir}/alice.token" stats 2>&1)
check "a plaintext client is refused (exit 1)" test $? -eq 1
check "... UNAVAILABLE" grep -q "UNAVAILABLE" <<<"${out}"
out=$("${COHORT}" --server="127.0.0.1:${port}" --tls_ca="${TLS}/ca.pem" stats)
check "stats needs no token" grep -q "1 subscriptions, 1 events published" <<<"${out}"
out=$(as_alice unsubscribe "${id}")
check "alice unsubscribes her subscription" grep -q "unsubscribed 1" <<<"${out}"

out=$(as_alice --tls_cert="${TLS}/client.pem" stats 2>&1)
check "--tls_cert without --tls_key is a usage error (exit 2)" test $? -eq 2
out=$("${COHORT}" --token_file="${dir}/missing" stats 2>&1)
check "an unreadable --token_file is a usage error (exit 2)" test $? -eq 2
check "... naming the flag and file" grep -q -- "--token_file: cannot read ${dir}/missing" <<<"${out}"

kill -TERM "${pid}"
wait "${pid}"
check "cohortd exits 0" test $? -eq 0
for secret in "${ALICE_TOKEN}" "${FEED_TOKEN}" \
  "$(printf %s "${ALICE_TOKEN}" | sha256sum | cut -c1-16)" \
  "$(printf %s "${FEED_TOKEN}" | sha256sum | cut -c1-16)"; do
  check "cohortd's output never shows a token or hash (${secret:0:4}...)" \
    bash -c "! grep -qF -- '${secret}' '${log}'"
done

out=$("${COHORTD}" --tls_cert="${TLS}/server.pem" 2>&1)
check "cohortd --tls_cert without --tls_key exits 2" test $? -eq 2
check "... naming the flags" grep -q -- "--tls_cert needs --tls_key" <<<"${out}"
out=$("${COHORTD}" --listen=127.0.0.1:0 --auth_tokens="${dir}/missing" 2>&1)
check "cohortd with an unreadable --auth_tokens exits 1" test $? -eq 1
check "... naming the flag and file" grep -q -- "--auth_tokens: cannot read ${dir}/missing" <<<"${out}"
start_cohortd "${log}" "${COHORTD}" --listen=0.0.0.0:0 --partitions=1 || exit 1
pid=${COHORTD_PID}
check "plaintext on a non-loopback address prints one warning" \
  test "$(grep -c "^cohortd: warning: --listen=0.0.0.0:0 is not a loopback address and TLS is off" "${log}")" -eq 1
check "... and the startup line says TLS and auth are off" grep -q "; TLS off, auth off)$" "${log}"
stop_cohortd "${pid}"

finish_checks cohort_auth_cli_test
