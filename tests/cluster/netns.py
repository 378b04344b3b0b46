"""Network namespaces as hosts on one machine, for tests/cluster/test_hosts.py and
bench/cluster/hosts.py: a bridge on a private test range (10.231.N.0/24) in the root
namespace, one namespace per host joined to it by a veth pair, no default route anywhere (so
nothing leaves the machine), and a TCP relay from the bridge's address to a service that
listens on loopback only. Hosts remembers everything it made and down() deletes all of it.
"""
import os
import socket
import subprocess
import threading


class NetnsRefused(Exception):
    """ip netns add is not permitted here (no CAP_NET_ADMIN)."""


def ip(*args, ns=None, check_rc=True):
    cmd = (["ip", "netns", "exec", ns] if ns else []) + ["ip", *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
    if check_rc and r.returncode:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return r


class Hosts:
    """Network namespaces as hosts on one bridge; remembers all it made, and deletes it all."""

    def __init__(self, tag):
        self.tag = tag
        self.net = f"10.231.{tag}"
        self.bridge = f"ckb{tag}"
        self.made_ns, self.made_links = [], []

    @staticmethod
    def probe():
        """NetnsRefused when this process may not make network namespaces."""
        probe = f"ckprobe{os.getpid()}"
        try:
            r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
        except FileNotFoundError:
            raise NetnsRefused("network namespaces cannot be made here: no `ip` (iproute2)")
        if r.returncode:
            raise NetnsRefused(f"network namespaces are not permitted here: ip netns add: "
                               f"{r.stderr.strip()}")
        subprocess.run(["ip", "netns", "del", probe], capture_output=True)

    def up(self, names):
        self.probe()
        ip("link", "add", self.bridge, "type", "bridge")
        self.made_links.append(self.bridge)
        ip("addr", "add", f"{self.net}.1/24", "dev", self.bridge)
        ip("link", "set", self.bridge, "up")
        addrs = {}
        for i, name in enumerate(names):
            ns = f"ck{self.tag}{name}"
            subprocess.run(["ip", "netns", "add", ns], check=True, capture_output=True)
            self.made_ns.append(ns)
            outer, inner = f"ck{self.tag}o{i}", f"ck{self.tag}i{i}"
            ip("link", "add", outer, "type", "veth", "peer", "name", inner)
            self.made_links.append(outer)
            ip("link", "set", inner, "netns", ns)
            ip("link", "set", outer, "master", self.bridge)
            ip("link", "set", outer, "up")
            addr = f"{self.net}.{10 + i}"
            ip("addr", "add", f"{addr}/24", "dev", inner, ns=ns)
            ip("link", "set", inner, "up", ns=ns)
            ip("link", "set", "lo", "up", ns=ns)
            addrs[name] = (ns, addr)
        # no default route was added anywhere: each host reaches the test range only
        for ns, _ in addrs.values():
            assert "default" not in ip("route", ns=ns).stdout
        return addrs

    def down(self):
        errors = []
        for ns in reversed(self.made_ns):  # takes its veth end, and so the pair, with it
            r = subprocess.run(["ip", "netns", "del", ns], capture_output=True, text=True)
            if r.returncode:
                errors.append(r.stderr)
        for link in reversed(self.made_links):
            if ip("link", "show", link, check_rc=False).returncode == 0:
                ip("link", "del", link, check_rc=False)
        left = [n for n in self.made_ns
                if n in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                       text=True).stdout.split()]
        left += [l for l in self.made_links if ip("link", "show", l, check_rc=False).returncode == 0]
        assert not left and not errors, (left, errors)


class Forwarder:
    """A TCP relay in the root namespace, from the bridge's address to a service on loopback
    (the shared services listen on 127.0.0.1 only): how the hosts reach ZooKeeper."""

    def __init__(self, listen_host, target):
        self.target = target
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind((listen_host, 0))
        self.lsock.listen(64)
        self.port = self.lsock.getsockname()[1]
        self.socks, self.closed = [], False
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                a, _ = self.lsock.accept()
                b = socket.create_connection(self.target, timeout=5)
            except OSError:
                continue
            with self.lock:
                self.socks += [a, b]
            for x, y in ((a, b), (b, a)):
                threading.Thread(target=self._pipe, args=(x, y), daemon=True).start()

    @staticmethod
    def _pipe(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self):
        self.closed = True
        self.lsock.close()
        with self.lock:
            for s in self.socks:
                s.close()
