"""``directcoll schedule ALGORITHM SPEC -o FILE``: build a schedule and save it.

Errors are raised as :class:`~directcoll.errors.DirectcollError` for :func:`directcoll.cli.main.main` to print as
one line (status 2).

Source: docs/architecture.md, "Schedule IR" and "Command line".

>>> from directcoll.cli.main import main
>>> main(["schedule", "no-such-algorithm", "ring:4", "-o", "x.json"])  # the error goes to stderr
2
"""

from __future__ import annotations

import sys
import time

import numpy as np

from directcoll.cli.options import (
    add_build_options,
    add_deprecated_size,
    add_output_options,
    bandwidth,
    bfb_options,
    build_options,
    check_output,
    one_size,
    preset_spec,
)
from directcoll.cli.output import print_json
from directcoll.errors import DirectcollError
from directcoll.units import plural


def register(sub) -> None:
    """Register ``directcoll schedule`` on the subparsers ``sub``. Raises: nothing (builds
    parsers). Source: docs/architecture.md, "Command line"."""
    sched = sub.add_parser("schedule", help="build a schedule file")
    sched.add_argument("algorithm", help="algorithm name (see `directcoll algorithms`), or file:PATH.py of a file "
                                         "that defines one (docs/language.md)")
    sched.add_argument("spec", help="topology spec, e.g. torus:8x8")
    add_build_options(sched)
    sched.add_argument("--steps", help="generalized only: number of steps (ceil(log2 P) .. 2 ceil(log2 P)) or "
                                       "'auto' (the fastest at --sizes with --params, default kolmakov-cluster)")
    sched.add_argument("--group", help="generalized only: the abelian group T_P as cyclic factors whose product is "
                                       "P, e.g. 12, 4x3, 2x2x3 (aliases: cyclic = P, xor = 2x2x...x2; default cyclic)")
    sched.add_argument("--placement", help="generalized only: the permutation h (Sec. 5.2), rank b's part at group "
                                           "element h(b): identity (default), aligned (group translations = torus "
                                           "translations) or comma-separated elements, one per rank")
    sched.add_argument("--sizes", help="vector size for --steps auto, one size (default 1MiB); bfb: the size M "
                                       "at which LP (14) weighs every link's latency (Zhao et al. App. E.3)")
    add_deprecated_size(sched)
    sched.add_argument("--params", help="system preset for --steps auto (default kolmakov-cluster)")
    sched.add_argument("--method", choices=["timestepped", "path", "extp"],
                       help="mcf only (--collective alltoall): tsMCF steps, pMCF paths or MCF-extP widest paths")
    sched.add_argument("--host-bandwidth", type=bandwidth,
                       help="mcf only: host <-> NIC bandwidth, e.g. 100Gbps (Basu et al. Fig. 2): the host forwards "
                            "in timestepped schedules, the NIC in path and extp ones")
    sched.add_argument("--time-limit", type=float,
                       help="ilp-disjoint only: seconds for the MIP, > 0 (default 30 up to 16 ranks; required above); "
                            "the best solution, its bound and gap are reported")
    sched.add_argument("-o", "--output", required=True, help="output file (.json, or .npz for large schedules)")
    add_output_options(sched)
    sched.set_defaults(func=cmd_schedule)


