"""One rank of scripts/bench/launch_output.sh: print LINES lines of about 190 bytes each,
`RANK I xxx...`, one print() per line (run it with PYTHONUNBUFFERED=1, as a training script's
logging often is: every print is then several write()s, which is what cuts lines apart when
ranks share a pipe). Usage: spew.py LINES"""
import os
import sys

rank = next((os.environ[v] for v in ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK") if v in os.environ), "0")
pad = "x" * 180
for i in range(int(sys.argv[1])):
    print(rank, i, pad)
