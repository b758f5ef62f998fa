"""A loopback TCP relay that a test can cut, to make a real server unreachable on demand.

The gateway reaches a source through the relay; `close()` stops accepting and drops every
relayed connection, which the source sees exactly as a server gone away: refused new
connections and broken pooled ones. The server itself keeps running for other tests.
"""

from __future__ import annotations

import socket
import threading


class TcpProxy:
    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True, name="tcp-proxy").start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            try:
                server = socket.create_connection(self.target, timeout=10)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            with self._lock:
                if self._closed:
                    client.close()
                    server.close()
                    return
                self._sockets += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=_pump, args=(a, b), daemon=True).start()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            sockets, self._sockets = self._sockets, []
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        except OSError:
            pass  # not connected: nothing to wake on some platforms
        self._listener.close()
        for s in sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already disconnected
            s.close()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass  # either side closed: the relay for this connection ends
    finally:
        for s in (source, sink):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already shut
