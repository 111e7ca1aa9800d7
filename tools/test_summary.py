#!/usr/bin/env python3
"""Summarises one `bazel test` run for ./test.sh.

Reads the run's build event file (--build_event_json_file), copies each test's
test.xml into OUT_DIR (the bazel testlogs link moves with the next config, and
files there are overwritten), prints one line per test target, and writes
"PASSED FAILED" test-case counts to OUT_DIR/counts.

Counting rules, per test target:
  * Each <testcase> in its test.xml counts once: failed if it holds <failure>
    or <error>, skipped (not counted) if gtest did not run it, else passed.
  * A target whose test action failed but whose XML shows no failure (a
    sanitizer report at exit, a crash after the XML was written) adds one
    failed case; so does a test that produced no XML at all.
  * A test target that did not build or run (no test result), or any other
    target that failed to build, counts as one failed case.
  * If bazel failed (exit code other than 0, 3 = tests failed, 4 = no tests)
    and no target above accounts for it, one failed case is added for the run.
Only the last attempt of each run/shard counts (--flaky_test_attempts).

Usage: test_summary.py RUN_NAME BEP_JSON BAZEL_EXIT_CODE OUT_DIR
"""

import json
import os
import shutil
import sys
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ElementTree

# Bazel exit codes that mean "the build worked": success, some tests failed,
# and no test targets found (e.g. a package without tests).
BUILD_OK_EXIT_CODES = (0, 3, 4)
TEST_PASSED_STATUSES = ("PASSED", "FLAKY")


def read_events(path):
    """Returns the build events in the file, or [] if it does not exist."""
    if not os.path.exists(path):
        return []
    events = []
    with open(path, encoding="utf-8") as stream:
        for line in stream:
            line = line.strip()
            if line:
                events.append(json.loads(line))
    return events


def count_cases(xml_path):
    """Returns (passed, failed) test cases in a JUnit XML file, or None."""
    try:
        root = ElementTree.parse(xml_path).getroot()
    except (OSError, ElementTree.ParseError):
        return None
    passed = failed = 0
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif (case.get("status") == "notrun" or case.get("result") == "skipped"
              or case.find("skipped") is not None):
            continue
        else:
            passed += 1
    return passed, failed


def file_path(uri):
    return urllib.request.url2pathname(urllib.parse.urlparse(uri).path)


def collect(events):
    """Returns (test labels, labels that failed to build, test results).

    Test results map label -> {(run, shard): (attempt, testResult payload)}.
    """
    test_targets = set()
    broken = set()
    results = {}
    for event in events:
        event_id = event.get("id", {})
        if "targetConfigured" in event_id:
            label = event_id["targetConfigured"]["label"]
            configured = event.get("configured", {})
            if "testSize" in configured or configured.get(
                    "targetKind", "").endswith("_test rule"):
                test_targets.add(label)
            if "aborted" in event:
                broken.add(label)  # E.g. an analysis error.
        elif "targetCompleted" in event_id:
            if not event.get("completed", {}).get("success", False):
                broken.add(event_id["targetCompleted"]["label"])
        elif "testResult" in event_id:
            key = event_id["testResult"]
            label = key["label"]
            test_targets.add(label)
            slot = (key.get("run", 1), key.get("shard", 1))
            attempt = key.get("attempt", 1)
            previous = results.setdefault(label, {}).get(slot)
            if previous is None or previous[0] < attempt:
                results[label][slot] = (attempt, event.get("testResult", {}))
    return test_targets, broken, results


def summarise_target(label, slots, out_dir):
    """Returns (passed, failed, note) for one test target's results."""
    passed = failed = 0
    notes = []
    for (run, shard), (_, result) in sorted(slots.items()):
        status = result.get("status", "NO_STATUS")
        xml_uri = next((output["uri"] for output in
                        result.get("testActionOutput", [])
                        if output.get("name") == "test.xml"), None)
        counts = None
        if xml_uri:
            source = file_path(xml_uri)
            suffix = "" if (run, shard) == (1, 1) else f".run{run}.shard{shard}"
            target_dir = os.path.join(out_dir, label.lstrip("/").replace(":", "/"))
            os.makedirs(target_dir, exist_ok=True)
            destination = os.path.join(target_dir, f"test{suffix}.xml")
            try:
                shutil.copyfile(source, destination)
                counts = count_cases(destination)
            except OSError:
                counts = None
        slot_passed, slot_failed = counts or (0, 0)
        if status not in TEST_PASSED_STATUSES:
            if status != "FAILED":
                notes.append(status)  # TIMEOUT, INCOMPLETE, ...
            if slot_failed == 0:
                # The test failed after writing an all-passing XML (e.g. a
                # LeakSanitizer report at exit), or wrote none.
                slot_failed = 1
                notes.append("failed exit status")
        elif counts is None or slot_passed + slot_failed == 0:
            slot_passed = max(slot_passed, 1)  # Passed; no test cases listed.
        passed += slot_passed
        failed += slot_failed
    return passed, failed, ", ".join(sorted(set(notes)))


def main(argv):
    if len(argv) != 5:
        sys.stderr.write(__doc__)
        return 2
    run_name, bep_path, exit_code, out_dir = argv[1], argv[2], int(argv[3]), argv[4]
    os.makedirs(out_dir, exist_ok=True)
    test_targets, broken, results = collect(read_events(bep_path))

    total_passed = total_failed = 0
    for label in sorted(test_targets | broken):
        if label in results:
            passed, failed, note = summarise_target(label, results[label], out_dir)
        elif label in broken:
            passed, failed, note = 0, 1, "did not build"
        else:
            passed, failed, note = 0, 1, "did not run"
        verdict = "FAILED" if failed else "PASSED"
        detail = f"{passed} passed, {failed} failed"
        if note:
            detail += f" ({note})"
        print(f"  [{run_name}] {verdict} {label}: {detail}")
        total_passed += passed
        total_failed += failed

    if exit_code not in BUILD_OK_EXIT_CODES and total_failed == 0:
        print(f"  [{run_name}] FAILED bazel exited with code {exit_code}")
        total_failed += 1
    if not test_targets and exit_code == 4:
        print(f"  [{run_name}] no test targets")

    with open(os.path.join(out_dir, "counts"), "w", encoding="utf-8") as stream:
        stream.write(f"{total_passed} {total_failed}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
