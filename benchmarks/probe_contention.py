"""Where a regressor fit's extra CPU goes beside busy competitors (issue 34).

``bench_contention.py`` measures a fit's CPU seconds quiet and contended; this
probe says where the difference is spent. For the default
``ConditionalNCERegressor`` fit on sklearn's diabetes task, quiet then beside
two busy competitors (``bench_contention.competitors``), alternating:

* the threads: torch's and the BLAS libraries' thread counts at every epoch's
  end (``threadpoolctl.threadpool_info``), the process's threads and the CPU
  seconds of each (``/proc/self/task``): spinning or pooled threads would show
  there;
* the scheduler: involuntary context switches (preemptions) and migrations of
  the fit's thread (``/proc/thread-self/sched``), the machine's idle and stolen
  time (``/proc/stat``: whether the other core was busy in the quiet fit too, and
  whether the hypervisor took time), and Python's garbage collections
  (``gc.callbacks``);
* the phases: the fit thread's own CPU seconds (``time.thread_time``) in each
  part of a step, exclusive of the parts nested in it: the forward pass, the
  loss, the backward pass, Adam, the sampler (noise targets), the held-out
  log-likelihood of early stopping, skorch's ``_set_training`` and callbacks,
  and the rest of the epoch loop.

Usage (timing: under the lock, nothing else of yours running)::

    flock /tmp/sknce-bench.lock python benchmarks/probe_contention.py --repeats 3

Writes ``benchmarks/results/probe_contention.json`` (``--tag`` adds a suffix).
"""

from __future__ import annotations

import argparse
import collections
import functools
import gc
import importlib
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's sknce
from _common import report  # noqa: E402
from bench_contention import N_BUSY, competitors  # noqa: E402

#: The phases of a step: (owner's module, owner, method, phase).
PHASES = [
    ("sknce._engine", "NCENet", "infer", "forward"),
    ("sknce._engine", "NCENet", "get_loss", "loss"),
    ("torch", "autograd", "backward", "backward"),
    ("sknce._untraced", "UntracedAdam", "step", "Adam"),
    ("sknce._engine", "NCENet", "_zero_grad_optimizer", "zero_grad"),
    ("sknce.conditional._sampler", "TargetSampler", "__call__", "sampler"),
    (
        "sknce.conditional._regressor",
        "ConditionalNCERegressor",
        "_held_out_log_likelihood",
        "held-out log-likelihood",
    ),
    ("sknce._engine", "NCENet", "_set_training", "skorch _set_training"),
    ("skorch", "NeuralNet", "notify", "callbacks (notify)"),
    ("sknce._engine", "NCENet", "run_single_epoch", "rest of the epoch loop"),
]


class PhaseClock:
    """Exclusive thread CPU seconds of wrapped methods (a phase less those nested in it)."""

    def __init__(self) -> None:
        self.seconds: collections.Counter = collections.Counter()
        self._stack: list[float] = []

    def wrap(self, owner, name: str, phase: str) -> None:
        method = getattr(owner, name)

        @functools.wraps(method)
        def timed(*args, **kwargs):
            start = time.thread_time()
            self._stack.append(0.0)
            try:
                return method(*args, **kwargs)
            finally:
                spent = time.thread_time() - start
                self.seconds[phase] += spent - self._stack.pop()
                if self._stack:
                    self._stack[-1] += spent

        setattr(owner, name, timed)


def _sched() -> dict[str, float]:
    """The fit thread's switches and migrations, from the scheduler's own counts."""
    values = {}
    with open("/proc/thread-self/sched") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key.strip() in (
                "nr_involuntary_switches",
                "nr_voluntary_switches",
                "se.nr_migrations",
            ):
                values[key.strip()] = float(value)
    return values


def _machine() -> dict[str, int]:
    """The machine's jiffies (all cores) spent idle and stolen by the hypervisor."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    return {"machine_idle_jiffies": fields[3], "machine_steal_jiffies": fields[7]}


def _task_cpu() -> dict[str, float]:
    """CPU seconds of each of the process's threads."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                stat = f.read()
        except FileNotFoundError:  # ended meanwhile
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        out[tid] = (int(fields[11]) + int(fields[12])) / tick
    return out


