"""ezpz's yeet fan-out (the Python original), for comparison: rsync pushes, each node that
finishes becomes a source, at most 8 pushes per source, least-loaded source first.

Usage: rsync_greedy.py SRC_DIR DST HOST...   (run on the head node; SRC_DIR is local)
"""
import subprocess
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

MAX_PER_SOURCE = 8
src, dst, targets = sys.argv[1].rstrip("/"), sys.argv[2].rstrip("/"), sys.argv[3:]
start = time.monotonic()
# Local copy first, as ezpz does (rsync -rlD --whole-file to dst on this node).
subprocess.run(["rsync", "-rlD", "--whole-file", "--exclude=__pycache__", f"{src}/", f"{dst}/"], check=True)
rsync = f"rsync -rlD --whole-file --exclude=__pycache__ {dst}/"
sources = {"self": 0}
lock = threading.Lock()
queue = list(targets)
failed = []


def push(source, target):
    cmd = f"{rsync} {target}:{dst}/"
    argv = ["sh", "-c", cmd] if source == "self" else ["ssh", "-o", "BatchMode=yes", source, cmd]
    return subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode in (0, 24)


with ThreadPoolExecutor(max_workers=min(len(targets), 128) or 1) as pool:
    running = {}
    while queue or running:
        with lock:
            while queue:
                free = [s for s, n in sources.items() if n < MAX_PER_SOURCE]
                if not free:
                    break
                source = min(free, key=lambda s: sources[s])
                target = queue.pop(0)
                sources[source] += 1
                running[pool.submit(push, source, target)] = (source, target)
        done, _ = wait(list(running), return_when=FIRST_COMPLETED)
        for fut in done:
            source, target = running.pop(fut)
            with lock:
                sources[source] -= 1
                if fut.result():
                    sources[target] = 0
                else:
                    failed.append(target)
print(f"rsync greedy: {len(targets) - len(failed)}/{len(targets)} remote nodes in {time.monotonic() - start:.2f} s")
sys.exit(1 if failed else 0)
