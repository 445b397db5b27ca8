#!/usr/bin/env python3
"""Each BPF program's deepest call chain of stack frames, from the objects.

The verifier (check_max_stack_depth) adds up, along every chain of
bpf-to-bpf calls from a program's entry, each function's stack depth
rounded up to 32 bytes, and refuses the program when a chain passes 512
(MAX_BPF_STACK) unless the kernel gives it a private stack, which few do.
A callback handed to bpf_loop() or bpf_for_each_map_elem() counts as
called from the frame that names it.  That refusal is only seen when a
program is loaded on a kernel, so this reads the same sums from the
objects: a function's depth is the deepest stack byte its instructions
reach from r10, as the verifier measures it (an upper bound of it: every
path, including those the verifier prunes).

Usage: bpf_stack.py [--budget N] [--warn N] [--round 16|32] [--frames] OBJECT...
Prints, per program, "NAME TOTAL = FRAME BYTES > FRAME BYTES ...", and
under a chain over the budget the one the verifier's message would name
(it stops at the first chain over, in call order, not the deepest);
exits 1 when a chain passes the budget (default 512), naming it on
stderr, 2 when an object cannot be read.  --warn N names the chains over
N as warnings (exit status unchanged); --round 16 counts frames as newer
kernels do under the JIT; --frames lists each function's own depth too.
"""
import argparse
import struct
import sys

SHF_EXECINSTR = 0x4
SHT_SYMTAB, SHT_RELA, SHT_REL = 2, 4, 9
STT_FUNC, STT_SECTION = 2, 3
EM_BPF = 247
BPF_PSEUDO_CALL = 1
FP = 10  # r10, the read-only frame pointer


class Error(Exception):
    pass


