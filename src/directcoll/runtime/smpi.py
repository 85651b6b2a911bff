"""The SMPI engine: libdirectcoll and our schedules inside SimGrid SMPI, on a simulated network built from the
topology (``directcoll run --engine smpi SPEC``).

SMPI (SimGrid's MPI) runs an unmodified MPI C program with every rank a thread of one process and every message a
flow of SimGrid's network model over a platform file. Here the program is ``dc_smpi_driver.c`` linked with
libdirectcoll's sources by ``smpicc`` into one SMPI program (cached per SimGrid like the native library):

* **Interposition.** There is no ``LD_PRELOAD`` in SMPI (the program is a shared object SMPI loads once per rank),
  but its ``mpi.h`` declares every ``MPI_`` function weak and its ``PMPI_`` twin strong, exactly the profiling
  interface: our ``MPI_Allreduce`` (and the other three) in the same program override SMPI's, and their ``PMPI_``
  calls reach SMPI's own. The program is linked with ``-Wl,-Bsymbolic`` so that its calls bind to its own
  definitions before the loader's global scope (where libsimgrid's weak ``MPI_`` symbols come first). SMPI
  privatizes each rank's globals (``smpi/privatization``, on by default for programs built with smpicc), so the
  library's once-per-process state is once per rank, as on a real MPI.
* **The same checks as on MPI.** The library compares the MPI version it was built for (SMPI's, from a probe run
  under ``smpirun``) with the running one; a program file is verified before it is written; a run sets
  ``DIRECTCOLL_DEBUG=1`` and counts the library's per-call lines, so a call that fell through to SMPI's collective
  is reported (``served`` false), never timed as ours.
* **Timing.** Simulated seconds (``MPI_Wtime`` is SimGrid's clock): every timed call starts on all ranks at the same
  simulated instant and ends when the last rank returns (see the driver's header). Computation is not simulated
  (``smpi/simulate-computation:no``): the times are the network's, as in the step, flow and packet models with
  γ = 0.

Network model (:data:`SMPI_CONFIG`): ``network/model:CM02`` (max-min sharing without SMPI's or LV08's corrective
factors: a message of B bytes alone on a route takes its latency plus B / bandwidth, as in our models),
``network/crosstraffic:0`` (no 5 % reverse traffic for acknowledgements), ``network/TCP-gamma:0`` (no TCP window
bound), ``smpi/wtime:0`` (reading the clock costs nothing), ``smpi/coll-selector:mpich`` (SMPI's collectives chosen
as MPICH chooses them, the library `directcoll run` compares against) and ``smpi/host-speed`` set (compute is off
anyway). One difference remains by design of CM02: flows sharing a link get shares inversely proportional to
their route latency (RTT-unfair, like TCP), where our flow model shares equally; it matters only where flows of
different lengths share a link (docs/fidelity.md, "SMPI").

Source: SimGrid 3.32 documentation, "SMPI: Simulate real MPI applications" (smpicc, smpirun, privatization) and
"Configuring SimGrid" (network/model, network/crosstraffic, network/TCP-gamma, smpi/*); Casanova and Marchal,
"A network model for simulation of grid application", LIP RR-2002-40 (CM02); docs/runtime.md, "The SMPI engine".
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from directcoll import children
from directcoll.errors import DirectcollError, MissingDependencyError
from directcoll.resources import cached_build, check_memory
from directcoll.runtime.native import CFLAGS, SOURCES, write_program

#: the C sources of the SMPI program: libdirectcoll's and the driver
SMPI_SOURCES = (*SOURCES, "dc_smpi_driver.c")
#: flags of the SMPI build: the native library's, but an executable (smpicc adds -shared itself) bound to its own
#: MPI_ definitions (-Bsymbolic) instead of libsimgrid's weak ones; without the shared-memory transport (-DDC_NO_SHM:
#: the simulated ranks share one process and talk over the simulated network, point-to-point)
SMPI_CFLAGS = (*(f for f in CFLAGS if f != "-shared"), "-Wl,-Bsymbolic", "-DDC_NO_SHM")
#: SimGrid configuration of every run (the module docstring says why each)
SMPI_CONFIG = ("network/model:CM02", "network/crosstraffic:0", "network/TCP-gamma:0", "smpi/wtime:0",
               "smpi/simulate-computation:no", "smpi/host-speed:1Gf", "smpi/coll-selector:mpich")
INSTALL_HINT = "the SMPI engine needs SimGrid's smpicc and smpirun: apt-get install libsimgrid-dev (Debian, Ubuntu)"
#: memory of one simulated rank besides its buffers (its stack, its copy of the program), measured
RANK_BYTES = 1 << 20
#: buffers per rank in units of the vector: the driver's input and two results, our plan's scratch and staging,
#: SMPI's own collective's temporary buffers
BUFFERS_PER_RANK = 6.0

_PROBE = b"""#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    (void)argc; (void)argv;
    MPI_Get_library_version(v, &n);
    fwrite(v, 1, (size_t)n, stdout);
    return 0;
}
"""


def _c_literal(text: str) -> str:
    """A C string literal of ``text``'s UTF-8 bytes, every byte but ASCII letters and digits octal-escaped."""
    return '"' + "".join(chr(b) if chr(b).isalnum() and b < 128 else f"\\{b:03o}" for b in text.encode()) + '"'


