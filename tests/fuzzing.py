"""Fuzz cases and their judge, shared by tests/test_fuzz.py (a few hundred cases under hypothesis) and
benchmarks/fuzz.py (10,000 cases, counts in docs/benchmarks.md).

Every generator takes a ``random.Random`` (hypothesis drives one in the tests, a seed in the benchmark) and
returns one case; :func:`judge` runs a case and classifies its outcome:

- ``ok``: accepted (a topology built, a file read, a command exited 0);
- ``refused``: one of the project's own errors (:class:`~directcoll.errors.DirectcollError`; argparse's exit 2);
- ``silent``: input accepted although what was read is not what it said: a file field read back as another
  value (a float, bool or out-of-range value cast), or a link value or parameter that overflowed to infinity
  or left its physical range (:data:`directcoll.units.QUANTITIES`): never acceptable;
- ``exception:<Type>``: anything else; ``memory``: MemoryError; ``hang`` is decided by the caller's timeout.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import random
import re
import signal
from pathlib import Path

import numpy as np

from directcoll.errors import DirectcollError

# -- spec strings ---------------------------------------------------------------------------------------------
NUMBERS = ["0", "1", "2", "3", "4", "5", "8", "16", "-1", "-4", "100", "1024", "65536", "100000000",
           "9223372036854775808", "10" * 20, "1e3", "2.5", "0x10", "", " ", "①", "٣", "１６", "+4", "04", "NaN"]
#: link values of ``links(...)``: valid, overflowing (1e400 is infinity as a float), underflowing, out of range
LINK_VALUES = ["400Gbps", "1e400", "1e400Gbps", "1e-400Gbps", "1e-300Gbps", "1e308Tbps", "1e300s", "1e400ns",
               "nan", "inf", "-0", "1e11", "5e-7", "0.1bps", "1e19Gbps", "3601s", "1e-320", "9" * 400]
OPERATORS = ["line", "line^2", "line^3", "power", "product", "degree", "bidir", "punctured"]


def _family_names() -> list[str]:
    from directcoll.topology.table import FAMILIES

    return sorted(FAMILIES)


def _examples() -> list[str]:
    from directcoll.topology.table import FAMILIES

    return [form.strip() for _, forms, _ in FAMILIES.values() for form in forms.split("|")]


def _number(r: random.Random) -> str:
    return r.choice(NUMBERS) if r.random() < 0.4 else str(r.randint(0, 40))


def _leaf(r: random.Random) -> str:
    if r.random() < 0.5:  # a documented example with some of its numbers replaced
        return re.sub(r"[0-9]+", lambda m: _number(r) if r.random() < 0.3 else m.group(0), r.choice(_examples()))
    family = r.choice(_family_names() + ["torrus", "unknown", "TORUS", ""])
    parts = [family]
    for _ in range(r.choice([0, 1, 1, 2, 2, 3])):
        sep = r.choice(["x", ","]) if r.random() < 0.5 else ""
        field = sep.join(_number(r) for _ in range(r.choice([1, 1, 2, 3])))
        parts.append(field if r.random() < 0.9 else r.choice(["uni", "simple", "opt4", "opt5"]))
    return ":".join(parts)


def spec_case(r: random.Random, depth: int = 0) -> str:
    """A spec string from the grammar (families, operators, numbers valid and not), sometimes mutated."""
    if depth < 2 and r.random() < 0.35:
        op = r.choice(OPERATORS)
        inner = spec_case(r, depth + 1)
        if op in ("power", "degree"):
            text = f"{op}({inner},{_number(r)})"
        elif op == "product":
            text = f"{op}({inner},{spec_case(r, depth + 1)})"
        elif op == "punctured":
            text = f"{op}({inner},{','.join(_number(r) for _ in range(r.randint(0, 3)))})"
        else:
            text = f"{op}({inner})"
    else:
        text = _leaf(r)
    if depth == 0 and r.random() < 0.15:  # overflowing and out-of-range link values
        field = r.choice(["bandwidth", "latency"])
        text = f"links({text},{field}={r.choice(LINK_VALUES)})"
    if depth == 0 and r.random() < 0.2:
        text = _mutate_text(r, text)
    return text


def _mutate_text(r: random.Random, text: str) -> str:
    chars = list(text)
    for _ in range(r.randint(1, 3)):
        i = r.randint(0, len(chars))
        what = r.random()
        if what < 0.4 and chars:
            del chars[min(i, len(chars) - 1)]
        elif what < 0.8:
            chars.insert(i, r.choice("():,x^0123456789 \t-①"))
        else:
            chars[min(i, len(chars) - 1):min(i, len(chars) - 1)] = list(r.choice(["((", "))", ",,", "::", "^9"]))
    return "".join(chars)


# -- schedule files -------------------------------------------------------------------------------------------
BAD_VALUES = [-1, 0, 1, 2, 255, 256, 257, 2**31, 2**63, 2**64, 10**12, 10**30, 1.5, 2.0, -0.5, float("nan"),
              float("inf"), True, False, None, "1", "", [], {}, [1, 2], "reduce"]


#: counts large enough to exhaust memory or time if a consumer allocated per unit before checking
OVERSIZED = [10**6, 10**7, 10**8, 10**9, 10**12, 2**40, 2**60]


def base_schedules() -> list:
    """A few small valid schedules of different collectives and algorithms (pieces, scratch, routes)."""
    from directcoll.registry import build

    return [build("ring", "ring:4", "allreduce"), build("swing", "torus:4x4", "reduce_scatter"),
            build("bfb", "circulant:8:1,3", "allgather"), build("direct", "ring:4", "alltoall")]


def _paths(obj, prefix=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield prefix + (k,)
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i in range(min(len(obj), 4)):
            yield prefix + (i,)
            yield from _paths(obj[i], prefix + (i,))


def _set(obj, path, value):
    for k in path[:-1]:
        obj = obj[k]
    if value is _DELETE:
        del obj[path[-1]]
    else:
        obj[path[-1]] = value


def _get(obj, path):
    for k in path:
        obj = obj[k]
    return obj


_DELETE = object()


def schedule_json_case(r: random.Random, docs: list[dict]) -> dict:
    """A schedule document (dict) with one to three fields replaced, deleted, or shifted by 256 throughout."""
    doc = copy.deepcopy(r.choice(docs))
    if r.random() < 0.1 and "op" in doc:  # the op-plus-256 attack: every op shifted, as a whole column
        doc["op"] = [v + 256 * r.choice([1, -1, 2]) for v in doc["op"]]
        return doc
    if r.random() < 0.1:  # an oversized count: the reader and every consumer must budget it before allocating
        doc[r.choice(["nscratch", "nblocks", "denominator", "nranks"])] = r.choice(OVERSIZED)
        return doc
    paths = [p for p in _paths(doc) if p[0] != "meta"]
    for _ in range(r.randint(1, 3)):
        path = r.choice(paths)
        try:
            old = _get(doc, path)
        except (KeyError, IndexError, TypeError):
            continue
        if isinstance(path[-1], str) and r.random() < 0.15:
            _set(doc, path, _DELETE)
            paths = [p for p in _paths(doc) if p[0] != "meta"]
            continue
        if isinstance(old, int) and not isinstance(old, bool) and r.random() < 0.5:
            new = old + r.choice([-1, 1, 256, -256, 2**32, 2**63])
        else:
            new = copy.deepcopy(r.choice(BAD_VALUES))
        with contextlib.suppress(TypeError):  # the parent was replaced by a string earlier (indexable, immutable)
            _set(doc, path, new)
    return doc


def schedule_npz_case(r: random.Random, docs: list[dict]):
    """The arrays of an .npz schedule with one or two columns retyped, shifted, truncated or overwritten; or
    (one case in five) the bytes of a valid archive with bytes flipped anywhere (zip headers, deflate streams,
    ``.npy`` headers, CRCs)."""
    from directcoll.schedule import io as sio

    doc = r.choice(docs)
    if r.random() < 0.2:
        buf = io.BytesIO()
        np.savez_compressed(buf, header=np.array(json.dumps({k: v for k, v in doc.items()
                                                             if k not in sio._ARRAYS + sio._OPTIONAL})),
                            **{k: np.asarray(doc[k], dtype=np.int64) for k in sio._ARRAYS + sio._OPTIONAL
                               if doc.get(k) is not None})
        data = bytearray(buf.getvalue())
        for _ in range(r.randint(1, 4)):
            data[r.randrange(len(data))] ^= r.randint(1, 255)
        return bytes(data)
    header = {k: v for k, v in doc.items() if k not in sio._ARRAYS + sio._OPTIONAL}
    arrays = {k: np.asarray(doc[k], dtype=np.int64) for k in sio._ARRAYS + sio._OPTIONAL if doc.get(k) is not None}
    if r.random() < 0.3:
        header = schedule_json_case(r, [header])
    for _ in range(r.randint(1, 2)):
        name = r.choice(sorted(arrays))
        a = arrays[name]
        how = r.randrange(7)
        # a second mutation may not apply to a column the first one retyped (str + int, 2**40 into int32)
        with contextlib.suppress(OverflowError, TypeError, ValueError):
            if how == 0:
                arrays[name] = a.astype(np.float64) + r.choice([0.5, 0.0, 1e-9])
            elif how == 1:
                arrays[name] = a + r.choice([256, -256, 2**40])
            elif how == 2:
                arrays[name] = a[: max(0, len(a) - r.randint(1, 3))]
            elif how == 3:
                arrays[name] = a.astype(r.choice([np.int8, np.uint8, np.int32, np.uint64, np.bool_, np.float32]))
            elif how == 4 and len(a):
                b = a.copy()
                b[r.randrange(len(b))] = r.choice([-1, 2**62, 10**12])
                arrays[name] = b
            elif how == 5:
                arrays[name] = np.array([str(v) for v in a])
            else:
                arrays[name] = np.full(a.shape, np.nan)
    arrays["header"] = np.array(json.dumps(header, default=float))
    return arrays


def _same_typed(file_value, read_value) -> bool:
    """Whether a value read back equals the file's, with ints still ints (bools and floats are not ints)."""
    if isinstance(file_value, list):
        return (isinstance(read_value, list) and len(file_value) == len(read_value)
                and all(_same_typed(a, b) for a, b in zip(file_value, read_value, strict=True)))
    if isinstance(file_value, bool) or isinstance(read_value, bool):
        return type(file_value) is type(read_value) and file_value == read_value
    if isinstance(file_value, float) and isinstance(read_value, int):
        return False
    return file_value == read_value


