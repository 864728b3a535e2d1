"""Debian's Chromium for the browser tests, with a CJK font (Debian's fonts-wqy-microhei: without one
the page's Chinese renders as empty boxes): found, or installed with apt-get, and launched once per
session (conftest's `browser` fixture), since Playwright's sync API runs one instance per thread:
a second `sync_playwright()` in a test would fail when another test file started the first."""

from __future__ import annotations

import os
import shutil
import subprocess

CHROMIUM = "/usr/bin/chromium"
CJK_FONT = "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc"
PACKAGES = ["chromium", "fonts-wqy-microhei"]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update"]


def install_chromium() -> str | None:
    """Install Debian's chromium and a CJK font if missing; returns why the browser could not be, or
    None (a font that cannot be installed only leaves Chinese as boxes in the screenshots)."""
    if os.access(CHROMIUM, os.X_OK) and os.path.exists(CJK_FONT):
        return None
    apt = shutil.which("apt-get")
    why = None
    if not apt:
        why = "chromium is missing and apt-get is not available to install it"
    else:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        try:
            subprocess.run([apt, "update", "-qq"], check=True, capture_output=True, timeout=900, env=env)
            subprocess.run([apt, "install", "-y", "-qq", *PACKAGES], check=True, capture_output=True, timeout=1800,
                           env=env)
        except (OSError, subprocess.SubprocessError) as err:
            detail = getattr(err, "stderr", b"") or b""
            why = f"chromium could not be installed with apt-get ({err}; {detail.decode(errors='replace')[-300:]})"
    if os.access(CHROMIUM, os.X_OK):
        return None  # with or without the font
    return why or "apt-get ran but /usr/bin/chromium is still missing"
