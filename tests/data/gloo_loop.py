"""A gloo all_reduce job that runs long enough to lose a node mid-run (launch's failover tests).

STEPS all_reduces, a line each; FAIL_RANK=R makes rank R fail at step 2 (an application error).
HOLD_FILE=PATH: in the first HOLD_ATTEMPTS attempts (default 1) every rank waits after step 3
until PATH.N exists (N: the attempt, from 0), so a test can fail a node while the job surely
runs (not after it ended, on a slow machine).
"""
import os
import socket
import sys
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo", init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()
steps = int(os.environ.get("STEPS", "30"))
fail_rank = int(os.environ.get("FAIL_RANK", "-1"))
attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
hold = os.environ.get("HOLD_FILE")
hold = f"{hold}.{attempt}" if hold and attempt < int(os.environ.get("HOLD_ATTEMPTS", "1")) else None
print(f"start rank {rank} host {socket.gethostname()} restart {os.environ['TORCHELASTIC_RESTART_COUNT']}", flush=True)
want = world * (world + 1) / 2
for step in range(steps):
    t = torch.full((4,), float(rank + 1))
    dist.all_reduce(t)
    if t[0].item() != want:
        sys.exit(f"rank {rank}: sum {t[0].item()} != {want}")
    if rank == fail_rank and step == 2:
        raise SystemExit(f"rank {rank}: bad input at step 2")
    print(f"step {step} rank {rank}", flush=True)
    deadline = time.monotonic() + 300
    while hold and step == 3 and not os.path.exists(hold):
        if time.monotonic() > deadline:
            sys.exit(f"rank {rank}: {hold} never appeared")
        time.sleep(0.05)
    time.sleep(0.3)
print(f"done rank {rank}/{world} host {socket.gethostname()} OK", flush=True)
dist.barrier()
dist.destroy_process_group()
