#!/usr/bin/env python3
"""Checks the PromQL in the dashboard and the alert rules against /metrics.

    check_promql.py --exposition FILE|URL [--dashboard cohort.json]...
                    [--rules alerts.yml]... [--expect-families FILE]
                    [--mode-families FILE] [--emit-rules OUT.yml]
                    [--variable NAME=VALUE]... [--prometheus http://HOST:PORT]

Reads a Prometheus text exposition (a file, `-` for stdin, or an http://
URL), checks that it follows the naming conventions, then takes every PromQL
expression out of the dashboards (panel targets, template variable queries,
annotations) and the rule files (alert and recording rules), and checks each
against the exposition:

  - every metric name is a sample name that the exposition has (for a
    histogram: NAME_bucket, NAME_sum, NAME_count), a recording rule's name,
    or a series Prometheus makes itself (up, scrape_*);
  - every label in a selector's matchers, a by()/without() clause, on()/
    ignoring()/group_left()/group_right(), label_replace's source and
    histogram_quantile's le exists on what it applies to: the metric's labels
    in the exposition plus the target labels Prometheus adds (instance, job),
    or the labels the inner expression leaves (a `sum by (name)` keeps only
    name);
  - an = or =~ matcher on a label of the exposition selects at least one of
    the values the exposition has (a typo such as stage="replay" selects
    nothing);
  - rate(), irate(), increase() and resets() are applied to counters;
  - a one-to-one binary operation between vectors whose label sets differ
    has on() or ignoring() (otherwise no series ever match).

Grafana variables are replaced before parsing: $__rate_interval and the
other built-ins by a duration, custom/constant/interval variables by their
current value, query variables by a placeholder that may only appear inside
a quoted string (label values). Expressions are parsed by the small PromQL
parser below (the grammar of Prometheus 2.x, without native histograms).
--emit-rules writes the substituted dashboard expressions as a rule file, so
that `promtool check rules` parses them with Prometheus' own parser too.
--variable sets a Grafana variable's value (instance=host:9464,
__rate_interval=5s). --prometheus also evaluates every expression that
passed on that Prometheus server (instant queries at the current time): a
rule's must evaluate without error, a dashboard's must return series too.

Some families exist only in one mode of cohortd (MODE_FAMILIES: the
cohort_cluster_* families, in cluster mode). A scrape that has none of a
mode's families is of a server in another mode: --expect-families does not
count them as missing, the expressions over them are checked against the
samples of those families in --mode-families (default: the
--expect-families file, else testdata/cohortd-metrics.prom beside this
script; '' for none), and on --prometheus a dashboard expression over them
may return no series.

Prints one line per expression and per exposition check,

    ok   <where>: <expression>
    FAIL <where>: <problem>; <problem> | <expression>

and exits 1 if any failed, 2 on a usage error. Needs PyYAML for rule files.
"""

import argparse
import json
import math
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request

# Labels Prometheus attaches to every scraped series (prometheus.yml has no
# relabelling that adds others).
TARGET_LABELS = frozenset({"instance", "job"})
# Series Prometheus writes itself for each target.
SYNTHETIC_METRICS = {
    name: TARGET_LABELS
    for name in ("up", "scrape_duration_seconds", "scrape_samples_scraped",
                 "scrape_samples_post_metric_relabeling", "scrape_series_added")
}
# Families cohortd exports only in one mode, by name prefix, and the mode.
MODE_FAMILIES = {"cohort_cluster_": "cluster mode (--cluster_nats)"}
# Where they come from for a scrape of a server in another mode, by default:
# the example scrape, which has every mode's families.
DEFAULT_MODE_FAMILIES = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                     "testdata", "cohortd-metrics.prom")
# Values used for Grafana's built-in variables; any valid value would do.
GRAFANA_BUILTINS = {
    "__rate_interval": "1m", "__interval": "15s", "__range": "1h",
    "__interval_ms": "15000", "__range_s": "3600", "__range_ms": "3600000",
    "__auto": "15s",
}
# A query variable's value stands for a list of label values: only valid
# inside a string, and never checked against the exposition's values.
PLACEHOLDER = "__grafana_variable__"
# Unit words that are not base units (Prometheus naming conventions).
NON_BASE_UNITS = {"microseconds", "milliseconds", "nanoseconds", "us", "ms", "ns",
                  "minutes", "hours", "days", "kilobytes", "megabytes",
                  "gigabytes", "kb", "mb", "gb", "kib", "mib", "gib", "percent"}
# Words that say a quantity is a time (must end in _seconds) or memory
# (must end in _bytes).
TIME_WORDS = {"duration", "latency", "wait", "uptime", "time", "delay", "age"}
MEMORY_WORDS = {"memory"}

AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
                "count_values", "bottomk", "topk", "quantile", "limitk",
                "limit_ratio"}
# Functions: argument kinds ('v' instant vector, 'm' range vector, 's' scalar,
# 'str' string; a trailing '*' repeats) and what the result's labels are.
KEEP, EMPTY, SCALAR = "keep", "empty", "scalar"
FUNCTIONS = {}
for _name in ("abs", "ceil", "floor", "exp", "ln", "log2", "log10", "sqrt", "sgn",
              "sort", "sort_desc", "timestamp", "acos", "acosh", "asin", "asinh",
              "atan", "atanh", "cos", "cosh", "sin", "sinh", "tan", "tanh", "deg",
              "rad"):
    FUNCTIONS[_name] = (["v"], KEEP)
