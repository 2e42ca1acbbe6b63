"""Download a data file and accept it only if its SHA-256 matches.

The bytes are streamed to ``<dest>.part`` while hashed; on a match the part file is renamed to
``dest`` (atomic on one file system), on a mismatch it is deleted and :class:`ChecksumError` is
raised, so a partial or tampered download never takes the place of a data file. Any URL scheme
``urllib`` opens works (``https://``, ``http://``, ``file://``); a checksum is mandatory.
"""

from __future__ import annotations

import hashlib
import os
import urllib.error
import urllib.request
from pathlib import Path

from ldptree._validation import check_positive
from ldptree.datasets._checksums import ChecksumError, check_digest


def download_file(
    url: str, dest: str | os.PathLike[str], *, sha256: str, timeout: float = 60.0
) -> Path:
    """Fetch ``url`` into ``dest`` if its SHA-256 equals ``sha256``; return ``dest``."""
    if not isinstance(url, str) or "://" not in url:
        raise ValueError(
            f"url must be an absolute URL such as https://... or file://..., got {url!r}"
        )
    expected = check_digest(sha256, "sha256")
    timeout = check_positive(timeout, "timeout")
    target = Path(dest)
    part = target.with_name(target.name + ".part")
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, part.open("wb") as out:
            for block in iter(lambda: response.read(1 << 20), b""):
                digest.update(block)
                out.write(block)
    except (urllib.error.URLError, OSError) as err:
        part.unlink(missing_ok=True)
        raise OSError(f"could not download {url}: {err}") from err
    if digest.hexdigest() != expected:
        part.unlink(missing_ok=True)
        raise ChecksumError(
            f"checksum mismatch for {url}: expected sha256 {expected}, got {digest.hexdigest()}; "
            f"{target} was not written"
        )
    part.replace(target)
    return target
