"""The vendored layout library is the pinned npm package's file, unchanged: the shipped copies
(in the source tree and in the installed package) have the sha256 ``vendor.json`` records, and,
with ``FLOWDBG_CHECK_VENDOR=1`` (the tox env ``web`` sets it), the files of the package fetched
with ``npm pack`` are those too."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from importlib import resources
from pathlib import Path
from types import ModuleType

import pytest

WEB = Path(__file__).resolve().parents[2] / "core" / "server" / "web"


def _vendor() -> ModuleType:
    spec = importlib.util.spec_from_file_location("flowdbg_web_vendor", WEB / "vendor.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_shipped_files_have_the_recorded_hashes() -> None:
    assert _vendor().verify_shipped() == []


def test_every_vendored_file_keeps_its_license_beside_it() -> None:
    manifest = json.loads((WEB / "vendor.json").read_text(encoding="utf-8"))
    for package in manifest["packages"]:
        targets = [spec["to"] for spec in package["files"].values()]
        assert any("LICENSE" in t for t in targets), package["name"]
        assert package["license"] == "MIT"


def test_the_installed_package_holds_the_same_files() -> None:
    manifest = json.loads((WEB / "vendor.json").read_text(encoding="utf-8"))
    installed = resources.files("flowdbg.server").joinpath("web")
    for package in manifest["packages"]:
        for spec in package["files"].values():
            entry = installed
            for part in spec["to"].split("/"):
                entry = entry.joinpath(part)
            assert hashlib.sha256(entry.read_bytes()).hexdigest() == spec["sha256"], spec["to"]


@pytest.mark.skipif(
    os.environ.get("FLOWDBG_CHECK_VENDOR") != "1",
    reason="fetches the pinned packages from npm: set FLOWDBG_CHECK_VENDOR=1 (tox -e web does)",
)
def test_the_shipped_files_are_the_pinned_packages_files() -> None:
    assert _vendor().check_against_npm() == []