for _name in ("rate", "irate", "increase", "delta", "idelta", "deriv", "changes",
              "resets", "avg_over_time", "min_over_time", "max_over_time",
              "sum_over_time", "count_over_time", "stddev_over_time",
              "stdvar_over_time", "last_over_time", "present_over_time",
              "mad_over_time"):
    FUNCTIONS[_name] = (["m"], KEEP)
for _name in ("day_of_month", "day_of_week", "day_of_year", "days_in_month",
              "hour", "minute", "month", "year"):
    FUNCTIONS[_name] = (["v?"], KEEP)
FUNCTIONS.update({
    "round": (["v", "s?"], KEEP), "clamp": (["v", "s", "s"], KEEP),
    "clamp_min": (["v", "s"], KEEP), "clamp_max": (["v", "s"], KEEP),
    "quantile_over_time": (["s", "m"], KEEP),
    "predict_linear": (["m", "s"], KEEP), "holt_winters": (["m", "s", "s"], KEEP),
    "absent": (["v"], EMPTY), "absent_over_time": (["m"], EMPTY),
    "vector": (["s"], EMPTY), "scalar": (["v"], SCALAR), "time": ([], SCALAR),
    "pi": ([], SCALAR), "histogram_quantile": (["s", "v"], "quantile"),
    "label_replace": (["v", "str", "str", "str", "str"], "replace"),
    "label_join": (["v", "str", "str", "str*"], "join"),
})
COUNTER_FUNCTIONS = {"rate", "irate", "increase", "resets"}
# Binary operators by precedence, lowest first; ^ is right-associative.
PRECEDENCE = {"or": 1, "and": 2, "unless": 2, "==": 3, "!=": 3, "<=": 3, "<": 3,
              ">=": 3, ">": 3, "+": 4, "-": 4, "*": 5, "/": 5, "%": 5,
              "atan2": 5, "^": 6}
COMPARISONS = {"==", "!=", "<=", "<", ">=", ">"}
SET_OPERATORS = {"and", "or", "unless"}


# The exposition's checks, in the order printed, and what each one says when
# it passes.
EXPOSITION_CHECKS = (
    ("format", "{samples} samples in {families} families parse"),
    ("types", "every sample belongs to a # TYPE family of a known type"),
    ("help", "every family has # HELP"),
    ("names", "no reserved label names or suffixes, no colons"),
    ("series", "no series twice"),
    ("counters", "counters, and only counters, end in _total"),
    ("units", "base units only (_seconds, _bytes; no _microseconds, _us, ...)"),
    ("histograms", "buckets with le, cumulative, a +Inf bucket equal to _count, and _sum"),
    ("summaries", "summaries have _sum and _count"),
)


class CheckError(Exception):
    """A problem that stops the parse of one expression."""


# ------------------------------------------------------------------ exposition


class Exposition:
    """The families, samples and label names of one text exposition."""

    def __init__(self):
        self.types = {}      # family -> counter|gauge|histogram|summary|untyped
        self.helps = set()   # families with # HELP
        self.samples = []    # (sample name, {label: value}, value text)
        self.labels = {}     # sample name -> set of label names
        self.values = {}     # (sample name, label) -> set of values

    def family_of(self, sample):
        """The family a sample name belongs to, and the suffix it carries."""
        if sample in self.types:
            return sample, ""
        for suffix in ("_bucket", "_sum", "_count"):
            base = sample[:-len(suffix)]
            if sample.endswith(suffix) and self.types.get(base) in ("histogram", "summary"):
                return base, suffix
        return None, None

    def counter_like(self, sample):
        family, suffix = self.family_of(sample)
        return self.types.get(family) == "counter" or suffix != ""


LABEL_PAIR = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|$)')
SAMPLE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)(\s+-?\d+)?$")


def parse_exposition(text):
    """Text format 0.0.4 -> (Exposition, [problems])."""
    expo, problems = Exposition(), []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] == "TYPE":
                if parts[2] in expo.types:
                    problems.append(f"line {number}: second TYPE for {parts[2]}")
                expo.types[parts[2]] = parts[3].strip() if len(parts) > 3 else ""
            elif len(parts) >= 3 and parts[1] == "HELP":
                expo.helps.add(parts[2])
            continue
        match = SAMPLE.match(line.strip())
        if not match:
            problems.append(f"line {number}: not a sample: {line[:80]}")
            continue
        name, label_text, value = match.group(1), match.group(2) or "", match.group(3)
        labels, rest = {}, label_text[1:-1]
        while rest.strip():
            pair = LABEL_PAIR.match(rest)
            if not pair:
                problems.append(f"line {number}: bad labels {label_text[:80]}")
                break
            if pair.group(1) in labels:
                problems.append(f"line {number}: label {pair.group(1)} twice")
            labels[pair.group(1)] = re.sub(
                r"\\(.)", lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), pair.group(2))
            rest = rest[pair.end():]
        try:
            float(value)
        except ValueError:
            problems.append(f"line {number}: value {value!r} is not a number")
        expo.samples.append((name, labels, value))
        expo.labels.setdefault(name, set()).update(labels)
        for label, label_value in labels.items():
            expo.values.setdefault((name, label), set()).add(label_value)
    return expo, problems


def name_words(family):
    return family.lower().split("_")


