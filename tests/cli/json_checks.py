"""Checks of ``--json`` outputs beyond their published schemas: no property the schema leaves
undocumented, and the models of :mod:`flowdbg.schemas` give back the very same JSON."""

from __future__ import annotations

import copy
import json
from typing import Any

from flowdbg.cli._schemas import SCHEMAS, validate
from flowdbg.schemas import COMMANDS


def closed(schema: Any) -> Any:
    """``schema`` with ``additionalProperties: false`` on every object that lists its
    properties (the published schemas stay open: a consumer must accept new properties)."""
    schema = copy.deepcopy(schema)

    def close(node: Any) -> None:
        if isinstance(node, dict):
            if "properties" in node and "additionalProperties" not in node:
                node["additionalProperties"] = False
            for key, value in node.items():
                if key == "properties":
                    for sub in value.values():
                        close(sub)
                else:
                    close(value)
        elif isinstance(node, list):
            for item in node:
                close(item)

    close(schema)
    return schema


def check_output(command: str, data: Any) -> None:
    """``data``, printed by ``command --json``, matches its schema, has no undocumented
    property, and round-trips through the command's model unchanged."""
    assert validate(data, SCHEMAS[command]) == []
    assert validate(data, closed(SCHEMAS[command])) == [], "a property the schema does not list"
    model = COMMANDS[command].model_validate_json(json.dumps(data), strict=True)
    assert model.model_dump(mode="json", exclude_unset=True) == data
