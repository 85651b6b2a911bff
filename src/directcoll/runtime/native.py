"""The native runtime's Python side: build ``libdirectcoll`` against the MPI ``mpicc`` names, and compile schedules
into the program files it runs inside unmodified MPI programs (``LD_PRELOAD``, PMPI).

The library (C11, ``directcoll/native/*.c``) is built on first use with the MPI compiler wrapper: ``$MPICC`` when
set (a cluster's MPI), else the ``mpicc`` next to the Python interpreter (the ``mpich`` wheel of the ``mpi``
extra), else ``mpicc`` on ``PATH``. It is cached under :func:`~directcoll.resources.cache_dir`, keyed by its
sources, the flags, ``mpicc -show`` (headers, libraries, compiler) and the MPI library's version string, which a
tiny probe prints (``MPI_Get_library_version``, callable before ``MPI_Init``). The version string is compiled into
the library, and at first use the library compares it with the MPI it runs on and refuses (every call falls
through, one line on stderr) when they differ: the ABI guarantee.

A program file (:func:`encode_program`) holds one schedule for one number of ranks, independent of the count and
the datatype: piece ends stay block coordinates (numerators over the schedule's denominator) and the library
rounds them for each call's count exactly as :func:`directcoll.runtime.program.boundaries` does. The format is
in docs/runtime.md, "Program files".

Source: docs/runtime.md, "The native runtime"; MPI 4.1 standard, Ch. 15 (the profiling
interface) and Sec. 9.1.1 (MPI_Get_library_version).

>>> from directcoll.registry import build
>>> blob = encode_program(build("ring", "ring:3", variant="unidirectional"))
>>> blob[:8], program_info(blob)["steps"]
(b'DCPROG\\r\\n', 4)
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import struct
import subprocess
import sys
from importlib import resources
from pathlib import Path

import numpy as np

from directcoll import children
from directcoll.errors import DirectcollError, MissingDependencyError
from directcoll.resources import cached_build
from directcoll.schedule.ir import Collective, Schedule

#: the first 8 bytes of every program file
MAGIC = b"DCPROG\r\n"
#: the program format's version (the library refuses others)
FORMAT_VERSION = 2
#: collective codes of the format (broadcast and reduce, since version 2, record their root)
COLLECTIVE_CODES = {Collective.ALLREDUCE: 0, Collective.REDUCE_SCATTER: 1, Collective.ALLGATHER: 2,
                    Collective.ALLTOALL: 3, Collective.BROADCAST: 4, Collective.REDUCE: 5}
#: the library's sources, in the package directcoll.native
SOURCES = ("directcoll.c", "dc_entry.c", "dc_exec.c", "dc_plans.c", "dc_program.c", "dc_coord.c", "dc_alltoall.c",
           "dc_ivset.c", "dc_reduce.c", "dc_table.c", "dc_shm.c", "dc_alloc.c", "dc_internal.h")
#: flags of every build (warnings are errors; no FMA contraction, so rounding matches numpy's)
CFLAGS = ("-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared", "-fvisibility=hidden",
          "-ffp-contract=off")
INSTALL_HINT = ("the native runtime needs an MPI C compiler wrapper: pip install 'directcoll[mpi]' (the mpich wheel's "
                "mpicc), or set MPICC to your MPI's mpicc")

_PROBE = b"""#include <mpi.h>
#include <stdio.h>
int main(void) {
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    MPI_Get_library_version(v, &n);
    fwrite(v, 1, (size_t)n, stdout);
    return 0;
}
"""


# -- building the library ----------------------------------------------------------------------------------------
def find_mpicc() -> list[str]:
    """The MPI C compiler wrapper to build with: ``$MPICC`` (split like a shell word list), else ``mpicc`` next to
    ``sys.executable`` (the mpich wheel in this environment), else ``mpicc`` on ``PATH``.

    Returns:
        The command as a list of str (its first element an existing executable).

    Raises:
        MissingDependencyError: none found, or ``$MPICC`` names no executable (the message says what to install).

    Source: docs/runtime.md, "The native runtime" (which MPI the library is built against).

    >>> os.environ["MPICC"] = "sh -c"  # a cluster's wrapper with its options; here any executable
    >>> cmd = find_mpicc(); del os.environ["MPICC"]
    >>> os.path.basename(cmd[0]), cmd[1:]
    ('sh', ['-c'])
    """
    if os.environ.get("MPICC"):
        cmd = shlex.split(os.environ["MPICC"])
        exe = shutil.which(cmd[0]) if cmd else None
        if not exe:
            raise MissingDependencyError(f"MPICC={os.environ['MPICC']!r} is not an executable; {INSTALL_HINT}")
        return [exe, *cmd[1:]]
    beside = Path(sys.executable).parent / "mpicc"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    exe = shutil.which("mpicc")
    if not exe:
        raise MissingDependencyError(INSTALL_HINT)
    return [exe]


def _run(cmd: list[str], what: str) -> str:
    try:
        done = children.run(cmd, capture_output=True, text=True, timeout=300)
    except OSError as exc:
        raise MissingDependencyError(f"{what}: cannot run {cmd[0]} ({exc}); {INSTALL_HINT}") from exc
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
        raise DirectcollError(f"{what} failed ({shlex.join(cmd[:3])} ...):\n{tail}")
    return done.stdout


def mpi_identity(mpicc: list[str] | None = None) -> tuple[str, str]:
    """What the library's ABI depends on: (the wrapper's ``-show`` / ``--showme`` output: compiler, headers and
    libraries; the MPI library's version string from ``MPI_Get_library_version``, printed by a probe built with
    the wrapper and cached).

    Returns:
        (show, version), two str.

    Raises:
        MissingDependencyError: no MPI compiler wrapper (:func:`find_mpicc`).
        DirectcollError: the wrapper or the probe failed (the last lines of its output in the message).

    Source: MPI 4.1 standard, Sec. 9.1.1 (MPI_Get_library_version may be called before MPI_Init); MPICH's
    ``mpicc -show``, Open MPI's ``mpicc --showme``.
    """
    mpicc = mpicc or find_mpicc()
    try:
        show = _run([*mpicc, "-show"], "mpicc -show")
    except DirectcollError:
        show = _run([*mpicc, "--showme"], "mpicc --showme")

    def build(tmp: Path, out: Path) -> None:
        (tmp / "probe.c").write_bytes(_PROBE)
        _run([*mpicc, "-o", str(out), str(tmp / "probe.c")], "building the MPI version probe")

    probe = cached_build("mpi-probe", _PROBE + show.encode(), build)
    # Open MPI counts the string's terminating NUL in its length (the probe writes it); C compares up to it
    return show.strip(), _run([str(probe)], "the MPI version probe").rstrip("\0")


def mpi_family(version: str) -> str:
    """The family of the MPI library whose ``MPI_Get_library_version`` string is ``version``: ``"Open MPI"``,
    ``"MPICH"`` (MPICH and the MPIs built on it that say so: Intel MPI, MVAPICH, Cray MPICH) or ``"other"``.

    Returns:
        One of those three str.

    Raises:
        Nothing: it reads the string only.

    Source: the version strings of Open MPI 4.1 ("Open MPI v4.1.4, package: ...") and MPICH ("MPICH Version: ...").

    >>> mpi_family("Open MPI v4.1.4, package: Debian OpenMPI"), mpi_family("MPICH Version:      4.3.0")
    ('Open MPI', 'MPICH')
    """
    first = version.splitlines()[0] if version else ""
    if "Open MPI" in first:
        return "Open MPI"
    if any(name in first for name in ("MPICH", "MVAPICH", "Intel(R) MPI")):
        return "MPICH"
    return "other"


def find_mpiexec(mpicc: list[str] | None = None) -> str:
    """The launcher of the MPI that ``mpicc`` builds for: ``$DIRECTCOLL_MPIEXEC`` when set; else, beside the
    wrapper, the ``mpiexec`` with the wrapper's suffix (Debian's ``mpicc.openmpi`` goes with ``mpiexec.openmpi``,
    ``mpicc.mpich`` with ``mpiexec.mpich``), else its ``mpiexec``; else ``mpiexec`` on ``PATH``.

    Returns:
        The launcher's path.

    Raises:
        MissingDependencyError: none found, or ``$DIRECTCOLL_MPIEXEC`` names no executable.

    Source: docs/runtime.md, "Open MPI".
    """
    if os.environ.get("DIRECTCOLL_MPIEXEC"):
        exe = shutil.which(os.environ["DIRECTCOLL_MPIEXEC"])
        if not exe:
            raise MissingDependencyError(f"DIRECTCOLL_MPIEXEC={os.environ['DIRECTCOLL_MPIEXEC']!r} is not an "
                                         "executable")
        return exe
    mpicc = mpicc or find_mpicc()
    folder, name = os.path.split(mpicc[0])
    suffix = name[len("mpicc"):] if name.startswith("mpicc") else ""
    for candidate in ([f"mpiexec{suffix}"] if suffix else []) + ["mpiexec"]:
        if exe := shutil.which(candidate, path=folder):
            return exe
    exe = shutil.which("mpiexec")
    if not exe:
        raise MissingDependencyError(f"no mpiexec beside {mpicc[0]} or on PATH; {INSTALL_HINT}")
    return exe


@functools.lru_cache(maxsize=8)
def _launcher_is_open_mpi(mpiexec: str) -> bool:
    try:
        done = children.run([mpiexec, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    text = done.stdout + done.stderr
    return "Open MPI" in text or "OpenRTE" in text


def launch_env(mpiexec: str) -> dict[str, str]:
    """What ``mpiexec`` needs in its environment to start ranks on this machine as MPICH's launcher does: for Open
    MPI's (``mpiexec --version`` names Open MPI or OpenRTE), ``OMPI_MCA_rmaps_base_oversubscribe=1`` (more ranks than
    cores, which MPICH allows) and, when running as root, ``OMPI_ALLOW_RUN_AS_ROOT=1`` and
    ``OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1`` (Open MPI refuses root without them); nothing for other launchers.

    Returns:
        A dict of environment variables to add.

    Raises:
        Nothing: a launcher that does not run (``--version``) is taken for not Open MPI's.

    Source: Open MPI 4.1's mpirun(1) (``--oversubscribe``, ``--allow-run-as-root`` and their environment forms);
    docs/runtime.md, "Open MPI".
    """
    if not _launcher_is_open_mpi(mpiexec):
        return {}
    env = {"OMPI_MCA_rmaps_base_oversubscribe": "1"}
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return env


def _c_string(text: str) -> str:
    """A C string literal of ``text``'s UTF-8 bytes, every byte but letters and digits as an octal escape."""
    return '"' + "".join(chr(b) if chr(b).isalnum() and b < 128 else f"\\{b:03o}" for b in text.encode()) + '"'


