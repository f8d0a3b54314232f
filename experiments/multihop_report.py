"""Tables and figures of docs/results/multihop.md from the study's CSV rows (issue 11, item 1).

``python -m experiments.multihop report`` (or ``python -m experiments.multihop_report``) reads
``docs/results/data/multihop-flows.csv`` and ``multihop-grid9-flows.csv`` (one row per flow and run,
``experiments.multihop.RunRow``), aggregates over seeds with pandas and writes

- ``docs/results/figures/multihop-throughput.png``: throughput against hop count, one panel per
  window cap, one line per routing protocol;
- ``docs/results/figures/multihop-ratio.png``: AODV and DSR over static routes against hop count;
- the generated block of ``docs/results/multihop.md`` (between the BEGIN/END markers): the
  per-point table (mean over seeds; n = runs) and the grid table.
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from experiments.stats import Change, fieller, paired_change  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "results" / "multihop.md"
BEGIN = "<!-- BEGIN GENERATED: experiments/multihop_report.py -->"
END = "<!-- END GENERATED -->"
PROTOCOLS = ("static", "aodv", "dsr")
COLUMNS = {
    "throughput_kbps": "kbit/s",
    "tcp_timeouts": "RTOs",
    "max_cwnd": "max cwnd",
    "srtt_mean_ms": "srtt ms",
    "rto_max_ms": "max RTO ms",
    "collisions": "retry-limit (collision)",
    "ifq_full": "ifq_full",
    "link_failure": "link_failure",
    "send_buffer_full": "send_buffer_full",
    "no_route": "no_route",
    "routing_packets": "routing pkts",
}


def markdown(df: pd.DataFrame) -> str:
    """A pipe table (no tabulate dependency)."""
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False):
        cells = []
        for v in row:
            cells.append(f"{v:.1f}" if isinstance(v, float) else str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _window_order(w: str) -> float:
    return float("inf") if w == "none" else float(w)


def aggregate(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    agg = df.groupby(keys, sort=False)[list(COLUMNS)].mean().reset_index()
    n = df.groupby(keys, sort=False).size().reset_index(name="n")
    out = agg.merge(n, on=keys)
    return out.rename(columns=COLUMNS)


def chain_section(df: pd.DataFrame, figures: Path) -> str:
    df = df.copy()
    df["hops_n"] = df["hops"].astype(int)
    df["window"] = df["window"].astype(str)
    t = aggregate(df, ["protocol", "window", "hops_n"])
    t["proto_order"] = t["protocol"].map({p: i for i, p in enumerate(PROTOCOLS)})
    t["w_order"] = t["window"].map(_window_order)
    t = t.sort_values(["w_order", "hops_n", "proto_order"]).drop(columns=["proto_order", "w_order"])
    t = t.rename(columns={"hops_n": "hops"})
    windows = sorted(df["window"].unique(), key=_window_order)

    fig, axes = plt.subplots(1, len(windows), figsize=(5 * len(windows), 3.6), sharey=True, squeeze=False)
    for ax, w in zip(axes[0], windows, strict=True):
        for proto in PROTOCOLS:
            sub = t[(t["window"] == w) & (t["protocol"] == proto)].sort_values("hops")
            if not sub.empty:
                ax.plot(sub["hops"], sub["kbit/s"], marker="o", label=proto)
        ax.set_title(f"window cap {w} packets" if w != "none" else "no window cap")
        ax.set_xlabel("hops")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("TCP throughput (kbit/s)")
    axes[0][0].legend()
    fig.tight_layout()
    fig.savefig(figures / "multihop-throughput.png", dpi=110)
    plt.close(fig)

    piv = t.pivot_table(index=["window", "hops"], columns="protocol", values="kbit/s").reset_index()
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for w in windows:
        sub = piv[piv["window"] == w].sort_values("hops")
        for proto, style in (("aodv", "-"), ("dsr", "--")):
            if proto in sub and "static" in sub:
                ax.plot(
                    sub["hops"], sub[proto] / sub["static"], style, marker="o", label=f"{proto}, window {w}"
                )
    ax.axhline(0.85, color="grey", lw=0.8, ls=":")
    ax.set_xlabel("hops")
    ax.set_ylabel("throughput / static routes")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(figures / "multihop-ratio.png", dpi=110)
    plt.close(fig)
    return markdown(t)


def _by_seed(df: pd.DataFrame, proto: str) -> pd.DataFrame:
    """Throughput of ``proto`` and of static routes by seed, on the seeds both ran (same
    placement), in seed order; empty when either is missing."""
    by = df.pivot_table(index="seed", columns="protocol", values="throughput_kbps")
    if proto not in by or "static" not in by:
        return pd.DataFrame(columns=[proto, "static"])
    return by[[proto, "static"]].dropna().sort_index()


def _paired(df: pd.DataFrame, proto: str, seeds: set[int] | None = None) -> tuple[list[float], list[float]]:
    """``_by_seed`` as two lists; only ``seeds`` when given."""
    both = _by_seed(df, proto)
    if seeds is not None:
        both = both[both.index.isin(seeds)]
    return list(both[proto]), list(both["static"])


def _paired_seeds(df: pd.DataFrame, proto: str) -> set[int]:
    return {int(s) for s in _by_seed(df, proto).index}


def ratio_section(df: pd.DataFrame) -> str:
    """AODV and DSR over static routes per chain length and window: the ratio of mean throughputs
    over the paired seeds with Fieller's 95 % interval (experiments.stats), and over all lengths
    of a window the mean ratio with its delta-method interval on the seeds every length has (the
    lengths share the seeds)."""
    df = df.copy()
    df["hops_n"] = df["hops"].astype(int)
    df["window"] = df["window"].astype(str)
    rows = []
    for w in sorted(df["window"].unique(), key=_window_order):
        dw = df[df["window"] == w]
        for proto in ("aodv", "dsr"):
            per_hop = {}
            for h in sorted(dw["hops_n"].unique()):
                seeds = _paired_seeds(dw[dw["hops_n"] == h], proto)
                if seeds:
                    per_hop[h] = seeds
                    rows.append((proto, w, str(h), fieller(*_paired(dw[dw["hops_n"] == h], proto))))
            common = set.intersection(*per_hop.values()) if per_hop else set()
            if len(per_hop) > 1 and len(common) >= 2:
                aligned = [_paired(dw[dw["hops_n"] == h], proto, common) for h in per_hop]
                rows.append((proto, w, "all", paired_change(aligned)))

    def fmt(c: Change) -> tuple[str, str]:
        r = f"{1 + c.value / 100:.3f}"
        ci = "" if math.isnan(c.low) else f"[{1 + c.low / 100:.3f}, {1 + c.high / 100:.3f}]"
        return r, ci

    table = pd.DataFrame(
        [(p, w, h, *fmt(c), c.n) for p, w, h, c in rows],
        columns=["protocol", "window", "hops", "throughput / static", "95 % interval", "seeds"],
    )
    return markdown(table)


def grid_section(df: pd.DataFrame) -> str:
    t = aggregate(df, ["protocol", "window", "flow"])
    return markdown(t)


def main(
    data: Path = ROOT / "docs" / "results" / "data", figures: Path = ROOT / "docs" / "results" / "figures"
) -> int:
    figures.mkdir(parents=True, exist_ok=True)
    parts = []
    chain_csv = data / "multihop-flows.csv"
    if chain_csv.exists():
        parts.append(
            "### Chains (mean over the seeds run; n = runs)\n\n"
            + chain_section(pd.read_csv(chain_csv), figures)
        )
        parts.append(
            "### AODV and DSR over static routes (paired by seed)\n\n" + ratio_section(pd.read_csv(chain_csv))
        )
    grid_csv = data / "multihop-grid9-flows.csv"
    if grid_csv.exists():
        parts.append("### grid9, two crossing flows (per flow)\n\n" + grid_section(pd.read_csv(grid_csv)))
    block = "\n\n".join(parts) if parts else "(no rows yet)"
    text = DOC.read_text() if DOC.exists() else "# Multi-hop TCP\n"
    generated = f"{BEGIN}\n{block}\n{END}"
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    text = pattern.sub(lambda _: generated, text) if pattern.search(text) else f"{text}\n{generated}\n"
    DOC.write_text(text)
    print(block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
