# A rank that says how it was stopped: KeyboardInterrupt (SIGINT) or SIGTERM, then ends; prints
# "ready RANK" once started and nothing after (so that --idle-timeout sees a quiet job).
import os
import signal
import sys
import time

rank = os.environ.get("RANK", "?")


def on_term(signo, frame):
    print(f"rank {rank} got SIGTERM", flush=True)
    sys.exit(143)


signal.signal(signal.SIGTERM, on_term)
if os.environ.get("IGNORE_INT"):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
print(f"ready {rank}", flush=True)
try:
    while True:
        time.sleep(0.1)
except KeyboardInterrupt:
    print(f"rank {rank} KeyboardInterrupt", flush=True)
    sys.exit(130)
