"""A small model of yeet's fan-out at scale.

1. ezpz's algorithm (rsync of the extracted tree, greedy, at most 8 pushes per source), as a
   discrete-event simulation: a push spends OVERHEAD seconds (ssh, rsync's file list) and then
   moves S bytes at min(per-stream rate, aggregate ceiling / active streams). The aggregate
   ceiling stands for what the published runs show: delivered bytes stop growing at about one
   NIC (one controller process owns every ssh/rsync). Fitted to the published Aurora table
   (8-4096 nodes), it must land within 25% of every point.
2. ezpz yeet's pipelined tree (fan-out k): the head packs once; every relay extracts while it
   forwards, so the stream moves at the slowest stage (an ssh stream, a link shared by k
   copies, or extraction on a node) plus one connection set-up per tree level. With
   --transport launcher: one launcher step starts every agent, a level costs a TCP connect,
   and a hop is a sealed TCP stream (AES-256-GCM) rather than an ssh channel.

3. What each node's CPU allows: --node-cpu SECONDS is the CPU a receiving node spent on
   --payload-mb MB of tree (scripts/bench/yeet_cpu.sh's "node mean"); a relay cannot write the
   tree faster than payload / node-cpu, so that rate replaces EXTRACT below, and the prediction
   at 4,096 nodes says which stage bounds it.

Usage: python3 scripts/bench/model.py [--node-cpu S] [--payload-mb MB] [--transport ssh|launcher]
"""
import argparse
import heapq
import math

# Published: Aurora, ezpz yeet --src .venv.tar.gz (seconds), from the ezpz yeet post.
PUBLISHED = {8: 69.7, 16: 89.7, 32: 89.2, 64: 91.2, 128: 110.4, 256: 132.9, 512: 174.5, 1024: 255.4,
             2048: 421.4, 4096: 750.6}

S = 5.0            # GB: the extracted venv (broadcast-anchors: S ~ 5 GB)
LOCAL = 49.7       # s: copy the tarball to /tmp and extract it with gzip on the head ("local copy 50 s")
STREAM = 0.42      # GB/s: one ssh/rsync stream (measured on SunSpot: 8.3 GB, ~20 s per hop)
OVERHEAD = 8.1     # s: ssh + rsync file-list walk per push (fitted from the 8 and 16 node points)
CEILING = 27.0     # GB/s: delivered bytes plateau (inferred: 27.3 GB/s at 4096 nodes)
PER_SOURCE = 8


def ezpz_greedy(nodes):
    """Event-driven greedy rsync fan-out; returns seconds."""
    remaining = nodes - 1          # the head has it after LOCAL
    load = {0: 0}                  # source -> active pushes
    next_id = 1
    active = []                    # [bytes_left, start_time, source, id] for streams moving data
    starting = []                  # heap of (time_data_starts, id, source)
    t = LOCAL

    def launch(now):
        nonlocal remaining, next_id
        while remaining > 0:
            free = [s for s, n in load.items() if n < PER_SOURCE]
            if not free:
                return
            src = min(free, key=lambda s: load[s])
            load[src] += 1
            heapq.heappush(starting, (now + OVERHEAD, next_id, src))
            next_id += 1
            remaining -= 1

    launch(t)
    while starting or active:
        rate = min(STREAM, CEILING / len(active)) if active else 0.0
        t_next_start = starting[0][0] if starting else math.inf
        t_next_done = t + min(a[0] for a in active) / rate if active else math.inf
        t_new = min(t_next_start, t_next_done)
        for a in active:
            a[0] -= rate * (t_new - t)
        t = t_new
        while starting and starting[0][0] <= t + 1e-12:
            _, nid, src = heapq.heappop(starting)
            active.append([S, t, src, nid])
        done = [a for a in active if a[0] <= 1e-9]
        active = [a for a in active if a[0] > 1e-9]
        for _, _, src, nid in done:
            load[src] -= 1
            load[nid] = 0          # a finished node becomes a source
        if done:
            launch(t)
    return t


