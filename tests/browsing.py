"""Debian's Chromium for the browser tests: found, or installed with apt-get, and launched once per
session (conftest's `browser` fixture), since Playwright's sync API runs one instance per thread:
a second `sync_playwright()` in a test would fail when another test file started the first."""

from __future__ import annotations

import os
import shutil
import subprocess

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update"]


def install_chromium() -> str | None:
    """Install Debian's chromium if missing; returns why it could not be, or None."""
    if os.access(CHROMIUM, os.X_OK):
        return None
    apt = shutil.which("apt-get")
    if not apt:
        return "chromium is missing and apt-get is not available to install it"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    try:
        subprocess.run([apt, "update", "-qq"], check=True, capture_output=True, timeout=900, env=env)
        subprocess.run([apt, "install", "-y", "-qq", "chromium"], check=True, capture_output=True, timeout=1800,
                       env=env)
    except (OSError, subprocess.SubprocessError) as err:
        detail = getattr(err, "stderr", b"") or b""
        return f"chromium could not be installed with apt-get ({err}; {detail.decode(errors='replace')[-300:]})"
    return None if os.access(CHROMIUM, os.X_OK) else "apt-get ran but /usr/bin/chromium is still missing"
