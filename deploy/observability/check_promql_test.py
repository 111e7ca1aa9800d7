#!/usr/bin/env python3
"""Tests of check_promql.py: each mistake it exists to catch is caught, and
the correct forms of the same expressions pass. Run by deploy/check.sh:

    python3 deploy/observability/check_promql_test.py
"""

import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_promql  # noqa: E402  (after the path is set)

EXPOSITION = """\
# HELP cohort_events_published_total Events.
# TYPE cohort_events_published_total counter
cohort_events_published_total 10
# HELP cohort_events_in_flight In flight.
# TYPE cohort_events_in_flight gauge
cohort_events_in_flight 3
# HELP cohort_subscriptions Subscriptions.
# TYPE cohort_subscriptions gauge
cohort_subscriptions 5
# HELP cohort_stage_queue_limit Limit.
# TYPE cohort_stage_queue_limit gauge
cohort_stage_queue_limit{stage="reply",name="reply"} 4096
cohort_stage_queue_limit{stage="partition",name="partition/0",partition="0"} 4096
# HELP cohort_stage_matches_total Matches.
# TYPE cohort_stage_matches_total counter
cohort_stage_matches_total{stage="reply",name="reply"} 7
cohort_stage_matches_total{stage="partition",name="partition/0",partition="0"} 7
# HELP cohort_stage_wait_seconds Wait.
# TYPE cohort_stage_wait_seconds histogram
cohort_stage_wait_seconds_bucket{stage="reply",name="reply",le="0.001"} 1
cohort_stage_wait_seconds_bucket{stage="reply",name="reply",le="+Inf"} 2
cohort_stage_wait_seconds_sum{stage="reply",name="reply"} 0.5
cohort_stage_wait_seconds_count{stage="reply",name="reply"} 2
"""


def problems_of(expression, grafana=None, recorded=None):
    expo, parse_problems = check_promql.parse_exposition(EXPOSITION)
    assert not parse_problems, parse_problems
    expr = check_promql.Expression("test", expression, grafana)
    check_promql.grafana_function(expr) if grafana is not None else None
    problems, _ = check_promql.check_expression(expr, expo, recorded or {})
    return problems


