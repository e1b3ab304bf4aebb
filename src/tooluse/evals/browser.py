"""Headless Chromium for reports: a PNG of a chart, and a page's DOM after its scripts ran.

Uses the system ``chromium`` (Debian's package; ``apt-get install chromium``) through its
command line, so no browser driver is needed: ``--screenshot`` for PNGs, ``--dump-dom`` for
the rendered page, with console messages (errors included) read from its log.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BrowserError", "PageDump", "dump_dom", "find_chromium", "svg_to_png"]

_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
_CONSOLE = re.compile(r'CONSOLE(?:\(\d+\)|:\d+)\] "(.*)", source: (.*)$')


class BrowserError(RuntimeError):
    """No usable headless browser, or it failed."""


@dataclass(frozen=True, kw_only=True)
class PageDump:
    """The DOM after load and every console message (``level`` and text)."""

    dom: str
    console: tuple[str, ...]
    errors: tuple[str, ...]


def find_chromium() -> str:
    """The path of a Chromium (or Chrome) binary, or :class:`BrowserError`."""
    override = os.environ.get("TOOLUSE_CHROMIUM")
    for name in ((override,) if override else ()) + _CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    raise BrowserError("no headless Chromium found: install it (apt-get install chromium)")


def _run(args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="tooluse-chromium-") as profile:
        command = [
            find_chromium(),
            "--headless",
            "--no-sandbox",  # root in containers cannot use the setuid sandbox
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            *args,
        ]
        try:
            return subprocess.run(
                command, capture_output=True, text=True, timeout=timeout, check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise BrowserError(f"chromium did not finish within {timeout:g} s") from exc


def svg_to_png(svg: str, png: str | Path, *, width: int, height: int, timeout: float = 60) -> Path:
    """Render one SVG to a PNG of ``width`` x ``height`` pixels."""
    target = Path(png).resolve()
    with tempfile.TemporaryDirectory(prefix="tooluse-svg-") as scratch:
        page = Path(scratch) / "chart.html"
        page.write_text(
            '<!DOCTYPE html><html><body style="margin:0;background:#fff">' + svg + "</body></html>",
            encoding="utf-8",
        )
        done = _run(
            [f"--screenshot={target}", f"--window-size={width},{height}", page.as_uri()], timeout
        )
    if not target.is_file() or target.stat().st_size == 0:
        raise BrowserError(f"chromium wrote no PNG (exit {done.returncode}): {done.stderr[-400:]}")
    return target


def dump_dom(path: str | Path, *, fragment: str = "", timeout: float = 60) -> PageDump:
    """Load a local page (``fragment`` like ``#selftest``), run its scripts, return its DOM
    and console messages; ``errors`` are the console errors and uncaught exceptions."""
    url = Path(path).resolve().as_uri() + fragment
    done = _run(["--enable-logging=stderr", "--v=0", "--dump-dom", url], timeout)
    if done.returncode != 0 or "<html" not in done.stdout:
        raise BrowserError(f"chromium could not load {url} (exit {done.returncode})")
    console = tuple(m.group(1) for m in map(_CONSOLE.search, done.stderr.splitlines()) if m)
    errors = tuple(
        line
        for line in done.stderr.splitlines()
        if "CONSOLE" in line and ("Uncaught" in line or ":ERROR:" in line)
    )
    return PageDump(dom=done.stdout, console=console, errors=errors)
