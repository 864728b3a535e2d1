"""`rlhelper ingest --github`'s refusals: each a one-line error that says what to do, before any work."""

from __future__ import annotations

import pytest
from clirun import cli_env, one_line_error, rlhelper


@pytest.fixture
def env(tmp_path, usem3_cache_dir):
    return cli_env(tmp_path / "home", usem3_cache_dir, GITHUB_TOKEN="")


@pytest.mark.parametrize(("args", "says"), [
    (["--since", "2025-01-01"], "--since only applies with --github"),
    (["--labels", "bug", "--include-unresolved"], "--labels, --include-unresolved only applies with --github"),
    (["--github", "acme/widgetrl", "docs"], "give PATHS in another run"),
])
def test_options_out_of_place_are_usage_errors(env, tmp_path, args, says):
    (tmp_path / "docs").mkdir()
    proc = rlhelper(["ingest", *args], env, cwd=tmp_path)
    assert proc.returncode == 2 and says in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize(("args", "says"), [
    (["--github", "verl"], "is not a repository name: give it as OWNER/REPO"),
    (["--github", "acme/widgetrl", "--github-token-env", "NO_SUCH_VAR_FOR_RLHELPER"],
     "--github-token-env names NO_SUCH_VAR_FOR_RLHELPER, which is not set"),
    (["--github", "acme/widgetrl", "--github-api-url", "ftp://example.org"], "is not an http(s) URL"),
    (["--github", "acme/widgetrl", "--since", "last tuesday", "--github-api-url", "http://127.0.0.1:9"],
     "--since 'last tuesday' is not a date"),
])
def test_bad_values_are_one_line_errors(env, args, says):
    message = one_line_error(rlhelper(["ingest", *args], env))
    assert says in message
