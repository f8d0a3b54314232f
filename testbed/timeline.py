"""A run's timeline: one self-contained HTML page to look at (docs/explain.md).

``python3 -m testbed.timeline results/<exp>/<run>`` writes ``timeline.html`` into the run directory:
on one time axis, an animated map of the stations and their links (slider), each connection's
throughput, cwnd, srtt and RTO, every RTO with its cause (``testbed.explain``), route discoveries
and route errors from the routers' traces, and the channel's airtime share from the medium.
Clicking an RTO shows the path of its lost packet's copies. plotly.js is inlined from the plotly
package (no server, no network). The page sets ``data-ready="1"`` on ``<body>`` once the plots are
drawn and lists any JavaScript error in ``#errors`` (the browser test reads both).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from nodes.core.trace import EV_TX, IPPROTO_TCP
from testbed.explain import RERR_TYPE, Explanation, RunData, RunDirError, analyze
from testbed.medium import read_trajectories
from topologies.mobility import Trajectory, position_at

RREQ_TYPE = 1
"""RFC 4728 section 6.2 / RFC 3561 section 5.1: Route Request type 1 (DSR option, AODV message)."""
MAP_STEP_S = 0.5
"""Time between two frames of the animated map."""
THROUGHPUT_BIN_S = 1.0
"""Throughput is bytes acknowledged per this interval."""
CAUSE_COLOURS = {
    "collision": "#d62728",
    "link_break": "#ff7f0e",
    "channel_error": "#9467bd",
    "event": "#8c564b",
    "ifq_overflow": "#e377c2",
    "no_route": "#1f77b4",
    "send_buffer_full": "#17becf",
    "route_discovery_timeout": "#2ca02c",
    "routing_drop": "#bcbd22",
    "hop_loss": "#aec7e8",
    "delayed": "#7f7f7f",
    "paws": "#98df8a",
    "unknown": "#000000",
}


def map_figure(trajs: dict[int, Trajectory], range_m: float | None, t_end: float) -> dict[str, Any]:
    """The animated map (a plotly figure as a dict): stations, links within range, a slider."""
    ids = sorted(trajs)
    frames: list[dict[str, Any]] = []
    steps = []
    n = max(1, math.ceil(t_end / MAP_STEP_S))
    for k in range(n + 1):
        t = round(k * MAP_STEP_S, 3)
        pos = {i: position_at(trajs[i], t) for i in ids}
        lx: list[float | None] = []
        ly: list[float | None] = []
        if range_m:
            for a in ids:
                for b in ids:
                    if a < b and math.dist(pos[a], pos[b]) <= range_m:
                        lx += [pos[a][0], pos[b][0], None]
                        ly += [pos[a][1], pos[b][1], None]
        frames.append(
            {
                "name": f"{t:g}",
                "data": [
                    {"x": lx, "y": ly},
                    {"x": [pos[i][0] for i in ids], "y": [pos[i][1] for i in ids]},
                ],
                "traces": [0, 1],
            }
        )
        steps.append(
            {
                "label": f"{t:g}",
                "method": "animate",
                "args": [
                    [f"{t:g}"],
                    {
                        "mode": "immediate",
                        "frame": {"duration": 0, "redraw": False},
                        "transition": {"duration": 0},
                    },
                ],
            }
        )
    first: list[dict[str, Any]] = frames[0]["data"]
    return {
        "data": [
            {
                "type": "scatter",
                "mode": "lines",
                "name": "links",
                "line": {"color": "#aaaaaa"},
                "hoverinfo": "skip",
                **first[0],
            },
            {
                "type": "scatter",
                "mode": "markers+text",
                "name": "stations",
                "text": [f"sta{i}" for i in ids],
                "textposition": "top center",
                "marker": {"size": 12, "color": "#1f77b4"},
                **first[1],
            },
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "lost packet's path",
                "x": [],
                "y": [],
                "line": {"color": "#d62728", "width": 3},
                "marker": {"size": 16, "symbol": "circle-open"},
            },
        ],
        "layout": {
            "title": {"text": "stations and links (drag the slider; click a timeout below for its path)"},
            "xaxis": {"title": {"text": "x (m)"}},
            "yaxis": {"title": {"text": "y (m)"}, "scaleanchor": "x"},
            "height": 420,
            "margin": {"t": 40, "b": 90},
            "sliders": [{"active": 0, "steps": steps, "currentvalue": {"prefix": "t = ", "suffix": " s"}}],
        },
        "frames": frames,
    }


def plots_figure(data: RunData, expl: list[Explanation], airtime: dict[str, Any] | None) -> dict[str, Any]:
    """Throughput, cwnd, srtt/RTO, timeouts, routing events and airtime on a shared time axis."""
    rows = [
        "throughput (kbit/s)",
        "cwnd (packets)",
        "srtt, RTO (ms)",
        "timeouts (cause)",
        "route discovery / error",
        "airtime share",
    ]
    n = len(rows)
    gap = 0.02
    h = (1 - gap * (n - 1)) / n
    layout: dict[str, Any] = {
        "height": 190 * n,
        "margin": {"t": 30, "l": 150},
        "hovermode": "closest",
        "legend": {"orientation": "h"},
    }
    for i, title in enumerate(rows):
        top = 1 - i * (h + gap)
        key = "" if i == 0 else str(i + 1)
        layout[f"yaxis{key}"] = {"domain": [top - h, top], "title": {"text": title, "font": {"size": 11}}}
        layout[f"xaxis{key}"] = {
            "anchor": f"y{key}",
            "matches": None if i == 0 else "x",
            "showticklabels": i == n - 1,
        }
    layout["xaxis"].pop("matches")
    layout[f"xaxis{n}"]["title"] = {"text": "run time (s)"}
    traces: list[dict[str, Any]] = []

    def ax(i: int) -> dict[str, str]:
        k = "" if i == 0 else str(i + 1)
        return {"xaxis": f"x{k}", "yaxis": f"y{k}"}

    for sid, series in sorted(data.series.items()):
        by_conn: dict[str, list[dict[str, Any]]] = {}
        for r in series:
            by_conn.setdefault(str(r["conn"]), []).append(r)
        for conn, rs in by_conn.items():
            t = [float(r["t_s"]) for r in rs]
            name = f"sta{sid} {conn}"
            tp_t, tp_v = _throughput(rs)
            traces.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "name": name,
                    "legendgroup": conn,
                    "x": tp_t,
                    "y": tp_v,
                    **ax(0),
                }
            )
            traces.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "name": name,
                    "legendgroup": conn,
                    "showlegend": False,
                    "x": t,
                    "y": [r.get("cwnd") for r in rs],
                    "line": {"shape": "hv"},
                    **ax(1),
                }
            )
            traces.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "name": f"srtt {conn}",
                    "legendgroup": conn,
                    "showlegend": False,
                    "x": t,
                    "y": [r.get("srtt_ms") for r in rs],
                    **ax(2),
                }
            )
            traces.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "name": f"RTO {conn}",
                    "legendgroup": conn,
                    "showlegend": False,
                    "x": t,
                    "y": [r.get("rto_ms") for r in rs],
                    "line": {"dash": "dot"},
                    **ax(2),
                }
            )
    causes = sorted({e.cause for e in expl})
    for cause in causes:
        es = [(i, e) for i, e in enumerate(expl) if e.cause == cause]
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": f"RTO: {cause}",
                "x": [e.t_s for _, e in es],
                "y": [cause for _, e in es],
                "customdata": [i for i, _ in es],
                "text": [f"{e.conn} #{e.index}: {e.detail}" for _, e in es],
                "hoverinfo": "text+x",
                "marker": {"size": 13, "symbol": "x", "color": CAUSE_COLOURS.get(cause, "#000")},
                "meta": "timeouts",
                **ax(3),
            }
        )
    for ctl, label, symbol in (
        (RREQ_TYPE, "route request sent", "triangle-up"),
        (RERR_TYPE, "route error sent", "triangle-down"),
    ):
        pts = [
            (r.t_ns / 1e9, r.station)
            for r in data.records
            if r.ev == EV_TX and r.ctl == ctl and r.proto != IPPROTO_TCP
        ]
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": label,
                "x": [p[0] for p in pts],
                "y": [f"sta{p[1]}" for p in pts],
                "marker": {"symbol": symbol, "size": 8},
                **ax(4),
            }
        )
    if airtime:
        bin_s = int(airtime["bin_ns"]) / 1e9
        vals = [int(v) / 1e9 / bin_s for v in airtime["airtime_ns"]]
        traces.append(
            {
                "type": "bar",
                "name": "airtime / time (all stations)",
                "x": [(i + 0.5) * bin_s for i in range(len(vals))],
                "y": vals,
                "width": bin_s,
                **ax(5),
            }
        )
    return {"data": traces, "layout": layout}


def _throughput(rs: list[dict[str, Any]]) -> tuple[list[float], list[float]]:
    """kbit/s of bytes acknowledged per ``THROUGHPUT_BIN_S``."""
    out_t: list[float] = []
    out_v: list[float] = []
    t0, b0 = float(rs[0]["t_s"]), int(rs[0].get("bytes_acked") or 0)
    for r in rs[1:]:
        t, b = float(r["t_s"]), int(r.get("bytes_acked") or 0)
        if t - t0 >= THROUGHPUT_BIN_S:
            out_t.append(t)
            out_v.append(8 * (b - b0) / (t - t0) / 1000)
            t0, b0 = t, b
    return out_t, out_v


PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>timeline {run_id}</title>
<script>window.__errors = [];
window.addEventListener("error", function (e) {{ window.__errors.push(String(e.message)); }});</script>
<script>{plotlyjs}</script>
<style>body {{ font-family: sans-serif; margin: 1em; }} #path {{ background: #f4f4f4; padding: .5em;
white-space: pre-wrap; min-height: 3em; }} #errors {{ color: #b00; }}</style></head>
<body data-ready="0">
<h2>Run {run_id}: {title}</h2>
<p>{summary}</p>
<div id="map"></div>
<div id="plots"></div>
<h3>Path of the clicked timeout's lost packet</h3>
<div id="path">click a timeout marker (x) above</div>
<div id="errors"></div>
<script>
const MAP = {map_json};
const PLOTS = {plots_json};
const EXPL = {expl_json};
const TRAJ = {traj_json};
const STEP = {step};
function pos(id, t) {{
  const w = TRAJ[id]; if (!w) return null;
  if (t <= w[0][0]) return [w[0][1], w[0][2]];
  for (let i = 1; i < w.length; i++) {{
    if (t <= w[i][0]) {{ const a = w[i - 1], b = w[i], f = b[0] > a[0] ? (t - a[0]) / (b[0] - a[0]) : 1;
      return [a[1] + f * (b[1] - a[1]), a[2] + f * (b[2] - a[2])]; }}
  }}
  const l = w[w.length - 1]; return [l[1], l[2]];
}}
function showPath(i) {{
  const e = EXPL[i]; const lines = [`${{e.conn}} RTO #${{e.index}} at ${{e.t_s}} s: ${{e.cause}}` +
    (e.direction ? ` (${{e.direction}})` : "") + ` - ${{e.detail}}`];
  const xs = [], ys = [];
  for (const c of e.copies) {{
    lines.push(`  ${{c.kind}} copy ip_id ${{c.ip_id}} seq ${{c.seq}} sent ${{(c.sent_ns / 1e9).toFixed(3)}} s: ` +
      (c.delivered_ns !== null ? `delivered ${{(c.delivered_ns / 1e9).toFixed(3)}} s` : `${{c.cause}} at sta${{c.station}}`));
    for (const h of c.path) {{
      lines.push(`    ${{(h.t_ns / 1e9).toFixed(4)}} s  sta${{h.station}}  ${{h.ev}}` + (h.peer ? ` (peer sta${{h.peer}})` : ""));
    }}
  }}
  const last = e.copies.length ? e.copies[e.copies.length - 1] : null;
  if (last) {{ let prev = null;
    for (const h of last.path) {{ if (h.station !== prev) {{ const p = pos(h.station, h.t_ns / 1e9);
      if (p) {{ xs.push(p[0]); ys.push(p[1]); }} prev = h.station; }} }} }}
  document.getElementById("path").textContent = lines.join("\\n");
  if (last && last.path.length) {{
    const t = last.path[last.path.length - 1].t_ns / 1e9;
    const name = String(Math.min(Math.round(t / STEP) * STEP, MAP.frames[MAP.frames.length - 1].name * 1));
    Plotly.animate("map", [name], {{mode: "immediate", frame: {{duration: 0, redraw: false}}, transition: {{duration: 0}}}});
  }}
  Plotly.restyle("map", {{x: [xs], y: [ys]}}, [2]);
}}
Promise.all([
  Plotly.newPlot("map", MAP.data, MAP.layout).then(gd => Plotly.addFrames(gd, MAP.frames)),
  Plotly.newPlot("plots", PLOTS.data, PLOTS.layout),
]).then(() => {{
  document.getElementById("plots").on("plotly_click", ev => {{
    for (const p of ev.points) {{ if (p.data.meta === "timeouts") {{ showPath(p.customdata); return; }} }}
  }});
  if (EXPL.length) showPath(0);
  document.body.dataset.ready = "1";
}}).catch(err => {{ window.__errors.push(String(err)); }}).finally(() => {{
  document.getElementById("errors").textContent = window.__errors.join("\\n");
}});
</script></body></html>
"""


