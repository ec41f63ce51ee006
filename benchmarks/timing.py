"""Side-by-side timing that holds still on a loaded machine: every side runs ``repeats`` times,
interleaved (a, b, c, a, b, c, ...), so a burst of load from elsewhere hits all sides alike
instead of one; each side reports min, median and spread ((max - min) / median) and the ratios
use the minimum (the least-disturbed run) with the medians beside them. A progress bar shows
which side and repeat is running. Used by the scripts in this folder (run them from the repo
root: ``python benchmarks/<script>.py``), as is :func:`parse_args`, which gives each its
``--smoke`` flag."""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable, Mapping, Sequence


def _sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def interleaved(sides: Mapping[str, Callable[[], object]], repeats: int = 3, warmup: bool = True,
                desc: str = "timing") -> dict[str, list[float]]:
    """Seconds of each call of each side, ``repeats`` rounds, sides in turn within a round.
    ``warmup`` runs every side once first, untimed (allocator, kernels, caches)."""
    from tqdm.auto import tqdm  # here, not at the top: gpu_check.py's guard names a missing package first

    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    times: dict[str, list[float]] = {name: [] for name in sides}
    total = len(sides) * (repeats + int(warmup))
    with tqdm(total=total, desc=desc, unit="run", dynamic_ncols=True) as bar:
        if warmup:
            for name, fn in sides.items():
                bar.set_postfix_str(f"{name} (warm-up)")
                fn()
                bar.update(1)
        for r in range(repeats):
            for name, fn in sides.items():
                bar.set_postfix_str(f"{name} {r + 1}/{repeats}")
                _sync()
                t = time.perf_counter()
                fn()
                _sync()
                times[name].append(time.perf_counter() - t)
                bar.update(1)
    return times


def stats(ts: list[float]) -> dict[str, float]:
    """min / median / spread of one side's times (spread = (max - min) / median)."""
    med = statistics.median(ts)
    return {"min": min(ts), "median": med, "spread": (max(ts) - min(ts)) / med if med > 0 else 0.0, "n": len(ts)}


def line(name: str, ts: list[float], scale: float = 1.0, unit: str = "s") -> str:
    s = stats([t * scale for t in ts])
    return f"{name:<34} min {s['min']:8.3f} {unit}  median {s['median']:8.3f} {unit}  spread {100 * s['spread']:5.1f}%  (n={s['n']})"


def ratio(a: list[float], b: list[float]) -> str:
    """``a / b`` on the minima, and on the medians."""
    return f"{min(a) / min(b):.2f}x (medians {statistics.median(a) / statistics.median(b):.2f}x)"


def peak_bytes(fn: Callable[[], object]) -> int:
    """Peak bytes of the tensors ``fn`` allocates and holds at once, above what was held before it. On CUDA:
    the caching allocator's peak (``torch.cuda.max_memory_allocated``); on a CPU, where PyTorch keeps no
    such statistic, every op's output is counted from its creation until its storage's last tensor is
    freed (a ``TorchDispatchMode``: tensors made outside ``fn`` are not counted)."""
    import weakref

    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    if torch.cuda.is_available():
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        fn()
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - base
    live: dict[int, list[int]] = {}  # storage pointer -> [bytes, tensors alive on it]
    held = {"now": 0, "peak": 0}

    def release(ptr: int) -> None:
        entry = live[ptr]
        entry[1] -= 1
        if not entry[1]:
            held["now"] -= live.pop(ptr)[0]

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for t in (out if isinstance(out, (tuple, list)) else (out,)):
                if isinstance(t, torch.Tensor) and t.device.type == "cpu":
                    ptr = t.untyped_storage().data_ptr()
                    if ptr not in live:
                        live[ptr] = [t.untyped_storage().nbytes(), 0]
                        held["now"] += live[ptr][0]
                        held["peak"] = max(held["peak"], held["now"])
                    live[ptr][1] += 1
                    weakref.finalize(t, release, ptr)
            return out

    with Count():
        fn()
    return held["peak"]


SMOKE_NOTE = "SMOKE RUN (--smoke): tiny sizes; the numbers show that the script runs, not whether a target is met"


def parse_args(ap: argparse.ArgumentParser, smoke: Mapping[str, object],
               argv: Sequence[str] | None = None) -> argparse.Namespace:
    """``ap``'s arguments plus ``--smoke``, which swaps the defaults for ``smoke`` (model=tiny_random, a
    few items, one repeat: end to end in seconds, every ratio still printed); arguments given on the
    command line still win. tests/benchmarks/test_smoke.py runs every script this way. A key of
    ``smoke`` that is not one of ``ap``'s arguments is refused."""
    flags = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in smoke.items())
    ap.add_argument("--smoke", action="store_true", help=f"tiny sizes that run in seconds ({flags}); explicit arguments still win")
    args = ap.parse_args(argv)
    unknown = sorted(set(smoke) - set(vars(args)))
    if unknown:
        raise ValueError(f"smoke defaults name no argument of {ap.prog}: {unknown}")
    if not args.smoke:
        return args
    ap.set_defaults(**smoke)
    args = ap.parse_args(argv)
    print(SMOKE_NOTE, flush=True)
    return args