def _fit(X, y, clock: PhaseClock, threads_seen: set) -> dict:
    import torch
    from skorch.callbacks import Callback
    from threadpoolctl import threadpool_info

    from sknce import ConditionalNCERegressor

    class Threads(Callback):
        def on_epoch_end(self, net, **kwargs):
            pools = tuple(sorted((i["internal_api"], i["num_threads"]) for i in threadpool_info()))
            threads_seen.add((torch.get_num_threads(), pools, len(os.listdir("/proc/self/task"))))

    collected = collections.Counter()

    def count(phase, info):
        if phase == "stop":
            collected[info["generation"]] += 1

    gc.callbacks.append(count)
    clock.seconds.clear()
    tasks, sched, machine = _task_cpu(), _sched(), _machine()
    cpu, wall = time.process_time(), time.perf_counter()
    try:
        estimator = ConditionalNCERegressor(random_state=0, callbacks=[Threads()]).fit(X, y)
    finally:
        gc.callbacks.remove(count)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    after, sched_after, machine_after = _task_cpu(), _sched(), _machine()
    other = sum(t - tasks.get(tid, 0.0) for tid, t in after.items() if tid != str(os.getpid()))
    phases = dict(clock.seconds)
    return {
        "cpu": cpu,
        "wall": wall,
        "epochs": len(estimator.net_.history),
        "other_threads_cpu": other,
        "gc_collections": dict(collected),
        **{key: sched_after[key] - sched[key] for key in sched},
        **{key: machine_after[key] - machine[key] for key in machine},
        "phases": phases,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tag", default="", help="suffix of the JSON file's name")
    args = parser.parse_args(argv)
    from sklearn.datasets import load_diabetes

    from sknce import ConditionalNCERegressor

    X, y = load_diabetes(return_X_y=True)
    clock = PhaseClock()
    for module, owner, name, phase in PHASES:
        clock.wrap(getattr(importlib.import_module(module), owner), name, phase)
    ConditionalNCERegressor(random_state=0, max_epochs=2).fit(X[:100], y[:100])  # warm
    load_start = os.getloadavg()
    samples, threads_seen = [], set()
    for repeat in range(args.repeats):
        for busy in (False, True):
            load = os.getloadavg()[0]
            with competitors(N_BUSY if busy else 0, 600):
                sample = _fit(X, y, clock, threads_seen)
            sample.update(busy=busy, repeat=repeat, load=load)
            samples.append(sample)
            print(
                f"[{repeat + 1}/{args.repeats}] {'contended' if busy else 'quiet':<9} "
                f"cpu {sample['cpu']:.2f} s wall {sample['wall']:.2f} s, other threads "
                f"{sample['other_threads_cpu']:.2f} s, {sample['nr_involuntary_switches']:.0f} "
                f"preemptions, {sample['se.nr_migrations']:.0f} migrations, machine idle "
                f"{sample['machine_idle_jiffies']} / stolen {sample['machine_steal_jiffies']} "
                f"jiffies, load {load:.1f}",
                flush=True,
            )
    rows = []
    for _, _, _, phase in PHASES:
        quiet = statistics.median(s["phases"].get(phase, 0.0) for s in samples if not s["busy"])
        busy = statistics.median(s["phases"].get(phase, 0.0) for s in samples if s["busy"])
        rows.append(
            {
                "phase": phase,
                "quiet cpu s": quiet,
                "contended cpu s": busy,
                "cpu x": busy / max(quiet, 1e-9),
                "extra cpu s": busy - quiet,
            }
        )
    quiet = statistics.median(s["cpu"] for s in samples if not s["busy"])
    busy = statistics.median(s["cpu"] for s in samples if s["busy"])
    rows.append(
        {
            "phase": "whole fit",
            "quiet cpu s": quiet,
            "contended cpu s": busy,
            "cpu x": busy / quiet,
            "extra cpu s": busy - quiet,
        }
    )
    load_end = os.getloadavg()
    report(
        "probe_contention" + (f"_{args.tag}" if args.tag else ""),
        rows,
        title=(
            f"ConditionalNCERegressor() on diabetes: the fit thread's CPU per phase, medians "
            f"of {args.repeats}; load average {load_start[0]:.1f} at start, {load_end[0]:.1f} "
            "at end"
        ),
        params={
            "repeats": args.repeats,
            "busy_competitors": N_BUSY,
            "load_start": load_start,
            "load_end": load_end,
            "threads_in_fit": sorted(map(str, threads_seen)),
            "samples": samples,
        },
    )


if __name__ == "__main__":
    main()
