#!/usr/bin/env bash
# TEST ONLY: writes the TLS files the tests use (server_tls_test,
# client/cohort_auth_cli_test.sh). The private keys are committed on purpose
# and are public: never use these files outside tests.
#
#   service/api/testdata/tls/make_certs.sh     (rewrites every file here)
#
#   ca.pem, ca.key                 "Cohort TEST CA", signs the two below
#   server.pem, server.key         CN localhost; SAN DNS:localhost,
#                                  IP:127.0.0.1, IP:::1; serverAuth
#   client.pem, client.key         CN cohort-test-client; clientAuth
#   other_ca.pem, other_ca.key     "Cohort TEST other CA", trusted by nobody
#   other_client.pem, other_client.key
#                                  a client certificate signed by other_ca
#
# ECDSA P-256 keys, valid for 100 years from the day they were made, so the
# tests never fail because a certificate expired. Needs the openssl CLI.
set -euo pipefail
cd "$(dirname "$0")"

readonly DAYS=36500

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

# ca NAME "CN"
ca() {
  key "$1.key"
  openssl req -x509 -new -key "$1.key" -sha256 -days "${DAYS}" \
    -subj "/O=Cohort tests (TEST ONLY)/CN=$2" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out "$1.pem"
}

# leaf NAME CA "CN" EXTENSIONS
leaf() {
  key "$1.key"
  openssl req -new -key "$1.key" -subj "/O=Cohort tests (TEST ONLY)/CN=$3" \
    -out "$1.csr"
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" \
    -CAcreateserial -sha256 -days "${DAYS}" -extfile <(printf '%s\n' "$4") \
    -out "$1.pem" 2>/dev/null
  rm -f "$1.csr" "$2.srl"
}

ca ca "Cohort TEST CA"
leaf server ca localhost "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1"
leaf client ca cohort-test-client "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth"
ca other_ca "Cohort TEST other CA"
leaf other_client other_ca cohort-test-other-client "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth"

for cert in server client; do openssl verify -CAfile ca.pem "${cert}.pem" >/dev/null; done
openssl verify -CAfile other_ca.pem other_client.pem >/dev/null
echo "make_certs.sh: wrote $(ls ./*.pem ./*.key | wc -l) files in $(pwd)"
