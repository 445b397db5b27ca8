# Target of scenario pyframes (--follow-fork): a multiprocessing pool of 2
# forked workers, each making 5 bytearray(200000) at its line marked
# "@child" (10 x 200,001 bytes of buffer in all), then the parent 10
# bytearray(100000) at "@parent" (10 x (100,001 + 56 of object)).
import multiprocessing as mp
def child_work(n):
    keep = [None] * n
    for i in range(n):
        keep[i] = bytearray(200000)   # @child
    return n
if __name__ == "__main__":
    mp.set_start_method("fork")
    with mp.Pool(2) as p:
        print(sum(p.map(child_work, [5, 5])))
    parent = [None] * 10
    for i in range(10):
        parent[i] = bytearray(100000)   # @parent
    print("done", flush=True)