def build_library(out, *, mpicc: list[str] | None = None, extra_flags=(), identity=None) -> Path:
    """Compile libdirectcoll into ``out`` (a path) with ``mpicc`` and :data:`CFLAGS` plus ``extra_flags`` (e.g.
    ``("-fsanitize=address,undefined",)``), not cached: :func:`library_path` caches the plain build.
    ``identity``: :func:`mpi_identity`'s answer when the caller has it.

    Returns:
        ``out`` as a Path.

    Raises:
        MissingDependencyError: no MPI compiler wrapper.
        DirectcollError: the build failed (the compiler's last lines in the message).

    Source: docs/runtime.md, "The native runtime".
    """
    import tempfile

    mpicc = mpicc or find_mpicc()
    _, version = identity or mpi_identity(mpicc)
    out = Path(out)
    with tempfile.TemporaryDirectory(prefix="directcoll-native-") as tmp:
        srcs = []
        for name in SOURCES:
            path = Path(tmp) / name
            path.write_bytes(resources.files("directcoll").joinpath("native", name).read_bytes())
            if name.endswith(".c"):
                srcs.append(str(path))
        (Path(tmp) / "dc_build.h").write_text(f"#define DC_BUILT_MPI_VERSION {_c_string(version)}\n")
        _run([*mpicc, *CFLAGS, *extra_flags, "-I", tmp, "-o", str(out), *srcs, "-lm", "-lpthread", "-ldl"],
             "building libdirectcoll")
    return out