class ExpressionTest(unittest.TestCase):
    def assertCaught(self, expression, fragment, **kwargs):
        problems = problems_of(expression, **kwargs)
        self.assertTrue(any(fragment in p for p in problems),
                        f"{expression!r}: want a problem with {fragment!r}, got {problems}")

    def assertPasses(self, expression, **kwargs):
        self.assertEqual(problems_of(expression, **kwargs), [], expression)

    def test_correct_expressions_pass(self):
        for expression in (
                "sum(rate(cohort_events_published_total[5m]))",
                'sum by (name) (rate(cohort_stage_matches_total{stage=~"reply|worker"}[1m]))',
                "histogram_quantile(0.99,"
                " sum by (name, le) (rate(cohort_stage_wait_seconds_bucket[5m])))",
                "sum without (le) (rate(cohort_stage_wait_seconds_bucket[5m])) offset 1h",
                "max by (instance)"
                " (sum by (instance, name) (rate(cohort_stage_matches_total[5m])))",
                "cohort_events_in_flight / on (instance) group_left ()"
                " cohort_subscriptions > bool 0",
                "cohort_events_in_flight"
                " > 0.9 * avg_over_time(cohort_events_in_flight[5m:1m]) @ end()",
                'label_replace(cohort_stage_queue_limit, "stage_name", "$1", "name", "(.*)")',
                'sum by (stage_name) (label_replace(cohort_stage_queue_limit, "stage_name",'
                ' "$1", "name", "(.*)"))',
                "up == 0 or absent(up)",
                "-cohort_subscriptions ^ 2 % 3",
                "vector(1) and on () cohort_subscriptions > 5",
                "topk(3, rate(cohort_stage_matches_total[5m]))"):
            self.assertPasses(expression)

    def test_unknown_metric(self):
        self.assertCaught("rate(cohort_events_total[5m])", "unknown metric cohort_events_total")

    def test_histogram_needs_a_sample_name(self):
        self.assertCaught("cohort_stage_wait_seconds", "select cohort_stage_wait_seconds_bucket")

    def test_selector_label_that_the_metric_lacks(self):
        self.assertCaught('cohort_events_published_total{stage="reply"}', "has no label stage")

    def test_matcher_value_that_selects_nothing(self):
        self.assertCaught('cohort_stage_matches_total{stage="replay"}', "selects no series")
        self.assertCaught('cohort_stage_matches_total{stage=~"rep"}', "selects no series")

    def test_by_label_that_the_input_lacks(self):
        self.assertCaught("sum by (partition_id) (cohort_stage_queue_limit)", "not a label")

    def test_by_label_dropped_by_an_inner_aggregation(self):
        self.assertCaught("max by (instance) (sum by (name) (cohort_stage_queue_limit))",
                          "max by (instance)")

    def test_histogram_quantile_without_le(self):
        self.assertCaught(
            "histogram_quantile(0.9, sum by (name) (rate(cohort_stage_wait_seconds_bucket[5m])))",
            "without an le label")

    def test_rate_of_a_gauge(self):
        self.assertCaught("rate(cohort_events_in_flight[5m])", "want a counter")

    def test_range_vector_where_an_instant_vector_is_needed(self):
        self.assertCaught("sum(cohort_events_published_total[5m])", "instant vector")
        self.assertCaught("rate(cohort_events_published_total)", "want a range vector")

    def test_one_to_one_match_between_different_label_sets(self):
        self.assertCaught("cohort_stage_queue_limit / cohort_subscriptions", "no series match")
        self.assertPasses(
            "cohort_stage_queue_limit / on (instance, job) group_left cohort_subscriptions")

    def test_operand_kinds(self):
        self.assertCaught("cohort_subscriptions[5m] * 2", "not a matrix")
        self.assertCaught("1 > 2", "needs bool")
        self.assertCaught("cohort_subscriptions and 1", "needs vectors")

    def test_on_label_missing_on_one_side(self):
        self.assertCaught("cohort_stage_queue_limit / on (name) cohort_subscriptions",
                          "not a label of the right side")

    def test_unknown_function_and_syntax_errors(self):
        self.assertCaught("rates(cohort_events_published_total[5m])", "unknown function rates()")
        self.assertCaught("sum(rate(cohort_events_published_total[5m])", "parse error")
        self.assertCaught("(cohort_subscriptions + 1)[5m]", "parse error")
        self.assertCaught("sum by (name) (cohort_stage_queue_limit) by (stage)", "parse error")

    def test_grafana_variables(self):
        variables = {"instance": check_promql.PLACEHOLDER + "instance", "quantile": "0.99"}
        self.assertPasses(
            'histogram_quantile($quantile, sum by (le) (rate(cohort_stage_wait_seconds_bucket'
            '{instance=~"$instance"}[$__rate_interval])))', grafana=variables)
        self.assertCaught("rate(cohort_events_published_total[$window])",
                          "unknown Grafana variable", grafana=variables)
        self.assertCaught("topk($instance, cohort_subscriptions)", "outside a quoted string",
                          grafana=variables)

    def test_label_values_variable(self):
        self.assertPasses("label_values(cohort_stage_queue_limit, name)", grafana={})
        self.assertPasses("label_values(cohort_subscriptions, instance)", grafana={})
        self.assertCaught("label_values(cohort_subscriptions, name)", "not a label", grafana={})

    def test_recorded_metrics_carry_their_labels(self):
        recorded = {"name:queue:mean5m": frozenset({"instance", "job", "name"})}
        self.assertPasses('name:queue:mean5m > 3', recorded=recorded)
        self.assertCaught('sum by (stage) (name:queue:mean5m)', "not a label", recorded=recorded)


class ExpositionTest(unittest.TestCase):
    def problems(self, text):
        expo, problems = check_promql.parse_exposition(text)
        return problems + [p for _, p in check_promql.convention_problems(expo)]

    def test_clean_exposition(self):
        self.assertEqual(self.problems(EXPOSITION), [])

    def test_conventions(self):
        cases = {
            "# HELP a_events x\n# TYPE a_events counter\na_events 1\n": "does not end in _total",
            "# HELP a_total x\n# TYPE a_total gauge\na_total 1\n": "counters only",
            "# HELP a_wait_us x\n# TYPE a_wait_us gauge\na_wait_us 1\n": "non-base unit us",
            "# HELP a_microseconds x\n# TYPE a_microseconds summary\na_microseconds_sum 1\n"
            "a_microseconds_count 1\n": "non-base unit microseconds",
            "# HELP a_latency x\n# TYPE a_latency gauge\na_latency 1\n":
                "without the _seconds unit",
            "# HELP a_memory x\n# TYPE a_memory gauge\na_memory 1\n": "without the _bytes unit",
            "# TYPE a gauge\na 1\n": "no # HELP",
            "# HELP a x\n# TYPE a gauge\nb 1\n": "no # TYPE family",
            "# HELP a x\n# TYPE a gauge\na 1\na 2\n": "duplicate series",
            "# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n": "+Inf",
            "# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\n"
            "h_sum 1\nh_count 1\n": "not cumulative",
            "# HELP h x\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_count 2\nh_sum 1\n":
                "!= +Inf",
            "# HELP h x\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n": "no _sum",
            "# HELP a x\n# TYPE a gauge\na{instance=\"x\"} 1\n": "clashes",
            "# HELP a x\n# TYPE a gauge\na{b=\"x} 1\n": "bad labels",
        }
        for text, fragment in cases.items():
            problems = self.problems(text)
            self.assertTrue(any(fragment in p for p in problems),
                            f"{text!r}: want {fragment!r}, got {problems}")


