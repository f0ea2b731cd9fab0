"""The security suite reuses the bench tests' real streaming server."""

from tests.tools.bench.conftest import sse_server  # noqa: F401