def library_path(mpicc: list[str] | None = None) -> Path:
    """The shared library to ``LD_PRELOAD``: built on first use against the MPI of :func:`find_mpicc` and cached
    under :func:`~directcoll.resources.cache_dir`, keyed by the sources, :data:`CFLAGS`, the wrapper's compiler
    version, ``mpicc -show`` and the MPI library's version string.

    Returns:
        The path of ``libdirectcoll-HASH.so``.

    Raises:
        MissingDependencyError: no MPI compiler wrapper (the message says what to install).
        DirectcollError: the probe or the build failed (the compiler's last lines in the message).

    Source: docs/runtime.md, "The native runtime" (built with no manual step, cached per MPI).
    """
    mpicc = mpicc or find_mpicc()
    identity = mpi_identity(mpicc)
    try:
        compiler = _run([*mpicc, "--version"], "mpicc --version").splitlines()[:1]
    except DirectcollError:
        compiler = []
    key = b"".join(resources.files("directcoll").joinpath("native", n).read_bytes() for n in SOURCES)
    key += "\0".join([*CFLAGS, *compiler, *identity]).encode()

    def build(tmp: Path, out: Path) -> None:
        build_library(out, mpicc=mpicc, identity=identity)

    return cached_build("libdirectcoll", key, build, suffix=".so")


