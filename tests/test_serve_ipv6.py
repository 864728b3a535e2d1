"""`rlhelper serve --host ::1` (issue 31, point 7): an IPv6 address is served, not a traceback from
inside Gradio (which built the URL http://:::PORT/ from the bare address and could not parse it)."""

from __future__ import annotations

import socket
import subprocess
import threading
import time

import httpx
import pytest
from clirun import cli_env

from rlhelper.measure import faults
from rlhelper.web import app as web_app
from rlhelper.web import server as web_server


def ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
    except OSError:
        return False
    return True


def free_port6() -> int:
    with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
        s.bind(("::1", 0))
        return s.getsockname()[1]


def test_ipv6_addresses_are_bracketed_for_gradio_and_bare_for_binding():
    assert web_server.gradio_host("::") == web_server.gradio_host("[::]") == "[::]"
    assert web_server.gradio_host("127.0.0.1") == "127.0.0.1"
    assert web_server.is_loopback("::1") and web_server.is_loopback("[::1]") and not web_server.is_loopback("::")
    assert "serving on [::]:7860" in web_server.exposure_warning("::", 7860, None, "f.sqlite3", 20)


@pytest.mark.skipif(not ipv6_loopback(), reason="no IPv6 loopback on this machine")
@pytest.mark.parametrize("host", ["::1", "[::1]"])
def test_serve_on_an_ipv6_address(tmp_path, usem3_cache_dir, seeds_index, host):
    port = free_port6()
    env = cli_env(tmp_path, usem3_cache_dir)  # (httpx cannot parse an IPv6 address in NO_PROXY)
    proc = subprocess.Popen(faults.rlhelper_command("serve", "--host", host, "--port", str(port), "--index",
                                                    str(seeds_index)),
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out: list[str] = []
    err: list[str] = []
    readers = [threading.Thread(target=lambda s=s, into=into: into.extend(s), daemon=True)
               for s, into in ((proc.stdout, out), (proc.stderr, err))]
    for r in readers:
        r.start()
    try:
        deadline = time.monotonic() + 120
        while not any("rlhelper web chat on" in line for line in out):
            assert proc.poll() is None and time.monotonic() < deadline, "".join(err)[-2000:]
            time.sleep(0.3)
        config = httpx.get(f"http://[::1]:{port}/config", timeout=10, trust_env=False).json()
        assert config["title"] == web_app.TITLE
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        for r in readers:
            r.join(timeout=5)
    assert f"http://[::1]:{port}" in "".join(out)
    assert "Traceback" not in "".join(err)