CLUSTER_FAMILIES = """\
# HELP cohort_cluster_info Info.
# TYPE cohort_cluster_info gauge
cohort_cluster_info{node="n1",stream="COHORT_LOG"} 1
# HELP cohort_cluster_log_lag Lag.
# TYPE cohort_cluster_log_lag gauge
cohort_cluster_log_lag 0
# HELP cohort_cluster_log_applied_total Applied.
# TYPE cohort_cluster_log_applied_total counter
cohort_cluster_log_applied_total 4
"""


class ModeFamiliesTest(unittest.TestCase):
    """A single-node scrape against an expected exposition with the cluster
    mode's families (check_promql.MODE_FAMILIES)."""

    def run_main(self, exposition, expected, expressions, extra=()):
        with tempfile.TemporaryDirectory() as tmp:
            paths = {}
            for name, text in (("scrape.prom", exposition), ("expected.prom", expected or "")):
                paths[name] = os.path.join(tmp, name)
                with open(paths[name], "w") as f:
                    f.write(text)
            dashboard = os.path.join(tmp, "dashboard.json")
            with open(dashboard, "w") as f:
                json.dump({"panels": [{"id": i, "targets": [{"refId": "A", "expr": e}]}
                                      for i, e in enumerate(expressions)]}, f)
            args = ["--exposition", paths["scrape.prom"], "--dashboard", dashboard]
            if expected is not None:
                args += ["--expect-families", paths["expected.prom"]]
            args += list(extra)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                status = check_promql.main(args)
            return status, out.getvalue()

    def test_absent_mode_is_not_missing_and_its_expressions_are_checked(self):
        status, out = self.run_main(EXPOSITION, EXPOSITION + CLUSTER_FAMILIES, [
            "max by (instance) (cohort_cluster_log_lag)",
            "sum by (instance) (rate(cohort_cluster_log_applied_total[1m]))",
            "cohort_cluster_info"])
        self.assertEqual(status, 0, out)
        self.assertIn("same sample and label names but for the cluster mode", out)
        self.assertIn("this scrape has none of the cluster mode (--cluster_nats) families", out)

    def test_mistakes_in_mode_expressions_are_caught(self):
        for expression, fragment in (
                ("cohort_cluster_log_lagg", "unknown metric cohort_cluster_log_lagg"),
                ("sum by (node) (cohort_cluster_log_lag)", "not a label"),
                ("rate(cohort_cluster_log_lag[1m])", "want a counter"),
                ('cohort_cluster_info{stream="LOG"}', "selects no series")):
            status, out = self.run_main(EXPOSITION, EXPOSITION + CLUSTER_FAMILIES, [expression])
            self.assertEqual(status, 1, out)
            self.assertIn(fragment, out)

    def test_a_partial_mode_is_missing_families(self):
        partial = EXPOSITION + CLUSTER_FAMILIES.split("# HELP cohort_cluster_log_applied")[0]
        status, out = self.run_main(partial, EXPOSITION + CLUSTER_FAMILIES, [
            "cohort_subscriptions"])
        self.assertEqual(status, 1, out)
        self.assertIn("cohort_cluster_log_applied_total is missing", out)

    def test_mode_families_default_to_the_example_scrape(self):
        status, out = self.run_main(EXPOSITION, None, ["cohort_cluster_log_lag"])
        self.assertEqual(status, 0, out)
        self.assertIn("cohortd-metrics.prom", out)
        status, out = self.run_main(EXPOSITION, None, ["cohort_cluster_log_lagg"])
        self.assertEqual(status, 1, out)

    def test_without_mode_families_mode_metrics_are_unknown(self):
        status, out = self.run_main(EXPOSITION, None, ["cohort_cluster_log_lag"],
                                    extra=["--mode-families", ""])
        self.assertEqual(status, 1, out)
        self.assertIn("a cluster mode (--cluster_nats) metric", out)

    def test_a_scrape_with_the_mode_borrows_nothing(self):
        status, out = self.run_main(EXPOSITION + CLUSTER_FAMILIES, EXPOSITION, [
            "cohort_cluster_log_lag", "cohort_cluster_log_applied_positionn"])
        self.assertEqual(status, 1, out)
        self.assertIn("cohort_cluster_info is new", out)
        self.assertNotIn("modes vs", out)
        self.assertIn("unknown metric cohort_cluster_log_applied_positionn", out)


if __name__ == "__main__":
    unittest.main(verbosity=1)