# -- program files -----------------------------------------------------------------------------------------------
def encode_program(schedule: Schedule) -> bytes:
    """The program file of ``schedule`` (allreduce, reduce-scatter, allgather, all-to-all, broadcast or reduce), for
    every count and datatype: the header (reduce-scatter and allgather: the block owners; broadcast and reduce: the
    root), then per rank per step its sends, receives and local operations with piece ends in block coordinates,
    then an FNV-1a checksum (docs/runtime.md, "Program files").

    Returns:
        The file's bytes.

    All-to-all needs no field of its own: its coordinate (N^2 k blocks, pair (i, j)'s k blocks at (i N + j) k) and
    the library's per-rank layout (send part, receive part, relayed blocks) follow from the collective code. A
    rooted program serves only the root it records.

    Raises:
        DirectcollError: a collective the format has no code for (none of the IR's today).

    Source: docs/runtime.md, "Program files"; docs/architecture.md, "Schedule IR" (transfers, pieces, shift, scratch;
    the root in ``meta["root"]``).

    >>> from directcoll.registry import build
    >>> len(encode_program(build("ring", "ring:2", variant="unidirectional")))
    383
    >>> program_info(encode_program(build("binomial", "ring:4", "reduce", root=3)))["root"]
    3
    """
    s = schedule
    if s.collective not in COLLECTIVE_CODES:
        raise DirectcollError(f"libdirectcoll runs {', '.join(c.value for c in COLLECTIVE_CODES)}; a "
                              f"{s.collective.value} has no program format")
    n, steps = s.nranks, s.num_steps
    sends = [[[] for _ in range(steps)] for _ in range(n)]
    recvs = [[[] for _ in range(steps)] for _ in range(n)]
    local = [[[] for _ in range(steps)] for _ in range(n)]
    po, start, stop = s.piece_offsets, s.piece_start.astype("<i8"), s.piece_stop.astype("<i8")
    dest = (s.piece_start + s.shift).astype("<i8")
    for i in range(s.num_transfers):
        a, b = po[i], po[i + 1]
        t, src, dst, op = int(s.step[i]), int(s.src[i]), int(s.dst[i]), int(s.op[i])
        with_dest = np.stack([start[a:b], stop[a:b], dest[a:b]], axis=1).tobytes()
        if src == dst:
            local[src][t].append(struct.pack("<II", op, b - a) + with_dest)
        else:
            sends[src][t].append(struct.pack("<II", dst, b - a) + np.stack([start[a:b], stop[a:b]], axis=1).tobytes())
            recvs[dst][t].append(struct.pack("<III", src, op, b - a) + with_dest)
    name = s.algorithm + (f":{s.meta['variant']}" if s.meta.get("variant") else "")
    head = MAGIC + struct.pack("<IIIIIIqI", FORMAT_VERSION, COLLECTIVE_CODES[s.collective], n, s.nblocks, s.nscratch,
                               steps, s.denominator, len(name.encode())) + name.encode()
    if s.collective in (Collective.REDUCE_SCATTER, Collective.ALLGATHER):
        head += np.asarray(s.owner, dtype="<u4").tobytes()
    if s.collective.rooted:
        head += struct.pack("<I", s.root)
    sections = [b"".join(struct.pack("<III", len(sends[r][t]), len(recvs[r][t]), len(local[r][t]))
                         + b"".join(sends[r][t]) + b"".join(recvs[r][t]) + b"".join(local[r][t])
                         for t in range(steps)) for r in range(n)]
    first = len(head) + 8 * (n + 1)
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in sections])]) + first
    body = head + offsets.astype("<u8").tobytes() + b"".join(sections)
    return body + struct.pack("<Q", _fnv1a(body))