def find_smpi() -> tuple[str, str]:
    """The paths of ``smpicc`` and ``smpirun`` on ``PATH``.

    Returns:
        (smpicc, smpirun), two str.

    Raises:
        MissingDependencyError: either is missing (the message says what to install).

    Source: SimGrid 3.32 documentation, "SMPI".
    """
    cc, run = shutil.which("smpicc"), shutil.which("smpirun")
    if not cc or not run:
        raise MissingDependencyError(INSTALL_HINT)
    return cc, run


def _run(cmd: list[str], what: str, *, env=None, timeout: float = 600) -> subprocess.CompletedProcess:
    try:
        done = children.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except OSError as exc:
        raise MissingDependencyError(f"{what}: cannot run {cmd[0]} ({exc}); {INSTALL_HINT}") from exc
    except subprocess.TimeoutExpired:
        raise DirectcollError(f"{what} did not finish within {timeout:g} s") from None
    if done.returncode != 0:
        lines = [x for x in (done.stderr + done.stdout).strip().splitlines() if "[smpi_config/INFO]" not in x]
        raise DirectcollError(f"{what} failed (exit status {done.returncode}):\n" + "\n".join(lines[-15:]))
    return done


def _one_host(folder: Path) -> tuple[Path, Path]:
    platform, hosts = folder / "one.xml", folder / "one.hosts"
    platform.write_text("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
                        '<platform version="4.1"><zone id="z" routing="Full"><host id="h0" speed="1Gf"/></zone>'
                        "</platform>\n")
    hosts.write_text("h0\n")
    return platform, hosts


def smpi_version() -> str:
    """SMPI's ``MPI_Get_library_version`` string, from a probe built with ``smpicc`` (cached) and run under
    ``smpirun`` on a one-host platform: what libdirectcoll's ABI check compares at run time.

    Returns:
        The version string, e.g. ``SMPI Version 3.32. Copyright The SimGrid Team 2007-2022``.

    Raises:
        MissingDependencyError: no smpicc or smpirun. DirectcollError: the probe failed to build or run.

    Source: MPI 4.1 standard, Sec. 9.1.1 (MPI_Get_library_version); docs/runtime.md, "ABI".
    """
    cc, run = find_smpi()
    version = _run([cc, "--version"], "smpicc --version").stdout

    def build(tmp: Path, out: Path) -> None:
        (tmp / "probe.c").write_bytes(_PROBE)
        _run([cc, "-o", str(out), str(tmp / "probe.c")], "building the SMPI version probe")

    probe = cached_build("smpi-probe", _PROBE + version.encode(), build)
    with tempfile.TemporaryDirectory(prefix="directcoll-smpi-") as tmp:
        platform, hosts = _one_host(Path(tmp))
        done = _run([run, "-np", "1", "-platform", str(platform), "-hostfile", str(hosts),
                     "--cfg=smpi/host-speed:1Gf", str(probe)], "the SMPI version probe")
    return done.stdout.strip()


