#!/usr/bin/env python3
"""The CPU time of ctest entries of a build that must stay untouched (another worktree's, read-only),
one entry at a time under `nice -n NICE` (default 19), with ctest's command, ENVIRONMENT, WORKING_DIRECTORY and
PASS/FAIL_REGULAR_EXPRESSION / SKIP_RETURN_CODE rules, but no ctest TIMEOUT (a wall-clock cap,
CAP seconds, default 1800) and every output moved out of the build: working folders and the
demos' --out / fixture files under OUT_ROOT, GLTENSOR_CACHE_DIR set to CACHE. Run the entries in
an order that puts fixtures' setup entries first. Used for other Mesa versions (bench/RESULTS.md:
Mesa 25 sections): source the other Mesa's env first. CPU = user + system of the entry's waited-for
processes (the test, xvfb-run and Xvfb, node...).

Usage: scripts/ctest_entries_cpu.py BUILD OUT_ROOT CACHE RESULTS.tsv [REF.tsv] -- ENTRY...
RESULTS.tsv (appended): name, pass/FAIL/TIMEOUT/skipped, CPU s, user s, system s, wall s, exit
code, REF CPU s (the second column of REF.tsv for that name, e.g. scripts/suite_cpu.sh's output),
UTC time at the end. OUT_ROOT/logs/NAME.log: the entry's command and output."""
import json, os, re, resource, subprocess, sys, time

args = sys.argv[1:]
sep = args.index('--')
build, root, cache, results = args[:4]
ref_file = args[4] if sep > 4 else None
names = args[sep + 1:]
build = os.path.abspath(build)
listing = subprocess.run(['ctest', '--test-dir', build, '--show-only=json-v1'], capture_output=True, check=True, text=True)
tests = {t['name']: t for t in json.loads(listing.stdout)['tests']}
ref = {}
if ref_file:
    for line in open(ref_file):
        c = line.rstrip('\n').split('\t')
        if len(c) >= 2:
            ref[c[0]] = c[1]
cap = float(os.environ.get('CAP', '1800'))
os.makedirs(os.path.join(root, 'logs'), exist_ok=True)


def moved(a):
    # Outputs the entries write into the build's tests folder (demo-*, install-test) go to root.
    a = a.replace(build + '/tests/demo-', root + '/demo-').replace(build + '/tests/install-test', root + '/install-test')
    return a.replace('-DWORK=' + build + '/tests/', '-DWORK=' + root + '/')


for name in names:
    t = tests[name]
    p = {q['name']: q['value'] for q in t.get('properties', [])}
    cmd = [moved(a) for a in t['command']]
    cwd = p.get('WORKING_DIRECTORY', build + '/tests').replace(build, root)
    os.makedirs(cwd, exist_ok=True)
    env = dict(os.environ)
    for e in p.get('ENVIRONMENT', []):
        k, v = e.split('=', 1)
        env[k] = cache if k == 'GLTENSOR_CACHE_DIR' else v
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.time()
    pr = subprocess.Popen(['nice', '-n', os.environ.get('NICE', '19')] + cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, start_new_session=True)
    timed_out = False
    try:
        out, _ = pr.communicate(timeout=cap)
    except subprocess.TimeoutExpired:
        os.killpg(pr.pid, 9)
        out, _ = pr.communicate()
        timed_out = True
    wall = time.time() - w0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    u, s = r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime
    text = out.decode('utf-8', 'replace')
    with open(os.path.join(root, 'logs', name + '.log'), 'w') as log:
        log.write(' '.join(cmd) + '\n' + text)
    rc = pr.returncode
    if timed_out:
        res = 'TIMEOUT'
    elif 'SKIP_RETURN_CODE' in p and rc == p['SKIP_RETURN_CODE']:
        res = 'skipped'
    else:
        # CMake's regular expressions: '.' crosses lines, '^' and '$' are the output's ends.
        ok = rc == 0
        if 'PASS_REGULAR_EXPRESSION' in p:
            ok = any(re.search(x, text, re.S) for x in p['PASS_REGULAR_EXPRESSION'])
        if any(re.search(x, text, re.S) for x in p.get('FAIL_REGULAR_EXPRESSION', [])):
            ok = False
        res = 'pass' if ok else 'FAIL'
    line = (f'{name}\t{res}\t{u + s:.1f}\t{u:.1f}\t{s:.1f}\t{wall:.0f}\t{rc}\t{ref.get(name, "")}\t'
            f'{time.strftime("%H:%M:%S", time.gmtime())}\n')
    with open(results, 'a') as f:
        f.write(line)
    sys.stdout.write(line)
    sys.stdout.flush()
