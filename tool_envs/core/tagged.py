"""Find ``<tag>...</tag>`` blocks in model text in linear time.

A regular expression such as ``<answer>(.*?)</answer>`` rescans the rest of the text from every
opening tag that has no closing tag, so a run of thousands of ``<answer>`` tags took seconds.
Here the tags are found in one pass and paired left to right, with the same result as that
expression's ``findall`` (a block runs from an opening tag to the first closing tag after it;
opening tags inside a block are part of its text).
"""

from __future__ import annotations

import functools
import re


@functools.lru_cache(maxsize=16)
def _tag_pattern(tag: str) -> re.Pattern[str]:
    return re.compile(rf"<(/?){re.escape(tag)}>", re.IGNORECASE)


def tagged_blocks(text: str, tag: str) -> list[str]:
    """The contents of every ``<tag>...</tag>`` block in ``text`` (tags matched ignoring case)."""
    blocks: list[str] = []
    start: int | None = None
    for match in _tag_pattern(tag).finditer(text):
        closing = bool(match.group(1))
        if start is None and not closing:
            start = match.end()
        elif start is not None and closing:
            blocks.append(text[start : match.start()])
            start = None
    return blocks


def last_tagged(text: str, tag: str) -> str | None:
    """The stripped content of the last ``<tag>...</tag>`` block, or None when there is none."""
    blocks = tagged_blocks(text, tag)
    return blocks[-1].strip() if blocks else None
