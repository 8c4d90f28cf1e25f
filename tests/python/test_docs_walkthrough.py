"""docs/python.md shows what examples/python_walkthrough.py prints: the block after the command that
runs it is compared, line for line, with the script's output on this build."""

import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")


def documented_output():
    text = open(os.path.join(ROOT, "docs", "python.md"), encoding="utf-8").read()
    command = text.index("examples/python_walkthrough.py docs/python_walkthrough.png")
    block = re.search(r"```\n(.*?)```", text[command:], re.S)
    return block.group(1).strip().splitlines()


def test_the_walkthrough_prints_what_the_docs_say(tmp_path):
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "python_walkthrough.py"),
                          str(tmp_path / "walkthrough.png")], capture_output=True, text=True, check=True,
                         env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    assert out.stdout.strip().splitlines() == documented_output()
    assert (tmp_path / "walkthrough.png").stat().st_size > 0