def _js(v: Any) -> str:
    return json.dumps(v, separators=(",", ":")).replace("</", "<\\/")


def render(data: RunData, expl: list[Explanation]) -> str:
    """The page's HTML (sans-I/O apart from reading plotly's bundled JS)."""
    from plotly.offline import get_plotlyjs

    trajs = read_trajectories(data.run_dir / "medium" / "config.json")
    counters_path = data.run_dir / "medium" / "counters.json"
    airtime = json.loads(counters_path.read_text()).get("airtime_series") if counters_path.exists() else None
    t_end = max([float(r["t_s"]) for rows in data.series.values() for r in rows] or [1.0])
    by: dict[str, int] = {}
    for e in expl:
        by[e.cause] = by.get(e.cause, 0) + 1
    summary = f"{len(expl)} TCP timeouts" + (
        ": " + ", ".join(f"{k} {v}" for k, v in sorted(by.items())) if by else ""
    )
    scen = data.summary.get("scenario")
    title = scen.get("name", "") if isinstance(scen, dict) else str(scen or "")
    return PAGE.format(
        run_id=data.summary.get("run_id", ""),
        title=title,
        summary=summary,
        plotlyjs=get_plotlyjs(),
        map_json=_js(map_figure(trajs, data.range_m, t_end)),
        plots_json=_js(plots_figure(data, expl, airtime)),
        expl_json=_js([asdict(e) for e in expl]),
        traj_json=_js({str(k): v for k, v in trajs.items()}),
        step=MAP_STEP_S,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m testbed.timeline", description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", help="results/<experiment>/<run-id>")
    ap.add_argument("-o", "--out", help="output file (default: <run_dir>/timeline.html)")
    args = ap.parse_args(argv)
    try:
        data, expl, _ = analyze(args.run_dir)
        if not (data.run_dir / "medium" / "config.json").exists():
            raise RunDirError(
                f"{data.run_dir / 'medium' / 'config.json'}: missing (the stations' trajectories)"
            )
    except RunDirError as exc:
        print(f"testbed.timeline: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else data.run_dir / "timeline.html"
    tmp = out.with_suffix(".html.tmp")
    try:
        page = render(data, expl)
    except ValueError as exc:  # a malformed medium config (read_trajectories names file and field)
        print(f"testbed.timeline: {exc}", file=sys.stderr)
        return 2
    tmp.write_text(page)
    tmp.replace(out)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
