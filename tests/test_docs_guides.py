"""The code blocks of the README and the docs run as written (in order, one namespace per page)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "user_guide"

#: Pages whose examples are complete programs (each block may use the previous ones).
RUNNABLE = ["customising.rst", "scaling.rst"]

#: Pages with a few snippets a new user copies first; each must run as it stands.
FIRST_STEPS = ["README.md", "docs/getting_started.rst", "docs/user_guide/core.rst"]


def _python_blocks(text: str) -> list[str]:
    blocks = []
    for match in re.finditer(r"^\.\. code-block:: python\n\n((?:(?: {4}.*)?\n)+)", text, re.M):
        lines = match.group(1).splitlines()
        blocks.append("\n".join(line[4:] for line in lines))
    return blocks


def _markdown_python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", text, re.M | re.S)


def _run(blocks: list[str], page: str) -> None:
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, f"{page} block", "exec"), namespace)


@pytest.mark.parametrize("page", FIRST_STEPS)
def test_the_first_steps_run_as_written(page, tmp_path, monkeypatch, capsys):
    # The README's and Getting started's text ships with gensim's test data.
    pytest.importorskip("gensim")
    text = (ROOT / page).read_text()
    blocks = _markdown_python_blocks(text) if page.endswith(".md") else _python_blocks(text)
    assert blocks, f"no Python code block found in {page}"
    monkeypatch.chdir(tmp_path)  # the README saves vectors.txt
    _run(blocks, page)
    assert capsys.readouterr().out  # every page prints what it shows


@pytest.mark.parametrize("page", RUNNABLE)
def test_the_guide_examples_run(page, capsys):
    blocks = _python_blocks((GUIDE / page).read_text())
    assert len(blocks) >= 5
    _run(blocks, page)
    assert capsys.readouterr().out  # the examples print what they show
