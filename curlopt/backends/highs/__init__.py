"""The HiGHS backends (highspy): ``highs`` for whole LPs (:mod:`.backend`), its solution reader through the C API
(:mod:`.solution`), and the column-generation backends on the machinery of :mod:`.column_generation`:
``highs-columns``, UC-CURL's optimistic program (:mod:`.columns`), and ``highs-box-columns``, UCRL-CMDP's box
program (:mod:`.box_columns`, :mod:`.box_master`, :mod:`.box_vertices`).

Importing this package imports no solver: each module imports highspy when it builds a model.
"""
