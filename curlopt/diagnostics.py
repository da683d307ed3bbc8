"""PLACEHOLDER — the environments helper replaces this module (issue 5)."""


def ergodicity_warning(model):
    return None
