"""Bounded, typed reading of the files users hand in: schedules, network files, parameter files, measurements,
tuning tables and MSCCL XML all come through here.

- Only a regular file is read. A folder, a device (``/dev/zero`` never ends), a pipe or a socket is refused
  before anything is read.
- The file's size times the reader's peak bytes per file byte is checked against the memory budget
  (:func:`directcoll.resources.check_memory`) before reading. At most that many bytes are ever read, so a file
  that grows while it is read (or a ``/proc`` file that reports size 0) cannot run past the budget.
- Text is UTF-8; a byte-order mark is skipped.
- XML is parsed by defusedxml: no entity declarations, no external references, and a document type
  declaration only where the format allows one. Its declared encoding must be one that expat reads (UTF-8,
  UTF-16, US-ASCII, ISO-8859-1, or a single-byte codec), else the file is refused in one line.

Every refusal is one line that starts with the reader's name for the file. The error class is the reader's
own (``SpecError`` for networks, ``ScheduleFormatError`` for schedules, ...).

Source: docs/architecture.md, "Quality bar" (bad input gets one line, budgets before work); the XML
specification's encoding declaration (XML 1.0, Sec. 4.3.3) and expat's built-in encodings.
"""

from __future__ import annotations

import codecs
import os
import re
import stat

from directcoll.errors import DirectcollError
from directcoll.resources import check_memory, memory_budget

#: the encoding names expat decodes itself (compared without case); any other name goes to Python's codec of
#: that name, which expat takes only if it is single-byte
EXPAT_ENCODINGS = ("UTF-8", "UTF-16", "UTF-16BE", "UTF-16LE", "ISO-8859-1", "US-ASCII")
_XML_DECLARATION = re.compile(r"""^\s*<\?xml\s[^>]*?encoding\s*=\s*["']([^"']*)["']""")


