"""Validation findings and the report that collects them."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Severity = Literal["error", "warning"]
MAX_SHOWN_PER_CHECK = 20


@dataclass(frozen=True)
class Finding:
    """One failed check: which check, where (config, row index, row id, field), and why."""

    check: str
    message: str
    severity: Severity = "error"
    config: str | None = None
    row: int | None = None
    row_id: str | None = None
    field: str | None = None

    def where(self) -> str:
        parts = []
        if self.config:
            parts.append(f"config {self.config}")
        if self.row is not None:
            parts.append(f"row index {self.row}")
        if self.row_id:
            parts.append(f"id {self.row_id}")
        if self.field:
            parts.append(f"field {self.field}")
        return ", ".join(parts) or "-"


@dataclass
class ValidationReport:
    """All findings of one validation run plus the list of checks that ran."""

    target: str
    findings: list[Finding] = field(default_factory=list)
    checks_run: list[str] = field(default_factory=list)

    def ran(self, check: str) -> None:
        if check not in self.checks_run:
            self.checks_run.append(check)

    def add(self, finding: Finding) -> None:
        self.ran(finding.check)
        self.findings.append(finding)

    def extend(self, findings: list[Finding]) -> None:
        for item in findings:
            self.add(item)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self) -> dict[str, Any]:
        return {
            "status": "passed" if self.ok else "failed",
            "checks": len(self.checks_run),
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "errors_by_check": dict(sorted(Counter(f.check for f in self.errors).items())),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            **self.summary(),
            "checks_run": self.checks_run,
            "findings": [asdict(f) for f in self.findings],
        }

    def render(self, console: Any = None) -> None:
        """Print a readable report (a table per failing check) with rich."""
        from rich.console import Console
        from rich.markup import escape
        from rich.table import Table

        console = console or Console()
        by_check: dict[str, list[Finding]] = {}
        for item in self.findings:
            by_check.setdefault(item.check, []).append(item)
        for check in self.checks_run:
            items = by_check.get(check, [])
            n_err = sum(1 for f in items if f.severity == "error")
            mark = "[green]PASS[/]" if not items else ("[red]FAIL[/]" if n_err else "[yellow]WARN[/]")
            console.print(f"{mark} {check}" + (f" ({len(items)} finding(s))" if items else ""))
            if not items:
                continue
            # within the console's width (80 columns in a pipe), nothing cut: a long path or
            # message folds onto the next line, severity never wraps, markup-like text is text
            table = Table(show_header=True, header_style="bold", pad_edge=False, expand=False)
            table.add_column("severity", no_wrap=True)
            table.add_column("where", overflow="fold", ratio=2)
            table.add_column("problem", overflow="fold", ratio=3)
            for item in items[:MAX_SHOWN_PER_CHECK]:
                table.add_row(item.severity, escape(item.where()), escape(item.message))
            console.print(table)
            if len(items) > MAX_SHOWN_PER_CHECK:
                console.print(f"  ... and {len(items) - MAX_SHOWN_PER_CHECK} more")
        status = "[green]passed[/]" if self.ok else "[red]FAILED[/]"
        console.print(
            f"\n{self.target}: validation {status}: {len(self.checks_run)} checks, "
            f"{len(self.errors)} error(s), {len(self.warnings)} warning(s)"
        )