# ezpz yeet: the same payload as a zstd tarball made once with tar-env.
RATIO = 2.5          # zstd level 3 on a venv (measured here: 21.6 MB -> 6.1 MB is 3.5; take less)
EXTRACT = 1.0        # GB/s of tree written per node while receiving (zstd -d + tar on one core)
LINK = 25.0          # GB/s: one Slingshot NIC; a relay with k children sends k copies
SETUP = 0.5          # s: ssh connection + relay start per tree level
LOCAL_ZSTD = LOCAL * 0.3   # s: the head's local extract of a tar.zst (no gzip: ~3x faster measured)


# The launcher transport (--transport launcher): one launcher step starts every agent, then each
# tree level costs a TCP connect and a relay start through the agent; a hop is a TCP stream sealed
# with AES-256-GCM instead of an ssh channel.
STEP = 0.4           # s: srun's step start on the job's nodes plus every agent calling back
                     # (0.44 s measured here on 32 simulated nodes, ssh 1.06 s: yeet_transport.sh)
STEP_PER_1K = 1.0    # s per 1000 nodes more: Slurm's fan-out of the step (tree-launched)
TCP_SETUP = 0.05     # s: TCP connect + handshake + relay start per tree level
TCP_STREAM = 2.0     # GB/s: one AES-256-GCM stream (one core; AES-NI); --no-encrypt is faster


def depth_of(nodes, k):
    return math.ceil(math.log(max(nodes - 1, 1) * (k - 1) + 1, k)) if k > 1 else nodes - 1


def ezpz_tree(nodes, k=2, launcher=False):
    depth = depth_of(nodes, k)
    wire = S / RATIO                                   # GB on every link
    per_stream = TCP_STREAM if launcher else STREAM
    rate = min(per_stream, LINK / k)                   # GB/s of compressed stream per link
    stream = max(wire / rate, S / EXTRACT)             # pipelined: the slowest stage
    setup = STEP + STEP_PER_1K * nodes / 1000 + depth * TCP_SETUP if launcher else depth * SETUP
    return LOCAL_ZSTD + setup + stream


def main():
    global EXTRACT
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--node-cpu", type=float, help="CPU seconds a receiving node spent (yeet_cpu.sh node mean)")
    p.add_argument("--payload-mb", type=float, default=149.0,
                   help="MB of tree those seconds wrote (default 149: the bench venv without __pycache__)")
    p.add_argument("--transport", choices=["ssh", "launcher"], default="launcher")
    a = p.parse_args()
    if a.node_cpu:
        EXTRACT = a.payload_mb / 1000 / a.node_cpu
        print(f"per-node CPU {a.node_cpu:.2f} s for {a.payload_mb:.0f} MB: a relay writes at most "
              f"{EXTRACT:.2f} GB/s of tree per core")
    print(f"{'nodes':>6} {'published':>10} {'model':>8} {'error':>7}   {'ezpz yeet tree (k=2)':>20}")
    worst = 0.0
    for n, pub in PUBLISHED.items():
        m = ezpz_greedy(n)
        err = (m - pub) / pub
        worst = max(worst, abs(err))
        print(f"{n:>6} {pub:>9.1f}s {m:>7.1f}s {err:>+6.0%}   {ezpz_tree(n):>19.1f}s")
    print(f"worst model error against the published table: {worst:.0%} (target: within 25%)")
    print(f"prediction at 4096 nodes: ezpz yeet {ezpz_tree(4096):.1f} s over ssh, "
          f"{ezpz_tree(4096, launcher=True):.1f} s with --transport launcher, vs ezpz's algorithm "
          f"{ezpz_greedy(4096):.1f} s (published 750.6 s; target under 60 s)")
    launcher = a.transport == "launcher"
    k = 2
    wire_s = S / RATIO / min(TCP_STREAM if launcher else STREAM, LINK / k)
    cpu_s = S / EXTRACT
    bound = "each node's CPU (extracting and verifying)" if cpu_s >= wire_s else "the stream (a hop's link or cipher)"
    print(f"at 4096 nodes on Aurora's links ({LINK:.0f} GB/s, fan-out {k}, --transport {a.transport}): "
          f"{ezpz_tree(4096, k, launcher):.1f} s; a hop's stream needs {wire_s:.1f} s, a node's CPU {cpu_s:.1f} s "
          f"for the {S:.0f} GB tree: bounded by {bound}")


if __name__ == "__main__":
    main()
