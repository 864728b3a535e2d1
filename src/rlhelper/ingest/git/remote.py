"""What a git source is: a repository URL, a ref and the paths to read, each checked before git sees it,
and where its files are shown on the web.

    spec = GitSpec.checked("https://github.com/verl-project/verl", ref="main", paths=["docs/faq"])
    spec.display()                      -> "https://github.com/verl-project/verl @ main (docs/faq)"
    blob_base(spec.url, commit)         -> "https://github.com/verl-project/verl/blob/<commit>/" or None
    sparse_patterns(spec.paths)         -> the sparse-checkout patterns of the docs under those paths

URLs, refs and paths come from the operator, yet they end up on git's command line, so each is held
to a shape that cannot be read as an option or a transport: only the file, https, http, ssh and git
schemes (and ssh's `user@host:path`), nothing starting with "-", no password in a URL (it would be
stored in the index's manifest: a credential helper or an ssh key holds it instead), no glob or
control characters in a path.

A citation links to the file at the commit read, as the shipped collections do, for the hosts whose
file views have a known address (GitHub, GitLab, Gitea/Codeberg, Bitbucket). Any other host, and a
file:// repository, has no web view to link to: citations then give the file and its lines only,
and `ingest`/`sync` say so.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import quote, urlsplit

from ...errors import ConfigError
from ..sources import DOC_SUFFIXES

SCHEMES = ("file", "https", "http", "ssh", "git")
_SCP_LIKE = re.compile(r"^(?P<user>[A-Za-z0-9._~+-]+)@(?P<host>[A-Za-z0-9.-]+):(?P<path>[^\s]+)$")
_HEX_COMMIT = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
# A branch or tag name as `git check-ref-format` accepts it, kept to the characters refs use in practice.
_REF = re.compile(r"^(?![-/])(?!.*\.\.)(?!.*@\{)(?!.*//)(?!.*\.lock(?:/|$))(?!.*/\.)(?!\.)[A-Za-z0-9._/+-]{1,200}(?<![./])$")
_PATH_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f*?\[\]\\!#]")
MAX_PATHS = 50


@dataclass(frozen=True)
class GitSpec:
    url: str
    ref: str | None = None  # a branch, a tag, a full commit id; None: the remote's default branch
    paths: tuple[str, ...] = ()  # folders or files inside the repository; (): all of it

    @classmethod
    def checked(cls, url: str, ref: str | None = None, paths=()) -> GitSpec:
        """The spec, each part checked (ConfigError saying what is wrong and how to give it)."""
        paths = tuple(dict.fromkeys(check_path(p) for p in paths))
        if len(paths) > MAX_PATHS:
            raise ConfigError(f"{len(paths)} --path values: at most {MAX_PATHS}; give their parent folder instead.")
        if "" in paths:
            paths = ()  # "." among them: the whole repository
        return cls(check_url(url), check_ref(ref), paths)

    @property
    def pinned(self) -> bool:
        """A commit id: nothing upstream can move it."""
        return bool(self.ref and _HEX_COMMIT.match(self.ref))

    def display(self) -> str:
        where = f" ({', '.join(self.paths)})" if self.paths else ""
        return f"{self.url} @ {self.ref or 'default branch'}{where}"

    def key(self) -> str:
        """The checkout folder's name in the data folder: readable, and unique per URL, ref and paths."""
        digest = hashlib.sha256("\0".join([self.url, self.ref or "", *self.paths]).encode()).hexdigest()[:12]
        return f"{re.sub(r'[^A-Za-z0-9._-]', '_', repo_name(self.url))[:40]}-{digest}"

    def to_record(self) -> dict:
        return {"url": self.url, "ref": self.ref, "paths": list(self.paths)}

    @classmethod
    def from_record(cls, record: dict) -> GitSpec:
        return cls.checked(str(record.get("url") or ""), record.get("ref"), record.get("paths") or ())


def check_url(url: str) -> str:
    url = (url or "").strip()
    bad = ConfigError(f"{url!r} is not a repository URL rlhelper fetches: give https://HOST/OWNER/REPO, "
                      "ssh://HOST/PATH, git@HOST:OWNER/REPO, git://HOST/PATH or file:///PATH/TO/REPO")
    if not url or len(url) > 2000 or url.startswith("-") or re.search(r"[\s\x00-\x1f\x7f]", url):
        raise bad
    scp = _SCP_LIKE.match(url)
    if scp:
        if scp["host"].startswith("-") or scp["path"].startswith("-"):
            raise bad
        return url
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise bad
    if parts.password is not None:
        raise ConfigError("the URL holds a password or token, which would be stored in the index's manifest: "
                          "leave it out and let git find it (a credential helper, or an ssh key)")
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            raise bad
    elif not parts.hostname or parts.hostname.startswith("-") or (parts.username or "").startswith("-"):
        raise bad
    return url


