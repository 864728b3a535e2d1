"""Measuring: eval sets and their metrics, the abstention model's calibration, speed benches,
synthetic corpora, and the reliability trials. Used by the CLI; never by a query.
"""
