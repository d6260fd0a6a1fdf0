"""torchrun from Debian's python3-torch 1.13, patched to run on Python 3.11.

Debian 12's torch 1.13 parses --redirects/--tee with an enum lookup that returns None on
Python 3.11 (Flag iteration changed), so plain `python3 -m torch.distributed.run` crashes.
This sets the one value the benchmark needs (no redirection) and runs torchrun's main.
"""
import sys

from torch.distributed.elastic.multiprocessing import api

api.Std.from_str = classmethod(lambda cls, vm: cls.NONE)

from torch.distributed import run  # noqa: E402

sys.exit(run.main())