def check_ref(ref: str | None) -> str | None:
    if ref is None or ref == "":
        return None
    ref = ref.strip()
    if ref.startswith("-"):
        raise ConfigError(f"--ref {ref!r} starts with '-': give a branch, a tag or a full commit id")
    if _HEX_COMMIT.match(ref.lower()):
        return ref.lower()
    if not _REF.match(ref):
        raise ConfigError(f"--ref {ref!r} is not a branch or tag name git accepts (or give a full 40-character "
                          "commit id)")
    return ref


def check_path(path: str) -> str:
    """A path inside the repository, as POSIX, without leading "./" or trailing "/" ("" for the root)."""
    raw = str(path)
    if raw.startswith("-"):
        raise ConfigError(f"--path {raw!r} starts with '-': give a folder or file inside the repository")
    if _PATH_FORBIDDEN.search(raw) or raw != raw.strip():
        raise ConfigError(f"--path {raw!r}: a path with control characters, surrounding spaces or any of "
                          "* ? [ ] \\ ! # is not read; give the folder that holds it")
    parts = [p for p in PurePosixPath(raw).parts if p not in (".", "")]
    if raw.startswith("/") or ".." in parts:
        raise ConfigError(f"--path {raw!r} leaves the repository: give a path relative to its top")
    return "/".join(parts)


def repo_name(url: str) -> str:
    """The repository's name: the last part of its path, without .git."""
    scp = _SCP_LIKE.match(url)
    path = scp["path"] if scp else urlsplit(url).path
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return name.removesuffix(".git") or "repository"


def framework_of(url: str) -> str:
    """The framework a repository's docs are about: its name (verl-project/verl -> verl), as for GitHub threads."""
    return repo_name(url).lower()


# --- where a file is shown on the web -------------------------------------------------------

def _host_and_path(url: str) -> tuple[str, str] | None:
    scp = _SCP_LIKE.match(url)
    if scp:
        return scp["host"].lower(), scp["path"]
    parts = urlsplit(url)
    if parts.scheme == "file" or not parts.hostname:
        return None
    return parts.hostname.lower(), parts.path


def web_kind(url: str) -> str | None:
    """"github", "gitlab", "gitea" or "bitbucket" when the host's file view has a known address, else None."""
    found = _host_and_path(url)
    if found is None:
        return None
    host = found[0].removeprefix("www.")
    if host == "github.com":
        return "github"
    if host == "gitlab.com" or host.startswith("gitlab."):
        return "gitlab"
    if host == "codeberg.org" or host.startswith("gitea."):
        return "gitea"
    if host == "bitbucket.org":
        return "bitbucket"
    return None


def web_repo(url: str) -> str | None:
    """https://HOST/OWNER/REPO of a repository with a known web view, else None."""
    kind, found = web_kind(url), _host_and_path(url)
    if kind is None or found is None:
        return None
    host, path = found
    segments = [s for s in path.strip("/").removesuffix(".git").split("/") if s]
    if len(segments) < 2 or (kind != "gitlab" and len(segments) != 2):
        return None  # GitLab has subgroups; the others are OWNER/REPO
    return f"https://{host.removeprefix('www.')}/{'/'.join(quote(s) for s in segments)}"


def blob_base(url: str, commit: str) -> str | None:
    """The address a file's path is appended to, to show it at `commit`; None without a web view."""
    repo = web_repo(url)
    if repo is None:
        return None
    view = {"github": "blob", "gitlab": "-/blob", "gitea": "src/commit", "bitbucket": "src"}[web_kind(url)]
    return f"{repo}/{view}/{commit}/"


def no_link_reason(url: str) -> str:
    """Why citations of this source carry no web link, in a sentence."""
    if urlsplit(url).scheme == "file":
        return f"{url} is a repository on this machine, with no web page to link to"
    return f"{url} is not on GitHub, GitLab, Gitea/Codeberg or Bitbucket, whose file pages rlhelper can address"


def github_repo(url: str) -> str | None:
    """OWNER/REPO for a github.com repository, the shape the shipped collections' records use."""
    repo = web_repo(url) if web_kind(url) == "github" else None
    return repo.split("github.com/", 1)[1] if repo else None


# --- which files to check out -------------------------------------------------------------------

def _any_case(suffix: str) -> str:
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in suffix)


def is_doc_path(path: str) -> bool:
    return PurePosixPath(path).suffix.lower() in DOC_SUFFIXES


def sparse_patterns(paths: tuple[str, ...]) -> list[str]:
    """Non-cone sparse-checkout patterns: the document files under each path (a path naming a document is
    that file). Only these blobs are fetched: a repository's code, images and data never are."""
    lines = []
    for path in paths or ("",):
        if path and is_doc_path(path):
            lines.append(f"/{path}")
        lines += [f"/{path}/**/*{_any_case(s)}" if path else f"*{_any_case(s)}" for s in DOC_SUFFIXES]
    return lines
