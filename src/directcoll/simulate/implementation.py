"""What an implementation pays on top of the network: the host and protocol terms of a collective library.

A network (links, routers, NICs: :class:`~directcoll.simulate.params.NetworkParams`) is timed by the engines;
the library that runs the schedule on it adds software costs that depend on how it is written, not on the
network: Fujitsu MPI, the Swing authors' library over uTofu RDMA and libdirectcoll run the same schedule at
different speeds on the same Tofu-D links. An :class:`Implementation` holds those terms, each zero (or neutral)
where an implementation has none:

- ``call_overhead`` (s): once per collective call, before the first message (argument checks, buffer
  registration, the selection of an algorithm).
- ``port_overhead`` (s): once per call for every port the schedule uses (a thread and a network interface set
  up per port: uTofu's per-call cost grows with the port count).
- ``thread_overhead`` (s): once per call that runs its ports on more than one thread: starting and joining the
  port threads (an OpenMP parallel region). The Swing authors' uTofu library runs one port on the calling
  thread (its latency-optimal path) and opens a region for more, which costs a step from one port to two that
  further ports do not repeat.
- ``mirror_overhead`` (s): once per call whose schedule runs mirrored collectives (Swing Sec. 4.1; recursive
  doubling's multiport form): setting up the mirrored collectives' peers apart from the plain ones'. The Swing
  authors' uTofu library exchanges buffer addresses with the peers of its plain collectives and, only when a port
  runs a mirrored one, a second time with theirs (``swing_utofu_exchange_buf_info`` and ``get_mirroring_port`` in
  ``lib/libswing_common.cc``): on a ring every second port is mirrored, on a 3D torus ports 4 to 6.
- ``reduction_overhead`` (s): once per reduction larger than ``reduction_threshold`` bytes that a rank runs on
  its only thread (outside a parallel region of several): starting the threads of a reduction loop the compiler
  parallelised. The Swing authors' library leaves its reduction loop to the compiler's automatic
  parallelisation (``reduce_local``, built with Fujitsu's ``-Kparallel``), which forks threads only where the
  loop does not already run in a parallel region of several threads: a 1-port call pays it on every reduction
  above a few KiB, a call of several ports never.
- ``reduction_threshold`` (bytes): the smallest reduction that pays ``reduction_overhead`` is one byte more than
  this (0: every reduction).
- ``copy_overhead`` (s/B): memory copies the call makes, per byte of the vector, once per call (the copy of a
  non-in-place call's send buffer into its receive buffer, a remapping of blocks into contiguous messages).
- ``message_overhead`` (s): LogGP's o, the CPU time of posting one message. A rank's messages of a step are
  posted by its ``threads`` one after another, so a step in which a rank sends or receives m messages adds
  ``o * ceil(m / threads)`` before its transfers complete.
- ``eager_threshold`` (bytes): messages above it use a rendezvous protocol, a request and a reply before the
  data: one round trip (twice the transfer's latency) more. None: every message is eager.
- ``bandwidth_efficiency`` (0 < e <= 1): the share of a link's rate the implementation's messages reach
  (protocol headers, segmentation, DMA descriptors, pipelining copies); the network term is divided by it.
- ``gamma`` (s/B): the reduction cost per byte of one thread; None: the network's value (the CPU's).
- ``threads``: how many threads a rank runs, for posting messages and for reductions; None: one per port the
  schedule uses (libraries that run a thread per port). A rank's reductions in a step take
  ``gamma * bytes / min(threads, ports)``: the one rule of multiport reductions in every engine.
- ``paths``: code paths that pay more than the rest of the library, each a selector of the schedules it runs
  (``ALGORITHM``, ``ALGORITHM:VARIANT`` or ``*:VARIANT``) and the call, port, message and copy overheads it
  adds to the implementation's own. A library's algorithms are different code: the Swing authors' uTofu library
  exchanges buffer addresses with its peers on every call of its bandwidth-optimal path (it writes into their
  receive buffers), and not on its latency-optimal path (it writes into buffers registered once). The most
  specific selector that matches a schedule applies.

Source: docs/simulation.md, "Hosts and implementations"; LogGP (Alexandrov et al., SPAA'95: o, g, G); the eager
and rendezvous protocols of MPI libraries (e.g. MPICH's and Open MPI's point-to-point layers); Swing (De Sensi et
al., NSDI'24) Sec. 5 and 6 (a thread and a Tofu network interface per port on Fugaku).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace

import numpy as np

from directcoll.errors import DirectcollError
from directcoll.units import MAX_SIZE, check_quantity

#: the project's own runtime, libdirectcoll: a single-threaded library whose costs a parameters file gives
DEFAULT_IMPLEMENTATION = "libdirectcoll"
#: the quantity of each time field (ranges: :data:`directcoll.units.QUANTITIES`)
_TIMES = {"call_overhead": "time", "port_overhead": "time", "thread_overhead": "time", "mirror_overhead": "time",
          "message_overhead": "time", "reduction_overhead": "time"}
#: the terms a code path adds to its implementation's (s; copy_overhead s/B): every path runs the same reduction
PATH_TERMS = (*(k for k in _TIMES if k != "reduction_overhead"), "copy_overhead")


def _selector(text: str, where: str) -> tuple[str, str | None]:
    """(algorithm or "*", variant or None) of a path selector; refuses any other form."""
    algorithm, colon, variant = text.partition(":") if isinstance(text, str) else ("", "", "")
    if not algorithm or (colon and not variant) or (algorithm == "*" and not colon) or ":" in variant:
        raise DirectcollError(f"{where}: path {text!r}; accepted: ALGORITHM, ALGORITHM:VARIANT or *:VARIANT")
    return algorithm, variant or None


def _registered(text: str, where: str) -> str:
    """A path selector with its algorithm checked against the registry (an alias becomes the name a schedule
    records) and its variant against that algorithm's (any algorithm's for ``*``)."""
    from directcoll.registry import ALGORITHMS, get

    algorithm, variant = _selector(text, where)
    if algorithm != "*":
        try:
            algorithm = get(algorithm).name
        except DirectcollError:
            raise DirectcollError(f"{where}: path {text!r}: unknown algorithm {algorithm!r}; accepted: "
                                  f"{', '.join(sorted(ALGORITHMS))} or *") from None
    known = ALGORITHMS[algorithm].variants if algorithm != "*" else sorted(
        {v for alg in ALGORITHMS.values() for v in alg.variants})
    if variant is not None and variant not in known:
        raise DirectcollError(f"{where}: path {text!r}: unknown variant {variant!r} of {algorithm}; accepted: "
                              f"{', '.join(known)}")
    return algorithm if variant is None else f"{algorithm}:{variant}"


def _specificity(selector: str, algorithm, variant) -> int:
    """How specifically ``selector`` names a schedule of ``algorithm``/``variant`` (0: it does not)."""
    a, v = _selector(selector, "path")
    if v is not None and v != variant:
        return 0
    if a == "*":
        return 1
    return 0 if a != algorithm else 3 if v is not None else 2


@dataclass(frozen=True)
class Implementation:
    """The software terms of one collective library (the module docstring gives each one's meaning).

    Attributes:
        name: the implementation's name (``fujitsu-mpi``, ``libswing-utofu``, ``libdirectcoll``).
        call_overhead, port_overhead, thread_overhead, mirror_overhead, message_overhead: s (per call, per port
            and call, per call on more than one thread, per call with mirrored collectives, per message).
        reduction_overhead: s per reduction above ``reduction_threshold`` bytes on a rank's only thread.
        reduction_threshold: bytes.
        copy_overhead: s/B (per byte of the vector, once per call).
        eager_threshold: bytes, or None (eager only).
        bandwidth_efficiency: in (0, 1].
        gamma: s/B per thread, or None (the network's).
        threads: an int >= 1, or None (one per port).
        paths: ``(selector, ((term, s), ...))`` pairs: what a code path adds (:data:`PATH_TERMS`).
        source: where the values come from.

    Raises:
        DirectcollError: a value outside its range (a time of 0 to an hour, a threshold of 0 to 2^53 bytes, an
            efficiency in (0, 1], threads >= 1), a path's selector or term of another form, naming the field.

    Source: docs/simulation.md, "Hosts and implementations".

    >>> Implementation("mpi", call_overhead=3e-6).call_time(6) * 1e6
    3.0
    >>> Implementation("utofu", port_overhead=60e-6, threads=None).reduction_threads(6)
    6
    >>> lib = Implementation("utofu", call_overhead=10e-6, paths=(("*:bandwidth", (("call_overhead", 40e-6),)),))
    >>> round(lib.on({"algorithm": "swing", "variant": "bandwidth"}).call_overhead * 1e6, 6)
    50.0
    """

    name: str = DEFAULT_IMPLEMENTATION
    call_overhead: float = 0.0
    port_overhead: float = 0.0
    thread_overhead: float = 0.0
    mirror_overhead: float = 0.0
    reduction_overhead: float = 0.0
    reduction_threshold: float = 0.0
    message_overhead: float = 0.0
    copy_overhead: float = 0.0
    eager_threshold: float | None = None
    bandwidth_efficiency: float = 1.0
    gamma: float | None = None
    threads: int | None = 1
    paths: tuple[tuple[str, tuple[tuple[str, float], ...]], ...] = ()
    source: str = ""

    def __post_init__(self) -> None:
        where = f"implementation {self.name!r}"
        for key, kind in _TIMES.items():
            check_quantity(getattr(self, key), kind, f"{where}: {key}")
        check_quantity(self.copy_overhead, "time per byte", f"{where}: copy_overhead")
        if self.gamma is not None:
            check_quantity(self.gamma, "time per byte", f"{where}: gamma")
        if not (isinstance(self.reduction_threshold, int | float) and 0 <= self.reduction_threshold <= MAX_SIZE):
            raise DirectcollError(f"{where}: reduction_threshold = {self.reduction_threshold!r} is out of range; "
                                  "accepted: bytes from 0 to 2^53")
        if self.eager_threshold is not None and not (isinstance(self.eager_threshold, int | float)
                                                     and 0 <= self.eager_threshold <= MAX_SIZE):
            raise DirectcollError(f"{where}: eager_threshold = {self.eager_threshold!r} is out of range; accepted: "
                                  "bytes from 0 to 2^53, or null (every message eager)")
        e = self.bandwidth_efficiency
        if isinstance(e, bool) or not isinstance(e, int | float) or not (math.isfinite(e) and 0 < e <= 1):
            raise DirectcollError(f"{where}: bandwidth_efficiency = {e!r} is out of range; accepted: a share of the "
                                  "link rate in (0, 1]")
        t = self.threads
        if t is not None and (isinstance(t, bool) or not isinstance(t, int) or t < 1):
            raise DirectcollError(f"{where}: threads = {t!r}; accepted: a whole number >= 1, or null (one per port)")
        for selector, terms in self.paths:
            _selector(selector, where)
            for key, value in terms:
                if key not in PATH_TERMS:
                    raise DirectcollError(f"{where}: path {selector!r}: unknown term {key!r}; accepted: "
                                          f"{', '.join(PATH_TERMS)}")
                check_quantity(value, "time per byte" if key == "copy_overhead" else "time",
                               f"{where}: path {selector!r}: {key}")

    def path_of(self, meta) -> str | None:
        """The selector of :attr:`paths` that applies to a schedule (its ``meta``: ``algorithm``, ``variant``),
        the most specific one; None: the implementation's own terms apply. Raises: Nothing.
        Source: docs/simulation.md, "Hosts and implementations" (code paths)."""
        meta = meta if isinstance(meta, dict) else {}
        ranked = [(_specificity(sel, meta.get("algorithm"), meta.get("variant")), sel) for sel, _ in self.paths]
        best = max(ranked, default=(0, None))
        return best[1] if best[0] else None

    def on(self, meta) -> Implementation:
        """The terms this implementation pays on a schedule (its ``meta``): its own plus those of the code path
        that runs it (:meth:`path_of`); the result has no paths. Raises: Nothing.
        Source: docs/simulation.md, "Hosts and implementations" (code paths)."""
        selector = self.path_of(meta)
        extra = dict(dict(self.paths)[selector]) if selector else {}
        return replace(self, paths=(), **{k: getattr(self, k) + v for k, v in extra.items()}) if self.paths \
            else self

    def reduction_threads(self, ports: int) -> int:
        """Threads a rank runs on a schedule of ``ports`` ports: ``threads``, or one per port; at most the port
        count (a thread without a port of its own has nothing to reduce). Raises: Nothing.
        Source: docs/simulation.md, "Hosts and implementations"."""
        ports = max(1, int(ports))
        return ports if self.threads is None else max(1, min(self.threads, ports))

    def forks(self, ports: int) -> bool:
        """Whether a reduction above :attr:`reduction_threshold` pays :attr:`reduction_overhead` on a schedule of
        ``ports`` ports: the implementation has one and the rank reduces on a single thread. Raises: Nothing.
        Source: docs/simulation.md, "Hosts and implementations" (reductions on one thread).

        >>> lib = Implementation("utofu", reduction_overhead=10e-6, reduction_threshold=4096, threads=None)
        >>> lib.forks(1), lib.forks(2)
        (True, False)
        """
        return bool(self.reduction_overhead) and self.reduction_threads(ports) == 1

    def reduction_cost(self, ports: int, size_bytes):
        """s: what each reduction of ``size_bytes`` bytes (a number or an array) pays besides γ on a schedule of
        ``ports`` ports: :attr:`reduction_overhead` where :meth:`forks` and it is over the threshold, else 0.
        Raises: Nothing. Source: docs/simulation.md, "Hosts and implementations" (reductions on one thread).

        >>> float(Implementation("utofu", reduction_overhead=1e-5, reduction_threshold=4096).reduction_cost(1, 8192.0))
        1e-05
        """
        over = np.asarray(size_bytes) > self.reduction_threshold
        return self.reduction_overhead * over if self.forks(ports) else 0.0 * over

    def call_time(self, ports: int, size_bytes=0.0, mirrored: bool = False):
        """``call_overhead + port_overhead * ports + copy_overhead * size_bytes``, plus ``thread_overhead`` when
        the ports run on more than one thread and ``mirror_overhead`` when the schedule runs mirrored collectives
        (``mirrored``), s: what one call of a vector of ``size_bytes`` bytes (a number or an array) pays besides
        its steps. Raises: Nothing.
        Source: docs/simulation.md, "Hosts and implementations".

        >>> lib = Implementation("utofu", port_overhead=1e-6, thread_overhead=2e-6, mirror_overhead=80e-6, threads=None)
        >>> round(lib.call_time(3) * 1e6, 6), round(lib.call_time(6, mirrored=True) * 1e6, 6)
        (5.0, 88.0)
        """
        threaded = self.thread_overhead if self.reduction_threads(ports) > 1 else 0.0
        return (self.call_overhead + threaded + (self.mirror_overhead if mirrored else 0.0)
                + self.port_overhead * max(1, int(ports)) + self.copy_overhead * size_bytes)

    @property
    def neutral(self) -> bool:
        """Whether it adds nothing to the network's times (the engines then skip it). Raises: Nothing.
        Source: docs/simulation.md, "Hosts and implementations"."""
        return (not (self.call_overhead or self.port_overhead or self.thread_overhead or self.mirror_overhead
                     or self.message_overhead or self.copy_overhead or self.reduction_overhead)
                and self.eager_threshold is None and self.bandwidth_efficiency == 1.0 and self.gamma is None
                and self.threads == 1 and not self.paths)

    def to_dict(self) -> dict:
        """Every field (s, bytes, s/B as stored; ``paths`` as an object of selector: {term: s}). Raises: Nothing.
        Source: docs/simulation.md."""
        out = asdict(self)
        out["paths"] = {selector: dict(terms) for selector, terms in self.paths}
        return out


def implementation_from_dict(name: str, data, where: str) -> Implementation:
    """An :class:`Implementation` from a parameters file's ``implementations[name]`` object.

    Parameters
    ----------
    name : str
        The implementation's name (the object's key).
    data : dict
        Its fields (any subset of :class:`Implementation`'s but ``name``).
    where : str
        The file, for messages.

    Returns
    -------
    Implementation

    Raises
    ------
    DirectcollError
        Not an object, an unknown key, a value of the wrong type or out of its range, naming the file and key.

    Source: docs/simulation.md, "Hosts and implementations" (the parameters file).

    Examples
    --------
    >>> implementation_from_dict("mpi", {"call_overhead": 3.7e-6}, "net.json").call_overhead
    3.7e-06
    """
    if not isinstance(data, dict):
        raise DirectcollError(f"{where}: implementation {name!r} must be an object of "
                              f"{', '.join(f.name for f in fields(Implementation) if f.name != 'name')}")
    known = {f.name for f in fields(Implementation)} - {"name"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise DirectcollError(f"{where}: implementation {name!r}: unknown key(s) {', '.join(map(repr, unknown))}; "
                              f"accepted: {', '.join(sorted(known))}")
    values = dict(data)
    if "source" in values and not isinstance(values["source"], str):
        raise DirectcollError(f"{where}: implementation {name!r}: source must be a string")
    if "paths" in values:
        paths = values["paths"]
        if not isinstance(paths, dict) or not all(isinstance(t, dict) for t in paths.values()):
            raise DirectcollError(f"{where}: implementation {name!r}: paths must be an object of selector: "
                                  f"{{{', '.join(PATH_TERMS)}}}")
        where_impl = f"{where}: implementation {name!r}"
        values["paths"] = tuple((_registered(str(sel), where_impl), tuple(terms.items()))
                                for sel, terms in paths.items())
    if isinstance(values.get("threads"), float) and float(values["threads"]).is_integer():
        raise DirectcollError(f"{where}: implementation {name!r}: threads must be a whole number, got "
                              f"{values['threads']!r}")
    try:
        return Implementation(name=name, **values)
    except DirectcollError as exc:
        raise DirectcollError(f"{where}: {exc}") from None
