"""sha1 and sha256 without loading OpenSSL.

`import hashlib` loads OpenSSL's libcrypto through `_hashlib`: 3.6-4.8 ms of every `rocport scan` process
(measured on this project's machine; the scan's own work on vLLM's csrc is ~55 ms). CPython's own `_sha1`
and `_sha256` (`_sha2` from Python 3.12) give the same digests; a build without them falls back to hashlib.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (tools/__init__.py)
if TYPE_CHECKING:
    from hashlib import sha1, sha256
else:
    try:
        from _sha1 import sha1
    except ImportError:  # a Python built without its own sha1
        from hashlib import sha1
    try:
        from _sha2 import sha256  # Python 3.12+
    except ImportError:
        try:
            from _sha256 import sha256  # Python 3.11
        except ImportError:
            from hashlib import sha256

__all__ = ["sha1", "sha256"]
