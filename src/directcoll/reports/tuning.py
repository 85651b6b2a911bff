"""Tuning tables for libdirectcoll (``DIRECTCOLL_SCHEDULES``) and the OSU-style benchmark that measures them.

:func:`model_table` writes the step model's winner per size (:func:`directcoll.reports.compare.compare` with the
default contenders), each compiled as a program file next to the table; :func:`measured_table` runs every
candidate through the library on real ranks against the MPI library's own collective in the same runs
(:func:`run_bench`) and keeps the fastest per size, leaving the sizes where the MPI library wins to it (no entry:
the call falls through), so the table is never slower than the MPI library on the machine it was measured on.

Byte ranges: a winner at size s_i covers the bytes from just above the geometric midpoint sqrt(s_(i-1) s_i) of
it and the size below (0 for the smallest size) up to the geometric midpoint sqrt(s_i s_(i+1)) with the size
above, rounded down (no upper bound for the largest size); consecutive sizes with the same winner merge into one
entry.

Source: docs/runtime.md, "Tuning and benchmarks".

>>> byte_ranges([8, 1024, 1 << 20])
[(0, 90), (91, 32768), (32769, None)]
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from directcoll import children
from directcoll.errors import DirectcollError, ScheduleError, UnsupportedShapeError
from directcoll.inputs import read_text
from directcoll.resources import cached_build
from directcoll.runtime.native import find_mpicc, launch_env, library_path, mpi_identity, write_program
from directcoll.schedule.ir import Collective

#: the collectives libdirectcoll serves (the tuning table's collective names)
SERVED = ("allreduce", "reduce_scatter", "allgather", "alltoall", "broadcast", "reduce")
#: the collectives with a root (their programs serve the root they are compiled for)
ROOTED = ("broadcast", "reduce")
#: seconds of each timed round of the benchmark (5 rounds per size and side)
ROUND_SECONDS = 0.2
#: peak bytes of parsing a tuning table per byte of JSON (Python objects; the schedule reader's figure)
TABLE_BYTES_PER_CHAR = 12


def byte_ranges(sizes) -> list[tuple[int, int | None]]:
    """The inclusive byte range each of ``sizes`` (ascending) covers in a table: from just above the geometric
    midpoint with the size below (0 for the first) to the geometric midpoint with the size above, rounded down
    (None, unbounded, for the last).

    Returns:
        A list of (min_bytes, max_bytes or None), one per size, contiguous and disjoint.

    Raises:
        DirectcollError: sizes not positive and strictly ascending.

    Source: docs/runtime.md, "Tuning and benchmarks" (the byte-range rule).

    >>> byte_ranges([64])
    [(0, None)]
    """
    sizes = [float(s) for s in sizes]
    if not sizes or any(s <= 0 for s in sizes) or any(b <= a for a, b in zip(sizes, sizes[1:], strict=False)):
        raise DirectcollError(f"tuning sizes must be positive and ascending, got {sizes}")
    tops = [math.floor(math.sqrt(a * b)) for a, b in zip(sizes, sizes[1:], strict=False)]
    return [(0 if i == 0 else tops[i - 1] + 1, tops[i] if i < len(tops) else None) for i in range(len(sizes))]


def table_entries(collective: str, ranks: int, sizes, winners: list[str | None], root: int | None = None,
                  programs: dict[str, dict] | None = None) -> list[dict]:
    """Table entries of ``winners`` (a program file name per size, None where the MPI library wins): one entry per
    run of consecutive sizes with the same program, its bytes from :func:`byte_ranges`; none where None. ``root``
    (broadcast and reduce): recorded in every entry, for people and :func:`check_table` (the library reads the
    root from the program). ``programs``: program name -> {algorithm, variant, ports}, copied into its entries
    for people (the library reads only the program).

    Returns:
        A list of {collective, ranks, min_bytes, max_bytes, program} dicts (and root, and the program's
        algorithm, variant and ports, when given).

    Raises:
        DirectcollError: bad sizes (:func:`byte_ranges`) or not one winner per size.

    Source: docs/runtime.md, "Tuning and benchmarks".

    >>> [(e["min_bytes"], e["max_bytes"], e["program"]) for e in table_entries("allreduce", 2, [8, 64, 4096],
    ...                                                                       ["a.dcp", "a.dcp", None])]
    [(0, 512, 'a.dcp')]
    """
    ranges = byte_ranges(sizes)
    if len(winners) != len(ranges):
        raise DirectcollError(f"{len(winners)} winners for {len(ranges)} sizes")
    out: list[dict] = []
    for i, (program, (lo, hi)) in enumerate(zip(winners, ranges, strict=True)):
        if program is None:
            continue
        if out and winners[i - 1] == program:
            out[-1]["max_bytes"] = hi
        else:
            out.append({"collective": collective, "ranks": ranks, "min_bytes": lo, "max_bytes": hi,
                        "program": program, **({} if root is None else {"root": root}),
                        **(programs or {}).get(program, {})})
    return out


def _program_name(stem: str, algorithm: str, variant: str, root: int | None = None) -> str:
    label = (f"{algorithm}-{variant}" if variant else algorithm) + ("" if root is None else f"-root{root}")
    return f"{stem}-" + "".join(c if c.isalnum() or c in "-_." else "_" for c in label) + ".dcp"


def _build(topology, collective: str, contender):
    from directcoll.registry import build

    return build(contender.algorithm, topology, collective, variant=contender.variant, ports=contender.ports,
                 **contender.options)


def _described(schedule, label: str) -> dict:
    """What a table entry says of its program, for people: algorithm, variant and ports."""
    ports = schedule.meta.get("ports")
    return {"algorithm": schedule.algorithm, "variant": label or schedule.meta.get("variant") or None,
            "ports": None if ports is None else int(ports)}


def _contender_of(entry, contenders: list):
    """The :class:`~directcoll.reports.contenders.Contender` of a :class:`~directcoll.reports.compare.Entry`
    (compare labels built options r=k, P=k and a variant None by the variant the schedule records)."""
    mine = [c for c in contenders if c.algorithm == entry.algorithm]
    for c in mine:
        if c.label == entry.variant or (c.label == "" and c.variant == entry.variant):
            return c
    return next((c for c in mine if c.label == ""), None)


def candidates(topology, collective: str, root: int | None = None, algorithms=None) -> list:
    """The contenders a table chooses from: the default contenders of ``topology`` (with ``root`` for broadcast and
    reduce), or those ``algorithms`` names as ``compare --algorithms`` does (a comma list or a list of families,
    registry names, plugins and ``file:PATH``).

    Returns:
        A list of :class:`~directcoll.reports.contenders.Contender`.

    Raises:
        UnsupportedShapeError: an unknown algorithm. DirectcollError: a ``file:`` that cannot be loaded, an empty
            list.

    Source: docs/runtime.md, "Tuning and benchmarks"; docs/language.md, "Plugins".

    >>> from directcoll.topology import parse
    >>> [c.family for c in candidates(parse("ring:4"), "allreduce", algorithms="ring")]
    ['ring']
    """
    from directcoll.reports.contenders import default_policy, select, with_root

    contenders, skipped = default_policy(topology, collective)
    if algorithms is not None:
        wanted = [a.strip() for a in (algorithms.split(",") if isinstance(algorithms, str) else algorithms)]
        if not [w for w in wanted if w]:
            raise DirectcollError(f"--algorithms {algorithms!r} names no algorithm; see `directcoll algorithms`")
        contenders = select(contenders + [k.contender for k in skipped], [w for w in wanted if w], topology,
                            collective)
    return with_root(contenders, root)


def _check(topology, collective: str, ranks: int | None, root: int | None = None) -> tuple[str, int, int | None]:
    """(collective name, ranks, root: 0 by default for broadcast and reduce, None for the others), checked."""
    coll = Collective.parse(collective).value
    if coll not in SERVED:
        raise DirectcollError(f"libdirectcoll serves {', '.join(SERVED)}, not {coll}")
    n = topology.num_compute
    if ranks is not None and ranks != n:
        raise DirectcollError(f"--ranks {ranks}: {topology.spec} has {n} ranks; give a network of {ranks} ranks")
    if root is not None and coll not in ROOTED:
        raise DirectcollError(f"--root {root}: only broadcast and reduce have a root; the collective is {coll}")
    if coll in ROOTED:
        root = 0 if root is None else int(root)
        if not 0 <= root < n:
            raise DirectcollError(f"--root {root}: the root must be one of the ranks 0..{n - 1} of {topology.spec}")
    return coll, n, root


def model_table(topology, output, *, collective: str = "allreduce", sizes=None, params=None, ranks=None,
                routing: str = "adaptive", root: int | None = None, algorithms=None) -> dict:
    """Write the tuning table ``output`` (JSON) of the step model's winner per size on ``topology``, each winner
    compiled (verified) as a program file next to it (``STEM-ALGORITHM-VARIANT.dcp``); a winner that cannot be
    compiled gives way to the next fastest.

    Args:
        topology: the network (its compute nodes are the ranks); output: the table's path.
        collective: a name of :data:`SERVED`; sizes: bytes (default 8 B, 1 KiB, ... 64 MiB);
        params: :class:`~directcoll.simulate.params.NetworkParams`; ranks: must equal the topology's ranks;
        root: broadcast and reduce: the root every program is compiled for (default 0).
        algorithms: the candidates, as ``compare --algorithms`` names them (families, registry names, plugins,
            ``file:PATH``; :func:`candidates`); default: the default contenders.

    Returns:
        The table written: {directcoll_tuning, source "model", network, collective, ranks, sizes, winners,
        entries} (and root, for broadcast and reduce).

    Raises:
        DirectcollError: a collective libdirectcoll does not serve, ``ranks`` other than the topology's, a root
            with another collective or outside the ranks, bad sizes, no contender that compiles; what
            :func:`~directcoll.reports.compare.compare` raises.

    Source: docs/runtime.md, "Tuning and benchmarks".

    >>> import os, tempfile
    >>> from directcoll.topology import parse
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     t = model_table(parse("ring:4"), os.path.join(tmp, "t.json"), sizes=[8, 1 << 26])
    ...     sorted(os.listdir(tmp))[-1], t["entries"][0]["min_bytes"], t["entries"][-1]["max_bytes"]
    ('t.json', 0, None)
    """
    from directcoll.reports.compare import compare

    coll, n, root = _check(topology, collective, ranks, root)
    sizes = sorted({int(s) for s in (sizes if sizes is not None else [8 << (3 * k) for k in range(9)])})
    byte_ranges(sizes)
    output = Path(output)
    contenders = candidates(topology, coll, root, algorithms)
    cmp = compare(topology, coll, sizes, params, routing, contenders=contenders)
    compiled: dict[tuple, str | None] = {}
    programs: dict[str, dict] = {}
    winners = []
    for j in range(len(sizes)):
        for entry in sorted(cmp.entries, key=lambda e: e.times[j]):
            c = _contender_of(entry, contenders)
            if c is None:
                continue
            key = (c.algorithm, c.variant, c.ports, tuple(sorted(c.options.items())))
            if key not in compiled:
                name = _program_name(output.stem, entry.algorithm, entry.variant, root)
                try:
                    sched = _build(topology, coll, c)
                    write_program(sched, output.parent / name)
                    compiled[key] = name
                    programs[name] = _described(sched, c.label)
                except (ScheduleError, UnsupportedShapeError):
                    compiled[key] = None
            if compiled[key]:
                winners.append(compiled[key])
                break
        else:
            raise DirectcollError(f"no contender on {topology.spec} compiles into a program at {sizes[j]} bytes")
    table = {"directcoll_tuning": 1, "source": "model", "network": topology.spec, "collective": coll, "ranks": n,
             **({} if root is None else {"root": root}), "sizes": sizes, "winners": winners,
             "entries": table_entries(coll, n, sizes, winners, root, programs)}
    output.write_text(json.dumps(table, indent=1) + "\n")
    return table


# -- the benchmark ---------------------------------------------------------------------------------------------
def bench_path(mpicc: list[str] | None = None) -> Path:
    """The benchmark program ``directcoll_bench`` (``directcoll/native/directcoll_bench.c``), built with the MPI
    compiler wrapper on first use and cached like the library.

    Returns:
        The executable's path.

    Raises:
        MissingDependencyError: no MPI compiler wrapper; DirectcollError: the build failed.

    Source: docs/runtime.md, "Tuning and benchmarks".
    """
    mpicc = mpicc or find_mpicc()
    source = resources.files("directcoll").joinpath("native", "directcoll_bench.c").read_bytes()
    show, version = mpi_identity(mpicc)

    def build(tmp: Path, out: Path) -> None:
        (tmp / "directcoll_bench.c").write_bytes(source)
        cmd = [*mpicc, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(out),
               str(tmp / "directcoll_bench.c")]
        done = children.run(cmd, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise DirectcollError("building directcoll_bench failed:\n" + "\n".join(done.stderr.splitlines()[-15:]))

    return cached_build("directcoll-bench", source + (show + version).encode(), build)


def find_mpiexec(mpicc: list[str] | None = None) -> str:
    """The launcher of the MPI the bench is built for (:func:`directcoll.runtime.native.find_mpiexec`:
    ``$DIRECTCOLL_MPIEXEC``, else beside the MPI compiler wrapper, else on ``PATH``).

    Returns:
        Its path.

    Raises:
        MissingDependencyError: none found.

    Source: docs/runtime.md, "Tuning and benchmarks", "Open MPI".
    """
    from directcoll.runtime.native import find_mpiexec as launcher

    return launcher(mpicc)


def parse_bench(text: str) -> dict[int, tuple[float, float | None]]:
    """The rows of :func:`run_bench`'s output: size -> (first latency column, second or None), in seconds.

    Returns:
        A dict of int -> (float, float or None).

    Raises:
        DirectcollError: a row that is not numbers.

    Source: the OSU micro-benchmarks' output format.

    >>> parse_bench("# OSU MPI Allreduce Latency Test\\n# Size  Avg Latency(us)  directcoll(us)\\n8  0.25  1.5\\n")
    {8: (2.5e-07, 1.5e-06)}
    """
    out = {}
    for line in text.splitlines():
        fields = line.split()
        if not fields or line.lstrip().startswith("#"):
            continue
        try:
            values = [float(f) * 1e-6 for f in fields[1:3]]
            out[int(fields[0])] = (values[0], values[1] if len(values) > 1 else None)
        except (ValueError, IndexError) as exc:
            raise DirectcollError(f"directcoll_bench printed {line!r}, not 'SIZE LATENCY_US ...'") from exc
    return out


def check_table(path, *, collective: str | None = None, ranks: int | None = None, root: int | None = None
                ) -> list[dict]:
    """Check the tuning table at ``path`` as libdirectcoll will read it: a list of entries or an object with
    ``entries``, each program readable (:func:`~directcoll.runtime.native.program_info`, relative to the table's
    folder) and of its entry's collective, ranks and root (where the entry names one); with ``collective`` and
    ``ranks``, at least one entry for them (and with ``root``, one whose program is compiled for it).

    Returns:
        The entries.

    Raises:
        DirectcollError: an unreadable table, or an entry the library would skip (so its calls would fall through
            and a benchmark would time the MPI library twice), naming it.

    Source: docs/runtime.md, "The native runtime" (the tuning table).

    >>> check_table("no/such/table.json")
    Traceback (most recent call last):
    ...
    directcoll.errors.DirectcollError: the tuning table 'no/such/table.json': no such file
    """
    from directcoll.runtime.native import program_info

    path = Path(path)
    text = read_text(path, f"the tuning table {str(path)!r}", bytes_per_byte=TABLE_BYTES_PER_CHAR)
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise DirectcollError(f"the tuning table {str(path)!r} is not JSON: {exc}") from exc
    entries = doc.get("entries") if isinstance(doc, dict) else doc
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise DirectcollError(f"the tuning table {str(path)!r} is not a list of entries (or an object with one)")
    roots = []  # the root each entry's program is compiled for (None: not rooted)
    for i, e in enumerate(entries):
        program = path.parent / str(e.get("program", ""))
        try:
            info = program_info(program.read_bytes())
        except (OSError, DirectcollError) as exc:
            raise DirectcollError(f"{path} entry {i}: program {str(program)!r}: {getattr(exc, 'strerror', None) or exc}"
                                  ) from exc
        if (info["collective"], info["ranks"]) != (e.get("collective"), e.get("ranks")):
            raise DirectcollError(f"{path} entry {i}: {program} holds a {info['collective']} program for "
                                  f"{info['ranks']} ranks, the entry says {e.get('collective')} on {e.get('ranks')}")
        if "root" in e and e["root"] != info["root"]:
            raise DirectcollError(f"{path} entry {i}: {program} is compiled for root {info['root']}, the entry says "
                                  f"root {e['root']}")
        roots.append(info["root"])
    if collective is not None and not any(e.get("collective") == collective and e.get("ranks") == ranks and
                                          (root is None or at == root) for e, at in zip(entries, roots, strict=True)):
        raise DirectcollError(f"the tuning table {str(path)!r} has no entry for {collective} on {ranks} ranks"
                              + ("" if root is None else f" from root {root}"))
    return entries


def run_bench(ranks: int, sizes, *, collective: str = "allreduce", impl: str = "both", table=None,
              round_seconds: float = ROUND_SECONDS, timeout: float = 1800.0, root: int | None = None,
              launch=None) -> str:
    """Run ``directcoll_bench`` on ``ranks`` ranks of this machine (``mpiexec -n``) at ``sizes`` (bytes, as OSU
    prints them), under ``LD_PRELOAD`` of libdirectcoll with the tuning table ``table`` when given. ``root``:
    broadcast and reduce (default 0). ``launch(mpiexec, argv)``: the command line that starts ``argv`` on the
    ranks instead of ``mpiexec -n ranks argv`` (the emulated testbed's, :meth:`directcoll.testbed.netns.Testbed.
    mpiexec`).

    Returns:
        Its output in the OSU micro-benchmarks' format (with ``impl="both"``: the MPI library's "Avg Latency(us)"
        and a "directcoll(us)" column, from the same run).

    Raises:
        MissingDependencyError: no MPI; DirectcollError: a bad ``impl``, a table :func:`check_table` refuses, or
            the run failed (its last lines).

    Source: docs/runtime.md, "Tuning and benchmarks".
    """
    if impl not in ("native", "ours", "both"):
        raise DirectcollError(f"impl must be native, ours or both, got {impl!r}")
    coll = Collective.parse(collective).value
    if root is not None and coll not in ROOTED:
        raise DirectcollError(f"--root {root}: only broadcast and reduce have a root; the collective is {coll}")
    if coll in ROOTED and not 0 <= (root or 0) < int(ranks):
        raise DirectcollError(f"--root {root}: the root must be one of the ranks 0..{int(ranks) - 1}")
    mpicc = find_mpicc()
    mpiexec = find_mpiexec(mpicc)
    argv = [str(bench_path(mpicc)), coll + (f":{root or 0}" if coll in ROOTED else ""), impl,
            repr(float(round_seconds)), *[str(int(s)) for s in sizes]]
    cmd = launch([mpiexec], argv) if launch else [mpiexec, "-n", str(int(ranks)), *argv]
    env = {k: v for k, v in os.environ.items() if k not in ("DIRECTCOLL_SCHEDULES", "DIRECTCOLL_DEBUG")}
    env.update(launch_env(mpiexec))  # Open MPI: oversubscription, and root where it runs as root
    if table is not None and impl != "native":
        check_table(table, collective=coll, ranks=int(ranks), root=(root or 0) if coll in ROOTED else None)
    if table is not None:
        env["LD_PRELOAD"] = str(library_path(mpicc))
        env["DIRECTCOLL_SCHEDULES"] = str(Path(table).resolve())
    try:
        done = children.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as exc:
        raise DirectcollError(f"directcoll_bench on {ranks} ranks ran past {timeout:.0f} s") from exc
    if done.returncode != 0:
        raise DirectcollError(f"directcoll_bench on {ranks} ranks failed (status {done.returncode}):\n"
                              + "\n".join((done.stderr or done.stdout).strip().splitlines()[-10:]))
    return done.stdout


def measured_table(topology, output, *, collective: str = "allreduce", sizes=None, ranks=None,
                   round_seconds: float = ROUND_SECONDS, progress=None, root: int | None = None,
                   algorithms=None) -> dict:
    """Write the tuning table ``output`` from measurements: every candidate (:func:`candidates`) that compiles is run
    through
    libdirectcoll on the topology's ranks of this machine with the MPI library's own collective in the same run
    (:func:`run_bench`, one run per candidate); per size the fastest wins, and where the MPI library is fastest
    (its best time over the runs) there is no entry, so the call falls through to it.

    Returns:
        The table written, as :func:`model_table`'s with source "measured", ``winners`` None where the MPI library
        won, and ``times``: {candidate program or "mpi": seconds per size}.

    Raises:
        What :func:`model_table` and :func:`run_bench` raise.

    Source: docs/runtime.md, "Tuning and benchmarks" (``--measure``).
    """
    coll, n, root = _check(topology, collective, ranks, root)
    sizes = sorted({int(s) for s in (sizes if sizes is not None else [8 << (3 * k) for k in range(9)])})
    byte_ranges(sizes)
    output = Path(output)
    times: dict[str, list[float]] = {"mpi": [math.inf] * len(sizes)}
    programs: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="directcoll-tune-") as tmp:
        names = []  # the candidates' programs, each once
        for c in candidates(topology, coll, root, algorithms):
            try:
                sched = _build(topology, coll, c)
                name = _program_name(output.stem, sched.algorithm, c.label or sched.meta.get("variant") or "", root)
                write_program(sched, Path(tmp) / name)
                programs[name] = _described(sched, c.label)
            except (ScheduleError, UnsupportedShapeError):
                continue
            if name not in times:
                names.append(name)
                times[name] = [math.inf] * len(sizes)
        for i, name in enumerate(names):
            if progress:
                progress(i, len(names), name)
            table = Path(tmp) / "one.json"
            table.write_text(json.dumps([{"collective": coll, "ranks": n, "program": name}]))
            per = n if coll in ("allgather", "alltoall") else 1  # the bench takes OSU's sizes: per rank there
            rows = parse_bench(run_bench(n, [max(1, s // per) for s in sizes], collective=coll, table=table,
                                         round_seconds=round_seconds, root=root))
            for j, (mpi, ours) in enumerate(_rows_in_order(rows, len(sizes))):
                times["mpi"][j] = min(times["mpi"][j], mpi)
                times[name][j] = ours if ours is not None else math.inf
        winners = []
        for j in range(len(sizes)):
            best = min(times, key=lambda k: times[k][j])
            winners.append(None if best == "mpi" else best)
        for name in set(w for w in winners if w):
            shutil.copyfile(Path(tmp) / name, output.parent / name)
    table = {"directcoll_tuning": 1, "source": "measured", "network": topology.spec, "collective": coll, "ranks": n,
             **({} if root is None else {"root": root}), "sizes": sizes, "winners": winners,
             "times": {k: [None if math.isinf(t) else t for t in v] for k, v in times.items()},
             "entries": table_entries(coll, n, sizes, winners, root, programs)}
    output.write_text(json.dumps(table, indent=1) + "\n")
    return table


def _rows_in_order(rows: dict, count: int) -> list[tuple[float, float | None]]:
    """The bench's rows in size order (it prints the bytes it ran, which may round the sizes asked for)."""
    if len(rows) != count:
        raise DirectcollError(f"directcoll_bench printed {len(rows)} rows for {count} sizes")
    return [rows[k] for k in sorted(rows)]
