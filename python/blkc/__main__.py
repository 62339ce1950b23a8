"""python -m blkc — the blkc CLI (docs/cli.md) that `pip install ./python`
put inside this package; from a source checkout, the one in build/."""
import os
import sys


def _cli():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    for path in (os.path.join(here, "blkc"), os.path.join(root, "build", "blkc")):
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def main():
    cli = _cli()
    if cli is None:
        sys.stderr.write("blkc: the CLI is not in this package (install it "
                         "with pip install ./python)\n")
        return 127
    os.execv(cli, [cli] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
