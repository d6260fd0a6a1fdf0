# ezpz test's Python engine: embedded in the ezpz binary, written beside the run's outputs and
# run on every rank with the job's own python3 and torch. The same training and report as the
# C++ companion (src/torch/train_main.cpp): ezpz's MLP (784 -> 512, 256, 128 -> 10) on synthetic
# MNIST-shaped data labelled by a fixed random teacher, data parallel over the replicas of
# ezpz's (dp, pp, cp, tp) layout with Megatron's tensor parallel layers, `iter= loss= dt=` lines,
# a History JSONL that `ezpz plot` reads, and a failure when the loss does not fall on some rank
# or the replicas' parameters differ. Works with torch 1.13 and later.
import argparse
import datetime
import json
import math
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F


def parse_args(argv):
    p = argparse.ArgumentParser(prog="ezpz test (python engine)")
    p.add_argument("--train-iters", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--dtype", default="auto", choices=["auto", "fp32", "bf16", "fp16"])
    p.add_argument("--tp", type=int, default=1)
    p.add_argument("--pp", type=int, default=1)
    p.add_argument("--cp", type=int, default=1)
    p.add_argument("--print-freq", type=int, default=10)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--outdir", default="outputs/ezpz-test")
    p.add_argument("--json-out", default="")
    a = p.parse_args(argv)
    if min(a.train_iters, a.batch_size, a.print_freq, a.tp, a.pp, a.cp) < 1:
        p.error("--train-iters, --batch-size, --print-freq, --tp, --pp and --cp must be at least 1")
    return a


# ------------------------------------------------------------------ device, backend, ranks
def env_int(*names, default=0):
    for n in names:
        if os.environ.get(n, "").strip().lstrip("-").isdigit():
            return int(os.environ[n])
    return default


def pick_device(local_rank):
    """docs/torch.md's rule: TORCH_DEVICE, else xpu, cuda, mps, cpu."""
    name = os.environ.get("TORCH_DEVICE", "").strip()
    if not name:
        if hasattr(torch, "xpu") and torch.xpu.is_available():
            name = "xpu"
        elif torch.cuda.is_available():
            name = "cuda"
        elif getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            name = "mps"
        else:
            name = "cpu"
    if name in ("cuda", "xpu"):
        mod = getattr(torch, name)
        index = local_rank % max(1, mod.device_count())
        mod.set_device(index)
        return torch.device(name, index)
    return torch.device(name)


def pick_backend(device):
    """TORCH_BACKEND, else nccl (cuda), xccl or ccl (xpu), gloo; chosen from the device used."""
    name = os.environ.get("TORCH_BACKEND", "").strip()
    if name:
        return name
    if device.type == "cuda" and dist.is_nccl_available():
        return "nccl"
    if device.type == "xpu":
        if getattr(dist, "is_xccl_available", lambda: False)():
            return "xccl"
        try:
            import oneccl_bindings_for_pytorch  # noqa: F401  (registers "ccl")

            return "ccl"
        except ImportError:
            pass
    return "gloo"


# ------------------------------------------------------------------ ezpz's layout and groups
class Layout:
    """Ranks as a (dp, pp, cp, tp) grid, TP fastest: rank = ((d*pp + p)*cp + c)*tp + t."""

    DIMS = ("dp", "tp", "pp", "cp")  # ezpz's creation order

    def __init__(self, world, tp, pp, cp):
        tp = min(tp, world)
        if world % (tp * pp * cp) != 0:
            raise SystemExit(
                f"ezpz test: world size {world} is not divisible by tp*pp*cp = {tp}*{pp}*{cp} = {tp * pp * cp}"
            )
        self.world, self.size = world, {"tp": tp, "pp": pp, "cp": cp, "dp": world // (tp * pp * cp)}

    def coord(self, rank):
        s = self.size
        return {"tp": rank % s["tp"], "cp": rank // s["tp"] % s["cp"],
                "pp": rank // (s["tp"] * s["cp"]) % s["pp"], "dp": rank // (s["tp"] * s["cp"] * s["pp"])}

    def rank_of(self, c):
        s = self.size
        return ((c["dp"] * s["pp"] + c["pp"]) * s["cp"] + c["cp"]) * s["tp"] + c["tp"]

    def members(self, dim, rank):
        c = dict(self.coord(rank))
        out = []
        for i in range(self.size[dim]):
            c[dim] = i
            out.append(self.rank_of(c))
        return out

    def groups(self, dim):
        seen = {}
        for r in range(self.world):
            m = self.members(dim, r)
            seen.setdefault(m[0], m)
        return [seen[k] for k in sorted(seen)]


class Dist:
    """The world and this rank's groups; collectives are no-ops in a world of one."""

    def __init__(self, rank, world, layout):
        self.rank, self.world, self.layout = rank, world, layout
        self.groups, self.replicas = {}, None
        if world == 1:
            return
        for dim in Layout.DIMS:  # every rank creates every group, in the same order
            for members in layout.groups(dim):
                g = dist.new_group(members)
                if rank in members:
                    self.groups[dim] = g
        tp = layout.size["tp"]
        for t in range(tp):  # replicas: the ranks holding the same TP shard
            members = list(range(t, world, tp))
            g = dist.new_group(members) if tp > 1 else dist.group.WORLD
            if rank in members:
                self.replicas = g

    def all_reduce(self, t, op=None, group=None):
        if self.world > 1:
            dist.all_reduce(t, op=op or dist.ReduceOp.SUM, group=group)
        return t


# ------------------------------------------------------------------ Megatron's TP layers
class _CopyToTp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, d):
        ctx.d = d
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return ctx.d.all_reduce(g.clone(), group=ctx.d.groups.get("tp")), None


class _ReduceFromTp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, d):
        return d.all_reduce(x.clone(), group=d.groups.get("tp"))

    @staticmethod
    def backward(ctx, g):
        return g, None


class ParallelLinear(torch.nn.Module):
    """Column-parallel (output split) or row-parallel (input split, bias whole and zero), built
    from the full layer every TP rank draws alike, so tp=1 and tp=N train the same model."""

    def __init__(self, d, n_in, n_out, column):
        super().__init__()
        self.d, self.column = d, column
        tp, t = d.layout.size["tp"], d.layout.coord(d.rank)["tp"]
        full = torch.nn.Linear(n_in, n_out)
        w = full.weight.detach()
        if column:
            self.weight = torch.nn.Parameter(w.chunk(tp, 0)[t].clone())
            self.bias = torch.nn.Parameter(full.bias.detach().chunk(tp, 0)[t].clone())
        else:
            self.weight = torch.nn.Parameter(w.chunk(tp, 1)[t].clone())
            self.bias = torch.nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        tp = self.d.layout.size["tp"] > 1
        if self.column:
            return F.linear(_CopyToTp.apply(x, self.d) if tp else x, self.weight, self.bias)
        y = F.linear(x, self.weight)
        return (_ReduceFromTp.apply(y, self.d) if tp else y) + self.bias


class Mlp(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc1 = ParallelLinear(d, 784, 512, True)
        self.fc2 = ParallelLinear(d, 512, 256, False)
        self.fc3 = ParallelLinear(d, 256, 128, True)
        self.fc4 = ParallelLinear(d, 128, 10, False)

    def forward(self, x):
        x = F.relu(self.fc2(F.relu(self.fc1(x))))
        return self.fc4(F.relu(self.fc3(x)))


# ------------------------------------------------------------------ History (ezpz's JSONL)
def number(v):
    if not math.isfinite(v):
        return "null"
    return str(int(v)) if abs(v) < 1e15 and v == math.floor(v) else "%.6g" % v


class History:
    def __init__(self, d, outdir):
        self.d, self.rows = d, []
        run = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
        self.run_dir = os.path.join(outdir, "history", run)
        self.jsonl = os.path.join(self.run_dir, run + ".jsonl")

    def update(self, metrics, device):
        keys = list(metrics)
        v = torch.tensor([metrics[k] for k in keys], dtype=torch.float64, device=device)
        sums, lo, hi = torch.cat([v, v * v]), v.clone(), v.clone()
        self.d.all_reduce(sums)
        self.d.all_reduce(lo, dist.ReduceOp.MIN)
        self.d.all_reduce(hi, dist.ReduceOp.MAX)
        n, agg = len(keys), {}
        for i, k in enumerate(keys):
            mean = sums[i].item() / self.d.world
            agg[k + "/mean"], agg[k + "/max"], agg[k + "/min"] = mean, hi[i].item(), lo[i].item()
            agg[k + "/std"] = math.sqrt(max(0.0, sums[n + i].item() / self.d.world - mean * mean))
        self.rows.append({**metrics, **agg})
        if self.d.rank == 0:
            os.makedirs(self.run_dir, exist_ok=True)
            with open(self.jsonl, "a") as f:
                record = {"timestamp": round(time.time(), 6), "rank": 0, "metrics": metrics}
                if self.d.world > 1:
                    record["aggregated"] = agg
                f.write(json.dumps(record) + "\n")
        shown = dict(metrics)
        shown.update({k: x for k, x in agg.items() if k.endswith("/mean") and not k.startswith("iter/")})
        return " ".join(f"{k}={number(x)}" for k, x in shown.items())

    def finalize(self):
        if self.d.rank != 0 or not self.rows:
            return self.run_dir
        os.makedirs(self.run_dir, exist_ok=True)
        lines = ["# History report", "", f"{len(self.rows)} steps recorded.", "",
                 "| Metric | Latest | Mean | Min | Max | Std |", "| --- | --- | --- | --- | --- | --- |"]
        for k in self.rows[-1]:
            vals = [r[k] for r in self.rows if k in r]
            mean = sum(vals) / len(vals)
            std = math.sqrt(max(0.0, sum(x * x for x in vals) / len(vals) - mean * mean))
            lines.append(f"| {k} | {number(vals[-1])} | {number(mean)} | {number(min(vals))} | "
                         f"{number(max(vals))} | {number(std)} |")
        with open(os.path.join(self.run_dir, "report.md"), "w") as f:
            f.write("\n".join(lines) + "\n")
        return self.run_dir


# ------------------------------------------------------------------ the run
def set_up(a):
    t0 = time.monotonic()
    rank = env_int("RANK", "PMI_RANK", "OMPI_COMM_WORLD_RANK", "PALS_RANKID", "PMIX_RANK", "SLURM_PROCID")
    world = env_int("WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PALS_SIZE", "SLURM_NTASKS", default=1)
    local_rank = env_int("LOCAL_RANK", "PMI_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "PALS_LOCAL_RANKID",
                         "SLURM_LOCALID")
    local_world = env_int("LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", default=1)
    device = pick_device(local_rank)
    backend = pick_backend(device)
    if world > 1:
        timeout = datetime.timedelta(seconds=env_int("TORCH_DDP_TIMEOUT", default=3600))
        dist.init_process_group(backend, init_method="env://", rank=rank, world_size=world, timeout=timeout)
    d = Dist(rank, world, Layout(world, a.tp, a.pp, a.cp))
    if device.type == "cpu" and "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // max(1, local_world)))
    dtype = {"auto": torch.float32 if device.type == "cpu" else torch.bfloat16, "fp32": torch.float32,
             "bf16": torch.bfloat16, "fp16": torch.float16}[a.dtype]
    return d, device, backend if world > 1 else "none", dtype, time.monotonic() - t0


def synchronize(device):
    if device.type in ("cuda", "xpu"):
        getattr(torch, device.type).synchronize()


def train(a, d, device, dtype, model, history, log):
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    torch.manual_seed(a.seed)  # the teacher is the same on every rank
    teacher = torch.randn(784, 10)
    replica = d.rank // d.layout.size["tp"]  # each TP group draws its own batches
    losses, dts = [], []
    for it in range(1, a.train_iters + 1):
        torch.manual_seed(a.seed * 7919 + it * 104729 + replica)
        x = torch.randn(a.batch_size, 784)
        y = (x @ teacher).argmax(1).to(device)
        x = x.to(device, dtype)
        synchronize(device)
        start = time.perf_counter()
        opt.zero_grad()
        logits = model(x).float()
        loss = F.cross_entropy(logits, y)
        loss.backward()
        opt.step()
        loss_v = loss.item()
        acc = (logits.argmax(1) == y).float().mean().item()
        synchronize(device)
        dt = time.perf_counter() - start
        losses.append(loss_v)
        dts.append(dt)
        line = history.update({"iter": it, "loss": loss_v, "accuracy": acc, "dt": dt}, device)
        if d.rank == 0 and (it % a.print_freq == 0 or it == 1 or it == a.train_iters):
            print(line, file=log, flush=True)
    return losses, dts


def steady_step(dts):
    """The median timed step after the first (which pays the device's warm-up), or the only one."""
    rest = sorted(dts[1:] or dts)
    return rest[len(rest) // 2]


def judge(d, losses, model, device):
    """(judged, fell on every rank, parameters identical across replicas), agreed by all ranks."""
    judged = len(losses) >= 10
    k = min(5, len(losses))
    first, last = sum(losses[:k]) / k, sum(losses[-k:]) / k
    fell = torch.tensor([1.0 if not judged or last < first else 0.0], dtype=torch.float64, device=device)
    d.all_reduce(fell, dist.ReduceOp.MIN)
    checksum = sum(p.detach().double().abs().sum().item() for p in model.parameters())
    lo = torch.tensor([checksum], dtype=torch.float64, device=device)
    hi = lo.clone()
    if d.world > 1:
        dist.all_reduce(lo, op=dist.ReduceOp.MIN, group=d.replicas)
        dist.all_reduce(hi, op=dist.ReduceOp.MAX, group=d.replicas)
    same = torch.tensor([1.0 if lo.item() == hi.item() else 0.0], dtype=torch.float64, device=device)
    d.all_reduce(same, dist.ReduceOp.MIN)
    return judged, fell.item() > 0, same.item() > 0


def json_report(d, losses):
    mine = {"rank": d.rank, "groups": {dim: d.layout.members(dim, d.rank) for dim in ("tp", "pp", "cp", "dp")},
            "loss": losses}
    everyone = [mine]
    if d.world > 1:
        everyone = [None] * d.world
        dist.all_gather_object(everyone, mine)
    return {"world_size": d.world, "ranks": sorted(everyone, key=lambda r: r["rank"])}


def main(argv):
    a = parse_args(argv)
    log = sys.stderr if a.json_out else sys.stdout
    # 1. Process groups, device and the banner.
    d, device, backend, dtype, setup_s = set_up(a)
    if d.rank == 0:
        s = d.layout.size
        print(f"ezpz test: world={d.world} tp={s['tp']} pp={s['pp']} cp={s['cp']} dp={s['dp']} "
              f"device={device.type} backend={backend} dtype={a.dtype} setup={setup_s:.3g}s "
              f"engine=python torch={torch.__version__}", file=log, flush=True)
    torch.manual_seed(a.seed)  # every rank builds the same full layers, then keeps its shard
    model = Mlp(d).to(device, dtype)
    torch.manual_seed(a.seed * (d.rank + 1) * (env_int("LOCAL_RANK") + 1))
    if d.world > 1:
        ids = [device.index] if device.type == "cuda" else None
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=ids, process_group=d.replicas)
    # 2. Train.
    history = History(d, a.outdir)
    t0 = time.monotonic()
    losses, dts = train(a, d, device, dtype, model, history, log)
    total = time.monotonic() - t0
    # 3. Judge, agreeing across ranks (collectives: every rank takes part).
    judged, fell, same = judge(d, losses, model, device)
    report = json_report(d, losses) if a.json_out else None
    run_dir = history.finalize()
    # 4. Report (rank 0).
    if d.rank == 0:
        verdict = ("(not judged: fewer than 10 iterations)" if not judged
                   else "(fell on every rank)" if fell else "(DID NOT FALL on some rank)")
        print(f"summary: iters={a.train_iters} world={d.world} loss {losses[0]:.6g} -> {losses[-1]:.6g} {verdict}, "
              f"parameters {'identical' if same else 'DIFFER'} across replicas, train time {total:.3g} s "
              f"({total / a.train_iters:.3g} s/iter; a step {steady_step(dts) * 1e3:.3g} ms median, the first "
              f"{dts[0] * 1e3:.3g} ms), setup {setup_s:.3g} s, outputs in {run_dir}",
              file=log, flush=True)
        if report is not None:
            with open(a.json_out + ".tmp", "w") as f:
                json.dump(report, f)
            os.replace(a.json_out + ".tmp", a.json_out)
    if d.world > 1:
        dist.barrier()
        dist.destroy_process_group()
    return 0 if fell and same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
