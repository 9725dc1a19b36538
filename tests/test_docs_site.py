"""docs/check_site.py, the reader's check of the built docs site, catches what it is for: a link
to a missing page or anchor, and (with Debian's chromium installed) an uncaught exception, a
console error and a failed request, while a clean page passes. On a tiny site made here, so it
needs neither the docs toolchain nor a build."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "docs" / "check_site.py"
_spec = importlib.util.spec_from_file_location("check_site", SCRIPT)
check_site = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_site)

# An icon of its own, so that the browser asks for no /favicon.ico.
PAGE = '<!doctype html><html><head><link rel="icon" href="data:,"></head><body>{}</body></html>'


@pytest.fixture
def site(tmp_path):
    (tmp_path / "index.html").write_text(
        PAGE.format(
            '<a href="b.html#here">ok</a> <a href="b.html#gone">x</a> <a href="c.html">x</a>'
        )
    )
    (tmp_path / "b.html").write_text(PAGE.format('<h2 id="here">b</h2><a href="#here">up</a>'))
    (tmp_path / "broken.html").write_text(
        PAGE.format('<script>console.error("boom"); missing()</script><img src="no.png">')
    )
    return tmp_path


def test_links_to_missing_pages_and_anchors_are_named(site):
    assert check_site.broken_links(site) == [
        "broken.html: no.png: no such file",
        "index.html: b.html#gone: no id 'gone' in b.html",
        "index.html: c.html: no such file",
    ]


@pytest.mark.skipif(not shutil.which("chromium"), reason="needs Debian's chromium")
def test_the_browser_reports_console_errors_and_passes_clean_pages(site):
    problems, loaded, _ = check_site.browse(site, shutil.which("chromium"), None)
    assert loaded == 3
    assert not [p for p in problems if not p.startswith("broken.html: ")]
    assert any("console.error: boom" in p for p in problems)
    assert any("uncaught exception: ReferenceError: missing is not defined" in p for p in problems)
    assert any(p.startswith("broken.html: HTTP 404:") and "no.png" in p for p in problems)
