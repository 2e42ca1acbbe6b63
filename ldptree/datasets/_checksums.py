"""SHA-256 checksums of data files in the ``sha256sum`` format (``CHECKSUMS``).

A line is ``<64 hex digits><two spaces or " *"><file name>``; blank lines and lines starting with
``#`` are ignored. Verification hashes the file's bytes as stored (a ``.csv.gz`` is hashed
compressed), so ``sha256sum -c CHECKSUMS`` and :func:`verify_file` agree.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

CHECKSUMS_FILE = "CHECKSUMS"
_LINE = re.compile(r"^([0-9a-fA-F]{64}) [ *](.+)$")


class ChecksumError(ValueError):
    """A file's SHA-256 differs from the one recorded for it."""


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of the file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_checksums(path: Path) -> dict[str, str]:
    """``{file name: lower-case hex digest}`` from a ``sha256sum``-style file."""
    table: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8-sig")  # a leading BOM is not part of a line
    except UnicodeDecodeError as err:
        raise ValueError(f"{path} is not UTF-8 text: {err}") from None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _LINE.match(line)
        if match is None:
            raise ValueError(
                f"{path}: line {number} is not '<sha256>  <file>' (sha256sum format): {raw!r}"
            )
        table[match.group(2).strip()] = match.group(1).lower()
    return table


def check_digest(value: str, name: str) -> str:
    """A 64-hex-digit SHA-256 string (lower-cased) or ``ValueError`` naming ``name``."""
    if not isinstance(value, str) or re.fullmatch(r"[0-9a-fA-F]{64}", value) is None:
        raise ValueError(f"{name} must be a SHA-256 hex digest of 64 characters, got {value!r}")
    return value.lower()


def verify_file(path: Path, expected: str) -> None:
    """Raise :class:`ChecksumError` unless ``sha256(path) == expected``."""
    actual = sha256_file(path)
    if actual != expected.lower():
        raise ChecksumError(
            f"checksum mismatch for {path}: expected sha256 {expected.lower()}, got {actual}; "
            "the file is corrupt or was changed (re-download it, or update CHECKSUMS if the "
            "change is intended)"
        )
