"""Human units for sizes, size lists, bandwidths and times: ``64KiB``, ``32B..512MiB``, ``400Gbps``; 1.5 ms.

Everything is converted to SI base units: sizes in bytes (int), bandwidths in bytes/s (float), times in seconds
(float). Prefixes follow SI (k = 10^3, M = 10^6, ...) and IEC 80000-13 (Ki = 2^10, Mi = 2^20, ...); a lowercase
``b`` in a bandwidth means bits, an uppercase ``B`` bytes.

Source: docs/architecture.md, "Quality bar" (bad input names the text and the accepted forms); the
papers quote sizes in binary units (Swing Sec. 5: 32 B to 512 MiB) and link rates in bits/s (400 Gb/s).

>>> parse_size("64KiB"), parse_sizes("32B..256B"), parse_bandwidth("400Gbps")
(65536, [32, 64, 128, 256], 50000000000.0)
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from directcoll.catalog.presets import workload_names, workload_sizes
from directcoll.errors import DirectcollError, ResourceError

#: The largest size accepted: 2^53 bytes, the largest count of bytes a float64 holds exactly (times are floats).
MAX_SIZE = 2**53
#: The most sizes one list may hold (each is simulated for every algorithm).
MAX_SIZES = 10_000

#: The physical range of a bandwidth, bytes/s: 1 bit/s to 1 Eb/s (10^18 bit/s, about 10^5 times the fastest
#: link of today's systems); outside it a number is a typo or an overflow, not a network.
MIN_BANDWIDTH, MAX_BANDWIDTH = 1 / 8, 1e18 / 8
#: The longest time one cost may take (a latency, alpha, an overhead), s: an hour.
MAX_TIME = 3600.0
#: The longest time per byte (beta, gamma), s/B: one byte at the slowest bandwidth accepted, 1 bit/s.
MAX_TIME_PER_BYTE = 1 / MIN_BANDWIDTH
#: kind -> (lowest, highest, unit, examples): the physical range of every quantity a user gives
QUANTITIES = {"time": (0.0, MAX_TIME, "s", "10us, 1.5ms, 2s, 500ns or seconds like 1e-5"),
              "time per byte": (0.0, MAX_TIME_PER_BYTE, "s/B", "0.2ns/B or seconds per byte like 2e-10"),
              "bandwidth": (MIN_BANDWIDTH, MAX_BANDWIDTH, "B/s", "400Gbps, 400Gb/s, 100Mbps (bits/s), 50GB/s or "
                            "10GiB/s (bytes/s)")}


def check_quantity(value, kind: str, what: str) -> float:
    """``value`` as a float if it is a finite number in the physical range of ``kind`` (:data:`QUANTITIES`).

    Parameters
    ----------
    value : float or int
        The number, in the unit of ``kind``: s (``"time"``), s/B (``"time per byte"``), bytes/s
        (``"bandwidth"``).
    kind : str
        A key of :data:`QUANTITIES`.
    what : str
        The field's name for the message (``"--alpha"``, ``"network parameter gamma"``).

    Returns
    -------
    float
        The value, finite and within the range.

    Raises
    ------
    DirectcollError
        Not a number (a bool, text, None), NaN, infinite, or outside the range; the message names the field, the
        value and the range.

    Source: docs/architecture.md, "Quality bar" (nothing silently accepted); the ranges' reasons at
    :data:`QUANTITIES`.

    Examples
    --------
    >>> check_quantity(1e-6, "time", "alpha")
    1e-06
    >>> check_quantity(float("inf"), "bandwidth", "link_bandwidth")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    directcoll.errors.DirectcollError: link_bandwidth = inf is out of range; accepted: a bandwidth in ...
    """
    low, high, unit, _ = QUANTITIES[kind]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DirectcollError(f"{what} = {value!r} is not a number; accepted: a {kind} in [{low:g}, {high:g}] {unit}")
    number = float(value)
    if not (math.isfinite(number) and low <= number <= high):
        raise DirectcollError(f"{what} = {value!r} is out of range; accepted: a {kind} in [{low:g}, {high:g}] {unit}")
    return number


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?i?b?)\s*$", re.IGNORECASE)
_FACTORS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
            "t": 10**12, "tb": 10**12, "ki": 2**10, "kib": 2**10, "mi": 2**20, "mib": 2**20, "gi": 2**30,
            "gib": 2**30, "ti": 2**40, "tib": 2**40, "p": 10**15, "pb": 10**15, "pi": 2**50, "pib": 2**50}


def parse_size(text) -> int:
    """Bytes from ``1024``, ``32B``, ``64KiB``, ``1MB`` (SI) or ``512MiB`` (binary), prefixes up to P / Pi.

    Args:
        text: a string as above, or an int (taken as bytes).

    Returns:
        The size in bytes, an int in [0, :data:`MAX_SIZE`].

    Raises:
        DirectcollError: anything else, a fraction of a byte or more than :data:`MAX_SIZE`, naming the text and the
            accepted forms.

    Source: SI and IEC 80000-13 prefixes; docs/architecture.md, "Quality bar".

    >>> parse_size("64KiB"), parse_size("1MB"), parse_size(4096)
    (65536, 1000000, 4096)
    >>> parse_size("1.5B")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    directcoll.errors.DirectcollError: size '1.5B' is 1.5 bytes, not a whole number of bytes; ...
    """
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        m = _SIZE.match(str(text))
        unit = m.group(2).lower() if m else None
        if not m or unit not in _FACTORS:
            raise DirectcollError(f"cannot read size {text!r}; use bytes like 1024, 32B, 64KiB, 1MB or 512MiB")
        exact = Fraction(m.group(1)) * _FACTORS[unit]
        if exact.denominator != 1:
            raise DirectcollError(f"size {text!r} is {float(exact):g} bytes, not a whole number of bytes; use bytes "
                                  "like 1024, 32B, 64KiB, 1MB or 512MiB")
        value = int(exact)
    if value < 0:
        raise DirectcollError(f"size {text!r} is negative; use bytes like 1024, 32B, 64KiB, 1MB or 512MiB")
    if value > MAX_SIZE:
        raise DirectcollError(f"size {text!r} is over the largest accepted size, 2^53 bytes (8 PiB)")
    return value


def format_size(n: float) -> str:
    """``32B``, ``64KiB``, ``512MiB``: ``n`` bytes in binary units, no decimals when exact (two otherwise).

    Args:
        n: a size in bytes (>= 0).

    Returns:
        The text, the largest of GiB, MiB, KiB, B that ``n`` reaches.

    Raises:
        Nothing: pure formatting of a number.

    Source: IEC 80000-13 binary prefixes, as the Swing paper's plots label sizes (Sec. 5).

    >>> format_size(65536), format_size(1536), format_size(32)
    ('64KiB', '1.50KiB', '32B')
    """
    for unit, f in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= f:
            v = n / f
            return f"{v:.0f}{unit}" if v == int(v) else f"{v:.2f}{unit}"
    return f"{n:.0f}B"


def format_time(seconds: float) -> str:
    """``1.5 ms``: a time in seconds as three significant digits in s, ms, µs or ns.

    Args:
        seconds: a time in seconds (>= 0; anything below 1 µs is shown in ns).

    Returns:
        The text, in the largest of s, ms, µs that ``seconds`` reaches, else ns.

    Raises:
        Nothing: pure formatting of a number.

    Source: SI prefixes; docs/architecture.md, "Cost and simulation" (times are seconds throughout).

    >>> format_time(1.5e-3), format_time(2e-9)
    ('1.5 ms', '2 ns')
    """
    for unit, f in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= f:
            return f"{seconds / f:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


_SIZE_FORMS = ("a size (4096, 32B, 64KiB, 1MB), a power-of-two range LOW..HIGH (32B..512MiB), "
               "a comma list (1KiB,1MiB,64MiB) or a workload name")


def format_bandwidth(bytes_per_s: float) -> str:
    """``400 Gb/s``: a rate in bytes/s as bits per second with three significant digits, as the field writes link
    rates and the Swing paper's goodput (Gb/s, Tb/s, Mb/s, kb/s, b/s).

    Args:
        bytes_per_s: bytes per second (>= 0).

    Returns:
        The text.

    Raises:
        Nothing: formatting.

    Source: SI prefixes; Swing (De Sensi et al., NSDI'24) Sec. 5 (400 Gb/s links, goodput in Gb/s).

    >>> format_bandwidth(50e9), format_bandwidth(6.8e9), format_bandwidth(125.0)
    ('400 Gb/s', '54.4 Gb/s', '1 kb/s')
    """
    bits = bytes_per_s * 8
    for unit, f in (("Tb/s", 1e12), ("Gb/s", 1e9), ("Mb/s", 1e6), ("kb/s", 1e3)):
        if bits >= f:
            return f"{bits / f:.3g} {unit}"
    return f"{bits:.3g} b/s"


def plural(count, noun: str) -> str:
    """``1 step``, ``2 steps``, ``1,024 ranks``: a count and its noun, in the plural unless the count is one.

    Raises:
        Nothing: formatting.

    Source: docs/architecture.md, "Command line" (output for people).

    >>> plural(1, "step"), plural(12, "step"), plural(4096, "rank")
    ('1 step', '12 steps', '4,096 ranks')
    """
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def signed_percent(fraction: float) -> str:
    """A gain as a signed whole percentage: ``+40%``, ``-15%``; a value that rounds to zero is ``0%`` (never
    ``-0%``); NaN is ``n/a``.

    Args:
        fraction: dimensionless (0.4 = 40 %).

    Returns:
        The text.

    Raises:
        Nothing: formatting.

    Source: Swing (De Sensi et al., NSDI'24) Fig. 6 (gains in percent).

    >>> signed_percent(0.4), signed_percent(-0.004), signed_percent(-0.15)
    ('+40%', '0%', '-15%')
    """
    if math.isnan(fraction):
        return "n/a"
    value = round(fraction * 100)
    return "0%" if value == 0 else f"{value:+d}%"


def _size_error(text, why: str = "") -> DirectcollError:
    reason = f" ({why})" if why else ""
    return DirectcollError(f"cannot read sizes {text!r}{reason}; use {_SIZE_FORMS}; "
                           f"workloads: {', '.join(workload_names())}")


def _parse_size_item(item: str, text) -> list[int]:
    sizes = workload_sizes(item) if item and not item[0].isdigit() else None
    if sizes is not None:
        return sizes
    parts = item.split("..", 1)
    try:
        bounds = [parse_size(part) for part in parts]
    except DirectcollError as exc:  # keep why a readable item is refused (not whole bytes, over 2^53 bytes)
        why = f"bad item {item!r}" if str(exc).startswith("cannot read size") else str(exc).split(";")[0]
        raise _size_error(text, why) from None
    if len(bounds) == 1:
        if bounds[0] <= 0:
            raise _size_error(text, f"size {item!r} must be positive")
        return bounds
    low, high = bounds
    if low <= 0 or high < low:
        raise _size_error(text, f"range {item!r} needs 0 < LOW <= HIGH")
    out = []
    while low <= high:
        out.append(low)
        low *= 2
    return out


def parse_sizes(text) -> list[int]:
    """Message sizes in bytes from a size, a range, a comma list or a workload name, in order given.

    * ``4096``, ``64KiB``: one size (see :func:`parse_size`);
    * ``32B..512MiB``: LOW, 2*LOW, 4*LOW, ... up to and including HIGH (every power of two when LOW is one);
    * ``1KiB,1MiB,64MiB``: a comma list whose items may be sizes, ranges or workload names;
    * ``swing_sweep`` or ``swing-sweep``: a workload of workloads.json (see
      :func:`directcoll.catalog.presets.workload_sizes`; tensor workloads give ``elements * dtype_bytes`` per tensor).

    An int is one size; a list or tuple is parsed item by item.

    Returns:
        A list of positive sizes in bytes (ints), at most :data:`MAX_SIZES` of them, duplicates kept.

    Raises:
        DirectcollError: anything else, naming the text, the accepted forms and the workload names.
        ResourceError: more than :data:`MAX_SIZES` sizes.

    Source: the Swing paper's size sweep (Sec. 5: 32 B to 512 MiB in powers of two) and the workloads of
    ``catalog/data/workloads.json`` (each with its published source).

    >>> parse_sizes("32B..256B")
    [32, 64, 128, 256]
    >>> parse_sizes("1KiB,4KiB"), parse_sizes(8)
    ([1024, 4096], [8])
    """
    if isinstance(text, bool):
        raise _size_error(text)
    if isinstance(text, int):
        if text <= 0:
            raise _size_error(text, "size must be positive")
        return [parse_size(text)]
    if isinstance(text, list | tuple):
        _check_count("the size list", len(text))
        sizes = [s for item in text for s in parse_sizes(item)]
        _check_count("the size list", len(sizes))
        return sizes
    items = [item.strip() for item in str(text).split(",")]
    if not all(items):
        raise _size_error(text, "empty item")
    _check_count(f"sizes {_short(text)}", len(items))
    sizes = [s for item in items for s in _parse_size_item(item, text)]
    _check_count(f"sizes {_short(text)}", len(sizes))
    return sizes


def _check_count(what: str, count: int) -> None:
    # resources.check_work's refusal, written here because resources imports units (sizes of the memory budget)
    if count > MAX_SIZES:
        raise ResourceError(f"{what} needs {count:,} sizes, over the limit of {MAX_SIZES:,} sizes")


def _short(text, limit: int = 60) -> str:
    text = str(text)
    return repr(text if len(text) <= limit else text[:limit] + "...")


_BANDWIDTH = re.compile(r"^\s*(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)\s*(\S*)\s*$")
_BW_PREFIX = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "p": 10**15,
              "ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40, "pi": 2**50}
_BW_BITS = {"bps", "b/s", "bit/s", "bits/s", "bitps"}
_BW_BYTES = {"Bps", "B/s", "byte/s", "bytes/s", "Byte/s", "Bytes/s"}


def parse_bandwidth(text) -> float:
    """Bytes/s from ``400Gbps``, ``400Gb/s``, ``400 Gbit/s`` (bits), ``50GB/s``, ``50GBps``, ``10GiB/s`` (bytes),
    or a Python number (bytes/s).

    A lowercase ``b`` means bits, an uppercase ``B`` bytes; prefixes k, M, G, T, P (SI) or Ki, Mi, Gi, Ti, Pi
    (binary) in either case. Text must carry its unit: ``"400"`` could mean bits or bytes per second, or Gb/s,
    and is refused.

    Returns:
        The bandwidth in bytes/s, a float in [:data:`MIN_BANDWIDTH`, :data:`MAX_BANDWIDTH`] (1 bit/s to 1 Eb/s).

    Raises:
        DirectcollError: anything else (a text without a unit included), a value that overflows or is outside
            that range, naming the text and the accepted forms.

    Source: SI / IEC 80000-13 prefixes; link rates as the papers quote them (Swing Sec. 5: 400 Gb/s links).

    >>> parse_bandwidth("400Gbps"), parse_bandwidth("50GB/s")
    (50000000000.0, 50000000000.0)
    >>> parse_bandwidth("400")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    directcoll.errors.DirectcollError: bandwidth '400' has no unit; ...
    """
    forms = "use 400Gbps, 400Gb/s, 100Mbps (bits/s), 50GB/s or 10GiB/s (bytes/s)"
    if isinstance(text, int | float) and not isinstance(text, bool):
        value = float(text)
    else:
        m = _BANDWIDTH.match(str(text))
        if not m:
            raise DirectcollError(f"cannot read bandwidth {text!r}; {forms}")
        unit = m.group(2)
        p = re.match(r"([kmgtpKMGTP]i?)?(.*)$", unit)
        prefix, suffix = (p.group(1) or "").lower(), p.group(2)
        if suffix in _BW_BITS or suffix.lower() in ("bit/s", "bits/s"):
            per_byte = 1 / 8
        elif suffix in _BW_BYTES:
            per_byte = 1.0
        elif not unit:
            raise DirectcollError(f"bandwidth {text!r} has no unit; {forms}")
        else:
            raise DirectcollError(f"cannot read bandwidth {text!r}; {forms}")
        value = float(m.group(1)) * _BW_PREFIX[prefix] * per_byte
    low, high = MIN_BANDWIDTH, MAX_BANDWIDTH
    if not (math.isfinite(value) and low <= value <= high):
        raise DirectcollError(f"bandwidth {text!r} is out of range; accepted: 1 bit/s to 1 Eb/s ({low:g} to "
                              f"{high:g} bytes/s); {forms}")
    return value


_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)\s*(s|ms|us|µs|ns|ps)?\s*$")
_DURATION_DIVISORS = {None: 1.0, "s": 1.0, "ms": 1e3, "us": 1e6, "µs": 1e6, "ns": 1e9, "ps": 1e12}
_DURATION_FORMS = "use 10us, 1.5ms, 2s, 500ns or seconds like 1e-5"


def parse_duration(text, what: str = "duration", per: str = "") -> float:
    """Seconds from ``10us``, ``1.5ms``, ``2s``, ``500ns``, ``20ps`` or a plain number of seconds (``1e-5``).

    Args:
        text: the text (or a Python number of seconds).
        what: what the value is, for the error message (e.g. ``"--alpha"``).
        per: a unit the text may end with after the time, e.g. ``"B"`` for seconds per byte (``0.2ns/B``).

    Returns:
        The time in seconds (seconds per ``per`` when given), a float in [0, :data:`MAX_TIME`] (in [0,
        :data:`MAX_TIME_PER_BYTE`] per byte).

    Raises:
        DirectcollError: anything else, a negative, NaN, infinite or larger value, naming the text and the accepted
            forms.

    Source: SI prefixes; the alpha-beta(-gamma) model's alpha in s and beta in s/byte (Swing Sec. 2.2, Kolmakov &
    Zhang Sec. 2).

    >>> parse_duration("1.5ms"), parse_duration("0.2ns/B", per="B")
    (0.0015, 2e-10)
    """
    if isinstance(text, int | float) and not isinstance(text, bool):
        value = float(text)
    else:
        body = str(text).strip()
        if per and body.endswith("/" + per):
            body = body[: -len(per) - 1]
        m = _DURATION.match(body.lstrip("-") if body.startswith("-") else body)
        if m and body.startswith("-"):
            raise DirectcollError(f"{what} {text!r} is out of range; accepted: a finite time >= 0; {_DURATION_FORMS}")
        if not m:
            suffix = f", optionally followed by /{per}" if per else ""
            raise DirectcollError(f"cannot read {what} {text!r}; {_DURATION_FORMS}{suffix}")
        value = float(m.group(1)) / _DURATION_DIVISORS[m.group(2)]
    high = MAX_TIME_PER_BYTE if per else MAX_TIME
    if not (math.isfinite(value) and 0 <= value <= high):
        raise DirectcollError(f"{what} {text!r} is out of range; accepted: a finite time >= 0 and <= {high:g} s"
                              f"{'/' + per if per else ''}; {_DURATION_FORMS}")
    return value
