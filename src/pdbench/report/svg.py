"""Small inline SVG charts for the report: no script, no library, no network. Every chart has a
title, labelled axes and a legend where it has several series; intervals are whiskers or bands."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pdbench.core.rounds_display import FIRST_ROUND, round_index_of
from pdbench.report.markup import text

FONT = "font-family='system-ui, -apple-system, Segoe UI, sans-serif'"
GRID = "#e3e7ec"
INK = "#1f2933"
MUTED = "#5f6b7a"


@dataclass(frozen=True, slots=True)
class Point:
    """One labelled value with its interval (None: not known)."""

    label: str
    value: float | None
    low: float | None = None
    high: float | None = None
    color: str = "#3b6fd8"
    note: str = ""


def _num(x: float) -> str:
    return f"{x:.1f}"


def x_scale(value: float, lo: float, hi: float, left: float, width: float) -> float:
    """Pixel x of `value` on an axis from lo to hi drawn from `left` over `width` pixels."""
    return left + (value - lo) / (hi - lo) * width if hi > lo else left


TITLE_CHAR_EM = 0.62  # the widest average advance of a bold title character, in ems


def title_fit(title: str, width: float) -> tuple[str, float]:
    """The title as drawn in `width - 16` pixels and its font size: 14 px, smaller (down to
    10 px) when it would not fit, and at 10 px cut with an ellipsis (the whole title stays the
    chart's tooltip and accessible name)."""
    room = width - 16
    size = min(14.0, room / max(1, len(title)) / TITLE_CHAR_EM)
    if size >= 10.0:
        return title, round(size, 1)
    keep = max(1, int(room / (10.0 * TITLE_CHAR_EM)) - 1)
    return title[:keep].rstrip() + "…", 10.0


def _open(width: int, height: int, title: str) -> list[str]:
    shown, size = title_fit(title, width)
    return [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
        f"viewBox='0 0 {width} {height}' role='img' aria-label='{text(title)}' {FONT}>",
        f"<title>{text(title)}</title>",
        f"<text x='8' y='18' font-size='{size:g}' font-weight='600' fill='{INK}'>"
        f"{text(shown)}</text>",
    ]


LABEL_CHAR_PX = 7.2  # the widest average character advance of the 12 px labels (DejaVu Sans)


def interval_dots(
    points: Sequence[Point],
    title: str,
    axis_label: str,
    lo: float = 0.0,
    hi: float = 1.0,
    percent: bool = True,
    legend: Sequence[tuple[str, str]] = (),
) -> str:
    """Horizontal dot-and-whisker chart: one row per point, value with its interval. The label
    column is as wide as the longest label needs (`LABEL_CHAR_PX` a character), so none is cut."""
    longest = max((len(p.label) for p in points), default=0)
    label_w, plot_w, row_h = max(260, int(longest * LABEL_CHAR_PX) + 16), 330, 24
    width = label_w + plot_w + 90
    top = 40 if not legend else 58
    height = top + row_h * len(points) + 44
    out = _open(width, height, title)
    for i, (name, color) in enumerate(legend):
        x = label_w + i * 150
        out.append(f"<circle cx='{x}' cy='36' r='5' fill='{color}'/>")
        out.append(f"<text x='{x + 10}' y='40' font-size='12' fill='{INK}'>{text(name)}</text>")
    for k in range(6):
        v = lo + (hi - lo) * k / 5
        x = x_scale(v, lo, hi, label_w, plot_w)
        out.append(
            f"<line x1='{_num(x)}' y1='{top - 6}' x2='{_num(x)}' "
            f"y2='{top + row_h * len(points)}' stroke='{GRID}'/>"
        )
        tick = f"{100 * v:.0f}%" if percent else f"{v:.3g}"
        out.append(
            f"<text x='{_num(x)}' y='{top + row_h * len(points) + 16}' font-size='11' "
            f"text-anchor='middle' fill='{MUTED}'>{tick}</text>"
        )
    out.append(
        f"<text x='{label_w + plot_w / 2:.0f}' y='{height - 8}' font-size='12' "
        f"text-anchor='middle' fill='{MUTED}'>{text(axis_label)}</text>"
    )
    for i, p in enumerate(points):
        y = top + row_h * i + row_h / 2
        out.append(
            f"<text x='{label_w - 8}' y='{y + 4:.0f}' font-size='12' text-anchor='end' "
            f"fill='{INK}'>{text(p.label)}</text>"
        )
        if p.value is None:
            out.append(
                f"<text x='{label_w + 4}' y='{y + 4:.0f}' font-size='11' fill='{MUTED}'>"
                "no value</text>"
            )
            continue
        if p.low is not None and p.high is not None:
            x1 = x_scale(p.low, lo, hi, label_w, plot_w)
            x2 = x_scale(p.high, lo, hi, label_w, plot_w)
            out.append(
                f"<line class='whisker' x1='{_num(x1)}' y1='{y:.1f}' x2='{_num(x2)}' "
                f"y2='{y:.1f}' stroke='{p.color}' stroke-width='2'/>"
            )
            for xe in (x1, x2):
                out.append(
                    f"<line x1='{_num(xe)}' y1='{y - 5:.1f}' x2='{_num(xe)}' y2='{y + 5:.1f}' "
                    f"stroke='{p.color}' stroke-width='2'/>"
                )
        x = x_scale(p.value, lo, hi, label_w, plot_w)
        out.append(
            f"<circle class='dot' cx='{_num(x)}' cy='{y:.1f}' r='5' fill='{p.color}'>"
            f"<title>{text(p.label)}: {text(_fmt(p.value, p.low, p.high, percent))}</title>"
            "</circle>"
        )
        out.append(
            f"<text x='{label_w + plot_w + 8}' y='{y + 4:.0f}' font-size='11' fill='{MUTED}'>"
            f"{text(p.note)}</text>"
        )
    out.append("</svg>")
    return "".join(out)


def _fmt(value: float, low: float | None, high: float | None, percent: bool) -> str:
    f = (lambda v: f"{100 * v:.1f}%") if percent else (lambda v: f"{v:.3g}")
    if low is None or high is None:
        return f(value)
    return f"{f(value)} [{f(low)}, {f(high)}]"


def band_chart(
    values: Sequence[float],
    lows: Sequence[float | None] | None,
    highs: Sequence[float | None] | None,
    title: str,
    color: str = "#3b6fd8",
) -> str:
    """Cooperation over rounds (0-100%) with its 95% band; x in whole rounds (1-based)."""
    width, height, left, right, top, bottom = 680, 220, 52, 16, 34, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    n = len(values)
    out = _open(width, height, title)

    def px(i: int) -> float:
        return left + (i / max(1, n - 1)) * plot_w if n > 1 else left + plot_w / 2

    def py(v: float) -> float:
        return top + (1.0 - v) * plot_h

    for k in range(5):
        v = k / 4
        out.append(
            f"<line x1='{left}' y1='{_num(py(v))}' x2='{width - right}' y2='{_num(py(v))}' "
            f"stroke='{GRID}'/><text x='{left - 6}' y='{py(v) + 4:.1f}' font-size='11' "
            f"text-anchor='end' fill='{MUTED}'>{100 * v:.0f}%</text>"
        )
    for r in round_ticks(n):
        out.append(
            f"<text x='{_num(px(round_index_of(r)))}' y='{height - bottom + 16}' font-size='11' "
            f"text-anchor='middle' fill='{MUTED}'>{r}</text>"
        )
    out.append(
        f"<text x='{left + plot_w / 2:.0f}' y='{height - 6}' font-size='12' text-anchor='middle' "
        f"fill='{MUTED}'>round</text>"
    )
    if lows and highs and n:
        upper = [(px(i), py(h)) for i, h in enumerate(highs) if h is not None]
        lower = [(px(i), py(lw)) for i, lw in enumerate(lows) if lw is not None]
        if upper and lower:
            path = " ".join(f"{_num(x)},{_num(y)}" for x, y in upper + lower[::-1])
            out.append(
                f"<polygon class='band' points='{path}' fill='{color}' fill-opacity='0.18' "
                "stroke='none'><title>95% interval over games</title></polygon>"
            )
    if n:
        line = " ".join(f"{_num(px(i))},{_num(py(v))}" for i, v in enumerate(values))
        out.append(
            f"<polyline class='line' points='{line}' fill='none' stroke='{color}' "
            "stroke-width='2'/>"
        )
    out.append("</svg>")
    return "".join(out)


def round_ticks(n: int, target: int = 8) -> list[int]:
    """Whole-round tick labels (1-based) from 1 to n, at a 1-2-5 step."""
    if n <= 0:
        return []
    step = 1
    for base in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000):
        step = base
        if n / base <= target:
            break
    ticks = [FIRST_ROUND] + list(range(step, n + 1, step))
    return sorted(set(t for t in ticks if t <= n))


