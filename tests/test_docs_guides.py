"""The user guide's code blocks run as written (executed in order, one namespace per page)."""

import re
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "user_guide"

#: Pages whose examples are complete programs (each block may use the previous ones).
RUNNABLE = ["customising.rst", "scaling.rst"]


def _python_blocks(text: str) -> list[str]:
    blocks = []
    for match in re.finditer(r"^\.\. code-block:: python\n\n((?:(?: {4}.*)?\n)+)", text, re.M):
        lines = match.group(1).splitlines()
        blocks.append("\n".join(line[4:] for line in lines))
    return blocks


@pytest.mark.parametrize("page", RUNNABLE)
def test_the_guide_examples_run(page, capsys):
    blocks = _python_blocks((GUIDE / page).read_text())
    assert len(blocks) >= 5
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, f"{page} block", "exec"), namespace)
    assert capsys.readouterr().out  # the examples print what they show
