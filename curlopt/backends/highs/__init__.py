"""The HiGHS backends (highspy): ``highs`` for whole LPs (:mod:`.backend`), its solution reader through the C API
(:mod:`.solution`), and ``highs-columns``, UC-CURL's optimistic program by column generation (:mod:`.columns`).

Importing this package imports no solver: each module imports highspy when it builds a model.
"""
