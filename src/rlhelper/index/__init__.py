"""The index on disk: the entries, their vectors in FAISS, the BM25 postings and the question
bank's index, written atomically under a lock and read back with every file checked.
"""
