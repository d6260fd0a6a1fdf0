"""Run commands where DNS never answers, and say how long each took and what DNS was asked.

Run as root inside `unshare -n -m` (a network and mount namespace of its own): the loopback
comes up, a UDP server on 127.0.0.1:53 takes every query and answers none, and /etc/resolv.conf
is bind-mounted to point at it (glibc then waits out its timeout, as after a lost answer).
Usage: dns_blackhole.py JSON_ARGV_LIST; prints one JSON line per command:
{"rc": N, "seconds": S, "queries": Q, "stderr": "..."}.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

queries = 0


def serve(sock):
    global queries
    while True:
        try:
            sock.recvfrom(4096)
        except OSError:
            return
        queries += 1


def main():
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 53))
    threading.Thread(target=serve, args=(sock,), daemon=True).start()
    conf = tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False)
    conf.write("nameserver 127.0.0.1\noptions timeout:30 attempts:1\n")
    conf.close()
    subprocess.run(["mount", "--bind", conf.name, "/etc/resolv.conf"], check=True)
    for argv in json.loads(sys.argv[1]):
        before = queries
        start = time.monotonic()
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        took = time.monotonic() - start
        print(json.dumps({"rc": proc.returncode, "seconds": took, "queries": queries - before,
                          "stderr": proc.stderr, "stdout": proc.stdout}), flush=True)
    os.unlink(conf.name)


if __name__ == "__main__":
    main()
