#!/usr/bin/env python3
"""Summaries of NVIDIA program binaries in gltensor's program cache (GLTENSOR_CACHE_DIR/*.bin).

Each cache file: 8-byte magic, u64 hash, u32 format, u32 size, then glGetProgramBinary's blob. NVIDIA's
blob holds the driver's assembly as text (!!NVcp5.0 ...). Per binary: its size, the text's length,
instructions, the opcode histogram (the most common), shared memory, TEMP / local-memory ('lmem')
declarations and uses, and the lines that mention them. Usage: nvasm.py DIR [DIR...] [--dump OUTDIR]
"""
import collections, os, re, sys

def texts(blob):
    out = []
    for m in re.finditer(rb'!!NV[a-z]+[0-9.]+', blob):
        end = blob.find(b'\0', m.start())
        out.append(blob[m.start():end if end > 0 else len(blob)].decode('latin-1'))
    return out

def summary(name, blob):
    ts = texts(blob)
    print(f'== {name}: blob {len(blob)} bytes, {len(ts)} assembly text(s)')
    for t in ts:
        lines = t.splitlines()
        ops = collections.Counter()
        for ln in lines:
            s = ln.strip()
            if not s or s.startswith('#') or s.startswith('!!') or s.endswith(':'):
                continue
            tok = s.split()[0].rstrip(';')
            if tok in ('TEMP', 'SHARED', 'PARAM', 'OUTPUT', 'ATTRIB', 'STORAGE', 'BUFFER', 'BUFFER4', 'LONG', 'INT', 'UINT', 'CBUFFER', 'SHARED_MEMORY', 'GROUP_SIZE', 'OPTION', 'END', 'main:'):
                continue
            ops[tok.split('.')[0]] += 1
        n = sum(ops.values())
        print(f'  {lines[0][:60]} ... {len(lines)} lines, {n} instructions')
        for ln in lines:
            if re.match(r'\s*(SHARED_MEMORY|GROUP_SIZE|TEMP lmem|LONG TEMP lmem|INT TEMP lmem)', ln):
                print('  ', ln.strip()[:160])
        temps = [ln for ln in lines if re.match(r'\s*(LONG |INT |UINT |)TEMP ', ln)]
        regs = sum(len(re.findall(r'\bR\d+\b', ln)) for ln in temps)
        print(f'  TEMP lines {len(temps)}, R registers declared {regs}')
        lm = [ln for ln in lines if 'lmem' in ln]
        print(f'  lines with lmem: {len(lm)}')
        for ln in lm[:6]:
            print('    ', ln.strip()[:140])
        print('  ops:', ', '.join(f'{k} {v}' for k, v in ops.most_common(28)))

def main():
    args = sys.argv[1:]
    dump = None
    if '--dump' in args:
        i = args.index('--dump')
        dump = args[i + 1]
        del args[i:i + 2]
    for d in args:
        files = sorted((f for f in os.listdir(d) if f.endswith('.bin')), key=lambda f: -os.path.getsize(os.path.join(d, f)))
        print(f'### {d}: {len(files)} binaries')
        for f in files:
            data = open(os.path.join(d, f), 'rb').read()
            blob = data[24:]
            ts = texts(blob)
            big = max((len(t) for t in ts), default=0)
            if big < 20000:  # small kernels: one line
                print(f'== {f}: blob {len(blob)}, text {big}')
                continue
            summary(f, blob)
            if dump:
                os.makedirs(dump, exist_ok=True)
                with open(os.path.join(dump, os.path.basename(d.rstrip('/')) + '-' + f[:-4] + '.txt'), 'w') as o:
                    o.write('\n\n'.join(ts))

main()