def cmd_schedule(args) -> int:
    """``directcoll schedule ALGORITHM SPEC -o FILE``: build a schedule (:func:`directcoll.registry.build`; ALGORITHM
    a registry name, a plugin's, or ``file:PATH`` of a file defining one) and save it
    (:func:`directcoll.schedule.io.save`; ``.npz`` or JSON by the file's suffix).

    ``--steps`` / ``--group`` / ``--placement`` choose the generalized allreduce's r, group and h (``--steps auto``:
    the fastest r at ``--sizes`` under ``--params``, eq. 37's choice printed on stderr beside it); ``--method`` is
    mcf's variant.

    Output: ``wrote FILE: ...`` or, with ``--json``, {file, algorithm, collective, ranks, steps, transfers, nblocks,
    meta, seconds}.

    Returns:
        0.

    Raises:
        DirectcollError: an unwritable ``-o``, ``--method`` disagreeing with ``--variant``, ``--steps`` / ``--group``
            for another algorithm or out of range, an ALGORITHM ``file:PATH`` that cannot be loaded or defines
            several algorithms (docs/language.md).
        UnsupportedShapeError, ScheduleError, SpecError, TopologyError, ResourceError, SolverError: as
            :func:`directcoll.registry.build`.

    Source: docs/architecture.md, "Schedule IR" (files); Kolmakov & Zhang Sec. 8, eq. (36)-(37) for ``--steps``.

    >>> import os, tempfile
    >>> from directcoll.cli.main import main
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     main(["schedule", "generalized", "ring:7", "--steps", "5", "-o", os.path.join(tmp, "g.npz")])
    ...     # doctest: +ELLIPSIS
    wrote .../g.npz: generalized allreduce on ring:7, 7 ranks, 5 steps, ... transfers
    0
    """
    from directcoll.plugins import one_algorithm
    from directcoll.registry import build
    from directcoll.schedule import save

    t0 = time.perf_counter()
    check_output(args.output, "-o")
    args.algorithm = one_algorithm(args.algorithm)  # a plugin's name, or file:PATH of one algorithm
    args.spec = preset_spec(args.spec)
    options = {**_generalized_options(args), **build_options(args)}
    network, bfb = bfb_options(args, args.spec, "schedule")
    method = getattr(args, "method", None)  # mcf: --method timestepped|path|extp is the variant
    if method is not None and args.variant not in (None, method):
        raise DirectcollError(f"--method {method} and --variant {args.variant} disagree; give one of them")
    schedule = build(args.algorithm, network, args.collective, variant=method or args.variant, ports=args.ports,
                     **options, **bfb)
    path = save(schedule, args.output)
    info = {"file": str(path), "algorithm": schedule.algorithm, "collective": schedule.collective.value,
            "ranks": schedule.nranks, "steps": schedule.num_steps, "transfers": schedule.num_transfers,
            "nblocks": schedule.nblocks, "meta": schedule.meta, "seconds": time.perf_counter() - t0}
    if args.json:
        print_json(info)
    else:
        print(f"wrote {path}: {schedule.algorithm} {schedule.collective.value} on {args.spec}, "
              f"{plural(schedule.nranks, 'rank')}, {plural(schedule.num_steps, 'step')}, "
              f"{plural(schedule.num_transfers, 'transfer')}"
              + _bfb_summary(schedule.meta, schedule.collective.value))
    return 0


def _bfb_summary(meta: dict, collective: str) -> str:
    """``; T_B = ... M/B`` (and the LP's, the LP (14) time and dropped links) for a BFB schedule, else ""."""
    if "t_b_m_over_b_lp" not in meta:
        return ""
    out = f"; T_B = {float(meta['t_b_m_over_b_lp']):.6g} M/B" + (" per phase" if collective == "allreduce" else "")
    if "t_b_m_over_b_relaxed" in meta:
        out += f" with {meta['chunks']} chunks per shard (LP: {float(meta['t_b_m_over_b_relaxed']):.6g} M/B)"
    if "bfb_time_s" in meta:
        out += (f"; LP (14) time at {meta['size_bytes']:.6g} B: {meta['bfb_time_s'] * 1e6:.6g} us, "
                f"{meta['bfb_dropped_links']} slow in-links dropped")
    return out


def _generalized_options(args) -> dict:
    """--steps / --group for the generalized allreduce: a step count, or "auto" = the r whose schedule the step
    model times fastest at --sizes on the topology with --params (eq. 37's choice is printed beside it)."""
    placement = getattr(args, "placement", None)
    if args.steps is None and args.group is None and placement is None:
        return {}
    from directcoll.registry import get

    if get(args.algorithm).name != "generalized":
        raise DirectcollError("--steps, --group and --placement apply to the generalized algorithm only")
    from directcoll.algorithms.generalized import num_steps
    from directcoll.topology import parse

    options = {"group": args.group or "cyclic", **({"placement": placement} if placement else {})}
    topology = parse(args.spec)
    p = topology.num_compute
    top = num_steps(p)
    if args.steps is None:
        return options
    if args.steps != "auto":
        if not args.steps.isdigit() or not top <= int(args.steps) <= 2 * top:
            raise DirectcollError(f"--steps must be 'auto' or a step count between ceil(log2 P) = {top} and "
                                  f"2 ceil(log2 P) = {2 * top} for P = {p}, got {args.steps!r}")
        return {**options, "r": 2 * top - int(args.steps)}
    from directcoll.cost.kolmakov import best_r_eq37
    from directcoll.registry import build_pattern
    from directcoll.simulate import network_params, simulate

    params = network_params("kolmakov-cluster" if args.params is None else args.params)
    size = one_size(args.sizes or "1MiB", "schedule --steps auto")
    times = [float(simulate(build_pattern("generalized", topology, "allreduce", r=r, **options),
                            topology, params).time(size)) for r in range(top + 1)]
    r = int(np.argmin(times))
    eq37 = best_r_eq37(p, size, params.alpha, 1 / (params.host_injection or params.link_bandwidth or 1e30),
                       params.gamma)
    print(f"--steps auto: r = {r} ({2 * top - r} steps) is fastest at {size} B with {params.name}; eq. 37 "
          f"gives r = {eq37}", file=sys.stderr)
    return {**options, "r": r}