def schedule_accepted_exactly(file_doc: dict, schedule) -> bool:
    """Whether every field the reader returned holds exactly what the file held (the no-cast check)."""
    from directcoll.schedule import io as sio

    back = sio.to_dict(schedule)
    for key in ("collective", "nranks", "nblocks", "denominator", "nscratch", *sio._ARRAYS, *sio._OPTIONAL):
        if key not in file_doc:
            continue  # a default the reader filled in
        value = file_doc[key]
        if isinstance(value, np.ndarray):
            if value.dtype.kind not in "iu":
                return False
            value = value.tolist()
        if not _same_typed(value, back[key]):
            return False
    return True


# -- MSCCL XML --------------------------------------------------------------------------------------------------
_ATTR = re.compile(r'(\w+)="([^"]*)"')
ATTR_VALUES = ["-1", "0", "1", "2", "256", "100000000000", "9" * 30, "1.5", " 1", "+1", "٣", "", "x", "i", "o",
               "s", "nop", "r", "re", "rrc", "1,2", "-1,-1"]


def msccl_case(r: random.Random, texts: list[str]) -> tuple[str, bool]:
    """MSCCL XML with attributes changed or elements dropped or cut; the flag says it must be refused
    (an integer attribute now holds text that is not a canonical integer: accepting it would be a cast)."""
    text = r.choice(texts)
    must_refuse = False
    matches = list(_ATTR.finditer(text))
    for _ in range(r.randint(1, 3)):
        how = r.random()
        if how < 0.7 and matches:
            m = r.choice(matches)
            new = r.choice(ATTR_VALUES)
            if re.fullmatch(r"-?[0-9]+", m.group(2)) and not re.fullmatch(r"-?[0-9]+", new):
                must_refuse = m.group(1) not in ("name", "proto", "coll", "type")
            text = text[: m.start(2)] + new + text[m.end(2):]
        elif how < 0.85:
            lines = text.splitlines()
            if len(lines) > 2:
                del lines[r.randrange(1, len(lines) - 1)]
            text = "\n".join(lines)
        else:
            text = text[: r.randrange(len(text))] if text else text  # an earlier cut may have left nothing
        matches = list(_ATTR.finditer(text))
    return text, must_refuse