def driver_path() -> Path:
    """The SMPI program (libdirectcoll + ``dc_smpi_driver.c``, built with ``smpicc`` and :data:`SMPI_CFLAGS`),
    built on first use and cached under :func:`~directcoll.resources.cache_dir`, keyed by the sources, the flags,
    ``smpicc -show`` and SMPI's version string.

    Returns:
        The path of ``dc-smpi-driver-HASH``.

    Raises:
        MissingDependencyError: no smpicc or smpirun (the message says what to install).
        DirectcollError: the probe or the build failed (the compiler's last lines in the message).

    Source: docs/runtime.md, "The SMPI engine".
    """
    cc, _ = find_smpi()
    version = smpi_version()
    show = _run([cc, "-show"], "smpicc -show").stdout
    key = b"".join(resources.files("directcoll").joinpath("native", n).read_bytes() for n in SMPI_SOURCES)
    key += "\0".join([*SMPI_CFLAGS, show, version]).encode()

    def build(tmp: Path, out: Path) -> None:
        srcs = []
        for name in SMPI_SOURCES:
            path = tmp / name
            path.write_bytes(resources.files("directcoll").joinpath("native", name).read_bytes())
            if name.endswith(".c"):
                srcs.append(str(path))
        (tmp / "dc_build.h").write_text(f"#define DC_BUILT_MPI_VERSION {_c_literal(version)}\n")
        _run([cc, *SMPI_CFLAGS, "-I", str(tmp), "-o", str(out), *srcs, "-lm", "-lpthread"],
             "building the SMPI program with smpicc")

    return cached_build("dc-smpi-driver", key, build)


def check_run_memory(ranks: int, max_bytes: int, platform_bytes: float, program_bytes: int = 0) -> None:
    """Refuse a run whose simulated ranks (each its buffers, :data:`BUFFERS_PER_RANK` vectors, :data:`RANK_BYTES`
    and its copy of the program file: libdirectcoll reads the whole file, every rank's section, into each rank, as
    into each process on a real MPI) and platform (SimGrid's copy of its routes) would exceed the memory budget:
    every rank lives in this one process.

    Raises:
        ResourceError: over the budget.

    Source: docs/architecture.md, "Engines, runtimes and scale"; measured: Swing's 5.2 MB program for torus:32x32 made
    smpirun's resident memory 5.8 GB on 1,024 ranks.

    >>> from directcoll.resources import memory_budget_override
    >>> with memory_budget_override("1GiB"):
    ...     check_run_memory(1024, 8, 0.0, program_bytes=5_169_227)
    Traceback (most recent call last):
    ...
    directcoll.errors.ResourceError: SMPI run of 8 bytes on 1024 simulated ranks (one process, each with a ...
    """
    check_memory(f"SMPI run of {max_bytes:,} bytes on {ranks} simulated ranks (one process, each with a "
                 f"{program_bytes:,}-byte program)",
                 ranks * (RANK_BYTES + BUFFERS_PER_RANK * max_bytes + program_bytes) + platform_bytes)


def parse_driver_output(stdout: str) -> list[dict]:
    """The driver's ``result`` lines as dicts: ``bytes``, ``native_time_s``, ``time_s``, ``correct``, ``late``.

    Returns:
        One dict per size, in order.

    Raises:
        DirectcollError: a malformed line.

    Source: ``dc_smpi_driver.c`` (its header documents the line).

    >>> parse_driver_output("result 1024 1e-06 2e-06 1 0\\n")
    [{'bytes': 1024, 'native_time_s': 1e-06, 'time_s': 2e-06, 'correct': True, 'late': False}]
    """
    rows = []
    for line in stdout.splitlines():
        if not line.startswith("result "):
            continue
        parts = line.split()
        try:
            rows.append({"bytes": int(parts[1]), "native_time_s": float(parts[2]), "time_s": float(parts[3]),
                         "correct": parts[4] == "1", "late": parts[5] == "1"})
        except (IndexError, ValueError):
            raise DirectcollError(f"the SMPI driver printed a malformed line: {line!r}") from None
    return rows


