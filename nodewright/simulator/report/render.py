"""The report's blocks and how they are written: Markdown and self-contained HTML.

Role: `Block` (one heading, paragraph, table, image, list, links or preformatted text) is what
the report's content (`nodewright.simulator.report`) is made of; `to_markdown` and `to_html`
render the same blocks, so report.md and report.html always say the same thing. Also the small
formatters the content shares (seconds, dollars, counts, times).
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass


@dataclass(frozen=True, slots=True)
class Block:
    """One piece of the report: kind is h1, h2, h3, p, table, image, list, links or pre.

    An h3's `items[0]` is its anchor; a links block's `rows` are (text, anchor) pairs.
    """

    kind: str
    text: str = ""
    rows: tuple[tuple[str, ...], ...] = ()
    items: tuple[str, ...] = ()


def format_seconds(value: Any) -> str:
    return "-" if value is None else f"{float(value):.1f} s"


def format_usd(value: float) -> str:
    return f"${value:,.2f}"


def format_moves(moves: dict[str, Any]) -> str:
    per = moves["pods_moved_per_dollar_saved"]
    rate = f"{per:g} per dollar saved" if per is not None else "nothing saved"
    return f"{moves['pods_moved']} ({rate}; saved {format_usd(moves['saved_usd'])})"


def format_counts(values: dict[str, int]) -> str:
    return ", ".join(f"{count} {name}" for name, count in values.items())


def as_number(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


def format_relative(at: float | None, warning: float) -> str:
    return "-" if at is None else f"{at - warning:+.1f} s"


def format_iso(t: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(blocks: Sequence[Block]) -> str:
    """The blocks as GitHub Markdown."""
    out: list[str] = []
    for block in blocks:
        if block.kind == "h1":
            out.append(f"# {block.text}\n")
        elif block.kind == "h2":
            out.append(f"## {block.text}\n")
        elif block.kind == "h3":
            out.append(f'<a id="{block.items[0]}"></a>\n\n### {block.text}\n')
        elif block.kind == "links":
            out.append("\n".join(f"- [{text}](#{anchor})" for text, anchor in block.rows) + "\n")
        elif block.kind == "p":
            out.append(f"{block.text}\n")
        elif block.kind == "list":
            out.append("\n".join(f"- {item}" for item in block.items) + "\n")
        elif block.kind == "table" and block.rows:
            header, *rows = block.rows
            lines = ["| " + " | ".join(_md_cell(c) for c in header) + " |", "|" + "---|" * len(header)]
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
            out.append("\n".join(lines) + "\n")
        elif block.kind == "image":
            caption = block.items[0] if block.items else block.text
            out.append(f"![{caption}]({block.text})\n")
        elif block.kind == "pre":
            out.append("```\n" + block.text.rstrip() + "\n```\n")
    return "\n".join(out)


_STYLE = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; max-width: 1100px; margin: 2em auto;
       padding: 0 1em; color: #222; line-height: 1.45; }
h1 { border-bottom: 2px solid #2a9d8f; padding-bottom: .3em; }
h2 { margin-top: 1.6em; color: #264653; }
table { border-collapse: collapse; margin: .6em 0; font-size: 14px; }
th, td { border: 1px solid #ddd; padding: 4px 10px; text-align: left; vertical-align: top; }
th { background: #f3f6f6; }
img { max-width: 100%; border: 1px solid #eee; margin: .4em 0; }
figcaption { color: #555; font-size: 13px; margin-bottom: 1em; }
pre { background: #f7f7f7; padding: .8em; overflow-x: auto; font-size: 12px; }
"""


def to_html(blocks: Sequence[Block], directory: Path, title: str) -> str:
    """The blocks as one self-contained HTML page (images inlined)."""
    out = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Nodewright simulation: {html.escape(title)}</title><style>{_STYLE}</style></head><body>",
    ]
    for block in blocks:
        text = html.escape(block.text)
        if block.kind in ("h1", "h2"):
            out.append(f"<{block.kind}>{text}</{block.kind}>")
        elif block.kind == "h3":
            out.append(f'<h3 id="{html.escape(block.items[0])}">{text}</h3>')
        elif block.kind == "links":
            links = (
                f'<li><a href="#{html.escape(anchor)}">{html.escape(label)}</a></li>' for label, anchor in block.rows
            )
            out.append("<ul>" + "".join(links) + "</ul>")
        elif block.kind == "p":
            out.append(f"<p>{text}</p>")
        elif block.kind == "list":
            out.append("<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in block.items) + "</ul>")
        elif block.kind == "table" and block.rows:
            header, *rows = block.rows
            head = "".join(f"<th>{html.escape(c)}</th>" for c in header)
            body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        elif block.kind == "image":
            path = directory / block.text
            data = base64.b64encode(path.read_bytes()).decode() if path.exists() else ""
            caption = html.escape(block.items[0] if block.items else block.text)
            out.append(
                f'<figure><img alt="{caption}" src="data:image/png;base64,{data}"><figcaption>{caption}'
                "</figcaption></figure>"
            )
        elif block.kind == "pre":
            out.append(f"<pre>{text}</pre>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
