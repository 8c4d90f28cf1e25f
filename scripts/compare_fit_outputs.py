#!/usr/bin/env python3
"""compare_fit_outputs.py BEFORE AFTER [--ignore KEY ...]: the files of two fit_variants.sh runs,
compared exactly (JSON by value, with timings — keys naming seconds — and command lines left out;
CSV byte for byte). Exits 1
when a file differs or is missing on one side."""
import argparse
import json
import os
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--ignore", nargs="*", default=[], help="further JSON keys to leave out (e.g. options)")
    args = parser.parse_args()
    dropped = {"seconds", "command_line", *args.ignore}

    def clean(x):
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items() if k not in dropped and "second" not in k}
        if isinstance(x, list):
            return [clean(v) for v in x]
        return x

    names = sorted(set(os.listdir(args.before)) | set(os.listdir(args.after)))
    differ = []
    for name in names:
        a, b = os.path.join(args.before, name), os.path.join(args.after, name)
        if not (os.path.exists(a) and os.path.exists(b)):
            differ.append(name + " (on one side only)")
            continue
        if name.endswith(".json"):
            with open(a) as fa, open(b) as fb:
                same = clean(json.load(fa)) == clean(json.load(fb))
        else:
            with open(a, "rb") as fa, open(b, "rb") as fb:
                same = fa.read() == fb.read()
        if not same:
            differ.append(name)
    for name in differ:
        print("differs:", name)
    print(f"{len(names)} files, {len(differ)} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
