"""A ClickHouse native-protocol endpoint that first records and then serves from memory, for the
faults a real server cannot be made to show (tests/incident/test_reconcile_fake.py).

Recording: it forwards every byte between its clients and a real server (the job's sink writes
through it, so it is the endpoint the evidence names; a first reconciliation reads through it),
and keeps, per statement, the server's answer: the bytes the server sent after the client's
request, keyed by the request from its text on (b"SELECT …" and what follows it: the query id and
client info before it differ per run, the settings and the empty external-tables block after it
do not). The first answer of every connection is the server's Hello.

Serving (serve()): no upstream connection at all. Each connection gets the recorded Hello; each
request, once whole (uncompressed: it ends with the client's empty Data block), gets the n-th
recorded answer of the same statement (the last one past n), through a fault when one is set:
  rewrite(marker, nth, old, new)  the nth answer of a statement holding marker has old replaced
                                  by new (same length: every length prefix holds), so one key
                                  reads differently the second time;
  stall(marker)                   half of that answer, then silence, the connection kept open;
  cut(marker)                     half of that answer, then the connection closed.
Answers are replayed as they were recorded; a server that ignores max_result_rows is a recorded
answer read with a smaller --max-rows.
"""

import socket
import threading

# the client's empty Data block (packet 2, no table name, block info, 0 columns, 0 rows) that
# ends every uncompressed request
END = b"\x02\x00\x01\x00\x02\xff\xff\xff\xff\x00\x00\x00"


class FakeCH:
    def __init__(self, upstream_port):
        self.upstream = ("127.0.0.1", upstream_port)
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.hello = None
        self.answers = {}     # statement key -> [answer bytes, ...] in the order recorded
        self.serving = False
        self.fault = None
        self.seen = {}        # serving: statement key -> how many times asked
        self.faults_done = 0
        self.upstream_connections = 0
        self.conns = []
        threading.Thread(target=self._accept, daemon=True).start()

    # ---- control
    def serve(self):
        with self.lock:
            self.serving, self.seen, self.fault, self.faults_done = True, {}, None, 0

    def rewrite(self, marker, nth, old, new):
        assert len(old) == len(new)
        self._set(("rewrite", marker, nth, old, new))

    def stall(self, marker):
        self._set(("stall", marker))

    def cut(self, marker):
        self._set(("cut", marker))

    def _set(self, fault):
        with self.lock:
            self.fault, self.seen, self.faults_done = fault, {}, 0

    def recorded(self, marker):
        return sum(len(v) for k, v in self.answers.items() if marker in k)

    def close(self):
        self.listener.close()
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass

    # ---- connections
    def _accept(self):
        while True:
            try:
                c, _ = self.listener.accept()
            except OSError:
                return
            self.conns.append(c)
            target = self._serve if self.serving else self._record
            threading.Thread(target=target, args=(c,), daemon=True).start()

    @staticmethod
    def _key(req):
        i = req.find(b"SELECT")
        return req[i:] if i >= 0 else None

    def _record(self, c):
        s = socket.create_connection(self.upstream, timeout=60)
        with self.lock:
            self.upstream_connections += 1
        st = {"req": b"", "ans": b"", "key": None, "first": True}

        def store():  # under the lock: the exchange just completed
            k, a = st["key"], st["ans"]
            if a and k == "hello":
                if self.hello is None:
                    self.hello = a
            elif a and k is not None:
                self.answers.setdefault(k, []).append(a)
            st["req"], st["ans"], st["key"] = b"", b"", None

        def up():
            try:
                while True:
                    data = c.recv(1 << 16)
                    if not data:
                        break
                    with self.lock:
                        if st["ans"]:
                            store()
                        st["req"] += data
                    s.sendall(data)
            except OSError:
                pass
            finally:
                _shut(s)

        threading.Thread(target=up, daemon=True).start()
        try:
            while True:
                data = s.recv(1 << 16)
                if not data:
                    break
                with self.lock:
                    if not st["ans"]:
                        st["key"] = "hello" if st["first"] else self._key(st["req"])
                        st["first"] = False
                    st["ans"] += data
                c.sendall(data)
        except OSError:
            pass
        finally:
            with self.lock:
                store()
            _shut(c)

    def _serve(self, c):
        req = b""
        helloed = False
        try:
            while True:
                data = c.recv(1 << 16)
                if not data:
                    return
                req += data
                if not helloed:
                    helloed = True
                    req = b""
                    with self.lock:
                        hello = self.hello
                    c.sendall(hello)
                    continue
                if not req.endswith(END) or b"SELECT" not in req:
                    continue
                key, req = self._key(req), b""
                with self.lock:
                    n = self.seen.get(key, 0) + 1
                    self.seen[key] = n
                    recorded = self.answers.get(key)
                    fault = self.fault
                if not recorded:
                    raise AssertionError("a statement the recording does not hold: %r" % key[:200])
                ans = recorded[min(n, len(recorded)) - 1]
                if fault and fault[1] in key:
                    if fault[0] == "rewrite" and n == fault[2] and fault[3] in ans:
                        ans = ans.replace(fault[3], fault[4], 1)
                        with self.lock:
                            self.faults_done += 1
                    elif fault[0] in ("stall", "cut"):
                        c.sendall(ans[:len(ans) // 2])
                        with self.lock:
                            self.faults_done += 1
                        if fault[0] == "cut":
                            return
                        while c.recv(1 << 16):  # silent, until the client gives up
                            pass
                        return
                c.sendall(ans)
        except OSError:
            pass
        finally:
            _shut(c)


def _shut(x):
    try:
        x.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        x.close()
    except OSError:
        pass
