"""A plain torch.distributed script: env:// rendezvous, gloo all_reduce, checked sum.

Run it under `ezpz launch`; it relies only on RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT.
"""
import os
import sys

import torch
import torch.distributed as dist

dist.init_process_group("gloo", init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()
assert rank == int(os.environ["RANK"]) and world == int(os.environ["WORLD_SIZE"])
t = torch.full((4,), float(rank + 1))
dist.all_reduce(t)
want = world * (world + 1) / 2
ok = bool(torch.all(t == want))
print(f"rank {rank}/{world} local {os.environ['LOCAL_RANK']} sum {t[0].item():.0f} want {want:.0f} "
      f"{'OK' if ok else 'WRONG'}", flush=True)
dist.barrier()
dist.destroy_process_group()
sys.exit(0 if ok else 3)
