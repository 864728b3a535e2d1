"""`rlhelper serve --host ::1` (issue 31, point 7): an IPv6 address is served, not a traceback from
inside Gradio (which built the URL http://:::PORT/ from the bare address and could not parse it)."""

from __future__ import annotations

import httpx
import pytest
from clirun import cli_env

from rlhelper.measure.inputtrials import ipv6_port, serving
from rlhelper.web import app as web_app
from rlhelper.web import server as web_server


def test_ipv6_addresses_are_bracketed_for_gradio_and_bare_for_binding():
    assert web_server.gradio_host("::") == web_server.gradio_host("[::]") == "[::]"
    assert web_server.gradio_host("127.0.0.1") == "127.0.0.1"
    assert web_server.is_loopback("::1") and web_server.is_loopback("[::1]") and not web_server.is_loopback("::")
    assert "serving on [::]:7860" in web_server.exposure_warning("::", 7860, None, "f.sqlite3", 20)


@pytest.mark.skipif(ipv6_port() is None, reason="no IPv6 loopback on this machine")
@pytest.mark.parametrize("host", ["::1", "[::1]"])
def test_serve_on_an_ipv6_address(tmp_path, usem3_cache_dir, seeds_index, host):
    port = ipv6_port()
    env = cli_env(tmp_path, usem3_cache_dir)  # (httpx cannot parse an IPv6 address in NO_PROXY)
    with serving(["serve", "--host", host, "--port", str(port), "--index", str(seeds_index)], env,
                 "rlhelper web chat on") as (out, err):
        config = httpx.get(f"http://[::1]:{port}/config", timeout=10, trust_env=False).json()
        assert config["title"] == web_app.TITLE
    assert f"http://[::1]:{port}" in "".join(out)
    assert "Traceback" not in "".join(err)
