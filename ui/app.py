"""Serve the web chat: `python ui/app.py [--host 127.0.0.1] [--port 7860] [--index NAME_OR_PATH]`.

The same app as `rlhelper serve` (rlhelper.web.server.serve); kept as a script for
people who run the UI from a checkout.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

try:
    from rlhelper.errors import RlhelperError
    from rlhelper.web.server import serve
except ImportError:  # a checkout without `pip install -e .`: use the source tree
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    from rlhelper.errors import RlhelperError
    from rlhelper.web.server import serve


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="rlhelper web chat")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (keep 127.0.0.1 unless you mean it)")
    parser.add_argument("--port", type=int, default=7860)
    parser.add_argument("--index", help="index folder or name (default: index/default)")
    args = parser.parse_args(argv)
    try:
        serve(host=args.host, port=args.port, index=args.index)
    except RlhelperError as err:
        print(f"Error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
