"""Collect results/bench/*.json into the table of docs/benchmarks.md.

Each benchmark writes ``results/bench/<name>.json`` with ``name``, ``value``, ``unit``,
``target``, ``meets_target`` and ``command`` (issue 2). This script rewrites the generated block
of docs/benchmarks.md between the BEGIN/END markers and leaves the hand-written text around it.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEGIN = "<!-- BEGIN GENERATED: bench/collect.py -->"
END = "<!-- END GENERATED -->"
REQUIRED = ("name", "value", "unit", "target", "meets_target", "command")


def load(bench_dir: Path) -> list[dict[str, object]]:
    rows = []
    for path in sorted(bench_dir.glob("*.json")):
        data = json.loads(path.read_text())
        missing = [k for k in REQUIRED if k not in data]
        if missing:
            raise SystemExit(f"{path}: missing field(s) {missing}")
        rows.append(data)
    return rows


def table(rows: list[dict[str, object]]) -> str:
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    lines = [
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {platform.node()} "
        f"({platform.machine()}, 2 cores), git {rev}.",
        "",
        "| benchmark | value | unit | target | meets | command |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        v = r["value"]
        vs = f"{v:.4g}" if isinstance(v, float) else str(v)
        meets = "yes" if r["meets_target"] else "**no**"
        lines.append(f"| {r['name']} | {vs} | {r['unit']} | {r['target']} | {meets} | `{r['command']}` |")
    return "\n".join(lines)


def main() -> int:
    rows = load(ROOT / "results" / "bench")
    doc = ROOT / "docs" / "benchmarks.md"
    text = doc.read_text() if doc.exists() else f"# Benchmarks\n\n{BEGIN}\n{END}\n"
    if BEGIN not in text:
        text += f"\n{BEGIN}\n{END}\n"
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    doc.write_text(f"{head}{BEGIN}\n{table(rows)}\n{END}{tail}")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