def convention_problems(expo):
    """Naming and shape conventions of the exposition, as [(check, problem)]."""
    found = []
    seen = set()
    for name, labels, _ in expo.samples:
        key = (name, tuple(sorted(labels.items())))
        if key in seen:
            found.append(("series", f"duplicate series {name}{dict(labels)}"))
        seen.add(key)
        family, _suffix = expo.family_of(name)
        if family is None:
            found.append(("types", f"sample {name} has no # TYPE family"))
        for label in labels:
            if label.startswith("__"):
                found.append(("names", f"{name}: label {label} uses the reserved __ prefix"))
            if label in TARGET_LABELS:
                found.append(("names", f"{name}: label {label} clashes with Prometheus' "
                                       "target label"))
    for family, kind in sorted(expo.types.items()):
        words = name_words(family)
        if ":" in family:
            found.append(("names", f"{family}: colons are for recording rules"))
        if family not in expo.helps:
            found.append(("help", f"{family} has no # HELP"))
        if kind not in ("counter", "gauge", "histogram", "summary", "untyped"):
            found.append(("types", f"{family}: unknown type {kind!r}"))
        if kind == "counter" and not family.endswith("_total"):
            found.append(("counters", f"counter {family} does not end in _total"))
        if kind != "counter" and family.endswith("_total"):
            found.append(("counters", f"{kind} {family} ends in _total (counters only)"))
        if kind in ("gauge", "counter") and re.search(r"_(bucket|count|sum)$", family):
            found.append(("names", f"{kind} {family} ends in a histogram/summary suffix"))
        bad_units = NON_BASE_UNITS.intersection(words)
        if bad_units:
            found.append(("units", f"{family}: non-base unit {sorted(bad_units)[0]} "
                                   "(use _seconds, _bytes)"))
        stem = family[:-len("_total")] if family.endswith("_total") else family
        if TIME_WORDS.intersection(words) and not stem.endswith("_seconds"):
            found.append(("units", f"{family}: a time without the _seconds unit"))
        if MEMORY_WORDS.intersection(words) and not stem.endswith("_bytes"):
            found.append(("units", f"{family}: a memory size without the _bytes unit"))
        if kind == "histogram":
            found += [("histograms", p) for p in histogram_problems(expo, family)]
        if kind == "summary":
            for suffix in ("_sum", "_count"):
                if family + suffix not in expo.labels:
                    found.append(("summaries", f"summary {family} has no {family}{suffix}"))
    return found


def histogram_problems(expo, family):
    problems = []
    groups = {}  # labels without le -> [(le, count)]
    for name, labels, value in expo.samples:
        if name != family + "_bucket":
            continue
        if "le" not in labels:
            problems.append(f"{name}{labels} has no le label")
            continue
        rest = tuple(sorted((k, v) for k, v in labels.items() if k != "le"))
        try:
            groups.setdefault(rest, []).append((float(labels["le"]), float(value)))
        except ValueError:
            problems.append(f"{name}: le={labels['le']!r} is not a number")
    if not groups:
        problems.append(f"histogram {family} has no {family}_bucket samples")
    counts = {tuple(sorted(labels.items())): float(value)
              for name, labels, value in expo.samples if name == family + "_count"}
    sums = {tuple(sorted(labels.items()))
            for name, labels, _ in expo.samples if name == family + "_sum"}
    for rest, buckets in sorted(groups.items()):
        where = f"{family}{{{','.join(f'{k}={v}' for k, v in rest)}}}"
        buckets.sort()
        if buckets[-1][0] != math.inf:
            problems.append(f"{where} has no le=\"+Inf\" bucket")
        if any(b[1] < a[1] for a, b in zip(buckets, buckets[1:])):
            problems.append(f"{where}: bucket counts are not cumulative")
        if rest not in counts:
            problems.append(f"{where} has no _count")
        elif buckets[-1][0] == math.inf and counts[rest] != buckets[-1][1]:
            problems.append(f"{where}: _count {counts[rest]:g} != +Inf bucket {buckets[-1][1]:g}")
        if rest not in sums:
            problems.append(f"{where} has no _sum")
    return problems


# ------------------------------------------------------------------ tokenizer

TOKEN = re.compile(r"""
    (?P<space>\s+|\#[^\n]*)
  | (?P<duration>(?:\d+(?:ms|[smhdwy]))+(?![a-zA-Z0-9_]))
  | (?P<number>0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`[^`]*`)
  | (?P<ident>[a-zA-Z_][a-zA-Z0-9_:]*)
  | (?P<op>==|!=|<=|>=|=~|!~|[-+*/%^<>=,(){}\[\]:@])
""", re.X)


def tokenize(text):
    """[(kind, text)]: duration, number, string, ident, op; ends with eof."""
    tokens, position = [], 0
    while position < len(text):
        match = TOKEN.match(text, position)
        if not match:
            raise CheckError(f"unexpected character {text[position]!r} at {position}")
        position = match.end()
        kind = match.lastgroup
        if kind != "space":
            tokens.append((kind, match.group(kind)))
    tokens.append(("eof", ""))
    return tokens


def unquote(token):
    body = token[1:-1]
    if token[0] == "`":
        return body
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


# ------------------------------------------------------------------ parser
# The AST is tuples: ("number",), ("string", s), ("selector", name, matchers),
# ("matrix", node), ("subquery", node), ("call", name, args),
# ("aggregate", op, grouping_kind, labels, params), ("unary", node),
# ("binary", op, left, right, modifiers), ("paren", node).