def _fnv1a(data: bytes) -> int:
    h = 1469598103934665603
    for byte in data:
        h = ((h ^ byte) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def write_program(schedule: Schedule, path, *, verify: bool = True) -> Path:
    """Write :func:`encode_program` of ``schedule`` to ``path``, after checking it implements its collective
    (``verify``: the exact verifier, :func:`directcoll.verify.verify`).

    Returns:
        ``path`` as a Path.

    Raises:
        ScheduleError: the schedule fails verification (naming the first failure) or is too large to verify;
            ResourceError: over the memory budget.

    Source: docs/runtime.md, "Program files" (only verified schedules become programs).

    >>> import os, tempfile
    >>> from directcoll.registry import build
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     p = write_program(build("swing", "torus:4"), os.path.join(tmp, "swing.dcp"))
    ...     program_info(p.read_bytes())["name"]
    'swing:bandwidth'
    """
    from directcoll.errors import ScheduleError
    from directcoll.verify import verify as check

    if verify:
        result = check(schedule)
        if not result.ok:
            raise ScheduleError(f"the schedule does not implement its {schedule.collective.value}: "
                                f"{result.failure}; not compiled")
    blob = encode_program(schedule)
    path = Path(path)
    path.write_bytes(blob)
    return path


def program_info(blob: bytes) -> dict:
    """The header of a program file: ``version``, ``collective``, ``ranks``, ``nblocks``, ``nscratch``, ``steps``,
    ``denominator``, ``name``, ``root`` (broadcast and reduce; None for the others) and ``bytes``.

    Returns:
        A dict of those fields.

    Raises:
        DirectcollError: not a program file, another format version or a wrong checksum.

    Source: docs/runtime.md, "Program files".

    >>> program_info(b"nope")
    Traceback (most recent call last):
    ...
    directcoll.errors.DirectcollError: not a directcoll program file (its first bytes are not DCPROG)
    """
    if len(blob) < 52 or blob[:8] != MAGIC:
        raise DirectcollError("not a directcoll program file (its first bytes are not DCPROG)")
    version, coll, n, nb, ns, steps, den, name_len = struct.unpack_from("<IIIIIIqI", blob, 8)
    if version != FORMAT_VERSION:
        raise DirectcollError(f"program format version {version}; this directcoll reads {FORMAT_VERSION}")
    if struct.unpack_from("<Q", blob, len(blob) - 8)[0] != _fnv1a(blob[:-8]):
        raise DirectcollError("the program file's checksum does not match (truncated or modified)")
    codes = {v: k for k, v in COLLECTIVE_CODES.items()}
    kind = codes.get(coll)
    root = struct.unpack_from("<I", blob, 44 + name_len)[0] if kind is not None and kind.rooted else None
    return {"version": version, "collective": kind.value if kind else str(coll), "ranks": n, "nblocks": nb,
            "nscratch": ns, "steps": steps, "denominator": den, "name": blob[44:44 + name_len].decode(), "root": root,
            "bytes": len(blob)}
