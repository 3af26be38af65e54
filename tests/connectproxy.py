"""A CONNECT proxy on loopback for tests: it records each tunnel's target and
resolves the names it is given (``hosts``) itself, as a real proxy resolves names the
client cannot: a request that arrives proves it went through the proxy."""

from __future__ import annotations

import contextlib
import select
import socket
import socketserver
import threading
from collections.abc import Iterator, Mapping


class _Tunnel(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.request.recv(4096)
            if not chunk:
                return
            head += chunk
        method, target = head.split(b"\r\n")[0].decode().split()[:2]
        if method != "CONNECT":
            self.request.sendall(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
            return
        host, _, port = target.rpartition(":")
        self.server.targets.append(target)
        try:
            upstream = socket.create_connection((self.server.hosts.get(host, host), int(port)), 5)
        except OSError:
            self.request.sendall(b"HTTP/1.1 502 Bad Gateway\r\n\r\n")
            return
        self.request.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        with upstream:
            sockets = [self.request, upstream]
            while not self.server.closing.is_set():
                readable, _, _ = select.select(sockets, [], [], 0.5)
                for source in readable:
                    data = source.recv(65536)
                    if not data:
                        return
                    (upstream if source is self.request else self.request).sendall(data)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, hosts: Mapping[str, str]) -> None:
        super().__init__(("127.0.0.1", 0), _Tunnel)
        self.hosts = dict(hosts)
        self.targets: list[str] = []
        self.closing = threading.Event()


@contextlib.contextmanager
def connect_proxy(hosts: Mapping[str, str]) -> Iterator[tuple[str, list[str]]]:
    """``http://127.0.0.1:<port>`` and the list of CONNECT targets it carried."""
    server = _Server(hosts)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.targets
    finally:
        server.closing.set()
        server.shutdown()
        server.server_close()
