"""A TCP proxy on loopback that can lose one answer: the fault an in-doubt INSERT needs.

Forwards every connection to the server unchanged, until armed with cut_answer_after(n): on
the next connection whose client sends more than n bytes, whatever the server answers after
that is withheld, and once the server has sent its EndOfStream (the packet code 5 ending its
answer; or after `grace` seconds) both sides are closed. So the server has taken and written
the INSERT, and the client never hears that it did: the INSERT is in doubt. Later connections
are forwarded whole again.
"""

import socket
import threading


class CutProxy:
    def __init__(self, target_host, target_port, grace=10.0):
        self.target = (target_host, target_port)
        self.grace = grace
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.armed_at = None  # client bytes after which the answer is withheld
        self.cuts = 0
        self.closing = False
        self.threads = []
        t = threading.Thread(target=self._accept, daemon=True)
        t.start()
        self.threads.append(t)

    def cut_answer_after(self, client_bytes):
        with self.lock:
            self.armed_at = client_bytes

    def _accept(self):
        while not self.closing:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target, timeout=10)
            conn = {"client_bytes": 0, "withholding": False, "done": threading.Event()}
            for src, dst, up in ((client, server, True), (server, client, False)):
                t = threading.Thread(target=self._pump, args=(src, dst, up, conn, client, server),
                                     daemon=True)
                t.start()
                self.threads.append(t)

    def _pump(self, src, dst, up, conn, client, server):
        src.settimeout(self.grace)
        try:
            while True:
                try:
                    data = src.recv(65536)
                except socket.timeout:
                    if conn["withholding"]:
                        break  # the server said nothing more: cut anyway
                    continue
                if not data:
                    break
                if up:
                    conn["client_bytes"] += len(data)
                    with self.lock:
                        if self.armed_at is not None and conn["client_bytes"] > self.armed_at:
                            self.armed_at = None
                            conn["withholding"] = True
                            self.cuts += 1
                    dst.sendall(data)
                elif conn["withholding"]:
                    if data.endswith(b"\x05"):  # EndOfStream: the INSERT was written
                        break
                else:
                    dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (client, server):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def close(self):
        self.closing = True
        self.listener.close()
