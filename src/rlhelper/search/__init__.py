"""Search: a query in, ranked hits out. Normalises the query (logs, tracebacks, typos, Chinese),
retrieves by BM25, vectors and the question bank, fuses the lists, and judges how sure the
best hit is so that a miss can say "no match".
"""
