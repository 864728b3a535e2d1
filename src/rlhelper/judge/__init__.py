"""Training the judge: a model trained here that says whether an entry answers a question (issue 21),
a bi-encoder fine-tuned on this domain's pairs, its cosine turned into a calibrated probability.

    data.py     training pairs from the question bank, the retriever's near misses and the
                in-domain questions the docs do not answer (train/judge/)
    train.py    fine-tunes the bundled all-MiniLM-L6-v2 on the pairs (torch)
    export.py   ONNX export and int8 quantization, with the tokenizer and a manifest (torch)

Serving is search/judge.py (onnxruntime, no torch): the `judge` search mode.
"""
