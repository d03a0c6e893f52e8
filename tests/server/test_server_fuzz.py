"""The HTTP API fuzzed from its own OpenAPI document: no answer is a server error."""

from __future__ import annotations

import os
from typing import Any

import _server_required  # noqa: F401  (skips the module without the server extra)
import pytest

schemathesis = pytest.importorskip("schemathesis")
hypothesis = pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from server_helpers import build_counter  # noqa: E402

import flowdbg  # noqa: E402

#: /wait blocks up to its timeout (up to 300 s) by design: left out so that the fuzz is quick
SKIPPED = {("POST", "/wait")}


def test_no_request_makes_a_server_error(dbg: flowdbg.Debugger) -> None:
    import httpx

    app = build_counter()
    dbg.break_after("a")  # runs the fuzz starts stop, so stop routes meet open stops too
    with dbg.serve(target=app, rate=None) as srv:
        auth = {"Authorization": f"Bearer {srv.token}"}
        raw = httpx.get(f"{srv.base_url}/openapi.json", headers=auth).json()
        schema = schemathesis.openapi.from_dict(raw)
        operations = [
            op.ok()
            for op in schema.get_all_operations()
            if (op.ok().method.upper(), op.ok().path) not in SKIPPED
        ]
        assert len(operations) > 20
        seen: dict[int, int] = {}
        # valid requests and requests the schema refuses (wrong types, missing fields...)
        modes = (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE)
        strategies = [op.as_strategy(generation_mode=mode) for op in operations for mode in modes]

        @settings(
            max_examples=int(os.environ.get("FUZZ_EXAMPLES", "600")),
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=st.one_of(strategies))
        def call(case: Any) -> None:
            response = case.call(base_url=srv.base_url, headers=auth, timeout=30)
            seen[response.status_code] = seen.get(response.status_code, 0) + 1
            assert response.status_code < 500, (
                f"{case.method} {case.formatted_path} -> {response.status_code}: "
                f"{response.text[:500]}"
            )

        call()
        dbg.terminate()
    assert 200 in seen and 422 in seen and 404 in seen
