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


def test_a_repository_with_nothing_to_index_is_a_clean_exit_with_a_message(env, tmp_path):
    """A repository whose closed threads hold no fix (a stale bot closed them) is a normal state: exit 0."""
    import json

    notice = {"author": {"login": "stale"}, "authorAssociation": "NONE", "createdAt": "2025-03-01T00:00:00Z",
              "body": "This issue is stale because it has had no activity. It will be closed in 7 days.",
              "url": "https://github.example/acme/widgetrl/issues/3#issuecomment-1"}
    export = tmp_path / "issues.json"
    export.write_text(json.dumps([{"number": 3, "title": "Gizmo stalls", "body": "It stalls.", "state": "CLOSED",
                                   "url": "https://github.example/acme/widgetrl/issues/3", "comments": [notice]}]))
    proc = rlhelper(["ingest", "--github", "acme/widgetrl", "--github-export", str(export), "--index",
                     str(tmp_path / "index")], env)
    assert proc.returncode == 0, proc.stderr
    assert "nothing to index from acme/widgetrl" in proc.stdout and "Traceback" not in proc.stderr
    assert not (tmp_path / "index").exists()


def test_a_bad_alias_is_a_one_line_error(env, tmp_path):
    export = tmp_path / "issues.json"
    export.write_text("[]")
    message = one_line_error(rlhelper(["ingest", "--github", "acme/widgetrl", "--github-export", str(export),
                                       "--github-alias", "oldacme-widgetrl"], env))
    assert "--github-alias 'oldacme-widgetrl' is not OLD=NEW" in message