class Parser:
    def __init__(self, text):
        self.tokens = tokenize(text)
        self.at = 0

    def peek(self, offset=0):
        return self.tokens[min(self.at + offset, len(self.tokens) - 1)]

    def take(self, kind=None, text=None):
        token = self.peek()
        if (kind and token[0] != kind) or (text is not None and token[1] != text):
            want = text if text is not None else kind
            raise CheckError(f"expected {want}, found {token[1] or 'end'!r}")
        self.at += 1
        return token

    def accept(self, text):
        if self.peek()[1] == text and self.peek()[0] in ("op", "ident"):
            self.at += 1
            return True
        return False

    def parse(self):
        node = self.expression(0)
        if self.peek()[0] != "eof":
            raise CheckError(f"unexpected {self.peek()[1]!r} after the expression")
        return node

    def binary_operator(self):
        kind, text = self.peek()
        if kind in ("op", "ident") and text in PRECEDENCE:
            return text
        return None

    def expression(self, min_precedence):
        left = self.unary()
        while True:
            op = self.binary_operator()
            if op is None or PRECEDENCE[op] < min_precedence:
                return left
            self.take()
            modifiers = {"bool": self.accept("bool")}
            for keyword in ("on", "ignoring"):
                if self.accept(keyword):
                    modifiers["match"] = (keyword, self.label_list())
            for keyword in ("group_left", "group_right"):
                if self.accept(keyword):
                    labels = self.label_list() if self.peek()[1] == "(" else []
                    modifiers["group"] = (keyword, labels)
            next_min = PRECEDENCE[op] if op == "^" else PRECEDENCE[op] + 1
            right = self.expression(next_min)
            left = ("binary", op, left, right, modifiers)

    def unary(self):
        if self.peek() in (("op", "-"), ("op", "+")):
            self.take()
            return ("unary", self.expression(PRECEDENCE["^"]))
        return self.postfix(self.primary())

    def postfix(self, node):
        while True:
            if self.peek()[1] == "[":
                self.take()
                self.take("duration")
                if self.accept(":"):
                    if self.peek()[0] == "duration":
                        self.take()
                    node = ("subquery", node)
                else:
                    if node[0] != "selector":
                        raise CheckError("a range [..] applies only to a selector")
                    node = ("matrix", node)
                self.take("op", "]")
            elif self.peek() == ("ident", "offset"):
                self.take()
                self.accept("-")
                self.take("duration")
            elif self.peek()[1] == "@":
                self.take()
                if self.peek()[0] == "number":
                    self.take()
                else:
                    name = self.take("ident")[1]
                    if name not in ("start", "end"):
                        raise CheckError(f"@ {name}: want a timestamp, start() or end()")
                    self.take("op", "(")
                    self.take("op", ")")
            else:
                return node

    def label_list(self):
        self.take("op", "(")
        labels = []
        while self.peek()[1] != ")":
            labels.append(self.take("ident")[1])
            if not self.accept(","):
                break
        self.take("op", ")")
        return labels

    def primary(self):
        kind, text = self.peek()
        if kind in ("number", "duration"):
            self.take()
            return ("number",)
        if kind == "string":
            self.take()
            return ("string", unquote(text))
        if text == "(" and kind == "op":
            self.take()
            node = self.expression(0)
            self.take("op", ")")
            return ("paren", node)
        if text == "{" and kind == "op":
            return ("selector", None, self.matchers())
        if kind != "ident":
            raise CheckError(f"unexpected {text or 'end'!r}")
        if text.lower() in ("inf", "nan") and self.peek(1)[1] not in ("{", "("):
            self.take()
            return ("number",)
        if text in AGGREGATIONS and self.peek(1)[1] in ("(", "by", "without"):
            return self.aggregation()
        if self.peek(1) == ("op", "("):
            if text not in FUNCTIONS:
                raise CheckError(f"unknown function {text}()")
            self.take()
            self.take("op", "(")
            args = []
            while self.peek()[1] != ")":
                args.append(self.expression(0))
                if not self.accept(","):
                    break
            self.take("op", ")")
            return ("call", text, args)
        if text in ("by", "without", "on", "ignoring", "group_left", "group_right",
                    "bool", "offset") or text in SET_OPERATORS:
            raise CheckError(f"keyword {text} out of place")
        self.take()
        matchers = self.matchers() if self.peek() == ("op", "{") else []
        return ("selector", text, matchers)

    def matchers(self):
        self.take("op", "{")
        found = []
        while self.peek()[1] != "}":
            label = self.take("ident")[1]
            op = self.take("op")[1]
            if op not in ("=", "!=", "=~", "!~"):
                raise CheckError(f"matcher {label}{op}: want = != =~ !~")
            found.append((label, op, unquote(self.take("string")[1])))
            if not self.accept(","):
                break
        self.take("op", "}")
        return found

    def aggregation(self):
        op = self.take("ident")[1]
        grouping = (None, [])
        if self.peek()[1] in ("by", "without"):
            grouping = (self.take()[1], self.label_list())
        self.take("op", "(")
        params = [self.expression(0)]
        while self.accept(","):
            params.append(self.expression(0))
        self.take("op", ")")
        if self.peek()[1] in ("by", "without"):
            if grouping[0]:
                raise CheckError(f"{op}: by/without given twice")
            grouping = (self.take()[1], self.label_list())
        return ("aggregate", op, grouping[0], grouping[1], params)


# ------------------------------------------------------------------ checking