def regular_file_size(path, what: str, *, error: type[DirectcollError] = DirectcollError) -> int:
    """The size in bytes of ``path`` if it is a regular file; anything else is refused.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    what : str
        How the reader names it in messages, e.g. ``"schedule file s.json"``.
    error : type
        The :class:`~directcoll.errors.DirectcollError` subclass to raise.

    Returns
    -------
    int
        The size from ``stat`` (bytes; 0 for files such as ``/proc``'s that do not know theirs).

    Raises
    ------
    DirectcollError
        (``error``) a missing or unreadable path, a folder, a device, a pipe or a socket.

    Source: docs/architecture.md, "Quality bar"; ``stat(2)`` file types.

    Examples
    --------
    >>> regular_file_size("/dev/zero", "input /dev/zero")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    directcoll.errors.DirectcollError: input /dev/zero is a device, not a regular file; ...
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise error(f"{what}: no such file") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise error(f"{what}: cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return st.st_size
    kind = ("a folder" if stat.S_ISDIR(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a pipe" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a special file")
    raise error(f"{what} is {kind}, not a regular file; accepted: a regular file")


def read_bytes(path, what: str, *, bytes_per_byte: float = 1.0,
               error: type[DirectcollError] = DirectcollError) -> bytes:
    """The contents of a regular file, its size checked against the memory budget first.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    what : str
        How the reader names it in messages.
    bytes_per_byte : float
        The reader's peak memory per byte of the file (bytes/byte, >= 1): what parsing it will hold.
    error : type
        The :class:`~directcoll.errors.DirectcollError` subclass to raise for an unreadable file.

    Returns
    -------
    bytes
        At most ``memory_budget() / bytes_per_byte`` bytes: the whole file.

    Raises
    ------
    DirectcollError
        (``error``) see :func:`regular_file_size`, or a read error.
    ResourceError
        The file is larger than the budget allows.

    Source: docs/architecture.md, "Engines, runtimes and scale" (estimate memory first).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile(suffix=".txt") as f:
    ...     _ = f.write(b"hello"); f.flush()
    ...     read_bytes(f.name, "a note")
    b'hello'
    """
    size = regular_file_size(path, what, error=error)
    check_memory(f"reading {what} ({size:,} bytes)", size * bytes_per_byte)
    limit = int(memory_budget() / bytes_per_byte)
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise error(f"{what}: cannot be read ({exc.strerror or exc})") from None
    if len(data) > limit:  # it grew, or stat did not know its size
        check_memory(f"reading {what} (over {limit:,} bytes)", len(data) * bytes_per_byte)
    return data


def read_text(path, what: str, *, bytes_per_byte: float = 1.0,
              error: type[DirectcollError] = DirectcollError) -> str:
    """The UTF-8 text of a regular file (a byte-order mark skipped), bounded as :func:`read_bytes`.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    what : str
        How the reader names it in messages.
    bytes_per_byte : float
        The reader's peak memory per byte of the file (bytes/byte).
    error : type
        The :class:`~directcoll.errors.DirectcollError` subclass to raise.

    Returns
    -------
    str
        The text.

    Raises
    ------
    DirectcollError
        (``error``) see :func:`read_bytes`, or text that is not UTF-8 (naming the byte).
    ResourceError
        The file is larger than the budget allows.

    Source: docs/architecture.md, "Quality bar".

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile(suffix=".txt") as f:
    ...     _ = f.write(b"\\xef\\xbb\\xbfa,b"); f.flush()
    ...     read_text(f.name, "a table")
    'a,b'
    """
    data = read_bytes(path, what, bytes_per_byte=bytes_per_byte, error=error)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(f"{what}: not UTF-8 text (byte {exc.start}: {exc.reason}); accepted: UTF-8 text") from None


def declared_encoding(head: bytes) -> str | None:
    """The encoding an XML document's declaration names (``<?xml version="1.0" encoding="..."?>``), if any.

    Parameters
    ----------
    head : bytes
        The document's first bytes (a few hundred are enough).

    Returns
    -------
    str or None
        The name as written; None without a declaration or without an encoding in it.

    Raises
    ------
    Nothing
        Bytes that are not an XML declaration give None.

    Source: XML 1.0 (Fifth Edition), Sec. 2.8 and 4.3.3 (the encoding declaration) and App. F (detecting UTF-16
    with or without a byte-order mark).

    Examples
    --------
    >>> declared_encoding(b'<?xml version="1.0" encoding="UTF-8"?><a/>'), declared_encoding(b"<a/>")
    ('UTF-8', None)
    """
    head = head[:512]
    if head[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        text = head.decode("utf-16", "replace")
    elif head[:4] in (b"<\x00?\x00", b"\x00<\x00?"):  # UTF-16 without a byte-order mark (XML 1.0, App. F)
        text = head[: len(head) // 2 * 2].decode("utf-16-le" if head[0] else "utf-16-be", "replace")
    else:
        text = head.decode("latin-1")
    m = _XML_DECLARATION.match(text)
    return m.group(1) if m else None


def check_xml_encoding(head: bytes, what: str, *, error: type[DirectcollError] = DirectcollError) -> None:
    """Refuse an XML document whose declared encoding expat cannot read.

    Accepted: no declaration (UTF-8 or UTF-16 by byte-order mark), :data:`EXPAT_ENCODINGS`, and any codec that
    maps each of the 256 byte values to one character, the rule by which Python's expat binding takes other
    encodings.

    Parameters
    ----------
    head : bytes
        The document's first bytes.
    what : str
        How the reader names the document.
    error : type
        The :class:`~directcoll.errors.DirectcollError` subclass to raise.

    Returns
    -------
    None

    Raises
    ------
    DirectcollError
        (``error``) an unknown encoding, or a multi-byte one expat does not decode (UTF-7, UTF-32, ...).

    Source: XML 1.0, Sec. 4.3.3; expat's built-in encodings (UTF-8, UTF-16, ISO-8859-1, US-ASCII) and
    ``pyexpat``'s unknown-encoding handler (single-byte codecs only).

    Examples
    --------
    >>> check_xml_encoding(b'<?xml version="1.0" encoding="cp1252"?>', "net.graphml")
    >>> check_xml_encoding(b'<?xml version="1.0" encoding="utf-7"?>', "net.graphml")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    directcoll.errors.DirectcollError: net.graphml: declares encoding 'utf-7', which cannot be read; accepted: ...
    """
    name = declared_encoding(head)
    if name is None:
        return
    accepted = "accepted: UTF-8, UTF-16, US-ASCII, ISO-8859-1 or a single-byte encoding such as cp1252"
    if name.upper() in EXPAT_ENCODINGS:
        return
    try:
        codecs.lookup(name)
    except (LookupError, ValueError):
        raise error(f"{what}: declares encoding {name!r}, which is unknown; {accepted}") from None
    try:
        single_byte = len(bytes(range(256)).decode(name, "replace")) == 256
    except Exception:  # noqa: BLE001 -- a codec's own failure (idna refuses 'replace'): not single-byte
        single_byte = False
    if not single_byte:
        raise error(f"{what}: declares encoding {name!r}, which cannot be read; {accepted}")


def parse_xml(data: bytes | str, what: str, *, error: type[DirectcollError] = DirectcollError):
    """An XML document as an ElementTree element, through defusedxml (no DTD, entities or external references).

    Parameters
    ----------
    data : bytes or str
        The document.
    what : str
        How the reader names it.
    error : type
        The :class:`~directcoll.errors.DirectcollError` subclass to raise.

    Returns
    -------
    xml.etree.ElementTree.Element
        The root element.

    Raises
    ------
    DirectcollError
        (``error``) an encoding that cannot be read, XML that is not well-formed, or a document type or entity
        declaration.

    Source: defusedxml's ElementTree (``forbid_dtd``, ``forbid_entities``, ``forbid_external``); XML 1.0.

    Examples
    --------
    >>> parse_xml('<algo name="a"/>', "x.xml").attrib
    {'name': 'a'}
    """
    import xml.etree.ElementTree as ET

    from defusedxml import DefusedXmlException
    from defusedxml.ElementTree import fromstring

    if isinstance(data, bytes):
        check_xml_encoding(data, what, error=error)
    try:
        return fromstring(data, forbid_dtd=True)
    except ET.ParseError as exc:
        raise error(f"{what}: not well-formed XML ({exc})") from None
    except DefusedXmlException as exc:
        raise error(f"{what}: a document type declaration (<!DOCTYPE>, <!ENTITY>) is not accepted ({exc})") from None
