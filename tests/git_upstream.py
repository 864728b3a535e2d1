"""Real git upstreams for the git source's tests, with no network beyond 127.0.0.1.

    up = Upstream(tmp_path / "up", "acme-docs")      # a bare repository (the upstream) and a clone to commit in
    up.commit("add the FAQ", {"docs/faq.md": "# FAQ\\n..."})   # writes, commits, pushes; returns the commit
    up.url                                            # file:///.../acme-docs.git
    with GitDaemon(up.root) as daemon: daemon.url(up) # git://127.0.0.1:PORT/acme-docs.git
    with SmartHTTP(up.root) as http: http.url(up)     # http://127.0.0.1:PORT/acme-docs.git (git http-backend)

Every git run here, and every one rlhelper makes in the tests (`isolated_git`), reads neither the
user's nor the system's git config, and never prompts (GIT_TERMINAL_PROMPT=0).
"""

from __future__ import annotations

import base64
import os
import socket
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

GIT_ISOLATION = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0",
                 "GIT_AUTHOR_NAME": "Test Author", "GIT_AUTHOR_EMAIL": "author@example.invalid",
                 "GIT_COMMITTER_NAME": "Test Author", "GIT_COMMITTER_EMAIL": "author@example.invalid"}


def isolate(mp) -> None:
    """Point this process's git (and rlhelper's) at no user or system config, without prompts."""
    for name, value in GIT_ISOLATION.items():
        mp.setenv(name, value)
    mp.delenv("GIT_SSH_COMMAND", raising=False)
    mp.delenv("GIT_DIR", raising=False)


def git(*args, cwd: Path | None = None, check: bool = True) -> str:
    env = {**os.environ, **GIT_ISOLATION}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout.strip()


class Upstream:
    def __init__(self, root: Path, name: str = "docs", *, allow_filter: bool = True):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.bare = self.root / f"{name}.git"
        self.work = self.root / f"{name}-work"
        git("init", "--quiet", "--bare", "-b", "main", str(self.bare))
        git("config", "uploadpack.allowFilter", "true" if allow_filter else "false", cwd=self.bare)
        git("config", "uploadpack.allowAnySHA1InWant", "true", cwd=self.bare)
        git("init", "--quiet", "-b", "main", str(self.work))
        git("remote", "add", "origin", str(self.bare), cwd=self.work)
        self._tick = 0

    @property
    def url(self) -> str:
        return self.bare.as_uri()

    def write(self, files: dict) -> None:
        """path -> text or bytes to write, or None to delete."""
        for rel, content in files.items():
            target = self.work / rel
            if content is None:
                git("rm", "--quiet", "-r", "--", rel, cwd=self.work)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content, encoding="utf-8")
            git("add", "--", rel, cwd=self.work)

    def commit(self, message: str, files: dict | None = None, *, push: bool = True, force: bool = False) -> str:
        self.write(files or {})
        self._tick += 1
        env_date = f"{int(time.time()) - 3600 + self._tick} +0000"  # increasing, never in the future
        subprocess.run(["git", "commit", "--quiet", "--allow-empty", "-m", message], cwd=self.work, check=True,
                       env={**os.environ, **GIT_ISOLATION, "GIT_AUTHOR_DATE": env_date, "GIT_COMMITTER_DATE": env_date})
        if push:
            git("push", "--quiet", *(["--force"] if force else []), "origin", "HEAD:refs/heads/main", cwd=self.work)
        return self.head()

    def rename(self, old: str, new: str, message: str) -> str:
        (self.work / new).parent.mkdir(parents=True, exist_ok=True)
        git("mv", "--", old, new, cwd=self.work)
        return self.commit(message)

    def rewrite(self, message: str, files: dict) -> str:
        """Drop the last commit and push another in its place (a force-push)."""
        git("reset", "--quiet", "--hard", "HEAD~1", cwd=self.work)
        return self.commit(message, files, force=True)

    def tag(self, name: str) -> None:
        git("tag", "-a", name, "-m", name, cwd=self.work)
        git("push", "--quiet", "origin", f"refs/tags/{name}", cwd=self.work)

    def head(self) -> str:
        return git("rev-parse", "HEAD", cwd=self.work)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port}")


class GitDaemon:
    """`git daemon` serving every repository under `root` on 127.0.0.1 (git:// protocol)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    def url(self, upstream: Upstream) -> str:
        return f"git://127.0.0.1:{self.port}/{upstream.bare.name}"

    def __enter__(self) -> GitDaemon:
        self.proc = subprocess.Popen(
            ["git", "daemon", f"--base-path={self.root}", "--export-all", "--reuseaddr", "--informative-errors",
             "--listen=127.0.0.1", f"--port={self.port}", str(self.root)],
            env={**os.environ, **GIT_ISOLATION}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_for_port(self.port)
        return self

    def __exit__(self, *exc) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


class SmartHTTP:
    """git's smart HTTP protocol: `git http-backend` (CGI) behind a small threaded HTTP server on 127.0.0.1.

    `password`: answer 401 without it (basic auth, any user). `stall`: seconds to wait before each
    answer after the first `stall_from` (a slow or hanging server). `requests`: the paths asked, in order.
    """

    def __init__(self, root: Path, *, password: str | None = None):
        self.root = Path(root)
        self.password = password
        self.stall = 0.0
        self.stall_from = 0
        self.requests: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self._cgi()

            def do_POST(self):
                self._cgi()

            def _cgi(self):
                outer.requests.append(self.path)
                if outer.stall and len(outer.requests) > outer.stall_from:
                    time.sleep(outer.stall)
                if outer.password is not None and not self._authorised():
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="git"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                path, _, query = self.path.partition("?")
                env = {"PATH": os.environ.get("PATH", ""), **GIT_ISOLATION, "GIT_PROJECT_ROOT": str(outer.root),
                       "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path, "QUERY_STRING": query,
                       "REQUEST_METHOD": self.command, "REMOTE_ADDR": "127.0.0.1",
                       "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                       "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
                       "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", "")}
                body = self._body()
                env["CONTENT_LENGTH"] = str(len(body))
                done = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, timeout=120)
                head, _, payload = done.stdout.partition(b"\r\n\r\n")
                status, headers = 200, []
                for line in head.decode("latin-1").split("\r\n"):
                    name, _, value = line.partition(":")
                    if name.lower() == "status":
                        status = int(value.strip().split()[0])
                    elif name:
                        headers.append((name, value.strip()))
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _authorised(self) -> bool:
                given = self.headers.get("Authorization", "")
                if not given.startswith("Basic "):
                    return False
                return base64.b64decode(given[6:]).decode().partition(":")[2] == outer.password

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    chunks = []
                    while True:
                        size = int(self.rfile.readline().strip().split(b";")[0], 16)
                        if size == 0:
                            self.rfile.readline()
                            return b"".join(chunks)
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]

    def url(self, upstream: Upstream) -> str:
        return f"http://127.0.0.1:{self.port}/{upstream.bare.name}"

    def __enter__(self) -> SmartHTTP:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
