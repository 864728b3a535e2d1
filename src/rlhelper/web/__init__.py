"""The web chat (Gradio), its load test and its attack trials.

Page and events: app.py; running it: server.py; the handlers: answering.py, votes.py, with
arguments.py (what a visitor sends) and llm_view.py (an LLM-written answer); session.py (what a
browser session keeps); style.css and script.js (the page's look and script).
"""

import os

# Before any module here imports gradio: its analytics read this at import time.
os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
# Gradio's queue summarises every finished event with pandas for the monitoring page,
# which is off here; summarising rarely and over few events saves CPU on each answer.
os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", "1000")
os.environ.setdefault("GRADIO_ANALYTICS_MAX_EVENTS", "1000")
