"""Lines that grow blocks by realloc, for heaptrace's sampled fast path (tests/scenarios/pyframes.sh).

Both lines' blocks are resized in place or moved by CPython's realloc:
small strs (pymalloc, whose realloc calls its malloc and free when a
block moves) and bytearrays past 512 bytes (its realloc hands them to
libc's).  argv: [tm]: with "tm", tracemalloc's in-use per line of this
file at the end (run it with -X tracemalloc=1), for the comparison.
"""
import os
import sys

keep = []


def strs(n):
    for i in range(n):
        s = "%d" % i
        for _ in range(40):
            s += "abcdefgh"  # @strs: 20,000 strs grown to 320-odd chars
        keep.append(s)


def arrays(n):
    for _ in range(n):
        b = bytearray()
        for _ in range(64):
            b += b"0123456789" * 10  # @arrays: 2,000 bytearrays grown to 6,400 bytes
        keep.append(b)


strs(20000)
arrays(2000)
if len(sys.argv) > 1:
    import pytm  # beside this file

    pytm.report(__file__)
os._exit(0)