class Object:
    """The parts of a relocatable BPF ELF object that calls and stacks need."""

    def __init__(self, path):
        self.path = path
        try:
            with open(path, 'rb') as f:
                data = f.read()
        except OSError as e:
            raise Error(f'{path}: {e.strerror}')
        if data[:4] != b'\x7fELF' or data[4] != 2:
            raise Error(f'{path}: not a 64-bit ELF object')
        self.e = '<' if data[5] == 1 else '>'
        self.data = data
        if struct.unpack_from(self.e + 'H', data, 0x12)[0] != EM_BPF:
            raise Error(f'{path}: not a BPF object')
        (shoff,) = struct.unpack_from(self.e + 'Q', data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from(self.e + 'HHH', data, 0x3a)
        self.sections = []
        for i in range(shnum):
            name, typ, flags, _, off, size, link, info, _, entsize = struct.unpack_from(
                self.e + 'IIQQQQIIQQ', data, shoff + i * shentsize)
            self.sections.append(dict(name=name, type=typ, flags=flags, off=off, size=size,
                                      link=link, info=info, entsize=entsize))
        strtab = self.sections[shstrndx]
        for s in self.sections:
            s['name'] = self.cstr(strtab['off'] + s['name'])
        symtabs = [s for s in self.sections if s['type'] == SHT_SYMTAB]
        if not symtabs:
            raise Error(f'{path}: no symbol table')
        self.symbols = self.read_symbols(symtabs[0])
        # relocations by (section index, byte offset): the symbol they name
        self.relocs = {}
        for s in self.sections:
            if s['type'] not in (SHT_REL, SHT_RELA):
                continue
            step = 24 if s['type'] == SHT_RELA else 16
            for off in range(s['off'], s['off'] + s['size'], step):
                r_off, r_info = struct.unpack_from(self.e + 'QQ', data, off)
                self.relocs[(s['info'], r_off)] = self.symbols[r_info >> 32]

    def cstr(self, off):
        return self.data[off:self.data.index(b'\0', off)].decode()

    def read_symbols(self, symtab):
        names = self.sections[symtab['link']]['off']
        out = []
        for off in range(symtab['off'], symtab['off'] + symtab['size'], 24):
            name, info, _, shndx, value, size = struct.unpack_from(self.e + 'IBBHQQ', self.data, off)
            out.append(dict(name=self.cstr(names + name), type=info & 0xf, shndx=shndx,
                            value=value, size=size))
        return out

    def insns(self, shndx, start, end):
        """(index, code, dst, src, off, imm) of the section's instructions start..end (indices)."""
        base = self.sections[shndx]['off']
        for i in range(start, end):
            code, regs, off, imm = struct.unpack_from(self.e + 'BBhi', self.data, base + i * 8)
            dst, src = (regs & 0xf, regs >> 4) if self.e == '<' else (regs >> 4, regs & 0xf)
            yield i, code, dst, src, off, imm


class Function:
    def __init__(self, obj, sym):
        self.obj, self.name, self.shndx = obj, sym['name'], sym['shndx']
        if sym['value'] % 8 or sym['size'] % 8:
            raise Error(f'{obj.path}: {self.name} is not on instruction boundaries')
        self.start, self.end = sym['value'] // 8, (sym['value'] + sym['size']) // 8
        self.callees = []  # (instruction index, target section, target index)
        self.depth = 0


def is_ld_imm64(code):
    return code == 0x18


def analyse(fn):
    """fn.depth: the deepest byte below r10 any of its instructions reaches;
    fn.callees: its bpf-to-bpf calls and the functions it takes the address of."""
    obj, sec = fn.obj, fn.shndx
    insns = list(obj.insns(sec, fn.start, fn.end))
    at = {i: k for k, (i, *_rest) in enumerate(insns)}
    text = {s['name']: n for n, s in enumerate(obj.sections)}.get('.text')
    for i, code, dst, src, off, imm in insns:
        reloc = obj.relocs.get((sec, i * 8))
        if code == 0x85 and src == BPF_PSEUDO_CALL:
            if reloc and reloc['shndx'] == 0:
                continue  # an extern: a kfunc (libbpf makes it one), which runs on the kernel's stack
            if reloc:  # libbpf: a call's target is its symbol's offset, plus imm + 1 instructions
                fn.callees.append((i, reloc['shndx'], reloc['value'] // 8 + imm + 1))
            else:      # within the section, relative to the call
                fn.callees.append((i, sec, i + imm + 1))
        elif is_ld_imm64(code) and reloc and reloc['shndx'] == text and reloc['type'] in (STT_FUNC, STT_SECTION):
            # a function's address (BPF_PSEUDO_FUNC once libbpf relocates it): a callback
            fn.callees.append((i, text, (reloc['value'] + imm) // 8))

    # Which registers hold r10 plus a constant, through the function's
    # control flow: a set of offsets per register, merged at joins, so that
    # an address taken before a branch and used after it counts.  Offsets
    # more than 4 KiB below r10 are dropped (no frame is near that: clang
    # refuses 512), which keeps the sets finite and the walk ending.
    deepest = 0
    if not insns:
        return
    entry = tuple(frozenset([0]) if r == FP else frozenset() for r in range(11))
    state = {0: entry}
    work = [0]

    def reach(k, regs):
        if k >= len(insns):
            return
        old = state.get(k)
        new = regs if old is None else tuple(a | b for a, b in zip(old, regs))
        if new != old:
            state[k] = new
            work.append(k)

    while work:
        k = work.pop()
        regs = list(state[k])
        i, code, dst, src, off, imm = insns[k]
        cls, op = code & 7, code & 0xf0
        succ = [k + 1]
        if cls in (1, 2, 3):  # LDX, ST, STX: base register is src for loads, dst for stores
            base = src if cls == 1 else dst
            for o in regs[base]:
                deepest = min(deepest, o + off)
            if cls == 1:
                regs[dst] = frozenset()
            elif cls == 3 and code & 0xe0 == 0xc0:  # atomic: a fetch writes src (r0 for cmpxchg)
                regs[src] = regs[0] = frozenset()
        elif cls == 7:  # ALU64
            if op == 0xb0 and code & 8:      # rD = rS
                regs[dst] = regs[src]
            elif op in (0x00, 0x10) and not code & 8:  # rD += K, rD -= K
                d = imm if op == 0x00 else -imm
                regs[dst] = frozenset(o + d for o in regs[dst])
            else:
                regs[dst] = frozenset()
            for o in regs[dst]:  # taking an address counts: it is handed to a helper or a callee
                deepest = min(deepest, o)
        elif cls == 4:  # 32-bit ALU: never a pointer
            regs[dst] = frozenset()
        elif cls == 0:
            if is_ld_imm64(code):
                regs[dst] = frozenset()
                succ = [k + 2]
            else:  # the legacy packet loads: calls underneath, r0-r5 clobbered
                for r in range(6):
                    regs[r] = frozenset()
        elif cls in (5, 6):
            if op == 0x80:    # call: r0-r5 clobbered
                for r in range(6):
                    regs[r] = frozenset()
            elif op == 0x90:  # exit
                succ = []
            elif op == 0x00:  # ja
                succ = [at.get(i + off + 1, len(insns))]
            else:
                succ = [k + 1, at.get(i + off + 1, len(insns))]
        regs = tuple(frozenset(o for o in r if -4096 < o <= 0) for r in regs)
        for s in succ:
            reach(s, regs)
    fn.depth = -(deepest // 8) * 8  # newer verifiers count whole 8-byte slots; no sum changes


def functions(obj):
    out = {}
    for sym in obj.symbols:
        if sym['type'] != STT_FUNC or not 0 < sym['shndx'] < len(obj.sections):
            continue
        if not obj.sections[sym['shndx']]['flags'] & SHF_EXECINSTR:
            continue
        fn = Function(obj, sym)
        analyse(fn)
        out[(fn.shndx, fn.start)] = fn
    return out


def frame_bytes(depth, step):
    """What the verifier adds for a frame of DEPTH bytes: 6.1 rounds up to 32
    and counts an empty frame as 32; newer kernels round up to 16 under the
    JIT (an empty frame is 0), which only makes a sum smaller."""
    if step == 32:
        depth = max(depth, 1)
    return -(-depth // step) * step


def callees(obj, fns, fn):
    for i, shndx, target in fn.callees:
        callee = fns.get((shndx, target))
        if callee is None:
            raise Error(f'{obj.path}: {fn.name}: instruction {i - fn.start} calls no function\'s start')
        yield callee


def first_over(obj, fns, fn, step, budget):
    """The chain the verifier's message counts: its walk goes through the
    calls in instruction order and stops at the first chain over the budget
    (so "combined stack size of N calls is X" need not be the deepest)."""
    def walk(f, chain, total):
        chain, total = chain + [f], total + frame_bytes(f.depth, step)
        if total > budget:
            return chain, total
        for callee in callees(obj, fns, f):
            found = walk(callee, chain, total)
            if found:
                return found
        return None
    return walk(fn, [], 0)


def chains(obj, fns, step):
    """Per program (a function outside .text), its deepest chain: [(Function, rounded bytes)]."""
    memo, onpath = {}, set()

    def deepest(fn):
        if fn in memo:
            return memo[fn]
        if fn in onpath:
            raise Error(f'{obj.path}: {fn.name} calls itself through a chain (the verifier refuses recursion)')
        onpath.add(fn)
        own = (fn, frame_bytes(fn.depth, step))
        best = []
        for callee in callees(obj, fns, fn):
            c = deepest(callee)
            # of two as deep, the shorter: fewer frames to shrink
            if (sum(b for _, b in c), -len(c)) > (sum(b for _, b in best), -len(best)):
                best = c
        onpath.discard(fn)
        memo[fn] = [own] + best
        return memo[fn]

    out = []
    for fn in sorted(fns.values(), key=lambda f: (f.shndx, f.start)):
        if obj.sections[fn.shndx]['name'] != '.text':
            out.append(deepest(fn))
    return out


def main():
    ap = argparse.ArgumentParser(description='Each BPF program\'s deepest call chain of stack frames.')
    ap.add_argument('--budget', type=int, default=512, help='fail above this many bytes (default 512)')
    ap.add_argument('--warn', type=int, help='name the chains above this many bytes as warnings')
    ap.add_argument('--round', type=int, choices=(16, 32), default=32,
                    help='a frame\'s granularity: 32 as 6.1 (default), 16 as newer kernels under the JIT')
    ap.add_argument('--frames', action='store_true', help='list each function\'s own stack depth too')
    ap.add_argument('objects', nargs='+', help='OBJECT, or OBJECT:PROG,... to check only the programs loaded from it')
    args = ap.parse_args()
    over, warned = [], []
    for spec in args.objects:
        # OBJECT:PROG,PROG: only those programs are loaded from it (heaptrace_uprobes.bpf.o's uprobe programs)
        path, _, only = spec.partition(':')
        try:
            obj = Object(path)
            fns = functions(obj)
            found = [c for c in chains(obj, fns, args.round) if not only or c[0][0].name in only.split(',')]
        except Error as e:
            print(f'bpf_stack: {e}', file=sys.stderr)
            return 2
        print(f'{path}:')
        if args.frames:
            for fn in sorted(fns.values(), key=lambda f: f.name):
                print(f'  frame {fn.name} {fn.depth}')
        for chain in found:
            total = sum(b for _, b in chain)
            line = f'{chain[0][0].name} {total} = ' + ' > '.join(f'{f.name} {b}' for f, b in chain)
            if total > args.budget:
                over.append(f'{path}: {line}')
                print(f'  {line}  (over {args.budget})')
                first, at = first_over(obj, fns, chain[0][0], args.round, args.budget)
                print(f'    the verifier stops at: combined stack size of {len(first)} calls is {at}'
                      f' ({" > ".join(f.name for f in first)})')
            elif args.warn is not None and total > args.warn:
                warned.append(f'{path}: {line}')
                print(f'  {line}  (over {args.warn})')
            else:
                print(f'  {line}')
    sys.stdout.flush()
    for line in warned:
        print(f'bpf_stack: warning: over {args.warn} bytes: {line}', file=sys.stderr)
    for line in over:
        print(f'bpf_stack: over the {args.budget}-byte stack: {line}', file=sys.stderr)
    return 1 if over else 0


if __name__ == '__main__':
    sys.exit(main())
