"""Known allocations per line, for heaptrace's Python frames (tests/scenarios/pyframes.sh).

argv: ROUNDS [tm]: with "tm", tracemalloc's in-use per line of this file
at the end (run it with -X tracemalloc=1), for the comparison.
"""
import os
import sys
import threading

keep = []


def blob(n):
    return bytearray(n)  # @blob: ROUNDS x (n + 1) bytes, and the 56-byte object


class Holder:
    def grow(self, k):
        self.parts = [bytes(70000) for _ in range(k)]  # @grow: 30 x 70,000 and their headers


def worker(n):
    keep.append(bytearray(n))  # @worker: one a thread, 300,001 bytes


def main(rounds):
    for _ in range(rounds):
        keep.append(blob(100000))  # @main_blob
    h = Holder()
    h.grow(30)
    keep.append(h)
    keep.append(["%08d" % i * 40 for i in range(2000)])  # @strings: 2,000 strs of 320 chars
    ts = [threading.Thread(target=worker, args=(300000,)) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


main(int(sys.argv[1]) if len(sys.argv) > 1 else 50)
if len(sys.argv) > 2:
    import pytm  # beside this file

    pytm.report(__file__)
# What is live now is the profile's in-use: no teardown frees it.
os._exit(0)
