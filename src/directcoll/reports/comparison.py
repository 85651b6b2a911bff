"""The outcome of a comparison: :class:`Entry` (one timed contender) and :class:`Comparison` (every entry, the
skipped contenders and the verdict read from them: the best variant per family, the winner, the tie, the reference
family's gain; JSON and CSV). :func:`directcoll.reports.compare.compare` builds it.

Source: Swing (De Sensi et al., NSDI'24) Sec. 5 (goodput per size, best variant per family, gain over the best
other algorithm: Fig. 6); docs/compare.md ("Ties", "Contenders: a visible policy").

>>> import numpy as np
>>> from directcoll.simulate.params import NetworkParams
>>> c = Comparison("ring:4", "allreduce", NetworkParams(), "adaptive", "step", np.array([8.0]),
...                [Entry("ring", "ring", "bidirectional", np.array([1e-6]))])
>>> c.winners()
[('ring', 'bidirectional', 1e-06)]
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

import numpy as np

from directcoll.reports.contenders import TIE_TOLERANCE, Skipped
from directcoll.reports.why import Why
from directcoll.simulate.params import NetworkParams

ALLTOALL_GOODPUT = ("size / time, size = bytes in each rank's send buffer (N blocks of size / N, its own included: "
                    "MPI_Alltoall's sendcount x N); Basu et al.'s per-node throughput (N - 1) m / time is "
                    "(N - 1) / N of it")
#: the all-to-all sizes, bytes, at which the fidelity study found the models' margins between one-step multi-hop
#: schedules and time-stepped MCF unreliable (docs/fidelity.md, "Where the models and ns-3 differ")
CAVEAT_SIZES = (16 * 1024, 1024 * 1024)
#: per model, how slow (percent) it timed those schedules at those sizes at worst against the packet engine with
#: unbounded queues (both models were up to 26 % fast; docs/fidelity.md, mechanisms 1 and 4)
CAVEAT_SLOW = {"step": 7, "flow": 5}
#: the all-to-all sizes, bytes, at which the packet engine with finite buffers (one bandwidth-delay product,
#: first in, first out per virtual channel) found those schedules slower than with unbounded queues, up to 58 %
#: (docs/fidelity.md, "Finite buffers": head-of-line blocking), which the models and unbounded queues do not see
BUFFER_CAVEAT_SIZES = (1024 * 1024, 8 * 1024 * 1024)


@dataclass
class Entry:
    """One timed contender: its family, registry name, variant label and time per size.

    Attributes:
        family, algorithm, variant: names (variant ``r=k`` / ``P=k`` for built options).
        times: float64 (S,), seconds per size of :attr:`Comparison.sizes`.
        why: its steps, Ξ and busiest link (:class:`~directcoll.reports.why.Why`) when :func:`compare` was asked
            for them, else None.
        ports: the port count its schedule records (concurrent collectives per rank, Swing Sec. 4.1), None for
            an algorithm that uses the links its construction chooses (BFB, double binary tree, MCF).
        spread: float64 (S, 2), the fastest and slowest time per size over several orders of each step's
            transfers (the packet model with ``orderings`` > 1; :meth:`StepPattern.reordered
            <directcoll.schedule.pattern.StepPattern.reordered>`), else None.

    Raises:
        Nothing: a record built by :func:`compare`.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 5 (one line per algorithm and variant).
    """
    family: str
    algorithm: str
    variant: str
    times: np.ndarray  # seconds per size
    why: Why | None = None
    ports: int | None = None
    spread: np.ndarray | None = None


@dataclass
class Comparison:
    """The outcome of :func:`compare`: times per (algorithm, variant) and size, and what wins.

    Attributes:
        topology, collective, routing, model: what was compared, as names.
        params: the :class:`~directcoll.simulate.params.NetworkParams` used.
        sizes: float64 (S,), vector sizes in bytes; entries: the timed :class:`Entry` objects.
        skipped: the :class:`~directcoll.reports.contenders.Skipped` contenders (shape not served, over the
            memory budget, a cutoff, a port count, a deadlock), each with its reason.
        tie_tolerance: fraction within which two times are a tie (:data:`TIE_TOLERANCE`).
        flow: the packet model's flow control as a dict, or None (unbounded queues).
        orderings: how many orders of each step's transfers the packet model timed (1: the order as built).
        peak_goodput: bytes/s (half the injection bandwidth for allreduce).
        reference: the family whose gain is reported; bound, bound_times: all-to-all's MCF bound (s per size).

    Raises:
        Nothing: a record built by :func:`compare`.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 5 (goodput, peak goodput = half the injection bandwidth,
    gain over the best-known algorithm, Fig. 6).

    >>> import numpy as np
    >>> c = Comparison("torus:4x4", "allreduce", NetworkParams(), "adaptive", "step", np.array([8.0, 1024.0]),
    ...                [Entry("swing", "swing", "latency", np.array([1e-6, 4e-6])),
    ...                 Entry("swing", "swing", "bandwidth", np.array([2e-6, 2e-6])),
    ...                 Entry("ring", "ring", "bidirectional", np.array([4e-6, 1e-6]))])
    >>> c.gain_family, c.gain().tolist()
    ('swing', [3.0, -0.5])
    """

    topology: str
    collective: str
    params: NetworkParams
    routing: str
    model: str
    sizes: np.ndarray
    entries: list[Entry]
    skipped: list[Skipped] = field(default_factory=list)
    peak_goodput: float = 0.0  # bytes/s: half the injection bandwidth for allreduce
    #: the family whose gain is reported when present: "swing" on grids, "bfb" on direct-connect topologies,
    #: "mcf" (else "ewsp") for all-to-all
    reference: str = "swing"
    #: all-to-all: the MCF bound (:func:`alltoall_bound`): F, method, reference bandwidth ...; None otherwise
    bound: dict | None = None
    #: all-to-all: the bound's time per size, s (an ideal schedule's bandwidth time; no latency)
    bound_times: np.ndarray | None = None
    tie_tolerance: float = TIE_TOLERANCE
    #: the packet model's flow control (buffer_bytes, virtual_channels, scheme, credit_delay); None: unbounded
    flow: dict | None = None
    #: the packet model: orders of each step's transfers timed per contender (entries' ``spread``); 1: as built
    orderings: int = 1

    def conditions(self) -> str:
        """"packet model, dor routing" and, with flow control, its buffers and channels (without: "unbounded
        queues", the idealisation the step and flow models share): what the times assume.
        Raises: Nothing. Source: docs/compare.md.

        >>> import numpy as np
        >>> Comparison("ring:4", "allreduce", NetworkParams(), "dor", "packet", np.array([8.0]), [],
        ...            flow={"buffer_bytes": 8192, "virtual_channels": 2, "scheme": "dateline"}).conditions()
        'packet model, dor routing, 8192 B buffers x 2 virtual channels (dateline)'
        >>> Comparison("ring:4", "allreduce", NetworkParams(), "dor", "packet", np.array([8.0]), [],
        ...            flow={"buffer_bytes": 8192, "virtual_channels": 1, "scheme": "auto"}).conditions()
        "packet model, dor routing, 8192 B buffers, each schedule's fewest deadlock-free virtual channels"
        >>> Comparison("ring:4", "allreduce", NetworkParams(), "dor", "packet", np.array([8.0]), []).conditions()
        'packet model, dor routing, unbounded queues'
        """
        text = f"{self.model} model, {self.routing} routing"
        if self.model == "packet" and not self.flow:
            text += ", unbounded queues"
        if self.flow:
            from directcoll.simulate.packet import FlowControl

            text += f", {FlowControl(**self.flow).describe()}"
        if self.orderings > 1:
            text += f", {self.orderings} orders of the transfers"
        return text

    def goodput(self, times: np.ndarray) -> np.ndarray:
        """Bytes per second: size / time (all-to-all: size is each rank's send buffer).

        Args:
            times: float (S,), seconds per size.

        Returns:
            float64 (S,), bytes/s.

        Raises:
            Nothing: arithmetic.

        Source: Swing (De Sensi et al., NSDI'24) Sec. 5 (goodput: bytes reduced per time unit).

        >>> import numpy as np
        >>> c = Comparison("torus:4x4", "allreduce", NetworkParams(), "adaptive", "step", np.array([8.0, 1024.0]),
        ...                [Entry("swing", "swing", "latency", np.array([1e-6, 4e-6])),
        ...                 Entry("swing", "swing", "bandwidth", np.array([2e-6, 2e-6])),
        ...                 Entry("ring", "ring", "bidirectional", np.array([4e-6, 1e-6]))])
        >>> c.goodput(np.array([1e-6, 1e-6])).tolist()
        [8000000.0, 1024000000.0]
        """
        return self.sizes / times

    def families(self) -> dict[str, tuple[np.ndarray, list[str]]]:
        """family -> (best time per size, the variant that achieves it per size).

        Returns:
            A dict of family -> (float64 (S,) seconds, list of S variant names), in entry order.

        Raises:
            Nothing: reduces the entries.

        Source: Swing (De Sensi et al., NSDI'24) Sec. 5.1.1 (for each size, the best of the latency- and
        bandwidth-optimal versions).

        >>> import numpy as np
        >>> c = Comparison("torus:4x4", "allreduce", NetworkParams(), "adaptive", "step", np.array([8.0, 1024.0]),
        ...                [Entry("swing", "swing", "latency", np.array([1e-6, 4e-6])),
        ...                 Entry("swing", "swing", "bandwidth", np.array([2e-6, 2e-6])),
        ...                 Entry("ring", "ring", "bidirectional", np.array([4e-6, 1e-6]))])
        >>> c.families()["swing"][1]
        ['latency', 'bandwidth']
        """
        out: dict[str, tuple[np.ndarray, list[str]]] = {}
        for fam in dict.fromkeys(e.family for e in self.entries):
            mine = [e for e in self.entries if e.family == fam]
            stack = np.array([e.times for e in mine])
            best = stack.argmin(axis=0)
            out[fam] = (stack.min(axis=0), [mine[i].variant for i in best])
        return out

    def winners(self) -> list[tuple[str, str, float]]:
        """Per size: (family, variant, time) of the fastest algorithm.

        Returns:
            A list of S tuples (family, variant, seconds).

        Raises:
            Nothing: reduces the entries.

        Source: Swing (De Sensi et al., NSDI'24) Sec. 5 (the best-known algorithm per size).

        >>> import numpy as np
        >>> c = Comparison("torus:4x4", "allreduce", NetworkParams(), "adaptive", "step", np.array([8.0, 1024.0]),
        ...                [Entry("swing", "swing", "latency", np.array([1e-6, 4e-6])),
        ...                 Entry("swing", "swing", "bandwidth", np.array([2e-6, 2e-6])),
        ...                 Entry("ring", "ring", "bidirectional", np.array([4e-6, 1e-6]))])
        >>> [w[0] for w in c.winners()]
        ['swing', 'ring']
        """
        fams = self.families()
        names = list(fams)
        stack = np.array([fams[f][0] for f in names])
        idx = stack.argmin(axis=0)
        return [(names[i], fams[names[i]][1][j], float(stack[i, j])) for j, i in enumerate(idx)]

    @property
    def gain_family(self) -> str | None:
        """The family :meth:`gain` reports by default: ``reference`` if it was timed, else Swing, else BFB;
        None when fewer than two families were timed or none of these is among them.

        Raises:
            Nothing: reads the entries.

        Source: Swing (NSDI'24) Sec. 5 (Swing's gain); Zhao et al. (NSDI'25) Sec. 8 (BFB against the baselines).
        """
        fams = self.families()
        if len(fams) < 2:
            return None
        return next((f for f in (self.reference, "swing", "bfb") if f in fams), None)

    def caveats(self) -> list[str]:
        """What the fidelity study says this comparison's model cannot settle, one line each: for all-to-all
        between 16 KiB and 1 MiB under the step or flow model, the margins between schedules that cross several
        hops in one step and the time-stepped MCF schedule; between 1 and 8 MiB, under any model that has no
        finite buffers (step, flow, packet without flow control), the head-of-line blocking real routers add to
        those schedules.

        Returns:
            A list of strings (empty when nothing applies).

        Raises:
            Nothing: reads the comparison's fields.

        Source: docs/fidelity.md, "Where the models and ns-3 differ" (mechanisms 1, 2 and 4, measured against
        the packet engine), "What a user should take from this" and "Finite buffers".

        >>> import numpy as np
        >>> c = Comparison("torus:4x4", "alltoall", NetworkParams(), "adaptive", "step", np.array([2.0**17]),
        ...                [Entry("direct", "direct", "direct", np.array([1e-5]))])
        >>> len(c.caveats()), Comparison("torus:4x4", "alltoall", NetworkParams(), "adaptive", "packet",
        ...                               np.array([2.0**17]), c.entries).caveats()
        (1, [])
        >>> c8 = Comparison("torus:4x4", "alltoall", NetworkParams(), "adaptive", "step", np.array([2.0**23]),
        ...                 c.entries)
        >>> len(c8.caveats()), "head-of-line" in c8.caveats()[0]
        (1, True)
        """
        if self.collective != "alltoall":
            return []
        from directcoll.units import format_size

        def within(band) -> bool:
            return bool(((self.sizes >= band[0]) & (self.sizes <= band[1])).any())

        out = []
        if self.model != "packet" and within(CAVEAT_SIZES):
            low, high = (format_size(b) for b in CAVEAT_SIZES)
            slow = CAVEAT_SLOW[self.model]
            out.append(f"all-to-all from {low} to {high}: against the packet engine the {self.model} model times "
                       "the schedules whose transfers cross several hops in one step (direct, DOR, SSSP, EwSP) up "
                       f"to {slow} % slow or 26 % fast, and time-stepped MCF exactly (docs/fidelity.md); a margin "
                       "under about 10 % between them is no verdict: --model packet checks it")
        if not (self.model == "packet" and self.flow) and within(BUFFER_CAVEAT_SIZES):
            low, high = (format_size(b) for b in BUFFER_CAVEAT_SIZES)
            out.append(f"all-to-all from {low} to {high}: routers with finite buffers, first in first out per "
                       "virtual channel, made the schedules whose transfers cross several hops in one step "
                       "(direct, DOR, SSSP, EwSP, path-based MCF) up to 58 % slower in the packet engine than "
                       "unbounded queues (head-of-line blocking; time-stepped MCF unaffected; docs/fidelity.md), "
                       "which these times do not include: --model packet --buffer BYTES checks it")
        return out

    def ties(self) -> list[list[str]]:
        """Per size, the families within :attr:`tie_tolerance` of the fastest (the winner first, then by time): a
        set of more than one is a tie the model cannot resolve. With entries timed in several orders of their
        transfers (``spread``), a family ties when its fastest order is within the tolerance of the winner's
        slowest: the packet engine cannot tell them apart either.

        Returns:
            A list of S lists of family names.

        Raises:
            Nothing: reduces the entries.

        Source: docs/compare.md, "Ties" (the tolerance from the fidelity study, docs/fidelity.md).

        >>> import numpy as np
        >>> c = Comparison("torus:4x4", "allreduce", NetworkParams(), "adaptive", "step", np.array([8.0]),
        ...                [Entry("swing", "swing", "latency", np.array([1.000e-6])),
        ...                 Entry("ring", "ring", "bidirectional", np.array([1.004e-6])),
        ...                 Entry("bucket", "bucket", "bandwidth", np.array([2e-6]))])
        >>> c.ties()
        [['swing', 'ring']]
        """
        fams = self.families()
        names = list(fams)
        stack = np.array([fams[f][0] for f in names])
        low, high = stack, stack
        if any(e.spread is not None for e in self.entries):  # over the orders of the transfers: the fastest
            low, high = (np.array([[self._spread(f, v)[j][k] for j, v in enumerate(fams[f][1])] for f in names])
                         for k in (0, 1))                    # order of each against the winner's slowest
        out = []
        for j in range(stack.shape[1]):
            col = stack[:, j]
            order = np.argsort(col, kind="stable")
            limit = high[order[0], j] * (1.0 + self.tie_tolerance)
            out.append([names[i] for i in order if low[i, j] <= limit])
        return out

    def _spread(self, family: str, variant: str) -> np.ndarray:
        """float64 (S, 2): an entry's fastest and slowest time per size over the orders timed (its times twice
        when it has no spread)."""
        e = self.entry(family, variant)
        return e.spread if e.spread is not None else np.column_stack([e.times, e.times])

    def gain(self, family: str | None = None) -> np.ndarray | None:
        """goodput(family) / goodput(best rival) - 1 per size (default family: :attr:`gain_family`); None when
        absent or alone. The rival is the fastest other family outside the family's tie (:meth:`ties`) when the
        family ties for first, else the winner; NaN where every family ties.

        Returns:
            float64 (S,), dimensionless (1.0 = twice as fast), or None.

        Raises:
            Nothing: reduces the entries.

        Source: Swing (De Sensi et al., NSDI'24) Sec. 5.1.1 (a 100% gain denotes Swing is 2x faster than the best
        state-of-the-art algorithm); docs/compare.md, "Ties".

        >>> import numpy as np
        >>> c = Comparison("torus:4x4", "allreduce", NetworkParams(), "adaptive", "step", np.array([8.0, 1024.0]),
        ...                [Entry("swing", "swing", "latency", np.array([1e-6, 4e-6])),
        ...                 Entry("swing", "swing", "bandwidth", np.array([2e-6, 2e-6])),
        ...                 Entry("ring", "ring", "bidirectional", np.array([4e-6, 1e-6]))])
        >>> c.gain("ring").tolist()
        [-0.75, 1.0]
        """
        return self._rivals(family)[0]

    def _rivals(self, family: str | None) -> tuple[np.ndarray | None, list[str | None]]:
        """(gain per size, the rival family per size) of :meth:`gain` and :meth:`best_other`."""
        family = family or self.gain_family
        fams = self.families()
        if family not in fams or len(fams) < 2:
            return None, []
        gains, rivals = [], []
        for j, tie in enumerate(self.ties()):
            outside = [f for f in fams if f != family and (family not in tie or f not in tie)]
            if not outside:
                gains.append(np.nan)
                rivals.append(None)
                continue
            best = min(outside, key=lambda f: fams[f][0][j])
            gains.append(fams[best][0][j] / fams[family][0][j] - 1.0)
            rivals.append(best)
        return np.array(gains), rivals

    def entry(self, family: str, variant: str) -> Entry | None:
        """The timed entry of ``family`` labelled ``variant`` (as :meth:`winners` names them), or None.

        Raises:
            Nothing: a lookup.

        Source: Swing (De Sensi et al., NSDI'24) Sec. 5 (one line per algorithm and variant).

        >>> import numpy as np
        >>> c = Comparison("ring:4", "allreduce", NetworkParams(), "adaptive", "step", np.array([8.0]),
        ...                [Entry("ring", "ring", "bidirectional", np.array([1e-6]))])
        >>> c.entry("ring", "bidirectional").algorithm, c.entry("ring", "unidirectional")
        ('ring', None)
        """
        return next((e for e in self.entries if e.family == family and e.variant == variant), None)

    def best_other(self, family: str | None = None) -> list[str | None]:
        """Per size, the rival :meth:`gain` compares ``family`` with (default: :attr:`gain_family`): the fastest
        family outside its tie, or the winner when it is not in the winning tie; None where every family ties.

        Returns:
            A list of S family names (or None).

        Raises:
            Nothing: reduces the entries (at least two families were timed when a gain exists).

        Source: Swing (De Sensi et al., NSDI'24) Fig. 6 (the letter of the best-known algorithm per size).

        >>> import numpy as np
        >>> c = Comparison("torus:4x4", "allreduce", NetworkParams(), "adaptive", "step", np.array([8.0, 1024.0]),
        ...                [Entry("swing", "swing", "latency", np.array([1e-6, 4e-6])),
        ...                 Entry("swing", "swing", "bandwidth", np.array([2e-6, 2e-6])),
        ...                 Entry("ring", "ring", "bidirectional", np.array([4e-6, 1e-6]))])
        >>> c.best_other()
        ['ring', 'ring']
        """
        return self._rivals(family)[1]

    def to_dict(self) -> dict:
        """Plain JSON: ``params`` names the parameter set (name, source and every value); every row of ``results``
        carries its variant and ports; per size, ``best`` has the winner, ``ties`` (the families within
        ``tie_tolerance`` of it, winner first) and, when a reference family was timed, ``gain`` against its rival
        (``gain_rival``), ``gain_family`` (and ``swing_gain``, the same number, when that family is Swing);
        ``skipped`` lists every contender that did not run (algorithm, family, variant, ports, kind, reason).

        Returns:
            A JSON-serializable dict (times in s, goodputs in bytes/s, sizes in bytes; a gain where every family
            ties is null).

        Raises:
            Nothing: converts the arrays.

        Source: docs/compare.md, "Contenders: a visible policy" (rows, skipped); docs/architecture.md, "Command line".

        >>> import numpy as np
        >>> c = Comparison("torus:4x4", "allreduce", NetworkParams(), "adaptive", "step", np.array([8.0, 1024.0]),
        ...                [Entry("swing", "swing", "latency", np.array([1e-6, 4e-6])),
        ...                 Entry("swing", "swing", "bandwidth", np.array([2e-6, 2e-6])),
        ...                 Entry("ring", "ring", "bidirectional", np.array([4e-6, 1e-6]))])
        >>> c.to_dict()["best"][0]["swing_gain"], c.to_dict()["best"][0]["ties"]
        (3.0, ['swing'])
        """
        winners = self.winners()
        family = self.gain_family
        gain, rivals = self._rivals(family) if family else (None, [])
        ties = self.ties()

        def why(family: str, variant: str, j: int) -> dict:
            entry = self.entry(family, variant)
            return entry.why.at(self.sizes[j]) if entry is not None and entry.why is not None else {}

        def gains(j: int) -> dict:
            if gain is None:
                return {}
            value = None if np.isnan(gain[j]) else float(gain[j])
            extra = {"swing_gain": value} if family == "swing" else {}
            return {"gain": value, "gain_family": family, "gain_rival": rivals[j], **extra}

        def ports(family: str, variant: str):
            entry = self.entry(family, variant)
            return entry.ports if entry is not None else None

        return {
            "topology": self.topology, "collective": self.collective, "model": self.model, "routing": self.routing,
            "params": self.params.to_dict(), "sizes": [int(s) for s in self.sizes],
            "peak_goodput_Bps": self.peak_goodput, "gain_family": family if gain is not None else None,
            "tie_tolerance": self.tie_tolerance, "flow_control": self.flow, "orderings": self.orderings,
            "results": [{"algorithm": e.algorithm, "variant": e.variant, "ports": e.ports, "family": e.family,
                         "size": int(s), "time_s": float(t), "goodput_Bps": float(s / t),
                         **({"time_range_s": [float(x) for x in e.spread[j]]} if e.spread is not None else {}),
                         **(e.why.at(s) if e.why else {})}
                        for e in self.entries for j, (s, t) in enumerate(zip(self.sizes, e.times, strict=True))],
            "best": [{"size": int(s), "algorithm": w[0], "variant": w[1], "ports": ports(w[0], w[1]),
                      "time_s": w[2], "goodput_Bps": float(s / w[2]), "ties": ties[j], **gains(j),
                      **why(w[0], w[1], j)}
                     for j, (s, w) in enumerate(zip(self.sizes, winners, strict=True))],
            "skipped": [k.to_dict() for k in self.skipped],
            "caveats": self.caveats(),
            **({"bound": {**self.bound, "times_s": [float(t) for t in self.bound_times],
                          "goodput_Bps": [float(g) for g in self.sizes / self.bound_times]},
                "goodput_definition": ALLTOALL_GOODPUT} if self.bound is not None else {}),
        }

    def __str__(self) -> str:
        """A plain-text table: per size, the winner (family, variant), its time and goodput, each family's best time,
        and the reference family's gain; then the skipped contenders with their reasons. (``directcoll compare``
        prints the full table with ties and legends; this is the library's quick look.)

        Returns:
            The table, lines joined by newlines (times with their unit, goodput as a bit rate, b/s, the way network
            rates are quoted: :func:`~directcoll.units.format_bandwidth`).

        Raises:
            Nothing: formats the arrays.

        Source: Swing (De Sensi et al., NSDI'24) Sec. 5 (goodput per size, the best variant per family, gain);
        docs/compare.md.

        >>> import numpy as np
        >>> c = Comparison("torus:4x4", "allreduce", NetworkParams(), "adaptive", "step", np.array([8.0, 1024.0]),
        ...                [Entry("swing", "swing", "latency", np.array([1e-6, 4e-6])),
        ...                 Entry("ring", "ring", "bidirectional", np.array([4e-6, 1e-6]))])
        >>> print(c)  # doctest: +NORMALIZE_WHITESPACE
        allreduce on torus:4x4: step model, adaptive routing, parameters custom
        size  winner              time  goodput    swing  ring  swing gain
        8B    swing latency       1 µs  64 Mb/s    1 µs   4 µs  +300%
        1KiB  ring bidirectional  1 µs  8.19 Gb/s  4 µs   1 µs  -75%
        """
        from directcoll.units import format_bandwidth, format_size, format_time, signed_percent

        fams = self.families()
        family = self.gain_family
        gain = self.gain(family) if family else None
        head = ["size", "winner", "time", "goodput", *fams, *([f"{family} gain"] if gain is not None else [])]
        rows = []
        for j, (size, (fam, variant, best)) in enumerate(zip(self.sizes, self.winners(), strict=True)):
            rows.append([format_size(size), f"{fam} {variant}", format_time(best), format_bandwidth(size / best),
                         *(format_time(fams[f][0][j]) for f in fams),
                         *([("tie" if np.isnan(gain[j]) else signed_percent(gain[j]))] if gain is not None else [])])
        width = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
        lines = [f"{self.collective} on {self.topology}: {self.model} model, {self.routing} routing, parameters "
                 f"{self.params.name}"]
        lines += ["  ".join(str(c).ljust(w) for c, w in zip(r, width, strict=True)).rstrip() for r in [head, *rows]]
        lines += [f"skipped {k.contender.algorithm}: {k.kind}: {k.reason}" for k in self.skipped]
        return "\n".join(lines)

    def to_csv(self) -> str:
        """One CSV row per (entry, size): algorithm, variant, ports, family, size_bytes, time_s, goodput_Bps and an
        empty ``skipped`` column, with a header; then one row per skipped contender, its size, time and goodput
        empty and ``skipped`` = kind: reason. When the entries carry their :class:`~directcoll.reports.why.Why`
        (``compare(..., why=True)``), also steps, congestion_deficiency, max_link_name, bytes_max_link and
        max_link_step.

        Returns:
            The CSV text.

        Raises:
            Nothing: formats the arrays.

        Source: docs/compare.md, "Contenders: a visible policy" (``--csv`` rows, skipped rows).

        >>> import numpy as np
        >>> c = Comparison("torus:4x4", "allreduce", NetworkParams(), "adaptive", "step", np.array([8.0, 1024.0]),
        ...                [Entry("swing", "swing", "latency", np.array([1e-6, 4e-6]), ports=4),
        ...                 Entry("swing", "swing", "bandwidth", np.array([2e-6, 2e-6]), ports=4),
        ...                 Entry("ring", "ring", "bidirectional", np.array([4e-6, 1e-6]), ports=2)])
        >>> c.to_csv().splitlines()[1]
        'swing,latency,4,swing,8,1e-06,8000000,'
        """
        buf = io.StringIO()
        w = csv.writer(buf)
        why = all(e.why is not None for e in self.entries)
        extra = list(WHY_CSV) if why else []
        w.writerow(["algorithm", "variant", "ports", "family", "size_bytes", "time_s", "goodput_Bps", "skipped",
                    *extra])
        for e in self.entries:
            for s, t in zip(self.sizes, e.times, strict=True):
                more = [e.why.at(s)[k] for k in WHY_CSV] if why else []
                w.writerow([e.algorithm, e.variant, "" if e.ports is None else e.ports, e.family, int(s),
                            f"{t:.9g}", f"{s / t:.9g}", "",
                            *(f"{v:.9g}" if isinstance(v, float) else v for v in more)])
        for k in self.skipped:
            d = k.to_dict()
            w.writerow([d["algorithm"], d["variant"] or "", "" if d["ports"] is None else d["ports"], d["family"],
                        "", "", "", f"{d['kind']}: {d['reason']}", *([""] * len(extra))])
        return buf.getvalue()


#: the columns ``--why`` adds to the CSV rows (:meth:`Why.at <directcoll.reports.why.Why.at>`'s fields)
WHY_CSV = ("steps", "congestion_deficiency", "max_link_name", "bytes_max_link", "max_link_step")
