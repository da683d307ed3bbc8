"""The README and the user guide stay true: their Python examples run, and .ci/run runs the README's test command."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
#: the pages whose Python examples are run: the README and the user guide
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "guide").glob("*.md"))]


def python_blocks() -> list[tuple[str, str]]:
    return [(page.relative_to(ROOT).as_posix(), block) for page in PAGES
            for block in re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)]


def test_readme_opens_with_the_two_setup_commands():
    first_block = re.search(r"```bash\n(.*?)```", README, flags=re.S).group(1).strip().splitlines()
    assert len(first_block) == 2
    assert first_block[0].endswith("curlopt reproduce queue")
    assert "pytest" in first_block[1]
    # .ci/run runs exactly the README's test command
    assert first_block[1] in (ROOT / ".ci" / "run").read_text()


@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_python_examples_run(index, monkeypatch, tmp_path):
    page, code = python_blocks()[index]
    for module in ("cvxpy", "pyomo"):
        if module in code:
            pytest.importorskip(module)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"{page} python block {index}", "exec"), {"__name__": "__readme__"})
