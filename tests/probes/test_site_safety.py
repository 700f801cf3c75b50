"""Probe cases (issue 53, "the site runs nothing it did not write"): names from run files are
escaped in every Markdown writer, and an empty model name is a usage error. (The site's own
cases, in a real browser where it matters, are in tests/test_site.py.)"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from culturebench.cli import app

pytestmark = pytest.mark.unit

NAME = "<img src=x onerror=alert(1)>\n# not a heading `code` | cell"


def test_md_cell_escapes_html_backticks_pipes_and_line_breaks() -> None:
    from culturebench.text import md_cell

    text = md_cell(NAME)
    assert "<" not in text and ">" not in text and "\n" not in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in text
    assert r"\`code\`" in text and r"\| cell" in text


def test_web_url_is_http_or_https_only() -> None:
    from culturebench.text import web_url

    assert web_url("https://example.org/a.png") == "https://example.org/a.png"
    assert web_url("http://example.org") == "http://example.org"
    bad = ["javascript:alert(1)", "JavaScript:alert(1)", " javascript:x", "data:text/html,x"]
    bad += ["file:///etc/passwd", "//example.org/x", "/x", "https://", "http://a\nb", None, 3]
    for value in bad:
        assert web_url(value) is None, value


def test_run_report_escapes_the_model_name() -> None:
    """Probe case: a model name with HTML or a line break was written raw into report.md."""
    from culturebench.eval.run_report import _header, reading_section

    results = {
        "provenance": {
            "dataset": {"dataset": "no-such-dataset", "source": "none"},
            "task": "vqa",
            "model": {"model": NAME, "backend": "scripted<b>"},
        },
        "metrics": {},
        "answer_reader": {"model": {"model": NAME}, "read": 1, "agreement_with_rules": 1.0},
    }
    markdown = "\n".join(_header(results) + reading_section(results))
    assert "<img" not in markdown and "<b>" not in markdown
    assert "\n# not a heading" not in markdown
    title = markdown.splitlines()[0]
    assert title.startswith("## no-such-dataset / vqa / &lt;img") and "not a heading" in title


def test_paper_report_escapes_the_model_name() -> None:
    from culturebench.eval.paper_report import render

    report = {
        "dataset": "d",
        "paper": "p",
        "runs": [{"task": "t", "model": NAME, "label": "x<script>"}],
        "status_counts": {},
    }
    markdown = render(report, [])
    assert "<img" not in markdown and "<script>" not in markdown
    runs = next(line for line in markdown.splitlines() if line.startswith("Runs:"))
    assert "not a heading" in runs and "x&lt;script&gt;" in runs


@pytest.mark.parametrize(
    "args",
    [
        ["eval", "run", "borsch", "--task", "origin-qa", "--model", ""],
        ["eval", "run", "borsch", "--task", "origin-qa", "--model", "  "],
        ["eval", "score", "wwd", "--generations", "x.csv", "--model", ""],
        ["eval", "score", "wwd", "--generations", "x.csv", "--matcher", "llm", "--judge-model", " "],
    ],
)
def test_an_empty_model_name_is_a_usage_error(args: list[str], tmp_path) -> None:
    """Probe case: `eval run --model ''` was accepted."""
    done = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "out")])
    lines = [line for line in done.output.splitlines() if line.strip()]
    assert done.exit_code == 2 and len(lines) == 1, done.output
    assert "an empty model name" in lines[0], done.output
    assert not (tmp_path / "out").exists()
