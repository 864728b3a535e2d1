"""The field names docs/json-schema.md lists, for the tests that hold the --json output to them."""

from __future__ import annotations

import re
from pathlib import Path

SCHEMA_DOC = Path(__file__).resolve().parent.parent / "docs" / "json-schema.md"


def documented_schema() -> dict[str, set[str]]:
    """Field names from docs/json-schema.md: "top" (and "batch" for batch-only ones), plus the
    `{...}` key lists given for parts, citations, hits and also_at."""
    text = SCHEMA_DOC.read_text(encoding="utf-8")
    schema: dict[str, set[str]] = {"top": set(), "batch": set()}
    for name, meaning in re.findall(r"^\| `(\w+)` \| [^|]+ \| (.*) \|$", text, re.MULTILINE):
        schema["batch" if meaning.startswith("batch mode only") else "top"].add(name)
        keys = re.search(r"`\{([^}]*)\}`", meaning)
        if keys:
            schema[name] = {k.split(":")[0].strip() for k in keys.group(1).split(",")}
    for name in ("also_at", "twins"):
        keys = re.search(rf"`{name}` lists [^`]*`\{{([^}}]*)\}}`(?:, and, optional, `(\w+)`)?", text)
        schema[name] = {k.strip() for k in keys.group(1).split(",")}
        schema[f"{name}_optional"] = {keys.group(2)} if keys.group(2) else set()
    return schema