class Value:
    """What an expression yields: its kind and the label names it can carry
    (None: not known, so nothing is checked against them)."""

    def __init__(self, kind, labels=frozenset(), selector=None):
        self.kind, self.labels, self.selector = kind, labels, selector


class Checker:
    """Infers the labels of each sub-expression and collects problems."""

    def __init__(self, expo, recorded):
        self.expo, self.recorded, self.problems = expo, recorded, []
        self.metrics = set()  # the metric names the expression selects

    def problem(self, text):
        if text not in self.problems:
            self.problems.append(text)

    def labels_of(self, name):
        if name in self.recorded:
            return self.recorded[name]
        if name in SYNTHETIC_METRICS:
            return SYNTHETIC_METRICS[name]
        if name in self.expo.labels:
            return frozenset(self.expo.labels[name]) | TARGET_LABELS
        if name == "ALERTS" or name == "ALERTS_FOR_STATE":
            return None
        family = self.expo.types.get(name)
        if family in ("histogram", "summary"):
            self.problem(f"{name} is a {family}: select {name}_bucket, _sum or _count")
        elif mode_of(name):
            self.problem(f"unknown metric {name} (a {mode_of(name)} metric: check against a "
                         "scrape of a server in that mode, or give --mode-families an "
                         "exposition that has it)")
        else:
            self.problem(f"unknown metric {name}")
        return None

    def check(self, node):
        kind = node[0]
        if kind == "number":
            return Value("scalar")
        if kind == "string":
            return Value("string")
        if kind == "paren":
            return self.check(node[1])
        if kind == "unary":
            return self.check(node[1])
        if kind == "selector":
            return self.selector(node)
        if kind == "matrix":
            inner = self.check(node[1])
            return Value("matrix", inner.labels, node[1])
        if kind == "subquery":
            inner = self.check(node[1])
            if inner.kind != "vector":
                self.problem("a subquery needs an instant vector")
            return Value("matrix", inner.labels)
        if kind == "call":
            return self.call(node)
        if kind == "aggregate":
            return self.aggregate(node)
        return self.binary(node)

    def selector(self, node):
        _, name, matchers = node
        for label, op, value in matchers:
            if label == "__name__" and op == "=":
                name = name or value
        if name is None:
            self.problem("a selector without a metric name")
            return Value("vector", None)
        self.metrics.add(name)
        labels = self.labels_of(name)
        for label, op, value in matchers:
            if label == "__name__" or labels is None:
                continue
            if label not in labels:
                self.problem(f"{name} has no label {label}")
                continue
            seen = self.expo.values.get((name, label))
            if seen is None or op not in ("=", "=~") or PLACEHOLDER in value:
                continue
            try:
                pattern = re.compile(value if op == "=~" else re.escape(value))
            except re.error as error:
                self.problem(f"{name}{{{label}{op}\"{value}\"}}: bad regex: {error}")
                continue
            if not any(pattern.fullmatch(v) for v in seen):
                self.problem(f"{name}{{{label}{op}\"{value}\"}} selects no series "
                             f"(the exposition has {label}={sorted(seen)})")
        return Value("vector", labels, node)

    def call(self, node):
        _, name, args = node
        kinds, result = FUNCTIONS[name]
        values = [self.check(arg) for arg in args]
        wanted = [k for k in kinds if not k.endswith("?")]
        repeats = kinds[-1].endswith("*") if kinds else False
        if len(values) < len(wanted) - (1 if repeats else 0) or (
                len(values) > len(kinds) and not repeats):
            self.problem(f"{name}() takes {len(kinds)} arguments, given {len(values)}")
            return Value("vector", None)
        for i, value in enumerate(values):
            want = kinds[min(i, len(kinds) - 1)].rstrip("?*")
            have = {"vector": "v", "matrix": "m", "scalar": "s", "string": "str"}[value.kind]
            if want != have:
                self.problem(f"{name}() argument {i + 1}: want {describe(want)}, "
                             f"given {describe(have)}")
        if name in COUNTER_FUNCTIONS and values and values[0].selector is not None:
            metric = values[0].selector[1]
            if metric in self.expo.labels and not self.expo.counter_like(metric):
                family, _ = self.expo.family_of(metric)
                self.problem(f"{name}() of {metric}, a {self.expo.types.get(family, 'untyped')}"
                             " (want a counter)")
        first = values[0].labels if values else frozenset()
        if result == KEEP:
            return Value("vector", first)
        if result == EMPTY:
            return Value("vector", frozenset())
        if result == SCALAR:
            return Value("scalar")
        if result == "quantile":
            labels = values[1].labels
            if labels is not None and "le" not in labels:
                self.problem("histogram_quantile() over series without an le label "
                             "(keep le in by(...))")
            return Value("vector", None if labels is None else labels - {"le"})
        if result == "replace":
            source = unquote_literal(args[3])
            if source and first is not None and source not in first:
                self.problem(f"label_replace(): source label {source} is not on the series")
            destination = unquote_literal(args[1])
            return Value("vector", None if first is None else first | {destination})
        destination = unquote_literal(args[1])  # label_join
        return Value("vector", None if first is None else first | {destination})

    def aggregate(self, node):
        _, op, grouping, labels, params = node
        values = [self.check(param) for param in params]
        vector = values[-1]
        if vector.kind != "vector":
            self.problem(f"{op}() needs an instant vector")
        if labels and vector.labels is not None:
            missing = [label for label in labels if label not in vector.labels]
            if missing:
                self.problem(f"{op} {grouping} ({', '.join(missing)}): not a label of "
                             "the series it aggregates "
                             f"({', '.join(sorted(vector.labels)) or 'none'})")
        if op in ("topk", "bottomk", "limitk", "limit_ratio"):
            return Value("vector", vector.labels)
        if vector.labels is None:
            out = None if grouping != "by" else frozenset(labels)
        elif grouping == "by":
            out = frozenset(labels)
        elif grouping == "without":
            out = vector.labels - set(labels)
        else:
            out = frozenset()
        if op == "count_values" and out is not None:
            out = out | {unquote_literal(params[0])}
        return Value("vector", out)

    def binary(self, node):
        _, op, left_node, right_node, modifiers = node
        left, right = self.check(left_node), self.check(right_node)
        for value in (left, right):
            if value.kind not in ("scalar", "vector"):
                self.problem(f"'{op}' takes scalars and instant vectors, not a {value.kind}")
                return Value("vector", None)
        if op in SET_OPERATORS and (left.kind != "vector" or right.kind != "vector"):
            self.problem(f"{op} needs vectors on both sides")
            return Value("vector", None)
        if left.kind == "scalar" and right.kind == "scalar":
            if op in COMPARISONS and not modifiers["bool"]:
                self.problem(f"'{op}' between scalars needs bool")
            return Value("scalar")
        if left.kind != "vector" or right.kind != "vector":
            return Value("vector", (left if left.kind == "vector" else right).labels)
        match = modifiers.get("match")
        group = modifiers.get("group")
        if match and match[0] == "on":
            for side, value in (("left", left), ("right", right)):
                missing = [label for label in match[1]
                           if value.labels is not None and label not in value.labels]
                if missing:
                    self.problem(f"on({', '.join(missing)}): not a label of the {side} side")
        elif match and left.labels is not None and right.labels is not None:
            missing = [label for label in match[1] if label not in left.labels | right.labels]
            if missing:
                self.problem(f"ignoring({', '.join(missing)}): not a label of either side")
        if group:
            other = right if group[0] == "group_left" else left
            if other.labels is not None:
                missing = [label for label in group[1] if label not in other.labels]
                if missing:
                    self.problem(f"{group[0]}({', '.join(missing)}): not a label of the other side")
        if left.labels is None or right.labels is None:
            return Value("vector", None)
        if op in SET_OPERATORS:
            return Value("vector", left.labels | right.labels if op == "or" else left.labels)
        if not match and not group and left.labels != right.labels:
            self.problem(f"'{op}' between series labelled ({', '.join(sorted(left.labels))}) "
                         f"and ({', '.join(sorted(right.labels))}) without on()/ignoring(): "
                         "no series match")
        if group:
            base = left.labels if group[0] == "group_left" else right.labels
            return Value("vector", base | set(group[1]))
        if match and match[0] == "on":
            return Value("vector", frozenset(match[1]))
        if match:
            return Value("vector", left.labels - set(match[1]))
        return Value("vector", left.labels)


