"""The README's first example runs as written and prints a match."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from helpers import Server

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_prints_a_match(server: Server) -> None:
    [example] = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)[:1]
    assert len(example.strip().splitlines()) == 5
    assert '"127.0.0.1:50051"' in example
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(
            compile(example.replace("127.0.0.1:50051", server.target),
                    str(README), "exec"), {})
    match = re.fullmatch(r"matched \[(\d+(?:, \d+)*)\]\n", out.getvalue())
    assert match, out.getvalue()
