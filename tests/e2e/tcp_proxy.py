"""A loopback TCP proxy whose connections a test can cut, to prove clients reconnect."""

from __future__ import annotations

import socket
import threading
from contextlib import suppress


class CuttableProxy:
    """Forwards 127.0.0.1:<port> to ``upstream``; :meth:`cut` drops every open connection."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self._upstream = (upstream_host, upstream_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self._upstream)
            with self._lock:
                self._open.update((client, upstream))
                self.accepted += 1
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        with suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        self._close(source, sink)

    def _close(self, *sockets: socket.socket) -> None:
        for sock in sockets:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
            with self._lock:
                self._open.discard(sock)

    def cut(self) -> None:
        """Abort every connection in flight; new ones are still accepted."""
        with self._lock:
            victims = list(self._open)
        self._close(*victims)

    def close(self) -> None:
        self._listener.close()
        self.cut()
