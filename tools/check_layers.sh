#!/usr/bin/env bash
# Checks that every Bazel dependency points down the layers of
# docs/DESIGN.md section 10, transitively (Bazel visibility already refuses
# a direct upward dependency; this also catches one through a middle
# package, and says which path it takes):
#
#   bench/         benchmarks, experiments          (the top)
#   e2e/           end-to-end tests: cohortd driven by the cohort CLI
#   client/        C++ client, CLI, load driver
#   service/       cohortd; api/ above stages/ and storage/, above
#                  observability/ and model/
#   workload/      workload generators and file formats
#   filter/        the filter grammar
#   matcher/       the index
#   proto/         the API
#
# Prints one line per rule and ends with "layers: N passed, M failed";
# exits 1 if any rule is broken. Run from anywhere in the repository:
#   tools/check_layers.sh
set -uo pipefail
cd "$(dirname "$0")/.."

passed=0
failed=0

# rule NAME FROM FORBIDDEN: no target under FROM depends, directly or not,
# on a target under FORBIDDEN (bazel query expressions).
rule() {
  local name=$1 from=$2 forbidden=$3
  local found
  if ! found=$(bazel query --keep_going --noshow_progress \
      "kind(rule, deps(${from}) intersect (${forbidden}))" 2>/dev/null); then
    if [[ -z "${found}" ]]; then
      echo "FAILED ${name}: bazel query failed"
      failed=$((failed + 1))
      return
    fi
  fi
  if [[ -z "${found}" ]]; then
    echo "ok     ${name}"
    passed=$((passed + 1))
    return
  fi
  echo "FAILED ${name}:"
  local target
  for target in ${found}; do
    echo "  path: $(bazel query --noshow_progress \
      "somepath(${from}, ${target})" 2>/dev/null | tr '\n' ' ')"
  done
  failed=$((failed + 1))
}

readonly ABOVE_CLIENT='//client/... + //bench/... + //e2e/...'
readonly BELOW_CLIENT='//proto/... + //matcher/... + //filter/... + //workload/... + //service/...'

rule "proto/ sees nothing of ours" \
  '//proto/...' \
  '//matcher/... + //filter/... + //workload/... + //service/... + //client/... + //bench/... + //e2e/...'
rule "matcher/ sees nothing of service/, filter/ or above" \
  '//matcher/...' \
  "//service/... + //filter/... + ${ABOVE_CLIENT}"
rule "filter/ sees proto/ only" \
  '//filter/...' \
  "//matcher/... + //workload/... + //service/... + ${ABOVE_CLIENT}"
rule "service/model sees nothing else of service/" \
  '//service/model/...' \
  "(//service/... - //service/model/...) + //workload/... + ${ABOVE_CLIENT}"
rule "workload/ sees nothing of service/ but service/model" \
  '//workload/...' \
  "(//service/... - //service/model/...) + ${ABOVE_CLIENT}"
rule "service/observability sees nothing of api/, stages/, storage/, cluster/" \
  '//service/observability/...' \
  "//service/api/... + //service/stages/... + //service/storage/... + //service/cluster/... + ${ABOVE_CLIENT}"
rule "service/storage and service/stages see nothing of api/ or cluster/" \
  '//service/storage/... + //service/stages/...' \
  '//service/api/... + //service/cluster/...'
rule "service/cluster sees nothing of api/, nor of storage/ but its integer encoding" \
  '//service/cluster/...' \
  "//service/api/... + (//service/storage/... - //service/storage:journal_frame) + ${ABOVE_CLIENT}"
rule "nothing below client/ sees client/, bench/ or e2e/" \
  "${BELOW_CLIENT}" \
  "${ABOVE_CLIENT}"
rule "client/ sees nothing of bench/ or e2e/" \
  '//client/...' \
  '//bench/... + //e2e/...'

echo "layers: ${passed} passed, ${failed} failed"
((failed == 0))
