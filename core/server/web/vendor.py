"""Fetch, check or update the third-party files the web page ships (see ``vendor.json``).

The page uses one library, dagre (graph layout), as its prebuilt ES module, copied unchanged
from its npm package. ``vendor.json`` pins each package's version and npm integrity, and the
sha256 of every file taken from it. This script fetches the pinned tarballs with ``npm pack``
(npm checks the integrity; so does this script) and then:

- ``python vendor.py --check``: compares the shipped files with the packages' (exit 1 if they
  differ); what CI runs, through ``tests/web/test_web_vendor.py``.
- ``python vendor.py --update``: writes the files from the packages and records their hashes
  (after changing a ``version`` and ``integrity`` in ``vendor.json``).

Only npm is needed (no Node toolchain at install time: the files are in the wheel).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "vendor.json"


def manifest() -> dict[str, Any]:
    """The pinned packages and their files."""
    data: dict[str, Any] = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return data


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fetch(name: str, version: str, integrity: str, into: Path) -> dict[str, bytes]:
    """The files of the npm package ``name@version`` (tar member name -> bytes), after
    checking the tarball against ``integrity``.

    :raises RuntimeError: when npm is missing or fails, or the tarball is not the pinned one.
    """
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is needed to fetch the vendored packages; install Node.js (npm)")
    done = subprocess.run(
        [npm, "pack", f"{name}@{version}", "--json", "--pack-destination", str(into)],
        capture_output=True,
        text=True,
        check=False,
        cwd=into,
    )
    if done.returncode != 0:
        raise RuntimeError(f"npm pack {name}@{version} failed: {done.stderr.strip()[-2000:]}")
    filename = json.loads(done.stdout)[0]["filename"]
    tarball = (into / filename).read_bytes()
    algorithm, _, expected = integrity.partition("-")
    actual = base64.b64encode(hashlib.new(algorithm, tarball).digest()).decode()
    if actual != expected:
        raise RuntimeError(f"{name}@{version}: the tarball's {algorithm} is not the pinned one")
    files: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as archive:
        for member in archive.getmembers():
            if member.isfile():
                handle = archive.extractfile(member)
                if handle is not None:
                    files[member.name] = handle.read()
    return files


def verify_shipped() -> list[str]:
    """The shipped files whose sha256 differs from ``vendor.json`` (or that are missing)."""
    problems = []
    for package in manifest()["packages"]:
        for source, spec in package["files"].items():
            path = HERE / spec["to"]
            if not path.is_file():
                problems.append(f"{spec['to']}: missing")
            elif sha256(path.read_bytes()) != spec["sha256"]:
                problems.append(f"{spec['to']}: its sha256 is not the one recorded for {source}")
    return problems


def check_against_npm() -> list[str]:
    """The shipped files that differ from the pinned packages' files."""
    problems = verify_shipped()
    with tempfile.TemporaryDirectory() as tmp:
        for package in manifest()["packages"]:
            files = fetch(package["name"], package["version"], package["integrity"], Path(tmp))
            for source, spec in package["files"].items():
                label = f"{package['name']}@{package['version']}:{source}"
                if source not in files:
                    problems.append(f"{label}: not in the package")
                    continue
                if sha256(files[source]) != spec["sha256"]:
                    problems.append(f"{label}: its sha256 is not the one recorded")
                path = HERE / spec["to"]
                if path.is_file() and path.read_bytes() != files[source]:
                    problems.append(f"{spec['to']}: differs from {label}")
    return problems


def update() -> None:
    """Write the files from the pinned packages and record their hashes."""
    data = manifest()
    with tempfile.TemporaryDirectory() as tmp:
        for package in data["packages"]:
            files = fetch(package["name"], package["version"], package["integrity"], Path(tmp))
            for source, spec in package["files"].items():
                path = HERE / spec["to"]
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(files[source])
                spec["sha256"] = sha256(files[source])
    MANIFEST.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="compare with the npm packages")
    mode.add_argument("--update", action="store_true", help="write the files from npm")
    args = parser.parse_args(argv)
    if args.update:
        update()
        print("updated; review the diff of vendor/ and vendor.json")
        return 0
    problems = check_against_npm() if args.check else verify_shipped()
    for problem in problems:
        print(problem, file=sys.stderr)
    if not problems:
        print("the vendored files are the pinned packages' files")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
