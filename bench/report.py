"""Benchmark reports: one JSON document, one Markdown page and PNG plots per benchmark.

Every benchmark builds a :class:`Report`, adds its figures (each next to its target and, where
there is one, what the system Ladder replaces achieved), tables and plots, and writes it to
``bench/results/<name>/``: ``report.json``, ``report.md`` and the PNGs the page shows. A run
overwrites the previous one, so the tree always holds the latest results; git keeps the rest.

The environment (CPUs, load average before and after, Python, commit) is part of every report:
the machines are small and shared, so a figure means little without it.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class Target:
    """``value < bound`` (``op="<"``) or ``value >= bound`` (``op=">="``)."""

    op: str
    bound: float
    unit: str

    def met(self, value: float) -> bool:
        return value < self.bound if self.op == "<" else value >= self.bound

    def __str__(self) -> str:
        return f"{self.op} {_fmt(self.bound)} {self.unit}".strip()


def below(bound: float, unit: str) -> Target:
    return Target("<", bound, unit)


def at_least(bound: float, unit: str) -> Target:
    return Target(">=", bound, unit)


@dataclass
class Figure:
    label: str
    value: float | None
    unit: str
    target: Target | None = None
    reference: str = ""

    @property
    def met(self) -> bool | None:
        if self.target is None or self.value is None:
            return None
        return self.target.met(self.value)


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list[Any]]


@dataclass
class Report:
    name: str
    title: str
    results_dir: Path = RESULTS
    environment: dict[str, Any] = field(default_factory=dict)
    figures: list[Figure] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    plots: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.environment = machine()
        self.environment["started"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
        self.environment["load_before"] = _load()
        self.out.mkdir(parents=True, exist_ok=True)

    @property
    def out(self) -> Path:
        return self.results_dir / self.name

    def figure(
        self, label: str, value: float | None, unit: str, target: Target | None = None, reference: str = ""
    ) -> Figure:
        fig = Figure(label, value, unit, target, reference)
        self.figures.append(fig)
        return fig

    def table(self, title: str, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        self.tables.append(Table(title, list(header), [list(r) for r in rows]))

    def note(self, text: str) -> None:
        self.notes.append(text)

    def line_plot(
        self,
        filename: str,
        title: str,
        xlabel: str,
        ylabel: str,
        series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
        *,
        logy: bool = False,
        hlines: Mapping[str, float] | None = None,
        scatter: bool = False,
        xticks: Sequence[str] = (),
    ) -> None:
        """A PNG of one or more (x, y) series (``scatter``: dots only); ``hlines`` draws labelled targets.

        ``xticks`` names the points 0, 1, 2 ... of a categorical x axis.
        """
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            self.note(f"{filename} not drawn: matplotlib is not installed (pip install -e '.[bench]').")
            return
        fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
        for label, (xs, ys) in series.items():
            if scatter:
                ax.scatter(list(xs), list(ys), s=4, alpha=0.6, label=label)
            else:
                ax.plot(list(xs), list(ys), marker="o", markersize=3, linewidth=1.2, label=label)
        for label, y in (hlines or {}).items():
            ax.axhline(y, linestyle="--", linewidth=0.9, color="grey")
            ax.annotate(label, (0, y), xycoords=("axes fraction", "data"), fontsize=8, color="grey",
                        xytext=(4, 3), textcoords="offset points")  # fmt: skip
        if xticks:
            ax.set_xticks(range(len(xticks)), list(xticks))
        if logy:
            ax.set_yscale("log")
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(self.out / filename)
        plt.close(fig)
        self.plots.append((title, filename))

    def write(self) -> Path:
        """Write ``report.json`` and ``report.md``; returns the Markdown path."""
        self.environment["load_after"] = _load()
        self.environment["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
        document = {
            "name": self.name,
            "title": self.title,
            "environment": self.environment,
            "figures": [
                {**asdict(f), "target": None if f.target is None else str(f.target), "met": f.met}
                for f in self.figures
            ],
            "tables": [asdict(t) for t in self.tables],
            "notes": self.notes,
            "data": self.data,
        }
        (self.out / "report.json").write_text(json.dumps(document, indent=1, default=str) + "\n")
        path = self.out / "report.md"
        path.write_text(self._markdown())
        return path

    def _markdown(self) -> str:
        env = self.environment
        lines = [
            f"# {self.title}",
            "",
            f"`{env.get('command', '')}`  ",
            f"{env['started']} - {env['finished']}",
            "",
        ]
        lines += ["| machine | |", "|---|---|"]
        shown = ("cpus", "platform", "python", "commit", "load_before", "load_after", "tools")
        added = [key for key in env if key not in (*shown, "command", "started", "finished")]
        for key in (*shown, *added):  # then what a benchmark added, in its order
            if key in env:
                lines.append(f"| {key.replace('_', ' ')} | {env[key]} |")
        if self.figures:
            lines += ["", "## Figures and targets", "", "| figure | value | target | met | replaced system |",
                      "|---|---:|---|:-:|---|"]  # fmt: skip
            for f in self.figures:
                value = "-" if f.value is None else f"{_fmt(f.value)} {f.unit}"
                met = {True: "yes", False: "**no**", None: ""}[f.met]
                lines.append(f"| {f.label} | {value} | {f.target or ''} | {met} | {f.reference} |")
        for table in self.tables:
            lines += ["", f"## {table.title}", "", "| " + " | ".join(table.header) + " |",
                      "|" + "---|" * len(table.header)]  # fmt: skip
            lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in table.rows]
        for title, filename in self.plots:
            lines += ["", f"## {title}", "", f"![{title}]({filename})"]
        if self.notes:
            lines += ["", "## Notes", ""] + [f"- {n}" for n in self.notes]
        return "\n".join(lines) + "\n"


def percentiles(values: Sequence[float], points: Sequence[float] = (50, 90, 99, 99.9)) -> dict[str, float]:
    """Nearest-rank percentiles (``p50`` ...) plus ``max``; empty input gives an empty dict."""
    if not values:
        return {}
    ordered = sorted(values)
    out = {f"p{p:g}": ordered[min(len(ordered) - 1, max(0, int(len(ordered) * p / 100 + 0.5) - 1))]
           for p in points}  # fmt: skip
    out["max"] = ordered[-1]
    return out


def median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def machine() -> dict[str, Any]:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    )
    return {
        "command": " ".join(["python", "-m", *_module_argv()]),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "commit": commit.stdout.strip() or "unknown",
    }


def _module_argv() -> list[str]:
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    return [spec.name if spec is not None else sys.argv[0], *sys.argv[1:]]


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _fmt(value: float) -> str:
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}".replace(",", " ") if abs(value) >= 10_000 else str(int(value))
    if abs(value) >= 100:
        return f"{value:,.0f}".replace(",", " ")
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return _fmt(value)
    return str(value)
