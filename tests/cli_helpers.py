"""Running the ``curlopt`` command in this process, as the tests do."""

from __future__ import annotations


def invoke(args: list[str], capsys) -> tuple[int, str, str]:
    """Run ``curlopt ARGS`` through :func:`curlopt.cli.main`; return (exit code, stdout, stderr)."""
    from curlopt.cli import main

    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    captured = capsys.readouterr()
    return code, captured.out, captured.err