def run_program(driver: Path, platform: Path, hostfile: Path, ranks: int, collective: str, sizes, *,
                program: Path | None, repeat: int = 1, timeout: float = 600, config=SMPI_CONFIG) -> tuple[list, dict]:
    """Run the SMPI program on ``ranks`` simulated ranks of ``platform`` with ``program`` (a program file for
    ``collective`` on ``ranks``) as the only tuning-table entry (None: no table, every call falls through).

    Returns:
        (rows of :func:`parse_driver_output`, {"served": calls served by our program, "fell_through": calls that
        fell through, "reasons": the distinct fall-through lines}); calls are counted over every rank.

    Raises:
        DirectcollError: smpirun failed or ran past ``timeout`` seconds (its last lines in the message).

    Source: docs/runtime.md, "The SMPI engine".
    """
    _, run = find_smpi()
    env = {**os.environ, "DIRECTCOLL_DEBUG": "1"}
    env.pop("DIRECTCOLL_SCHEDULES", None)
    with tempfile.TemporaryDirectory(prefix="directcoll-smpi-") as tmp:
        if program is not None:
            table = Path(tmp) / "tuning.json"
            table.write_text(json.dumps([{"collective": collective, "ranks": ranks, "min_bytes": 0,
                                          "max_bytes": None, "program": str(program)}]) + "\n")
            env["DIRECTCOLL_SCHEDULES"] = str(table)
        cmd = [run, "-np", str(ranks), "-platform", str(platform), "-hostfile", str(hostfile),
               *(f"--cfg={c}" for c in config), str(driver), collective, str(repeat), *map(str, sizes)]
        done = _run(cmd, f"smpirun of {collective} on {ranks} simulated ranks", env=env, timeout=timeout)
    served = fell = 0
    reasons: dict[str, None] = {}
    for line in done.stderr.splitlines():
        if not line.startswith("directcoll: rank "):
            continue
        if ": served by " in line:
            served += 1
        elif ": fell through: " in line:
            fell += 1
            reasons.setdefault(line.split(": fell through: ", 1)[1], None)
    return parse_driver_output(done.stdout), {"served": served, "fell_through": fell, "reasons": list(reasons)}


def compile_program(schedule, folder) -> Path:
    """Verify ``schedule`` and write its program file into ``folder`` (:func:`directcoll.runtime.native.write_program`).

    Returns:
        The program's path.

    Raises:
        ScheduleError: the schedule fails verification.

    Source: docs/runtime.md, "Program files".
    """
    name = schedule.algorithm + (f"-{schedule.meta['variant']}" if schedule.meta.get("variant") else "")
    return write_program(schedule, Path(folder) / f"{name.replace(':', '-').replace('/', '-')}.dcp")


def platform_path(topology, params) -> tuple[Path, dict]:
    """The SimGrid platform of ``topology`` with ``params``' link bandwidth, link latency, per-hop latency and host
    injection (:func:`directcoll.topology.simgrid.write_platform`), written on first use and cached, keyed by
    the links and their values.

    Returns:
        (path, :func:`~directcoll.topology.simgrid.platform_size` of the topology).

    Raises:
        ResourceError: the platform over the memory budget (checked before writing).

    Source: docs/runtime.md, "The SMPI engine".
    """
    import hashlib

    import numpy as np

    from directcoll.topology.simgrid import check_platform, write_platform

    size = check_platform(topology)
    digest = hashlib.sha256()
    for arr in (topology.link_src, topology.link_dst, topology.link_bandwidth, topology.link_latency):
        digest.update(np.ascontiguousarray(arr).tobytes())
    values = (params.link_bandwidth, params.link_latency, params.per_hop_latency, params.host_injection)
    key = f"simgrid platform v1\0{topology.spec}\0{topology.num_compute}\0{values}\0".encode() + digest.digest()

    def build(tmp: Path, out: Path) -> None:
        write_platform(topology, out, link_bandwidth=params.link_bandwidth, link_latency=params.link_latency,
                       per_hop_latency=params.per_hop_latency, host_injection=params.host_injection)

    return cached_build("simgrid-platform", key, build, suffix=".xml"), size


