"""Closed GitHub issues as a source: the fixes that live in threads, not in docs.

    fetch.sync(repo, store, client)         the API's closed issues and comments -> the local store
    export.read_export(path, repo)          the same from `gh issue list --json` / `gh api` output
    threads.ThreadStore(repo)               <data_dir>/github/<owner>__<repo>/: issues.jsonl, state.json
    entries.thread_sources(store, ...)      stored threads -> documents for the ingest pipeline

Nothing of a thread is executed or rendered as HTML: it becomes entry text like any
document's, escaped by the terminal and web renderers. The token is sent to the API's
own host only, and never logged, stored or put in an error message (docs/github.md).
"""