# -- network files ------------------------------------------------------------------------------------------------
#: declared XML encodings: expat's own, single-byte codecs, multi-byte ones expat refuses, codecs that are not
#: text encodings, unknown names
ENCODINGS = ["utf-8", "UTF-8", "us-ascii", "iso-8859-1", "cp1252", "koi8-r", "utf-16", "utf-16-le", "utf-7",
             "utf-32", "utf-8-sig", "shift_jis", "big5", "bogus", "", "idna", "rot13", "base64", "hex", "punycode",
             "zlib", "mbcs", "utf_8"]
_XML_DECL = re.compile(r"^<\?xml[^>]*\?>")
_VALUE = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:e[-+]?\d+)?(?:[GMk]?bps|ns|us|s)?(?![\w.])")


def network_files() -> dict[str, str]:
    """Valid network files (GraphML, edge list, JSON) with per-link values, as text, by suffix."""
    import tempfile

    from directcoll.topology import parse
    from directcoll.topology.files import write_network

    topology = parse("links(torus:3x2,bandwidth=100Gbps,latency=500ns)")
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for suffix in (".graphml", ".edges", ".json"):
            path = Path(tmp) / f"net{suffix}"
            write_network(topology, path)
            out[suffix] = path.read_text()
    return out


def network_case(r: random.Random, files: dict[str, str]) -> tuple[str, bytes]:
    """A network file (suffix, bytes): numbers replaced by overflowing or out-of-range ones, a GraphML file
    re-declared (and re-encoded where the codec can) in another encoding or given entity declarations, lines
    dropped or text cut."""
    suffix = r.choice(sorted(files))
    text = files[suffix]
    for _ in range(r.randint(0, 3)):
        values = list(_VALUE.finditer(text))
        if values:
            m = r.choice(values)
            text = text[: m.start()] + r.choice(LINK_VALUES) + text[m.end():]
    encoding = "utf-8"
    if suffix == ".graphml":
        how = r.random()
        if how < 0.5:
            encoding = r.choice(ENCODINGS)
            text = _XML_DECL.sub(f'<?xml version="1.0" encoding="{encoding}"?>', text, count=1)
        elif how < 0.6:
            text = _XML_DECL.sub('<?xml version="1.0"?><!DOCTYPE g [<!ENTITY a "aaaaaaaaaa"><!ENTITY b '
                                 '"&a;&a;&a;&a;&a;&a;&a;&a;">]>', text, count=1).replace('"d0"', '"&b;"', 1)
    if r.random() < 0.2:
        lines = text.splitlines()
        del lines[r.randrange(len(lines))]
        text = "\n".join(lines)
    if r.random() < 0.1:
        text = text[: r.randrange(len(text) + 1)]
    try:
        data = text.encode(encoding) if r.random() < 0.7 else text.encode("utf-8")
    except (LookupError, UnicodeError, TypeError, ValueError):  # a codec that cannot write this text (or at all)
        data = text.encode("utf-8")
    return suffix, data


