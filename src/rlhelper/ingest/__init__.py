"""Ingest: documents in, entries out. Finds the sources (folders, GitHub threads), parses each
format into sections, shapes sections into entries, links translated twins and hands the
entries to the index stage. Nothing here runs on a query's path.
"""
