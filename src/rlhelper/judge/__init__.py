"""The judge: a cross-encoder that reads a question and an entry together and says whether the
entry answers it (issue 21).

    passage.py  the short text of an entry the judge reads (stdlib only)
    data.py     training pairs from the question bank, the retriever's near misses and the
                in-domain questions the docs do not answer (train/judge/)
    train.py    fine-tunes the bundled all-MiniLM-L6-v2 as a cross-encoder (torch)
    export.py   ONNX export and int8 quantization, with the tokenizer and a manifest (torch)
    score.py    scores (question, entry) pairs with onnxruntime: no torch on the query path

Not on the default search path yet: that waits for the dev study.
"""