def describe(kind):
    return {"v": "an instant vector", "m": "a range vector", "s": "a scalar",
            "str": "a string"}[kind]


def unquote_literal(node):
    return node[1] if node[0] == "string" else ""


# ------------------------------------------------------------------ sources


class Expression:
    def __init__(self, where, text, grafana_variables=None):
        self.where, self.original, self.grafana = where, text, grafana_variables
        self.text = text
        self.label_values = None  # (selector text or None, label) of label_values()


def substitute(text, variables):
    """Replaces Grafana's $var, ${var}, ${var:format} and [[var]]."""
    unknown = []

    def value(match):
        name = match.group(1) or match.group(2) or match.group(3)
        if name in variables:
            return variables[name]
        if name in GRAFANA_BUILTINS:
            return GRAFANA_BUILTINS[name]
        unknown.append(name)
        return match.group(0)
    out = re.sub(r"\$\{(\w+)(?::\w+)?\}|\[\[(\w+)(?::\w+)?\]\]|\$(\w+)", value, text)
    return out, unknown


def dashboard_variables(dashboard):
    """{name: substitution} for the dashboard's template variables."""
    variables = {}
    for var in (dashboard.get("templating") or {}).get("list", []):
        name, kind = var.get("name"), var.get("type")
        current = (var.get("current") or {}).get("value")
        if isinstance(current, list):
            current = current[0] if current else None
        if kind in ("custom", "constant", "interval", "textbox"):
            options = [o.get("value") for o in var.get("options", []) if o.get("value")]
            query = str(var.get("query", "")).split(",")[0].strip()
            value = current if current not in (None, "", "$__all") else (options or [query])[0]
            variables[name] = str(value)
        else:  # query, datasource, adhoc: label values or a data source
            variables[name] = PLACEHOLDER + name
    return variables


def walk_panels(panels):
    for panel in panels or []:
        yield panel
        yield from walk_panels(panel.get("panels"))


