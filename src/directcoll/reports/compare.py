"""``directcoll compare``: which collective algorithm wins on a network at each vector size, and by how much.

Every algorithm that serves the topology is routed once (step model, closed-form size sweep) or simulated per
size (flow model). As in the Swing paper's Sec. 5 figures, each algorithm family is shown by its best variant
per size (Swing: latency- or bandwidth-optimal; recursive doubling: latency-optimal or Rabenseifner), the winner
per size is named, and the gain of Swing over the best other family is goodput_swing / goodput_best_other - 1.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from directcoll.algorithms.registry import build_pattern
from directcoll.errors import DirectcollError, UnsupportedShapeError
from directcoll.schedule.ir import Collective
from directcoll.simulate.params import NetworkParams
from directcoll.simulate.step import simulate
from directcoll.topology.model import Topology

#: (family, registry name, variant) compared by default; the families are what the paper plots.
DEFAULT_CONTENDERS: list[tuple[str, str, str | None]] = [
    ("swing", "swing", "latency"),
    ("swing", "swing", "bandwidth"),
    ("recursive-doubling", "recursive-doubling", "latency"),
    ("recursive-doubling", "recursive-doubling", "bandwidth"),
    ("ring", "ring", None),
    ("bucket", "bucket", None),
]
MODELS = ("step", "flow")
#: the largest P for which every intermediate version of the generalized allreduce is compared (its union
#: construction tracks ceil(P / 2^(L-r)) shifted reductions of P vectors each)
GENERALIZED_ALL_R_MAX = 1024


def generalized_contenders(p: int, collective: Collective) -> list[tuple]:
    """Kolmakov & Zhang's allreduce for non-power-of-two P (for a power of two it is recursive halving and
    doubling): every r = 0..ceil(log2 P) up to GENERALIZED_ALL_R_MAX ranks, r = 0 beyond."""
    if p & (p - 1) == 0 or p < 3:
        return []
    if collective is not Collective.ALLREDUCE:
        return [("generalized", "generalized", "bandwidth", {"r": 0})]
    top = max(1, int(np.ceil(np.log2(p))))
    rs = range(top + 1) if p <= GENERALIZED_ALL_R_MAX else range(1)
    return [("generalized", "generalized", "bandwidth" if r == 0 else "latency" if r == top else None, {"r": r})
            for r in rs]


@dataclass
class Entry:
    family: str
    algorithm: str
    variant: str
    times: np.ndarray  # seconds per size


@dataclass
class Comparison:
    """The outcome of :func:`compare`: times per (algorithm, variant) and size, and what wins."""

    topology: str
    collective: str
    params: NetworkParams
    routing: str
    model: str
    sizes: np.ndarray
    entries: list[Entry]
    skipped: list[dict] = field(default_factory=list)
    peak_goodput: float = 0.0  # bytes/s: half the injection bandwidth for allreduce

    def goodput(self, times: np.ndarray) -> np.ndarray:
        return self.sizes / times

    def families(self) -> dict[str, tuple[np.ndarray, list[str]]]:
        """family -> (best time per size, the variant that achieves it per size)."""
        out: dict[str, tuple[np.ndarray, list[str]]] = {}
        for fam in dict.fromkeys(e.family for e in self.entries):
            mine = [e for e in self.entries if e.family == fam]
            stack = np.array([e.times for e in mine])
            best = stack.argmin(axis=0)
            out[fam] = (stack.min(axis=0), [mine[i].variant for i in best])
        return out

    def winners(self) -> list[tuple[str, str, float]]:
        """Per size: (family, variant, time) of the fastest algorithm."""
        fams = self.families()
        names = list(fams)
        stack = np.array([fams[f][0] for f in names])
        idx = stack.argmin(axis=0)
        return [(names[i], fams[names[i]][1][j], float(stack[i, j])) for j, i in enumerate(idx)]

    def gain(self, family: str = "swing") -> np.ndarray | None:
        """goodput(family) / goodput(best other family) - 1 per size; None when absent or alone."""
        fams = self.families()
        if family not in fams or len(fams) < 2:
            return None
        others = np.array([t for f, (t, _) in fams.items() if f != family]).min(axis=0)
        return others / fams[family][0] - 1.0

    def best_other(self, family: str = "swing") -> list[str]:
        fams = self.families()
        names = [f for f in fams if f != family]
        stack = np.array([fams[f][0] for f in names])
        return [names[i] for i in stack.argmin(axis=0)]

    def to_dict(self) -> dict:
        winners = self.winners()
        gain = self.gain()
        return {
            "topology": self.topology, "collective": self.collective, "model": self.model, "routing": self.routing,
            "params": self.params.to_dict(), "sizes": [int(s) for s in self.sizes],
            "peak_goodput_Bps": self.peak_goodput,
            "results": [{"algorithm": e.algorithm, "variant": e.variant, "family": e.family, "size": int(s),
                         "time_s": float(t), "goodput_Bps": float(s / t)}
                        for e in self.entries for s, t in zip(self.sizes, e.times, strict=True)],
            "best": [{"size": int(s), "algorithm": w[0], "variant": w[1], "time_s": w[2],
                      "goodput_Bps": float(s / w[2]), **({"swing_gain": float(gain[j])} if gain is not None else {})}
                     for j, (s, w) in enumerate(zip(self.sizes, winners, strict=True))],
            "skipped": self.skipped,
        }

    def to_csv(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(["algorithm", "variant", "family", "size_bytes", "time_s", "goodput_Bps"])
        for e in self.entries:
            for s, t in zip(self.sizes, e.times, strict=True):
                w.writerow([e.algorithm, e.variant, e.family, int(s), f"{t:.9g}", f"{s / t:.9g}"])
        return buf.getvalue()


def _progress_noop(done: int, total: int, label: str = "") -> None:
    return None


def compare(topology: Topology, collective="allreduce", sizes=None, params: NetworkParams | None = None,
            routing: str = "adaptive", model: str = "step", contenders=None,
            progress: Callable[..., None] = _progress_noop) -> Comparison:
    """Time every contender that serves ``topology`` at every size.

    Args:
        topology: the network.
        collective: allreduce (default), reduce_scatter or allgather.
        sizes: vector sizes in bytes (default: 32 B .. 512 MiB, powers of two: the paper's sweep).
        params: network parameters (default: zero overheads and the topology's links).
        routing: "adaptive" or "dor".
        model: "step" (closed-form sweep) or "flow" (max-min fair, per size; slower).
        contenders: (family, registry name, variant[, build options]) tuples; default
            :data:`DEFAULT_CONTENDERS` plus, for a non-power-of-two number of ranks, the generalized allreduce
            at every r (:func:`generalized_contenders`).
        progress: callable(done, total, label) for progress bars.

    Returns:
        A :class:`Comparison`; contenders that refuse the topology are listed in ``skipped`` with the reason.

    Raises:
        DirectcollError: unknown model, or no contender serves the topology.
    """
    if model not in MODELS:
        raise DirectcollError(f"unknown model {model!r}; accepted: {', '.join(MODELS)}")
    coll = Collective.parse(collective)
    sizes = np.asarray(sizes if sizes is not None else 2 ** np.arange(5, 30), dtype=float)
    params = params if params is not None else NetworkParams()
    contenders = list(contenders or DEFAULT_CONTENDERS)
    if contenders == DEFAULT_CONTENDERS:
        contenders += generalized_contenders(topology.num_compute, coll)
    entries, skipped = [], []
    for i, (family, name, variant, *extra) in enumerate(contenders):
        options = extra[0] if extra else {}
        label = f"{name} {variant or ''}".strip()
        progress(i, len(contenders), label)
        try:
            pattern = build_pattern(name, topology, coll, variant=variant, **options)
        except UnsupportedShapeError as exc:
            skipped.append({"algorithm": name, "variant": variant, "reason": str(exc)})
            continue
        label_variant = f"r={options['r']}" if "r" in options else None
        if model == "step":
            times = simulate(pattern, topology, params, routing).time(sizes)
        else:
            from directcoll.simulate.flow import flow_times

            times = flow_times(pattern, topology, sizes, params, routing)
        entries.append(Entry(family, name, label_variant or pattern.meta.get("variant") or variant or "",
                             np.asarray(times)))
    progress(len(contenders), len(contenders), "done")
    if not entries:
        raise DirectcollError(f"no algorithm serves {coll.value} on {topology.spec}: "
                              + "; ".join(f"{s['algorithm']}: {s['reason']}" for s in skipped))
    bw = params.link_bandwidth
    node_bw = topology.node_bandwidth if bw is None else bw * topology.out_degree[: topology.num_compute].max()
    if params.host_injection:
        node_bw = min(node_bw, params.host_injection)
    p = topology.num_compute
    peak = node_bw / 2 * p / (p - 1) if coll is Collective.ALLREDUCE else node_bw * p / (p - 1)
    return Comparison(topology.spec, coll.value, params, routing, model, sizes, entries, skipped, float(peak))
