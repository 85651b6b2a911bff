"""Human units for sizes and times: ``64KiB``, ``1MB``, ``512MiB``; 1.5 ms."""

from __future__ import annotations

import re

from directcoll.errors import DirectcollError

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?i?b?)\s*$", re.IGNORECASE)
_FACTORS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
            "t": 10**12, "tb": 10**12, "ki": 2**10, "kib": 2**10, "mi": 2**20, "mib": 2**20, "gi": 2**30,
            "gib": 2**30, "ti": 2**40, "tib": 2**40}


def parse_size(text) -> int:
    """Bytes from ``1024``, ``32B``, ``64KiB``, ``1MB`` (SI) or ``512MiB`` (binary).

    Raises:
        DirectcollError: anything else, naming the text and the accepted forms.
    """
    if isinstance(text, int):
        return text
    m = _SIZE.match(str(text))
    unit = m.group(2).lower() if m else None
    if not m or unit not in _FACTORS:
        raise DirectcollError(f"cannot read size {text!r}; use bytes like 1024, 32B, 64KiB, 1MB or 512MiB")
    return int(round(float(m.group(1)) * _FACTORS[unit]))


def format_size(n: float) -> str:
    """``32B``, ``64KiB``, ``512MiB``: binary units, no decimals when exact."""
    for unit, f in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= f:
            v = n / f
            return f"{v:.0f}{unit}" if v == int(v) else f"{v:.2f}{unit}"
    return f"{n:.0f}B"


def format_time(seconds: float) -> str:
    for unit, f in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= f:
            return f"{seconds / f:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"
