"""A loopback TCP proxy a test can cut, slow down or partition, to prove clients cope.

- :meth:`CuttableProxy.cut` aborts every open connection (a dropped link);
- ``delay_s`` holds every chunk from the upstream that long before it is passed on (a slow
  server: each answer arrives ``delay_s`` late, however many are in flight);
- :meth:`CuttableProxy.partition` stops forwarding anything, in either direction, on open and new
  connections alike, without closing them (a network partition: packets vanish, nothing is
  refused); :meth:`CuttableProxy.heal` closes what was held up, so clients reconnect.
"""

from __future__ import annotations

import queue
import socket
import threading
import time
from contextlib import suppress


class CuttableProxy:
    """Forwards 127.0.0.1:<port> to ``upstream``."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self._upstream = (upstream_host, upstream_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._flowing = threading.Event()
        self._flowing.set()
        self.delay_s = 0.0
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, template: str) -> str:
        """``template`` (a store URL) pointed at this proxy instead of the upstream port."""
        return template.replace(f":{self._upstream[1]}/", f":{self.port}/")

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self._open.add(client)
                self.accepted += 1
            threading.Thread(target=self._connect, args=(client,), daemon=True).start()

    def _connect(self, client: socket.socket) -> None:
        self._flowing.wait()  # a partitioned link reaches nothing: the client waits in silence
        try:
            upstream = socket.create_connection(self._upstream, timeout=5)
        except OSError:
            self._close(client)  # the server is down: refused, as a direct connection would be
            return
        upstream.settimeout(None)
        with self._lock:
            self._open.add(upstream)
        threading.Thread(target=self._pump, args=(client, upstream, False), daemon=True).start()
        threading.Thread(target=self._pump, args=(upstream, client, True), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, from_upstream: bool) -> None:
        line: queue.Queue[tuple[float, bytes] | None] = queue.Queue()
        threading.Thread(target=self._deliver, args=(line, source, sink), daemon=True).start()
        with suppress(OSError):
            while data := source.recv(65536):
                line.put((time.monotonic() + (self.delay_s if from_upstream else 0.0), data))
        line.put(None)

    def _deliver(
        self, line: queue.Queue[tuple[float, bytes] | None], source: socket.socket, sink: socket.socket
    ) -> None:
        with suppress(OSError):
            while (item := line.get()) is not None:
                due, data = item
                if (wait := due - time.monotonic()) > 0:
                    time.sleep(wait)
                self._flowing.wait()
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

    def partition(self) -> None:
        """Forward nothing from now on (connections stay open, silent) until :meth:`heal`."""
        self._flowing.clear()

    def heal(self) -> None:
        """End a partition: what was held up is dropped with its connections; new ones flow."""
        self.cut()
        self._flowing.set()

    def close(self) -> None:
        self._listener.close()
        self.heal()
