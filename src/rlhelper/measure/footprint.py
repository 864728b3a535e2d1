"""What the judge adds to an install: the packages its runtime needs that the rest of rlhelper's
default install does not pull in, and the model files shipped in the package (`rlhelper bench`).

    added_megabytes() -> (MB, {"onnxruntime": 78.1, ..., "judge model files": 46.0})

The default install's other dependencies are read from the repository's pyproject.toml (else the
installed rlhelper's metadata); each package's closure follows the installed packages' own
requirements (environment markers evaluated, extras not followed). A package's size is the sum of the
files its installation recorded (RECORD), as `pip install` lays them down.
"""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

from .. import config

JUDGE_RUNTIME = ("onnxruntime", "tokenizers")  # what search/judge.py imports to serve the judge
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def default_requirements() -> list[str]:
    """rlhelper's default dependencies, as requirement strings."""
    pyproject = config.REPO_ROOT / "pyproject.toml"
    if pyproject.is_file():
        return list(tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"])
    return [r for r in metadata.requires("rlhelper") or [] if "extra ==" not in r]


def _requires(name: str) -> list[str]:
    """The installed package's own requirements that apply here (markers evaluated, extras skipped)."""
    try:
        raw = metadata.requires(name) or []
    except metadata.PackageNotFoundError:
        return []
    out = []
    for req in raw:
        spec, _, marker = req.partition(";")
        if marker and ("extra" in marker or not _marker_holds(marker)):
            continue
        found = _NAME.match(spec)
        if found:
            out.append(found.group(1))
    return out


def _marker_holds(marker: str) -> bool:
    try:
        from packaging.markers import Marker

        return Marker(marker.strip()).evaluate()
    except Exception:  # noqa: BLE001 - an unreadable marker: count the package, the larger figure
        return True


def closure(names) -> set[str]:
    """The packages `names` pull in, themselves included (canonical names, installed ones only)."""
    seen, todo = set(), [canonical(n) for n in names]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen.add(name)
        todo += [canonical(r) for r in _requires(name)]
    return seen


def installed_megabytes(name: str) -> float:
    files = metadata.distribution(name).files or []
    total = 0
    for file in files:
        try:
            total += file.locate().stat().st_size
        except OSError:
            continue
    return total / 1e6


def added_megabytes(model_folder: Path | None = None) -> tuple[float, dict[str, float]]:
    """MB the judge adds to the default install, and the parts: its runtime packages that nothing
    else of the default install pulls in, and the shipped model files."""
    from ..search.judge import PACKAGED

    others = [r for r in default_requirements() if canonical(_NAME.match(r).group(1)) not in JUDGE_RUNTIME]
    base = closure(_NAME.match(r).group(1) for r in others)
    added = sorted(closure(JUDGE_RUNTIME) - base)
    parts = {name: round(installed_megabytes(name), 1) for name in added}
    folder = Path(model_folder or PACKAGED)
    parts["judge model files"] = round(sum(f.stat().st_size for f in folder.iterdir() if f.is_file()) / 1e6, 1)
    return round(sum(parts.values()), 1), parts
