"""Imported first by every server test module: skips the module unless the server's packages
(the server extra) and httpx, the tests' HTTP client, are installed."""

from __future__ import annotations

import pytest

for _name in ("fastapi", "uvicorn", "websockets", "httpx"):
    pytest.importorskip(_name)
