"""Docs read from a git repository (`rlhelper ingest --git`, `rlhelper sync`): remote.py checks what a
source is and where its files show on the web, command.py runs git bounded, checkout.py keeps the
docs' files at one commit in the data folder, source.py turns them into ingest's documents."""