@dataclass(frozen=True, slots=True)
class Series:
    """A named series of an x-y chart: one value (and interval) per x; dashed for reference
    numbers from elsewhere."""

    name: str
    values: Sequence[float | None]
    color: str
    lows: Sequence[float | None] | None = None
    highs: Sequence[float | None] | None = None
    dashed: bool = False


def xy_chart(
    xs: Sequence[float],
    series: Sequence[Series],
    title: str,
    x_label: str,
    y_range: tuple[float, float] = (0.0, 1.0),
    percent: bool = True,
    hlines: Sequence[tuple[float, str]] = (),
) -> str:
    """Values against a numeric x: a line with dots per series (whiskers where intervals are
    given), the legend under the title; `hlines`: (y, label) reference lines drawn across the
    plot, dashed, labelled at their right end (class 'threshold')."""
    width, left, right, top, bottom = 680, 56, 16, 40 + 18 * ((len(series) + 2) // 3), 44
    height = top + 200 + bottom
    plot_w, plot_h = width - left - right, height - top - bottom
    lo_x, hi_x = (min(xs), max(xs)) if xs else (0.0, 1.0)
    lo_y, hi_y = y_range
    out = _open(width, height, title)

    def px(x: float) -> float:
        return x_scale(x, lo_x, hi_x, left, plot_w) if hi_x > lo_x else left + plot_w / 2

    def py(v: float) -> float:
        return top + (1.0 - (v - lo_y) / (hi_y - lo_y if hi_y > lo_y else 1.0)) * plot_h

    for i, s in enumerate(series):
        x, y = 16 + (i % 3) * 220, 36 + 18 * (i // 3)
        dash = " stroke-dasharray='5 3'" if s.dashed else ""
        out.append(
            f"<line x1='{x}' y1='{y}' x2='{x + 22}' y2='{y}' stroke='{s.color}' "
            f"stroke-width='2'{dash}/><text x='{x + 28}' y='{y + 4}' font-size='12' "
            f"fill='{INK}'>{text(s.name)}</text>"
        )
    for k in range(5):
        v = lo_y + (hi_y - lo_y) * k / 4
        tick = f"{100 * v:.0f}%" if percent else f"{v:.3g}"
        out.append(
            f"<line x1='{left}' y1='{_num(py(v))}' x2='{width - right}' y2='{_num(py(v))}' "
            f"stroke='{GRID}'/><text x='{left - 6}' y='{py(v) + 4:.1f}' font-size='11' "
            f"text-anchor='end' fill='{MUTED}'>{tick}</text>"
        )
    for x in xs:
        out.append(
            f"<text x='{_num(px(x))}' y='{height - bottom + 16}' font-size='11' "
            f"text-anchor='middle' fill='{MUTED}'>{x:g}</text>"
        )
    out.append(
        f"<text x='{left + plot_w / 2:.0f}' y='{height - 6}' font-size='12' text-anchor='middle' "
        f"fill='{MUTED}'>{text(x_label)}</text>"
    )
    for y, label in hlines:
        out.append(
            f"<line class='threshold' x1='{left}' y1='{_num(py(y))}' x2='{width - right}' "
            f"y2='{_num(py(y))}' stroke='{INK}' stroke-width='1.5' stroke-dasharray='6 4'>"
            f"<title>{text(label)}</title></line><text x='{width - right - 4}' "
            f"y='{_num(py(y) - 4)}' font-size='11' text-anchor='end' fill='{INK}'>"
            f"{text(label)}</text>"
        )
    for s in series:
        known = [(x, v) for x, v in zip(xs, s.values, strict=True) if v is not None]
        dash = " stroke-dasharray='5 3'" if s.dashed else ""
        if len(known) > 1:
            line = " ".join(f"{_num(px(x))},{_num(py(v))}" for x, v in known)
            out.append(
                f"<polyline points='{line}' fill='none' stroke='{s.color}' stroke-width='2'{dash}/>"
            )
        for i, (x, v) in enumerate(zip(xs, s.values, strict=True)):
            if v is None:
                continue
            low = s.lows[i] if s.lows else None
            high = s.highs[i] if s.highs else None
            if low is not None and high is not None:
                out.append(
                    f"<line class='whisker' x1='{_num(px(x))}' y1='{_num(py(low))}' "
                    f"x2='{_num(px(x))}' y2='{_num(py(high))}' stroke='{s.color}' "
                    "stroke-width='2'/>"
                )
            out.append(
                f"<circle class='dot' cx='{_num(px(x))}' cy='{_num(py(v))}' r='4' "
                f"fill='{s.color}'><title>{text(s.name)} at {x:g}: "
                f"{text(_fmt(v, low, high, percent))}</title></circle>"
            )
    out.append("</svg>")
    return "".join(out)
