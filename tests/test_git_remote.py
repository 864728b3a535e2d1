"""What a git source may be (remote.py): URLs, refs and paths checked before git sees them, and the web
address of a file at a commit. Operator input, yet it lands on git's command line: nothing may be read
as an option or a transport that runs commands."""

from __future__ import annotations

import pytest
from git_upstream import isolate

from rlhelper.errors import ConfigError
from rlhelper.ingest.entries import build_entries
from rlhelper.ingest.git.command import GitFailed, run_git
from rlhelper.ingest.git.remote import GitSpec, blob_base, check_path, check_ref, check_url, sparse_patterns

SHA = "1dda039b9c6311889a9c9a26040677e1254814f9"


@pytest.fixture(autouse=True)
def isolated_git(monkeypatch):
    isolate(monkeypatch)


@pytest.mark.parametrize("url", [
    "https://github.com/verl-project/verl", "https://github.com/verl-project/verl.git", "http://127.0.0.1:8080/x.git",
    "ssh://git@example.org/srv/docs.git", "git@github.com:THUDM/slime.git", "git://127.0.0.1:9418/docs.git",
    "file:///srv/git/docs.git",
])
def test_urls_of_the_allowed_transports_are_accepted(url):
    assert check_url(url) == url


@pytest.mark.parametrize(("url", "says"), [
    ("-oProxyCommand=touch /tmp/x", "not a repository URL"),
    ("--upload-pack=touch /tmp/x", "not a repository URL"),
    ("ext::sh -c touch% /tmp/pwned", "not a repository URL"),
    ("fd::3", "not a repository URL"),
    ("ftp://example.org/x.git", "not a repository URL"),
    ("/srv/git/docs.git", "not a repository URL"),
    ("file://otherhost/srv/docs.git", "not a repository URL"),
    ("ssh://-oProxyCommand=x/y", "not a repository URL"),
    ("git@-oProxyCommand=x:y", "not a repository URL"),
    ("https://github.com/a/b c", "not a repository URL"),
    ("https://github.com/a/b\n--upload-pack=x", "not a repository URL"),
    ("https://user:ghp_secret@github.com/a/b", "holds a password or token"),
])
def test_other_urls_are_refused_with_the_forms_to_use(url, says):
    with pytest.raises(ConfigError, match=says):
        check_url(url)


@pytest.mark.parametrize(("ref", "kept"), [
    ("main", "main"), ("release/v1.2", "release/v1.2"), ("v0.4.1", "v0.4.1"), ("refs/heads/main", "refs/heads/main"),
    (SHA.upper(), SHA), (None, None), ("", None),
])
def test_refs(ref, kept):
    assert check_ref(ref) == kept


@pytest.mark.parametrize("ref", ["-main", "--upload-pack=x", "a..b", "x.lock", "HEAD@{1}", "a b", "a\x1b[2J",
                                 "/main", "main/", ".hidden", "a//b"])
def test_refs_git_would_not_take_or_that_read_as_options_are_refused(ref):
    with pytest.raises(ConfigError):
        check_ref(ref)


def test_a_full_commit_id_pins_the_source():
    assert GitSpec.checked("file:///srv/x.git", SHA).pinned
    assert not GitSpec.checked("file:///srv/x.git", "main").pinned


@pytest.mark.parametrize(("path", "kept"), [
    ("docs", "docs"), ("docs/", "docs"), ("./docs/faq", "docs/faq"), ("docs/faq/faq.rst", "docs/faq/faq.rst"),
    (".", ""), ("docs/中文", "docs/中文"),
])
def test_paths(path, kept):
    assert check_path(path) == kept


@pytest.mark.parametrize(("path", "says"), [
    ("-docs", "starts with '-'"), ("--", "starts with '-'"), ("../secrets", "leaves the repository"),
    ("/etc", "leaves the repository"), ("docs/../../x", "leaves the repository"), ("docs/*.md", "is not read"),
    ("docs/[ab]", "is not read"), ("!docs", "is not read"), (" docs", "is not read"), ("docs\n/x", "is not read"),
])
def test_paths_that_leave_the_repository_or_are_patterns_are_refused(path, says):
    with pytest.raises(ConfigError, match=says):
        check_path(path)


def test_the_whole_repository_among_paths_means_all_of_it():
    assert GitSpec.checked("file:///srv/x.git", None, ["docs", "."]).paths == ()


@pytest.mark.parametrize(("url", "base"), [
    ("https://github.com/verl-project/verl", f"https://github.com/verl-project/verl/blob/{SHA}/"),
    ("git@github.com:THUDM/slime.git", f"https://github.com/THUDM/slime/blob/{SHA}/"),
    ("ssh://git@github.com/RLinf/RLinf.git", f"https://github.com/RLinf/RLinf/blob/{SHA}/"),
    ("https://gitlab.com/group/sub/proj.git", f"https://gitlab.com/group/sub/proj/-/blob/{SHA}/"),
    ("https://gitlab.example.org/team/docs", f"https://gitlab.example.org/team/docs/-/blob/{SHA}/"),
    ("https://codeberg.org/me/docs", f"https://codeberg.org/me/docs/src/commit/{SHA}/"),
    ("https://bitbucket.org/me/docs.git", f"https://bitbucket.org/me/docs/src/{SHA}/"),
    ("https://github.com/only-owner", None),
    ("file:///srv/git/docs.git", None),
    ("https://git.example.org/docs.git", None),
    ("git://127.0.0.1/docs.git", None),
])
def test_the_web_view_of_a_file_at_a_commit(url, base):
    assert blob_base(url, SHA) == base


def test_a_citation_link_escapes_an_untrusted_file_name():
    meta = {"web": f"https://github.com/a/b/blob/{SHA}/", "repo_path": "docs/a b#c?.md"}
    entries, _ = build_entries("# T\n\n## Fix it\n\nDo this.\n", collection="c", doc="docs/a b#c?.md", meta=meta)
    assert entries[-1].url == f"https://github.com/a/b/blob/{SHA}/docs/a%20b%23c%3F.md#fix-it"


def test_sparse_patterns_name_only_documents_under_the_paths():
    patterns = sparse_patterns(("docs/faq", "docs/start/install.rst"))
    assert "/docs/faq/**/*.[mM][dD]" in patterns and "/docs/start/install.rst" in patterns
    assert not any(p in ("/docs/faq", "/docs/faq/") for p in patterns)  # never the whole folder
    assert "*.[mM][dD]" in sparse_patterns(())


def test_a_transport_that_runs_commands_is_refused_by_git_itself(tmp_path):
    """Defence in depth: even a URL that slipped past check_url could not use ext:: (GIT_ALLOW_PROTOCOL)."""
    marker = tmp_path / "pwned"
    with pytest.raises(GitFailed, match="transport 'ext' not allowed"):
        run_git(["ls-remote", "--", f"ext::sh -c touch% {marker}"], timeout=30)
    assert not marker.exists()


def test_git_never_waits_on_a_prompt(tmp_path):
    with pytest.raises(GitFailed) as caught:
        run_git(["ls-remote", "--", "https://127.0.0.1:9/none.git"], timeout=30)
    assert not caught.value.timed_out
