"""rlhelper: find the troubleshooting entry that answers an RL post-training error, and cite it.

`import rlhelper` stays cheap: numpy, FAISS, the embedding model, Gradio and
LangChain load only when something needs them.
"""

from __future__ import annotations

from .version import __version__

__all__ = ["Helper", "__version__"]


def __getattr__(name: str):
    if name == "Helper":
        from .api import Helper

        return Helper
    raise AttributeError(f"module 'rlhelper' has no attribute {name!r}")
