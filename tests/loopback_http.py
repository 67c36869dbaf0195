"""A loopback HTTP server for fetch tests: plain files with Range support and misbehaviours,
and Hub repositories answered the way huggingface.co answers ``/{repo}/resolve/{revision}/{file}``."""

from __future__ import annotations

import hashlib
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")
_RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<file>[^?]+)")


class FileServer:
    """Serves ``files[path]``; ``modes[path]`` picks a behaviour:

    ``ok`` (honours ``Range: bytes=N-[M]``), ``ignore_range`` (always 200 + whole body),
    ``truncate:K`` (announces the full length, sends K bytes, hangs up), ``status:C``.
    Every request is logged as ``(method, path, Range header or None)``.

    :meth:`hub_file` publishes a file in a Hub repository: ``HEAD``/``GET`` on its resolve URL at
    a branch or the commit answer 302 to ``/cdn/<sha256>`` on another host name (``localhost``) with ``X-Repo-Commit``,
    ``X-Linked-Etag`` (the SHA-256, as the Hub's LFS files carry it) and ``X-Linked-Size``; an
    unknown revision or file answers 404 with the Hub's ``X-Error-Code``.
    """

    def __init__(self):
        self.files: dict[str, bytes] = {}
        self.modes: dict[str, str] = {}
        self.log: list[tuple[str, str, str | None]] = []
        self.repos: dict[str, dict] = {}  # repo -> {"branches": {name: commit}, "files": {commit: {file: sha}}}
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def do_HEAD(self):
                server.log.append(("HEAD", self.path, self.headers.get("Range")))
                if not self._hub():
                    self.send_error(405)

            def _hub(self) -> bool:
                """Answer a Hub resolve URL; False if the path is not one."""
                m = _RESOLVE.match(self.path)
                if not m:
                    return False
                repo = server.repos.get(m["repo"])
                if repo is None:
                    self._hub_error(401, "RepoNotFound")
                    return True
                commit = repo["branches"].get(m["rev"], m["rev"])
                if commit not in repo["files"]:
                    self._hub_error(404, "RevisionNotFound")
                    return True
                sha = repo["files"][commit].get(m["file"])
                if sha is None:
                    self._hub_error(404, "EntryNotFound", commit)
                    return True
                self.send_response(302)
                # The CDN is another host (the Hub's client reads the metadata off this answer then)
                self.send_header("Location", server.url(f"/cdn/{sha}").replace("127.0.0.1", "localhost"))
                self.send_header("X-Repo-Commit", commit)
                self.send_header("X-Linked-Etag", f'"{sha}"')
                self.send_header("X-Linked-Size", str(len(server.files[f"/cdn/{sha}"])))
                self.send_header("ETag", f'"{sha[:40]}"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return True

            def _hub_error(self, status, code, commit=None):
                self.send_response(status)
                self.send_header("X-Error-Code", code)
                if commit:
                    self.send_header("X-Repo-Commit", commit)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self):
                rng = self.headers.get("Range")
                server.log.append(("GET", self.path, rng))
                if self._hub():
                    return
                body = server.files.get(self.path)
                mode = server.modes.get(self.path, "ok")
                if body is None:
                    return self.send_error(404)
                if mode.startswith("status:"):
                    return self.send_error(int(mode.split(":")[1]))
                start, end = 0, len(body) - 1
                m = _RANGE.match(rng or "")
                if m and mode != "ignore_range":
                    start = int(m.group(1))
                    if m.group(2):
                        end = min(int(m.group(2)), end)
                    if start >= len(body):
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{len(body)}")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{end}/{len(body)}")
                else:
                    self.send_response(200)
                chunk = body[start : end + 1]
                self.send_header("Content-Length", str(len(chunk)))
                self.send_header("Accept-Ranges", "bytes")
                self.end_headers()
                if mode.startswith("truncate:"):
                    self.wfile.write(chunk[: int(mode.split(":")[1])])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(chunk)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    def hub_file(self, repo: str, file: str, body: bytes, *, commit: str, branch: str = "main", announce: str | None = None):
        """Publish ``body`` as ``repo``'s ``file`` at ``commit`` (the head of ``branch``).

        ``announce`` makes the Hub claim another SHA-256 than the bytes it serves.
        """
        sha = announce or hashlib.sha256(body).hexdigest()
        self.files[f"/cdn/{sha}"] = body
        entry = self.repos.setdefault(repo, {"branches": {}, "files": {}})
        entry["branches"][branch] = commit
        entry["files"].setdefault(commit, {})[file] = sha

    @property
    def base(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def url(self, path: str) -> str:
        return self.base + path

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