def dashboard_expressions(path):
    with open(path) as f:
        dashboard = json.load(f)
    variables = dashboard_variables(dashboard)
    found = []
    panels = list(walk_panels(dashboard.get("panels")))
    for row in dashboard.get("rows") or []:  # the pre-5.0 layout
        panels += list(walk_panels(row.get("panels")))
    for panel in panels:
        for target in panel.get("targets") or []:
            if "expr" in target:
                where = (f"{path}: panel {panel.get('id')} \"{panel.get('title', '')}\" "
                         f"{target.get('refId', '')}")
                found.append(Expression(where, target["expr"], variables))
    for var in (dashboard.get("templating") or {}).get("list", []):
        if var.get("type") != "query":
            continue
        query = var.get("query")
        if isinstance(query, dict):
            query = query.get("query", "")
        expression = Expression(f"{path}: variable ${var.get('name')}", query or "", variables)
        grafana_function(expression)
        found.append(expression)
    for annotation in (dashboard.get("annotations") or {}).get("list", []):
        if annotation.get("expr"):
            found.append(Expression(f"{path}: annotation {annotation.get('name')}",
                                    annotation["expr"], variables))
    return found


def grafana_function(expression):
    """label_values(), metrics() and query_result() are Grafana's, not PromQL."""
    text = expression.text.strip()
    match = re.fullmatch(r"label_values\((?:(.*),)?\s*(\w+)\s*\)", text, re.S)
    if match:
        expression.label_values = (match.group(1), match.group(2))
        expression.text = match.group(1) or ""
        return
    match = re.fullmatch(r"query_result\((.*)\)", text, re.S)
    if match:
        expression.text = match.group(1)


def rule_expressions(path):
    import yaml  # only rule files need PyYAML
    with open(path) as f:
        document = yaml.safe_load(f) or {}
    found = []
    for group in document.get("groups") or []:
        for rule in group.get("rules") or []:
            name = rule.get("alert") or rule.get("record")
            kind = "alert" if "alert" in rule else "record"
            expression = Expression(f"{path}: {kind} {name}", str(rule.get("expr", "")))
            expression.record = rule.get("record")
            expression.rule_labels = set((rule.get("labels") or {}).keys())
            found.append(expression)
    return found


# ------------------------------------------------------------------ main


def check_expression(expression, expo, recorded):
    """[problems] for one expression; records what a recording rule yields."""
    text = expression.text
    if expression.grafana is not None:
        text, unknown = substitute(text, expression.grafana)
        if unknown:
            return [f"unknown Grafana variable ${u}" for u in unknown], None
    expression.substituted = text
    checker = Checker(expo, recorded)
    expression.metrics = checker.metrics
    value = None
    if text.strip():
        try:
            tokens = tokenize(text)
            if any(PLACEHOLDER in t for k, t in tokens if k != "string"):
                return ["a query variable outside a quoted string"], None
            value = checker.check(Parser(text).parse())
        except CheckError as error:
            return [f"parse error: {error}"], None
    if expression.label_values:
        label = expression.label_values[1]
        if value is None:
            if not any(label in labels for labels in expo.labels.values()) and \
                    label not in TARGET_LABELS:
                checker.problem(f"label_values(): no series has label {label}")
        elif value.labels is not None and label not in value.labels:
            checker.problem(f"label_values(): {label} is not a label of the series")
    elif not text.strip():
        checker.problem("empty expression")
    return checker.problems, value


def read_exposition(source):
    if source == "-":
        return sys.stdin.read()
    if re.match(r"https?://", source):
        with urllib.request.urlopen(source, timeout=10) as response:
            return response.read().decode("utf-8")
    with open(source) as f:
        return f.read()


def evaluate(prometheus, text):
    """The number of series an instant query returns; raises CheckError."""
    data = urllib.parse.urlencode({"query": text}).encode()
    try:
        with urllib.request.urlopen(prometheus.rstrip("/") + "/api/v1/query", data,
                                    timeout=10) as response:
            body = json.load(response)
    except urllib.error.HTTPError as error:
        try:
            body = json.load(error)
        except ValueError:
            raise CheckError(f"Prometheus: HTTP {error.code}") from None
    except (OSError, ValueError) as error:
        raise CheckError(f"Prometheus: {error}") from None
    if body.get("status") != "success":
        raise CheckError(f"Prometheus: {body.get('errorType')}: {body.get('error')}")
    result = body["data"]["result"]
    return len(result) if isinstance(result, list) else 1


def one_line(text, limit=160):
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def mode_of(sample):
    """The mode (MODE_FAMILIES) a sample name belongs to, or None."""
    return next((mode for prefix, mode in MODE_FAMILIES.items() if sample.startswith(prefix)),
                None)


def absent_modes(expo, expected):
    """The modes whose families the expected exposition has and expo has none of."""
    return ({mode_of(name) for name in expected.labels} -
            {mode_of(name) for name in expo.labels} - {None})


def borrow_families(expo, expected, modes):
    """Adds the expected exposition's families of these modes to expo; returns
    their sample names."""
    names = {name for name in expected.labels if mode_of(name) in modes}
    for family, kind in expected.types.items():
        if mode_of(family) in modes:
            expo.types[family] = kind
            if family in expected.helps:
                expo.helps.add(family)
    for name in names:
        expo.labels[name] = set(expected.labels[name])
    for (name, label), values in expected.values.items():
        if name in names:
            expo.values[(name, label)] = set(values)
    expo.samples += [sample for sample in expected.samples if sample[0] in names]
    return names