# -- command lines --------------------------------------------------------------------------------------------
COMMANDS = ["compare", "topology describe", "schedule", "cost", "find-topology", "verify", "simulate", "export",
            "import", "algorithms", "table2"]
OPTION_VALUES = {
    "--sizes": ["1KiB", "0", "-1", "1B..2B", "32B..512MiB", "1B..1PiB", "x", "1KiB,,", "training", "1e9", ""],
    "--size": ["1MiB", "0B", "-5", "1.5", "x"],
    "--link-bandwidth": ["400", "400Gbps", "0Gbps", "-1Gbps", "x", "1e400Gbps", "1e-300Gbps", "1e19Gbps"],
    "--alpha": ["1e-6", "-1", "nan", "inf", "1us", "x", "1e400s", "1e300", "3601s"],
    "--per-hop-latency": ["1e-7", "-1", "nan"],
    "--gamma": ["0", "-1", "nan", "1e-9"],
    "--params": ["swing-sst", "trn1", "nope", "", "kolmakov-cluster"],
    "--collective": ["allreduce", "alltoall", "broadcast", "x"],
    "--ports": ["0", "1", "-1", "100", "x"],
    "--nodes": ["16", "0", "-1", "1000000000", "x"],
    "--degree": ["2", "0", "-3", "100", "x", "99999"],
    "--memory-budget": ["1GiB", "0", "-1", "x", "64MiB"],
    "--routing": ["adaptive", "dor", "x"],
    "--side": ["4", "0", "-1", "100000", "x"],
    "--steps": ["auto", "0", "-1", "3", "x"],
    "-o": ["out.json", "missing/dir/out.json", "out.npz", "/proc/x"],
}


