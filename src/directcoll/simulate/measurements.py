"""Measured collective timings for ``directcoll calibrate``: a CSV of (algorithm, ranks, bytes, seconds) or the
output of an OSU micro-benchmark (``osu_allreduce``, ``osu_allgather``, ``osu_reduce_scatter``,
``osu_alltoall``), read into :class:`Measurement` rows that name the file's line each came from.

Sizes are the collective's vector size in bytes, as everywhere in directcoll (``compare --sizes``): the whole
vector of an allreduce or reduce-scatter, the whole gathered buffer of an allgather, each rank's send buffer of
an all-to-all. OSU prints ``osu_allgather``'s and ``osu_alltoall``'s sizes per rank (per destination), so those
are multiplied by the rank count here.

Source: docs/simulation.md, "Calibration" (input formats); the OSU Micro-Benchmarks' output format (a ``# OSU
MPI <Collective> Latency Test`` title, a ``# Size  Avg Latency(us)`` column line, then one row per size).
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from dataclasses import dataclass

from directcoll.errors import DirectcollError
from directcoll.inputs import read_text
from directcoll.topology.sizes import MAX_NODES
from directcoll.units import MAX_SIZE, MAX_TIME

FORMATS = ("csv", "osu")
#: peak bytes of reading measurements per byte of text (csv.reader's lists of strings and a record per row):
#: 311 measured with tracemalloc on 50,000 rows of 20 bytes, rounded up
MEASUREMENT_BYTES_PER_CHAR = 320
#: CSV columns: required, then optional
CSV_REQUIRED = ("algorithm", "ranks", "bytes", "seconds")
CSV_OPTIONAL = ("collective", "variant", "ports", "segment", "implementation")
COLLECTIVES = ("allreduce", "reduce_scatter", "allgather", "alltoall")
#: the collective of an OSU title's benchmark name (lower case, spaces and dashes as underscores), and the factor
#: from OSU's printed size to the vector size (per rank: times the rank count)
OSU_COLLECTIVES = {"allreduce": ("allreduce", False), "reduce_scatter": ("reduce_scatter", False),
                   "reduce_scatter_block": ("reduce_scatter", False), "allgather": ("allgather", True),
                   "all_to_all": ("alltoall", True), "alltoall": ("alltoall", True),
                   "all_to_all_personalized_exchange": ("alltoall", True)}
#: the default algorithm for OSU files, which do not say which algorithm the MPI library ran
DEFAULT_OSU_ALGORITHM = "rabenseifner"

_OSU_TITLE = re.compile(r"^#\s*OSU\s+MPI\S*\s+(.*?)\s+(?:Latency\s+)?Test\b", re.IGNORECASE)


@dataclass(frozen=True)
class Measurement:
    """One measured collective time.

    Attributes:
        algorithm: a registry name (``directcoll algorithms``); variant: its variant or None (the default).
        ports, segment, implementation: the ports the algorithm ran with (None: its default), the pipelining
            segment in bytes (recorded, not modelled), the implementation's name (None: the parameters' default).
        collective: allreduce, reduce_scatter, allgather or alltoall.
        ranks: the number of ranks measured.
        size: the vector size, bytes (see the module docstring).
        seconds: the measured time, s (> 0).
        line: the line of the file it was read from (1-based; 0 when not from a file).

    Raises:
        Nothing: a record; the readers check the values.

    Source: docs/simulation.md, "Calibration".

    >>> Measurement("ring", None, "allreduce", 4, 1024.0, 2e-5).label
    'ring allreduce'
    """

    algorithm: str
    variant: str | None
    collective: str
    ranks: int
    size: float
    seconds: float
    line: int = 0
    ports: int | None = None
    segment: int | None = None
    implementation: str | None = None

    @property
    def label(self) -> str:
        """``ALGORITHM[:VARIANT] COLLECTIVE[ P=ports][ on IMPLEMENTATION]``, the group this measurement is fitted
        in. Raises: Nothing. Source: docs/simulation.md, "Calibration"."""
        ports = f" P={self.ports}" if self.ports else ""
        impl = f" on {self.implementation}" if self.implementation else ""
        return f"{self.algorithm}{':' + self.variant if self.variant else ''} {self.collective}{ports}{impl}"


def split_algorithm(text: str) -> tuple[str, str | None]:
    """``NAME[:VARIANT]`` as (name, variant or None), both stripped.

    Returns:
        (name, variant): strings; variant None when not given.

    Raises:
        DirectcollError: an empty name.

    Source: the ``NAME:VARIANT`` form of ``directcoll run --algorithm``.

    >>> split_algorithm("ring:unidirectional"), split_algorithm("swing")
    (('ring', 'unidirectional'), ('swing', None))
    """
    name, _, variant = text.strip().partition(":")
    if not name.strip():
        raise DirectcollError(f"algorithm {text!r}: empty name; use NAME or NAME:VARIANT (see `directcoll "
                              "algorithms`)")
    return name.strip(), variant.strip() or None


def detect_format(text: str) -> str:
    """``osu`` when the first non-blank line starts with ``#`` (OSU's header), else ``csv``.

    Returns:
        ``"osu"`` or ``"csv"``.

    Raises:
        Nothing: an empty text is ``csv`` (whose reader then refuses it).

    Source: docs/simulation.md, "Calibration" (format autodetection).

    >>> detect_format("# OSU MPI Allreduce Latency Test v7.4\\n"), detect_format("algorithm,ranks,bytes,seconds\\n")
    ('osu', 'csv')
    """
    for line in text.splitlines():
        if line.strip():
            return "osu" if line.lstrip().startswith("#") else "csv"
    return "csv"


def read_measurements(path, fmt: str | None = None, *, ranks: int | None = None,
                      algorithm: str | None = None) -> list[Measurement]:
    """The measurements of a file: a CSV (:func:`parse_csv`) or an OSU output (:func:`parse_osu`).

    Args:
        path: the file.
        fmt: ``csv``, ``osu`` or None to detect it (:func:`detect_format`).
        ranks: OSU only (required there): the number of ranks the benchmark ran on.
        algorithm: OSU only: ``NAME[:VARIANT]`` of ours that stands for the MPI library's algorithm (default
            :data:`DEFAULT_OSU_ALGORITHM`).

    Returns:
        list of :class:`Measurement` in file order (sizes in bytes, times in s).

    Raises:
        DirectcollError: an unreadable file, an unknown format, ``ranks``/``algorithm`` given for a CSV, or bad
            content (one line naming the file, the line and what is accepted).

    Source: docs/simulation.md, "Calibration" (input formats).

    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "t.csv")
    ...     _ = open(path, "w").write("algorithm,ranks,bytes,seconds\\nring,8,1024,2.5e-5\\n")
    ...     read_measurements(path)[0].seconds
    2.5e-05
    """
    name = os.fspath(path)
    if fmt is not None and fmt not in FORMATS:
        raise DirectcollError(f"unknown measurement format {fmt!r}; accepted: {', '.join(FORMATS)}")
    # a spreadsheet's CSV may start with a byte-order mark (read_text skips it)
    text = read_text(path, f"measurement file {name!r}", bytes_per_byte=MEASUREMENT_BYTES_PER_CHAR)
    fmt = fmt or detect_format(text)
    if fmt == "csv":
        if ranks is not None or algorithm is not None:
            raise DirectcollError(f"{name}: --ranks and --algorithm are for OSU output only; a CSV names the "
                                  "algorithm and ranks of every row")
        return parse_csv(text, name)
    return parse_osu(text, name, ranks=ranks, algorithm=algorithm or DEFAULT_OSU_ALGORITHM)


def _number(text: str, where: str, column: str, accepted: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise DirectcollError(f"{where}: {column} {text!r} is not a number; accepted: {accepted}") from None
    if not math.isfinite(value):
        raise DirectcollError(f"{where}: {column} {text!r} is not finite; accepted: {accepted}")
    return value


def _whole(text: str, where: str, column: str) -> int | None:
    """An optional whole-number column (ports, segment): None when empty, else an int >= 1."""
    if not text:
        return None
    value = _number(text, where, column, "a whole number >= 1, or empty")
    if value != int(value) or not 1 <= value <= MAX_SIZE:
        raise DirectcollError(f"{where}: {column} {text!r} must be a whole number >= 1, or empty")
    return int(value)


def _check_row(where: str, ranks: float, size: float, seconds: float) -> None:
    if ranks != int(ranks) or not 1 <= ranks <= MAX_NODES:
        raise DirectcollError(f"{where}: ranks {ranks:g} must be a whole number from 1 to {MAX_NODES:,}")
    if size != int(size) or not 0 <= size <= MAX_SIZE:
        raise DirectcollError(f"{where}: bytes {size:g} must be a whole number from 0 to 2^53")
    if not 0 < seconds <= MAX_TIME:
        raise DirectcollError(f"{where}: time {seconds:g} s must be > 0 and <= {MAX_TIME:g} s (a measured time)")


def parse_csv(text: str, name: str = "<csv>") -> list[Measurement]:
    """Measurements of a CSV with the header ``algorithm,ranks,bytes,seconds`` (any order, plus optional
    ``collective``, default allreduce, ``variant``, ``ports``, ``segment`` and ``implementation``); ``algorithm``
    may also be ``NAME:VARIANT``. An unknown column is refused.

    Args:
        text: the file's text; name: the file's name for messages.

    Returns:
        list of :class:`Measurement` (bytes: the vector size; seconds > 0), one per data row.

    Raises:
        DirectcollError: an empty file, a missing or unknown column, a row with too few or too many fields, a
            non-numeric, non-finite, negative or zero value, or an unknown collective: one line naming the file
            and line.

    Source: docs/simulation.md, "Calibration" (the CSV format).

    >>> m = parse_csv("algorithm,ranks,bytes,seconds,collective,ports\\nswing:latency,16,8,1e-6,allgather,2\\n")[0]
    >>> m.label, m.size, m.seconds
    ('swing:latency allgather P=2', 8.0, 1e-06)
    """
    accepted = f"columns {','.join(CSV_REQUIRED)} (+ optional {', '.join(CSV_OPTIONAL)})"
    rows = [(i, r) for i, r in enumerate(csv.reader(io.StringIO(text)), start=1) if any(c.strip() for c in r)]
    if not rows:
        raise DirectcollError(f"{name}: empty measurement file; expected a CSV header with {accepted}, or OSU "
                              "benchmark output")
    head_line, header = rows[0]
    header = [h.strip().lower() for h in header]
    missing = [c for c in CSV_REQUIRED if c not in header]
    unknown = [h for h in header if h not in CSV_REQUIRED + CSV_OPTIONAL]
    if missing or unknown or len(set(header)) != len(header):
        what = (f"missing column(s) {', '.join(missing)}" if missing else
                f"unknown column(s) {', '.join(map(repr, unknown))}" if unknown else "a repeated column")
        raise DirectcollError(f"{name} line {head_line}: {what}; accepted: {accepted}")
    if len(rows) == 1:
        raise DirectcollError(f"{name}: no measurements after the header; one row per measurement, {accepted}")
    col = {h: k for k, h in enumerate(header)}
    out = []
    for line, row in rows[1:]:
        where = f"{name} line {line}"
        if len(row) != len(header):
            raise DirectcollError(f"{where}: {len(row)} fields, the header has {len(header)} ({','.join(header)})")
        cell = {h: row[k].strip() for h, k in col.items()}
        name_, variant = split_algorithm(cell["algorithm"]) if cell["algorithm"] else ("", None)
        if not name_:
            raise DirectcollError(f"{where}: empty algorithm; use a name of `directcoll algorithms`")
        if cell.get("variant"):
            variant = cell["variant"]
        collective = (cell.get("collective") or "allreduce").lower().replace("-", "_")
        if collective not in COLLECTIVES:
            raise DirectcollError(f"{where}: unknown collective {cell['collective']!r}; accepted: "
                                  f"{', '.join(COLLECTIVES)}")
        ranks = _number(cell["ranks"], where, "ranks", "a whole number >= 1")
        size = _number(cell["bytes"], where, "bytes", "a whole number of bytes >= 0")
        seconds = _number(cell["seconds"], where, "seconds", "a time in seconds > 0, e.g. 2.5e-05")
        _check_row(where, ranks, size, seconds)
        ports, segment = (_whole(cell.get(c, ""), where, c) for c in ("ports", "segment"))
        out.append(Measurement(name_, variant, collective, int(ranks), size, seconds, line, ports, segment,
                               cell.get("implementation") or None))
    return out


def osu_collective(title: str, where: str) -> tuple[str, bool]:
    """The collective an OSU title line names, and whether OSU's sizes are per rank.

    Args:
        title: a line such as ``# OSU MPI Allreduce Latency Test v7.4``; where: ``FILE line N`` for messages.

    Returns:
        (collective, per_rank): one of allreduce, reduce_scatter, allgather, alltoall; per_rank True for
        allgather and alltoall (OSU prints the bytes per rank / per destination).

    Raises:
        DirectcollError: a benchmark of another collective (Bcast, Reduce, Gather, Scatter, Barrier, the
            point-to-point tests, the non-blocking and ``v`` variants), naming the supported ones.

    Source: docs/simulation.md, "Calibration"; the OSU Micro-Benchmarks' test titles.

    >>> osu_collective("# OSU MPI Reduce_scatter Latency Test v5.7", "f line 1")
    ('reduce_scatter', False)
    """
    m = _OSU_TITLE.match(title.strip())
    key = re.sub(r"[\s\-]+", "_", m.group(1).strip()).lower() if m else ""
    if key not in OSU_COLLECTIVES:
        got = m.group(1) if m else title.strip().lstrip("#").strip()
        raise DirectcollError(f"{where}: OSU benchmark {got!r} is not supported; calibrate reads osu_allreduce, "
                              "osu_allgather, osu_reduce_scatter and osu_alltoall output")
    return OSU_COLLECTIVES[key]


def _osu_columns(line: str) -> list[str]:
    """Column names of OSU's ``# Size  Avg Latency(us)  ...`` line, lower case: split on runs of two or more
    spaces, or (single spaces) on words, rejoining ``Latency``/``Lat``/``Tail``/``(...)`` with the word before."""
    text = line.lstrip("#").strip()
    columns = re.split(r"\s{2,}|\t", text)
    if len(columns) == 1:
        columns = []
        for word in text.split():
            if columns and re.match(r"(latency|lat\b|lat\(|tail|\()", word, re.IGNORECASE):
                columns[-1] += " " + word
            else:
                columns.append(word)
    return [c.lower() for c in columns]


def parse_osu(text: str, name: str = "<osu>", *, ranks: int | None, algorithm: str = DEFAULT_OSU_ALGORITHM
              ) -> list[Measurement]:
    """Measurements of one OSU collective benchmark's output: ``#`` header lines (the title names the collective,
    a ``# Size  Avg Latency(us) [Min Latency(us) Max Latency(us) Iterations]`` line the columns), then rows
    ``SIZE LATENCY_US ...``; the average latency is used.

    Args:
        text: the output; name: the file's name for messages.
        ranks: the number of ranks it ran on (OSU does not print it).
        algorithm: ``NAME[:VARIANT]`` of ours standing for the MPI library's algorithm.

    Returns:
        list of :class:`Measurement`, sizes the vector size in bytes (allgather, alltoall: OSU's size x ranks),
        seconds = latency / 1e6.

    Raises:
        DirectcollError: no ``ranks``, no OSU title line, an unsupported benchmark (:func:`osu_collective`), two
            titles of different collectives, no ``Avg Latency`` column, a row that is not numbers, a non-positive
            time, or no rows: one line naming the file and line.

    Source: docs/simulation.md, "Calibration" (the OSU format and what is assumed).

    >>> out = "# OSU MPI Allgather Latency Test v7.4\\n# Size       Avg Latency(us)\\n1024     12.5\\n"
    >>> m = parse_osu(out, ranks=4, algorithm="ring")[0]
    >>> m.collective, m.size, m.seconds
    ('allgather', 4096.0, 1.25e-05)
    """
    if ranks is None:
        raise DirectcollError(f"{name}: OSU output does not say how many ranks ran; give --ranks N")
    if ranks < 1:
        raise DirectcollError(f"{name}: --ranks must be >= 1, got {ranks}")
    algo, variant = split_algorithm(algorithm)
    collective = per_rank = None
    avg = 1  # column of the average latency when no column line is given
    out = []
    for line, raw in enumerate(text.splitlines(), start=1):
        where = f"{name} line {line}"
        s = raw.strip()
        if not s:
            continue
        if s.startswith("#"):
            if re.match(r"^#\s*OSU\b", s, re.IGNORECASE):
                found = osu_collective(s, where)
                if collective is not None and found[0] != collective:
                    raise DirectcollError(f"{where}: a second benchmark ({found[0]} after {collective}); give one "
                                          "benchmark's output per file")
                collective, per_rank = found
            elif re.match(r"^#\s*Size\b", s, re.IGNORECASE):
                columns = _osu_columns(s)
                hits = [k for k, c in enumerate(columns) if c.startswith("avg latency")]
                if not hits:
                    raise DirectcollError(f"{where}: no 'Avg Latency(us)' column in {s!r}; calibrate reads OSU "
                                          "latency tests")
                avg = hits[0]
            continue
        if collective is None:
            raise DirectcollError(f"{where}: data before the '# OSU MPI ... Latency Test' title line; give the "
                                  "benchmark's output from its title on (or a CSV with --format csv)")
        fields = s.split()
        accepted = "rows 'SIZE AVG_LATENCY_US ...' of numbers"
        if len(fields) <= avg:
            raise DirectcollError(f"{where}: {len(fields)} field(s), expected {accepted}")
        size = _number(fields[0], where, "size", accepted)
        us = _number(fields[avg], where, "latency", accepted)
        _check_row(where, ranks, size, us)
        out.append(Measurement(algo, variant, collective, ranks, size * (ranks if per_rank else 1), us / 1e6, line))
    if not out:
        raise DirectcollError(f"{name}: no measurements; expected an OSU title line, '# Size  Avg Latency(us)' "
                              "and rows 'SIZE AVG_LATENCY_US'")
    return out
