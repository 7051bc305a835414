"""A TCP forwarder in front of the API server, to take it away from one client and back.

TLS passes through untouched (the API server's certificate names 127.0.0.1, whatever
the port), so a client pointed here works as usual until `cut()` drops its connections
(a watch breaks mid-stream) and refuses new ones, as an API server that is away; `mend()`
brings it back. `freeze()` holds what passes instead, as an API server that hangs.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time


class Proxy:
    """Forwards 127.0.0.1:`port` to `target` on threads; `close()` ends it all."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._up = True
        self._frozen = False
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, name="test-proxy", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # closed
                return
            try:
                if not self._up:
                    raise ConnectionRefusedError
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open.update((client, upstream))
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                while self._frozen:  # held, as by an API server that stopped answering
                    time.sleep(0.02)
                sink.sendall(data)
        for end in (source, sink):
            self._drop(end)

    def _drop(self, end: socket.socket) -> None:
        with contextlib.suppress(OSError):
            end.shutdown(socket.SHUT_RDWR)
        end.close()
        with self._lock:
            self._open.discard(end)

    def cut(self) -> None:
        """Drop every connection; new ones are closed at once until `mend()`."""
        self._up = False
        with self._lock:
            ends = list(self._open)
        for end in ends:
            self._drop(end)

    def mend(self) -> None:
        self._up = True

    def freeze(self) -> None:
        """Hold every byte (connections stay open and new ones are accepted) until `thaw()`."""
        self._frozen = True

    def thaw(self) -> None:
        self._frozen = False

    def close(self) -> None:
        self._listener.close()
        self.cut()
