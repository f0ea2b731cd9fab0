"""SVG charts for the report and the sweep dashboard, drawn on axes a reader can check: a phase timeline
(Gantt, seconds), latency small multiples (one panel per metric, each with its own ms axis, since TTFT
and TPOT differ by orders of magnitude), and labelled bars whose units never mix on one axis."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

COLORS = ("#1f6feb", "#8250df", "#bf8700", "#cf222e", "#1a7f37", "#0969da", "#9a6700")


def nice_ticks(top: float, count: int = 4) -> list[float]:
    """0 and round steps up to at least `top` (1, 2, 2.5 or 5 times a power of ten)."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    return [round(i * step, 10) for i in range(math.ceil(top / step - 1e-9) + 1)]


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def _axis(x0: float, y0: float, height: float, ticks: list[float], unit: str, width: float) -> list[str]:
    top = ticks[-1] or 1.0
    parts = [
        f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y0 - height}" stroke="#6e7781"/>',
        f'<line x1="{x0}" y1="{y0}" x2="{x0 + width}" y2="{y0}" stroke="#6e7781"/>',
    ]
    for t in ticks:
        y = y0 - t / top * height
        parts.append(
            f'<line x1="{x0 - 3}" y1="{y:.1f}" x2="{x0 + width}" y2="{y:.1f}" stroke="#d0d7de" '
            f'stroke-dasharray="2,3"/><text x="{x0 - 5}" y="{y + 4:.1f}" text-anchor="end">{_fmt(t)}</text>'
        )
    parts.append(
        f'<text x="{x0}" y="{y0 - height - 8:.1f}" text-anchor="middle" class="unit">{html.escape(unit)}'
        f"</text>"
    )
    return parts


def timeline_svg(
    phases: list[tuple[str, float, float]], width: int = 900, svg_id: str = "timeline-chart"
) -> str:
    """One row per phase: a bar from its start to its end on a seconds axis."""
    if not phases:
        return '<p class="muted">No phase events.</p>'
    total = max(t + d for _, t, d in phases) or 1.0
    ticks = nice_ticks(total, 6)
    left, row = 110, 18
    span = width - left - 20
    scale = span / ticks[-1]
    height = len(phases) * row + 40
    parts = [
        f'<svg id="{svg_id}" width="{width}" height="{height}" role="img" aria-label="phase timeline (s)">'
    ]
    for t in ticks:
        x = left + t * scale
        parts.append(
            f'<line x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{len(phases) * row}" stroke="#d0d7de"/>'
            f'<text x="{x:.1f}" y="{len(phases) * row + 14}" text-anchor="middle">{_fmt(t)}</text>'
        )
    parts.append(
        f'<text x="{left + span / 2:.1f}" y="{height - 4}" text-anchor="middle" class="unit">seconds since '
        f"the run started</text>"
    )
    names = list(dict.fromkeys(p for p, _, _ in phases))
    for i, (phase, start, dur) in enumerate(phases):
        color = COLORS[names.index(phase) % len(COLORS)]
        parts.append(
            f'<text x="{left - 6}" y="{i * row + 13}" text-anchor="end">{html.escape(phase)}</text>'
            f'<rect x="{left + start * scale:.1f}" y="{i * row + 3}" width="{max(1.5, dur * scale):.1f}" '
            f'height="{row - 6}" fill="{color}"><title>{html.escape(phase)}: {start:.1f}s + {dur:.1f}s'
            f"</title></rect>"
        )
    return "".join(parts) + "</svg>"


def panels_svg(
    panels: Sequence[tuple[str, Sequence[tuple[str, float | None]]]],
    unit: str,
    svg_id: str,
    panel_w: int = 200,
    height: int = 160,
) -> str:
    """Small multiples: one bar panel per metric with its own 0-based axis in `unit`."""
    left, top_pad, bottom = 44, 22, 34
    width = len(panels) * (panel_w + left) + 10
    parts = [
        (
            f'<svg id="{svg_id}" width="{width}" height="{height + top_pad + bottom}" role="img" '
            f'aria-label="{html.escape(svg_id)} ({html.escape(unit)})">'
        )
    ]
    for p, (title, bars) in enumerate(panels):
        x0, y0 = p * (panel_w + left) + left, height + top_pad
        ticks = nice_ticks(max((v or 0) for _, v in bars) if bars else 0)
        parts += _axis(x0, y0, height, ticks, unit, panel_w)
        parts.append(
            f'<text x="{x0 + panel_w / 2:.1f}" y="12" text-anchor="middle" class="title">'
            f"{html.escape(title)}</text>"
        )
        bar_w = panel_w / max(1, len(bars))
        for i, (label, v) in enumerate(bars):
            x = x0 + i * bar_w + 3
            h = (v or 0) / ticks[-1] * height
            parts.append(
                f'<rect x="{x:.1f}" y="{y0 - h:.1f}" width="{bar_w - 6:.1f}" height="{h:.1f}" '
                f'fill="{COLORS[i % len(COLORS)]}"><title>{html.escape(title)} {html.escape(label)}: '
                f"{'—' if v is None else _fmt(v)} {html.escape(unit)}</title></rect>"
                f'<text x="{x + (bar_w - 6) / 2:.1f}" y="{y0 + 13}" text-anchor="middle">'
                f"{html.escape(label)}</text>"
            )
            if v is not None:
                parts.append(
                    f'<text x="{x + (bar_w - 6) / 2:.1f}" y="{y0 - h - 3:.1f}" text-anchor="middle" '
                    f'class="value">{_fmt(v)}</text>'
                )
    return "".join(parts) + "</svg>"


def scatter_svg(
    points: list[tuple[str, float, float]],
    x_unit: str,
    y_unit: str,
    svg_id: str,
    width: int = 700,
    height: int = 300,
) -> str:
    """Labelled points on two 0-based axes (e.g. median TPOT in ms vs output tok/s)."""
    if not points:
        return '<p class="muted">No benchmarked cells yet.</p>'
    left, bottom, top_pad = 60, 40, 30
    xt, yt = nice_ticks(max(p[1] for p in points), 5), nice_ticks(max(p[2] for p in points), 4)
    plot_w, y0 = width - left - 150, height - bottom  # room right of the last point for its label
    parts = [
        (
            f'<svg id="{svg_id}" width="{width}" height="{height}" role="img" '
            f'aria-label="{html.escape(y_unit)} vs {html.escape(x_unit)}">'
        )
    ]
    parts += _axis(left, y0, y0 - top_pad, yt, y_unit, plot_w)
    for t in xt:
        x = left + t / xt[-1] * plot_w
        parts.append(f'<text x="{x:.1f}" y="{y0 + 14}" text-anchor="middle">{_fmt(t)}</text>')
    parts.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 6}" text-anchor="middle" class="unit">'
        f"{html.escape(x_unit)}</text>"
    )
    for i, (label, x, y) in enumerate(points):
        cx, cy = left + x / xt[-1] * plot_w, y0 - y / yt[-1] * (y0 - top_pad)
        parts.append(
            f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="4" fill="{COLORS[i % len(COLORS)]}"><title>'
            f"{html.escape(label)}: {_fmt(x)} {html.escape(x_unit)}, {_fmt(y)} {html.escape(y_unit)}"
            f'</title></circle><text x="{cx + 6:.1f}" y="{cy + 4:.1f}">{html.escape(label)}</text>'
        )
    return "".join(parts) + "</svg>"
