"""tracemalloc's in-use per line of one file, for tests/scenarios/pyframes.sh's comparisons.

Imported from the script's own directory (sys.path[0]) by t_pyknown.py
and t_pyrealloc.py when they run under -X tracemalloc=1 with "tm".
"""
import os
import sys
import tracemalloc


def report(path):
    """One "TM FILE:LINE SIZE COUNT" a line of path, from statistics('lineno')."""
    for st in tracemalloc.take_snapshot().statistics("lineno"):
        f = st.traceback[0]
        if f.filename == path:
            print("TM %s:%d %d %d" % (os.path.basename(f.filename), f.lineno, st.size, st.count))
    sys.stdout.flush()
