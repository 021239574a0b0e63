"""The report's one way from artifact text to HTML, and the check every page passes before it
is written. `text` turns any value an artifact holds (names, ids, config values, published
texts) into HTML text, quotes included, so it is inert in an element and in a quoted attribute.
`page_problems` parses the finished page (the report's `_page` refuses one with any) for any tag or an attribute the
report never writes, or a link other than its own #anchors: whatever escaping a future change
forgets, report.html never carries runnable markup from a run directory."""

from __future__ import annotations

from html import escape
from html.parser import HTMLParser
from typing import Any

# What the report's own HTML and SVG use (nothing that runs or loads anything).
TAGS = frozenset(
    "html head meta title style body h1 h2 h3 h4 p nav a section table tr th td figure div "
    "details summary ul li span b i code svg text line circle polyline polygon".split()
)
ATTRIBUTES = frozenset(
    "lang charset name content href id class style xmlns width height viewbox role aria-label "
    "font-family font-size font-weight text-anchor fill fill-opacity stroke stroke-width "
    "stroke-dasharray points x y x1 x2 y1 y2 cx cy r".split()
)


def text(value: Any) -> str:
    """Any value as HTML text: `str(value)` with &, <, >, " and ' escaped."""
    return escape(str(value), quote=True)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self.styles = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in TAGS:
            self.problems.append(f"<{tag}>")
        self.styles += tag == "style"
        for name, value in attrs:
            if name not in ATTRIBUTES:
                self.problems.append(f"<{tag} {name}>")
            elif name == "href" and not (value or "").startswith("#"):
                self.problems.append(f"<{tag} href={value!r}>")

    handle_startendtag = handle_starttag


def page_problems(html: str) -> list[str]:
    """The tags and attributes of `html` the report never writes itself (empty: a safe page)."""
    parser = _Tags()
    parser.feed(html)
    parser.close()
    if parser.styles > 1:
        parser.problems.append("a second <style>")
    return parser.problems