def smpi_run(topology, params, collective: str, algorithms: list[tuple[str, str | None]], sizes, *,
             repeat: int = 1, timeout: float = 600, progress=None) -> dict:
    """Run every algorithm of ``algorithms`` ((name, variant or None) pairs) on the simulated ``topology``
    under SMPI, at every size (bytes, as :func:`directcoll.runtime.worker` rounds them: float64 elements, a
    multiple of the ranks), beside SMPI's own collective, and check each result bit for bit against it.

    Returns:
        The ``directcoll run`` document: ``ranks``, ``topology``, ``collective``, ``engine`` ("smpi"),
        ``platform`` (file, routes, route elements, routing), ``params``, ``config`` (SimGrid's), and
        ``results``: per algorithm and size ``algorithm``, ``variant``, ``size``, ``bytes``, ``time_s``,
        ``goodput_Bps``, ``correct``, ``served`` (every call went through our program), ``native_time_s``; or
        ``skipped`` with the reason (a shape the algorithm does not serve).

    Raises:
        MissingDependencyError: no SimGrid. ResourceError: the platform or the ranks over the memory budget.
        ScheduleError: a schedule fails verification. DirectcollError: smpirun failed or ran past ``timeout``.

    Source: docs/runtime.md, "The SMPI engine".
    """
    from directcoll.errors import UnsupportedShapeError
    from directcoll.registry import build

    progress = progress or (lambda text: None)
    n = topology.num_compute
    counts = [max(n, (int(s) // 8) // n * n) for s in sizes]
    progress("building the SMPI program")
    driver = driver_path()
    progress(f"writing the SimGrid platform of {topology.spec}")
    platform, size = platform_path(topology, params)
    check_run_memory(n, 8 * max(counts), size["simgrid_bytes"])
    from directcoll.topology.simgrid import route_kind

    results, native = [], {}
    with tempfile.TemporaryDirectory(prefix="directcoll-smpi-") as tmp:
        hostfile = Path(tmp) / "hosts"
        hostfile.write_text("".join(f"h{r}\n" for r in range(n)))
        for name, variant in algorithms:
            label = name + (f":{variant}" if variant else "")
            progress(f"building {label}")
            try:
                schedule = build(name, topology, collective, variant=variant)
            except UnsupportedShapeError as exc:
                results += [{"algorithm": name, "variant": variant, "size": int(s), "skipped": str(exc)}
                            for s in sizes]
                continue
            program = compile_program(schedule, tmp)
            check_run_memory(n, 8 * max(counts), size["simgrid_bytes"], program.stat().st_size)
            progress(f"simulating {label} on {n} ranks")
            rows, calls = run_program(driver, platform, hostfile, n, collective, [8 * c for c in counts],
                                      program=program, repeat=repeat, timeout=timeout)
            # every rank calls ours once per size as a warm-up and then repeat times, each call one debug line
            served = calls["fell_through"] == 0 and calls["served"] == n * len(counts) * (1 + repeat)
            for s, row in zip(sizes, rows, strict=True):
                native.setdefault(row["bytes"], row["native_time_s"])
                results.append({"algorithm": schedule.algorithm, "variant": schedule.meta.get("variant"),
                                "size": int(s), "bytes": row["bytes"], "time_s": row["time_s"],
                                "goodput_Bps": row["bytes"] / row["time_s"] if row["time_s"] > 0 else None,
                                "correct": row["correct"], "served": served, "late": row["late"],
                                "native_time_s": native[row["bytes"]],
                                **({"fell_through": calls["reasons"]} if calls["reasons"] else {})})
    return {"ranks": n, "topology": topology.spec, "collective": collective, "engine": "smpi",
            "platform": {"file": str(platform), "routes": size["routes"], "route_elements": size["elements"],
                         "routing": route_kind(topology)},
            "params": params.to_dict(), "config": list(SMPI_CONFIG), "repeat": repeat, "results": results}
