"""A tiny package with a console script, installed into test venvs with pip --no-index."""
import sys


def hello():
    print(f"tinypkg hello from {sys.prefix}")
    return 0
