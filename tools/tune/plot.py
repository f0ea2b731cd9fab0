"""The Pareto plot as a standalone SVG: output tok/s per node against median TTFT, one dot per
measured candidate, the Pareto front joined, the chosen one circled."""

from __future__ import annotations

from collections.abc import Callable
from html import escape

from tools.tune.records import Trial
from tools.tune.results import TuneOutcome, pareto

W, H, PAD = 560, 340, 56


def _scale(lo: float, hi: float, a: float, b: float) -> Callable[[float], float]:
    span = (hi - lo) or 1.0
    return lambda v: a + (v - lo) / span * (b - a)


def pareto_svg(trials: list[Trial], front: list[Trial], chosen: str | None) -> str:
    """SVG text; an empty chart says so when nothing was measured."""
    points = [t for t in trials if t.measured and t.output_tok_s and t.ttft_ms is not None]
    out = [
        (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" '
            f'font-size="11"><rect width="{W}" height="{H}" fill="white"/>'
        )
    ]
    if not points:
        out.append(f'<text x="{W / 2}" y="{H / 2}" text-anchor="middle">no measured candidate</text></svg>')
        return "".join(out)
    xs, ys = [t.ttft_ms or 0.0 for t in points], [t.output_tok_s or 0.0 for t in points]
    sx = _scale(0, max(xs) * 1.1, PAD, W - 20)
    sy = _scale(0, max(ys) * 1.1, H - PAD, 20)
    out += [
        f'<line x1="{PAD}" y1="{H - PAD}" x2="{W - 20}" y2="{H - PAD}" stroke="black"/>',
        f'<line x1="{PAD}" y1="20" x2="{PAD}" y2="{H - PAD}" stroke="black"/>',
        f'<text x="{(W + PAD) / 2}" y="{H - 16}" text-anchor="middle">median TTFT (ms)</text>',
        (
            f'<text x="14" y="{H / 2}" transform="rotate(-90 14 {H / 2})" text-anchor="middle">'
            f"output tok/s per node</text>"
        ),
    ]
    for frac in (0, 0.5, 1.0):
        xv, yv = max(xs) * 1.1 * frac, max(ys) * 1.1 * frac
        out.append(f'<text x="{sx(xv):.0f}" y="{H - PAD + 14}" text-anchor="middle">{xv:.0f}</text>')
        out.append(f'<text x="{PAD - 4}" y="{sy(yv) + 4:.0f}" text-anchor="end">{yv:.0f}</text>')
    line = sorted(front, key=lambda t: t.ttft_ms or 0)
    if len(line) > 1:
        path = " ".join(f"{sx(t.ttft_ms or 0.0):.1f},{sy(t.output_tok_s or 0.0):.1f}" for t in line)
        out.append(f'<polyline points="{path}" fill="none" stroke="#c0392b" stroke-dasharray="4 3"/>')
    front_keys = {t.key for t in front}
    for t in points:
        x, y = sx(t.ttft_ms or 0.0), sy(t.output_tok_s or 0.0)
        fill = "#c0392b" if t.key in front_keys else "#7f8c8d"
        out.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{fill}"><title>{escape(t.key)}</title></circle>'
        )
        if t.key == chosen:
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="9" fill="none" stroke="black"/>')
            out.append(f'<text x="{x + 12:.1f}" y="{y - 8:.1f}">chosen: {escape(t.key)}</text>')
    out.append("</svg>")
    return "".join(out)


def plot(outcome: TuneOutcome) -> str:
    """The outcome's plot: every measured candidate of both searches (the exhaustive grid's when run)."""
    trials = {t.key: t for t in (outcome.exhaustive.trials if outcome.exhaustive else [])}
    trials.update({t.key: t for t in outcome.search.trials if t.measured})
    points = list(trials.values())
    return pareto_svg(points, pareto(points), outcome.search.best)
