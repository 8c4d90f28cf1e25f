"""The `occam` command of a pip-installed occam: runs the C++ command-line tool installed inside the
package (occam/bin/occam), with the same arguments and exit code."""

import os
import sys
from pathlib import Path


def main():
    tool = Path(__file__).resolve().parent / "bin" / "occam"
    if not tool.exists():
        sys.exit(f"occam: the command-line tool is not installed with this package ({tool} is missing); "
                 "install occam with pip, or build it with scripts/build.sh")
    os.execv(str(tool), ["occam", *sys.argv[1:]])
