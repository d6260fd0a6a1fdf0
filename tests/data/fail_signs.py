# A rank that fails as production jobs do, by FAIL_MODE (a counter file, COUNTER, makes attempt
# k > 1 succeed): "storage" rank 1 hits ENOSPC (the Lustre OSTs full) on attempt 1; "systemic"
# every rank's start-up times out in the CCL/PMI key-value store on every attempt.
import os
import sys
import time

rank = int(os.environ["RANK"])
counter = os.environ["COUNTER"] + f".{rank}"
attempt = int(open(counter).read()) + 1 if os.path.exists(counter) else 1
open(counter, "w").write(str(attempt))
print(f"start rank {rank} attempt {attempt}", flush=True)
mode = os.environ.get("FAIL_MODE", "")
if mode == "systemic":  # every rank at the same moment, as a KVS timeout strikes (a file barrier)
    open(os.environ["COUNTER"] + f".up.{rank}", "w").close()
    size = int(os.environ["WORLD_SIZE"])
    while not all(os.path.exists(os.environ["COUNTER"] + f".up.{r}") for r in range(size)):
        time.sleep(0.02)
    print(f"2026:06:30-10:01:02:({os.getpid()}) |CCL_ERROR| atl_pmi.cpp:156 kvs_get_value: timeout", file=sys.stderr)
    sys.exit(1)
if mode == "storage" and attempt == 1:
    if rank == 1:
        time.sleep(0.5)
        print("Traceback (most recent call last):", file=sys.stderr)
        print("OSError: [Errno 28] No space left on device: '/lus/ckpt/step_100.pt'", file=sys.stderr)
        sys.exit(1)
    time.sleep(60)
print(f"done rank {rank}", flush=True)
