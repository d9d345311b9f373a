"""The HTML report of a batch replay: one self-contained page (inline CSS and JavaScript, the
report's JSON embedded) with the fire rate per entry, the budget-use histogram, the top budget
consumers per book, the diff view, the never-fired entries and the failed chats.

Its templates are package data (``lorescan/data/batch.html``, ``batch.css``, ``batch.js``), read as
the single-chat report reads its own (:func:`lorescan._report._asset`).
"""

from __future__ import annotations

import html
from string import Template
from typing import Any

from .._report import _asset, _json_for_script

#: bars per chart: the page stays light whatever the size of the books
MAX_BARS = 100


def render_batch_page(report: dict[str, Any], title: str = "lorescan batch replay", edited: str | None = None) -> str:
    """The page for a report from :func:`lorescan._batch.report`."""
    data = {**report, "per_chat": report["per_chat"][:1000], "max_bars": MAX_BARS, "edited": edited}
    summary = (f"{report['chats']} chats · {report['generations']} generations · {len(report['entries'])} entries, "
               f"{len(report['never_fired'])} never fired · budget overflowed in {report['overflows']} generations · "
               f"{len(report['failures'])} failed chats")
    return Template(_asset("batch.html")).substitute(
        title=html.escape(title), summary=html.escape(summary), css=_asset("batch.css"), js=_asset("batch.js"),
        data=_json_for_script(data))