def cli_case(r: random.Random, files: dict[str, str]) -> list[str]:
    """An argument vector: a command, a spec or file, and random options with valid and invalid values."""
    argv = r.choice(COMMANDS).split()
    if argv[0] in ("compare", "topology"):
        argv.append(spec_case(r) if r.random() < 0.7 else r.choice(["torus:4x4", "ring:8", "circulant:8:1,3"]))
    elif argv[0] in ("schedule", "cost"):
        if argv[0] == "schedule":
            argv.append(r.choice(["ring", "swing", "bfb", "nope", ""]))
        argv.append(spec_case(r) if r.random() < 0.5 else "ring:8")
    elif argv[0] in ("verify", "simulate", "export", "import"):
        special = r.random() < 0.15  # a device, a pipe or a folder where a file is expected
        argv.append(files[r.choice(["dev", "fifo", "dir"]) if special else
                          "xml" if argv[0] == "import" else r.choice(["json", "npz"])])
    for _ in range(r.randint(0, 3)):
        option = r.choice(sorted(OPTION_VALUES))
        argv += [option, r.choice(OPTION_VALUES[option])]
    return argv


# -- judging --------------------------------------------------------------------------------------------------
@contextlib.contextmanager
def deadline(seconds: int):
    """Raise TimeoutError in the block after ``seconds`` (SIGALRM: the main thread of a POSIX process)."""
    def hang(*_):
        raise TimeoutError(f"over {seconds} s")

    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def judge(kind: str, case, context: dict) -> str:
    """Run one case of ``kind`` (``spec``, ``json``, ``npz``, ``msccl``, ``cli``) and classify the outcome."""
    try:
        return _RUN[kind](case, context)
    except DirectcollError:
        return "refused"
    except MemoryError:
        return "memory"
    except Exception as exc:  # the point of the harness: anything else is a finding
        return f"exception:{type(exc).__name__}"


def _run_spec(spec: str, context: dict) -> str:
    from directcoll.topology.spec import parse

    return "ok" if _physical(parse(spec)) else "silent"


def _physical(topology) -> bool:
    """Whether every link value of a topology accepted lies in its physical range (no overflow to infinity)."""
    from directcoll.units import MAX_BANDWIDTH, MAX_TIME, MIN_BANDWIDTH

    bw, lat = topology.link_bandwidth, topology.link_latency
    return bool(np.all((bw >= MIN_BANDWIDTH) & (bw <= MAX_BANDWIDTH)) and np.all((lat >= 0) & (lat <= MAX_TIME)))


