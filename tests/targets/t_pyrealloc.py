"""Lines that grow blocks by realloc, for heaptrace's sampled fast path (tests/scenarios/pyframes.sh).

Both lines' blocks are resized in place or moved by CPython's realloc:
small strs (pymalloc, whose realloc calls its malloc and free when a
block moves) and bytearrays past 512 bytes (its realloc hands them to
libc's), from the main thread and from 4 threads at once.  Every block
is checked (exit 1 if one is not what was built).  argv: [tm]: with
"tm", tracemalloc's in-use per line of this file at the end (run it
with -X tracemalloc=1), for the comparison.
"""
import os
import sys
import threading

keep = []
bad = []


def strs(n, base):
    out = []
    for i in range(n):
        s = "%d" % (base + i)
        for _ in range(40):
            s += "abcdefgh"  # @strs: 30,000 strs grown to 320-odd chars
        out.append(s)
    if any(s != "%d" % (base + i) + "abcdefgh" * 40 for i, s in enumerate(out)):
        bad.append("strs %d" % base)
    keep.append(out)


def arrays(n):
    out = []
    for _ in range(n):
        b = bytearray()
        for _ in range(64):
            b += b"0123456789" * 10  # @arrays: 2,000 bytearrays grown to 6,400 bytes
        out.append(b)
    if any(b != b"0123456789" * 640 for b in out):
        bad.append("arrays")
    keep.append(out)


strs(20000, 0)
ts = [threading.Thread(target=strs, args=(2500, 100000 * (k + 1))) for k in range(4)]
for t in ts:
    t.start()
for t in ts:
    t.join()
arrays(2000)
if bad:
    print("not as built:", bad, flush=True)
    os._exit(1)
if len(sys.argv) > 1:
    import pytm  # beside this file

    pytm.report(__file__)
os._exit(0)
