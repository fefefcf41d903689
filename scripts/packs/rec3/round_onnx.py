#!/usr/bin/env python3
"""Rounds every float32 weight of an ONNX file (initializers and Constant nodes' tensors, raw_data)
to BITS significant bits, in place of the bytes (same lengths: no re-encoding), so that xz packs the
file smaller. Same graph and shapes (timings hold); the outputs are near, not equal, to the model's."""
import sys, array

def varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1
        v |= (c & 0x7f) << s; s += 7
        if c < 0x80: return v, i

def fields(b, lo, hi):
    i = lo
    while i < hi:
        key, i = varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0: _, i = varint(b, i); continue
        if wt == 1: i += 8; continue
        if wt == 5: i += 4; continue
        if wt == 2:
            n, i = varint(b, i)
            yield f, i, i + n
            i += n
            continue
        raise ValueError(f"wire type {wt}")

def round_tensor(buf, lo, hi, bits, stats):
    dtype = None; raw = None
    i = lo
    while i < hi:
        key, i = varint(buf, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
            if f == 2: dtype = v
        elif wt == 1: i += 8
        elif wt == 5: i += 4
        elif wt == 2:
            n, i = varint(buf, i)
            if f == 9: raw = (i, i + n)
            i += n
    if dtype == 1 and raw and (raw[1] - raw[0]) % 4 == 0:
        a = array.array('I', bytes(buf[raw[0]:raw[1]]))
        drop = 24 - bits
        half, mask = 1 << (drop - 1), (0xffffffff >> drop) << drop
        for k in range(len(a)):
            v = a[k]
            if (v & 0x7f800000) != 0x7f800000:  # finite: round to nearest (carries into the exponent)
                a[k] = (v + half) & mask
        buf[raw[0]:raw[1]] = a.tobytes()
        stats[0] += 1; stats[1] += len(a)

buf = bytearray(open(sys.argv[1], 'rb').read())
bits = int(sys.argv[3]) if len(sys.argv) > 3 else 11
stats = [0, 0]
for f, lo, hi in fields(buf, 0, len(buf)):
    if f == 7:  # graph
        for g, glo, ghi in fields(buf, lo, hi):
            if g == 5:  # initializer
                round_tensor(buf, glo, ghi, bits, stats)
            if g == 1:  # node: Constant's value attribute (Paddle2ONNX's weights)
                for n, nlo, nhi in fields(buf, glo, ghi):
                    if n == 5:
                        for a, alo, ahi in fields(buf, nlo, nhi):
                            if a == 5:
                                round_tensor(buf, alo, ahi, bits, stats)
open(sys.argv[2], 'wb').write(buf)
print(f"{sys.argv[1]}: {stats[0]} tensors, {stats[1]} floats rounded to {bits} significant bits")