def _run_json(doc: dict, context: dict) -> str:
    from directcoll.schedule import io as sio
    from directcoll.verify import verify

    path = Path(context["dir"]) / "case.json"
    path.write_text(json.dumps(doc, allow_nan=True))
    schedule = sio.load(path)
    if not schedule_accepted_exactly(doc, schedule):
        return "silent"
    verify(schedule)
    if schedule.nscratch >= OVERSIZED[0] or schedule.nblocks >= OVERSIZED[0]:  # the MSCCL export's layout too
        from directcoll.export import export_msccl

        export_msccl(schedule)
    return "ok"


def _run_npz(arrays, context: dict) -> str:
    from directcoll.schedule import io as sio
    from directcoll.verify import verify

    path = Path(context["dir"]) / "case.npz"
    if isinstance(arrays, bytes):  # a corrupted archive: read it or refuse it, nothing else
        path.write_bytes(arrays)
        verify(sio.load(path))
        return "ok"
    np.savez(path, **arrays)
    schedule = sio.load(path)
    try:
        header = json.loads(str(arrays["header"]))
    except ValueError:
        header = {}
    if not schedule_accepted_exactly({**header, **{k: v for k, v in arrays.items() if k != "header"}}, schedule):
        return "silent"
    verify(schedule)
    return "ok"


def _run_msccl(case: tuple[str, bool], context: dict) -> str:
    from directcoll.export import import_msccl

    text, must_refuse = case
    import_msccl(text if text.lstrip().startswith("<") else "<" + text)
    return "silent" if must_refuse else "ok"


def _run_network(case: tuple[str, bytes], context: dict) -> str:
    from directcoll.topology.spec import parse

    suffix, data = case
    path = Path(context["dir"]) / f"case{suffix}"
    path.write_bytes(data)
    return "ok" if _physical(parse(f"file:{path}")) else "silent"


def _run_cli(argv: list[str], context: dict) -> str:
    from directcoll.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(context["dir"]), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse: usage errors exit 2 with one message
            code = exc.code
    if code == 0:
        return "ok"
    lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
    if code == 2 and lines and ("error:" in lines[-1]) and "Traceback" not in err.getvalue():
        return "refused"
    return f"exit:{code}"


_RUN = {"spec": _run_spec, "json": _run_json, "npz": _run_npz, "msccl": _run_msccl, "network": _run_network,
        "cli": _run_cli}


def make_context(directory) -> dict:
    """The valid files the mutators start from, written under ``directory``."""
    from directcoll.export import export_msccl
    from directcoll.schedule import io as sio

    directory = Path(directory)
    schedules = base_schedules()
    docs = [sio.to_dict(s) for s in schedules]
    texts = []
    for i, s in enumerate(schedules):
        path = directory / f"base{i}.xml"
        with contextlib.suppress(DirectcollError):
            export_msccl(s, path)
            texts.append(path.read_text())
    sio.save(schedules[0], directory / "base.json")
    sio.save(schedules[1], directory / "base.npz")
    fifo = directory / "pipe.json"
    if not fifo.exists():
        os.mkfifo(fifo)
    return {"dir": str(directory), "docs": docs, "texts": texts, "networks": network_files(),
            "files": {"json": str(directory / "base.json"), "npz": str(directory / "base.npz"),
                      "xml": str(directory / "base0.xml"), "dev": "/dev/zero", "fifo": str(fifo),
                      "dir": str(directory)}}


def make_case(kind: str, r: random.Random, context: dict):
    """One case of ``kind`` from ``r``."""
    if kind == "spec":
        return spec_case(r)
    if kind == "json":
        return schedule_json_case(r, context["docs"])
    if kind == "npz":
        return schedule_npz_case(r, context["docs"])
    if kind == "msccl":
        return msccl_case(r, context["texts"])
    if kind == "network":
        return network_case(r, context["networks"])
    return cli_case(r, context["files"])


KINDS = ("spec", "json", "npz", "msccl", "network", "cli")
__all__ = ["KINDS", "deadline", "judge", "make_case", "make_context"]
