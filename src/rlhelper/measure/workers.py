"""The bench's worker processes: `python -m rlhelper.measure.workers <task> <json args>` prints one JSON line.

timing.run_worker starts them by name, so neither bench nor synthetic imports
the other to run its figures in a fresh interpreter.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from . import bankbench, bench, startbench, syncbench, synthetic, timing

WORKERS = {"ingest": bench.worker_ingest, "search": timing.worker_search, **synthetic.WORKERS,
           "learned_bank": bankbench.worker_learned_bank, "learned_first_search": bankbench.worker_learned_first_search,
           "ask_phases": startbench.worker_ask_phases,
           "git_upstreams": syncbench.worker_git_upstreams, "git_change_page": syncbench.worker_git_change_page}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) != 2 or argv[0] not in WORKERS:
        print(f"usage: python -m {timing.WORKERS_MODULE} {{{','.join(WORKERS)}}} JSON", file=sys.stderr)
        return 2
    print(json.dumps(WORKERS[argv[0]](**json.loads(argv[1]))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