def family_differences(expo, expected, absent=frozenset()):
    """Sample names and label names of the expected exposition vs this one;
    the families of the absent modes are not missing."""
    problems = []
    for name in sorted(set(expected.labels) - set(expo.labels)):
        if mode_of(name) in absent:
            continue
        problems.append(f"{name} is missing")
    for name in sorted(set(expo.labels) - set(expected.labels)):
        problems.append(f"{name} is new")
    for name in sorted(set(expo.labels) & set(expected.labels)):
        if expo.labels[name] != expected.labels[name]:
            problems.append(f"{name} labels {sorted(expo.labels[name])}, "
                            f"expected {sorted(expected.labels[name])}")
    return problems


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--exposition", required=True,
                        help="/metrics text: a file, - for stdin, or an http:// URL")
    parser.add_argument("--dashboard", action="append", default=[])
    parser.add_argument("--rules", action="append", default=[])
    parser.add_argument("--expect-families", metavar="FILE",
                        help="an exposition whose sample and label names this one must have")
    parser.add_argument("--mode-families", metavar="FILE",
                        help="an exposition with the families of every mode (MODE_FAMILIES), "
                        "for a scrape of a server in another mode (default: --expect-families, "
                        "else testdata/cohortd-metrics.prom beside this script; '' for none)")
    parser.add_argument("--emit-rules", metavar="OUT",
                        help="write the substituted dashboard expressions as a rule file")
    parser.add_argument("--variable", action="append", default=[], metavar="NAME=VALUE",
                        help="the value of a Grafana variable (default: a placeholder)")
    parser.add_argument("--prometheus", metavar="URL",
                        help="also evaluate the expressions on this Prometheus server")
    args = parser.parse_args(argv)
    overrides = dict(v.split("=", 1) for v in args.variable if "=" in v)
    if len(overrides) != len(args.variable):
        parser.error("--variable wants NAME=VALUE")
    failures = 0

    def line(ok, where, text):
        nonlocal failures
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {where}: {text}")

    try:
        expo, problems = parse_exposition(read_exposition(args.exposition))
    except (OSError, ValueError) as error:
        line(False, "exposition", f"cannot read {args.exposition}: {error}")
        return 1
    problems = [("format", p) for p in problems] + convention_problems(expo)
    for check, what in EXPOSITION_CHECKS:
        mine = [p for c, p in problems if c == check]
        line(not mine, f"exposition {check}", "; ".join(mine) if mine else what.format(
            families=len(expo.types), samples=len(expo.samples)))
    expected = None
    if args.expect_families:
        expected, _ = parse_exposition(read_exposition(args.expect_families))
        absent = absent_modes(expo, expected)
        differences = family_differences(expo, expected, absent)
        text = "; ".join(differences) if differences else "same sample and label names"
        if absent and not differences:
            text += f" but for the {', '.join(sorted(absent))} families"
        line(not differences, f"exposition vs {args.expect_families}", text)
    # A scrape of a server in another mode: that mode's families from an
    # exposition that has them.
    borrowed = set()
    source = args.mode_families
    if source is None:
        source = args.expect_families or (
            DEFAULT_MODE_FAMILIES if os.path.isfile(DEFAULT_MODE_FAMILIES) else "")
    if source:
        try:
            modal = expected if source == args.expect_families else \
                parse_exposition(read_exposition(source))[0]
        except (OSError, ValueError) as error:
            line(False, "modes", f"cannot read {source}: {error}")
            return 1
        absent = absent_modes(expo, modal)
        if absent:
            borrowed = borrow_families(expo, modal, absent)
            line(True, f"modes vs {source}",
                 f"this scrape has none of the {', '.join(sorted(absent))} families (a server "
                 f"in another mode): expressions over them are checked against {source}"
                 + (" and may return no series" if args.prometheus else ""))

    expressions = []
    try:
        for path in args.rules:
            expressions += rule_expressions(path)
        for path in args.dashboard:
            expressions += dashboard_expressions(path)
    except (OSError, ValueError) as error:
        line(False, "inputs", f"{type(error).__name__}: {error}")
        return 1
    if not expressions:
        line(False, "inputs", "no expressions found")

    # Recording rules first, so that alerts and panels may use their names.
    recorded = {}
    records = [e for e in expressions if getattr(e, "record", None)]
    for expression in records:
        problems, value = check_expression(expression, expo, recorded)
        labels = None if value is None or value.labels is None else value.labels
        recorded[expression.record] = (
            None if labels is None else frozenset(labels | expression.rule_labels))
    emitted = []
    for expression in expressions:
        if expression.grafana is not None:
            expression.grafana = {**expression.grafana, **overrides}
        problems, _ = check_expression(expression, expo, recorded)
        note = ""
        if args.prometheus and not problems and expression.substituted.strip():
            try:
                series = evaluate(args.prometheus, expression.substituted)
                if series == 0 and expression.grafana is not None:
                    modes = sorted({mode_of(m) for m in expression.metrics & borrowed})
                    if modes:
                        note = f"no series ({', '.join(modes)} only) | "
                    else:
                        problems.append("Prometheus returned no series")
            except CheckError as error:
                problems.append(str(error))
        line(not problems, expression.where,
             ("; ".join(problems) + " | " if problems else note) + one_line(expression.original))
        if expression.grafana is not None and expression.text.strip() and not problems:
            emitted.append(expression.substituted)
    if args.emit_rules:
        with open(args.emit_rules, "w") as f:
            f.write("# Written by check_promql.py: the dashboard's expressions, for\n"
                    "# `promtool check rules` to parse.\n"
                    "groups:\n  - name: dashboard\n    rules:\n")
            for i, text in enumerate(emitted):
                f.write(f"      - record: dashboard_check:expression_{i}\n"
                        f"        expr: {json.dumps(text)}\n")
    print(f"check_promql: {len(expressions)} expressions, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
