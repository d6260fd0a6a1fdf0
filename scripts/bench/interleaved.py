"""Median wall time of several commands, run in turns (A B C A B C ...) so that drift in the
machine's load hits every command alike. Usage: interleaved.py RUNS CMD [CMD...] (shell words)."""
import shlex
import statistics
import subprocess
import sys
import time

runs = int(sys.argv[1])
cmds = [shlex.split(c) for c in sys.argv[2:]]
times = [[] for _ in cmds]
for _ in range(3):  # warm-up
    for c in cmds:
        subprocess.run(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
for _ in range(runs):
    for i, c in enumerate(cmds):
        t = time.perf_counter()
        subprocess.run(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times[i].append(time.perf_counter() - t)
base = statistics.median(times[0])
for c, t in zip(sys.argv[2:], times):
    m = statistics.median(t)
    print(f"  {c[:78]:<78} median {m * 1e3:7.2f} ms  ratio {m / base:.3f}")
