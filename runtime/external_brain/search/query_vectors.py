"""The query vectors of recent searches, kept so that the same query does not pay the embedding
provider twice (an agent searching again, a hook searching the prompt the agent then searches).

What it promises:
- One file, `.brain/cache/query-vectors.bin`: a header and `SLOTS` entries of one fixed width,
  so it never grows past SLOTS x (32 + 8 x dimensions) bytes (~0.8 MB for 384 dimensions). An
  entry lives in the slot its key hashes to; a newer query whose key hashes there replaces it.
- The key is a hash of `embeddings.model_key` (provider, model, URL, command, input_type,
  prefixes, dimensions) and the query's text: the same text under the same configuration gets
  the same vector back; another model, prefix or input type is another key, never a hit.
- Safe under concurrent processes without a lock: every entry is written whole by one `pwrite`
  and carries a checksum of its key and vector, so an entry torn by a crash or interleaved by two
  writers fails the check and reads as a miss (the query is embedded again), never as a vector.
- The vector is kept as the provider returned it (float64), so a search answered from the cache
  ranks exactly as the one that embedded it.
- It never fails or slows a search beyond one small read: a missing, unreadable or unwritable
  file is a miss, a write that fails is skipped. Derived data: deleting the file loses nothing.
"""

from __future__ import annotations

import os
import sys
from array import array

try:
    # The C module itself: `hashlib`'s import loads OpenSSL too, ~4 ms of every vector search
    # for a hash the module gives alike (issue 22).
    from _blake2 import blake2b
except ImportError:   # a Python built without it
    from hashlib import blake2b

from ..vault.storage import Vault

SLOTS = 256
FILE = "query-vectors.bin"
_MAGIC = b"EBQV1"
_HEADER = 16          # magic, then the dimensions as 4 ASCII-free bytes, padded
_KEY = 16
_SUM = 16


def query_key(model: str, text: str) -> bytes:
    """What identifies a query's vector: the embedding configuration (`model_key`) and the text."""
    return blake2b(f"{model}\0{text}".encode("utf-8"), digest_size=_KEY).digest()


def _layout(dimensions: int) -> tuple[bytes, int]:
    header = (_MAGIC + dimensions.to_bytes(4, "little")).ljust(_HEADER, b"\0")
    return header, _KEY + _SUM + 8 * dimensions


def _offset(key: bytes, width: int) -> int:
    return _HEADER + (int.from_bytes(key[:8], "little") % SLOTS) * width


def _checksum(key: bytes, payload: bytes) -> bytes:
    return blake2b(key + payload, digest_size=_SUM).digest()


def cached_query_vector(vault: Vault, key: bytes, dimensions: int) -> list[float] | None:
    """The vector kept for `key` with `dimensions` dimensions, or None (not kept, replaced,
    torn, or kept for vectors of another length)."""
    header, width = _layout(dimensions)
    try:
        fd = os.open(vault.cache_dir / FILE, os.O_RDONLY)
    except OSError:
        return None
    try:
        if os.pread(fd, _HEADER, 0) != header:
            return None
        entry = os.pread(fd, width, _offset(key, width))
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(entry) != width or entry[:_KEY] != key:
        return None
    payload = entry[_KEY + _SUM:]
    if entry[_KEY:_KEY + _SUM] != _checksum(key, payload):
        return None   # torn or interleaved: embedded again
    values = array("d")
    values.frombytes(payload)
    if sys.byteorder != "little":
        values.byteswap()
    return values.tolist()


def keep_query_vector(vault: Vault, key: bytes, vector: list[float]) -> None:
    """Keep `vector` for `key` (best effort: a cache that cannot be written is skipped)."""
    header, width = _layout(len(vector))
    values = array("d", vector)
    if sys.byteorder != "little":
        values.byteswap()
    payload = values.tobytes()
    entry = key + _checksum(key, payload) + payload
    try:
        fd = os.open(vault.cache_dir / FILE, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        return
    try:
        # Trigger: a new file, or one written for vectors of another length (the model changed).
        # Why: the slots' width follows the dimensions. Outcome: the header is written for this
        # length; entries of the old width now sit at other offsets and fail their checksums.
        if os.pread(fd, _HEADER, 0) != header:
            os.pwrite(fd, header, 0)
        os.pwrite(fd, entry, _offset(key, width))
    except OSError:
        pass
    finally:
        os.close(fd)
