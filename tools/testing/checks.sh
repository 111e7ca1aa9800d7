# Assertions for the shell tests (sourced, not run): each check prints
# "ok: ..." or "FAILED: ..." and counts failures; finish_checks prints the
# count and returns non-zero if any check failed.
#
#   source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/testing/checks.sh"
#   check "server prints its port" grep -q "serving on port" "${log}"
#   finish_checks my_test

check_failures=0

# check DESCRIPTION COMMAND...: runs COMMAND; a non-zero exit is a failure.
check() {
  local description=$1
  shift
  if "$@"; then
    echo "ok: ${description}"
  else
    echo "FAILED: ${description}"
    check_failures=$((check_failures + 1))
  fi
}

# finish_checks NAME: the summary line; the status says whether all passed.
finish_checks() {
  echo "$1: ${check_failures} failed"
  ((check_failures == 0))
}
