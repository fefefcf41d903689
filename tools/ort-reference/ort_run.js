#!/usr/bin/env node
// ONNX Runtime reference runner (CPU): runs MODEL.onnx on .npy inputs and writes .npy outputs.
//   node ort_run.js MODEL.onnx [--input NAME=FILE.npy]... [--shape NAME=1x3x64x64]...
//                   [--output-dir DIR] [--save-inputs DIR] [--bench N] [--threads N] [--seed S]
// Inputs without a file get uniform [0, 1) values of the given shape (float32); --save-inputs
// writes every input as DIR/<name>.npy (to feed the same values to gltensor-run). Outputs go to
// DIR/<name>.npy (characters outside [A-Za-z0-9._-] replaced by '_'). Prints one JSON line:
// {"load_ms", "run_ms" (first run), "bench_ms" (mean of N runs, if --bench), "outputs": {...}}.
// ONNX Runtime comes from npm onnxruntime-node (GLTENSOR_MODEL_CACHE/ort/node_modules, or
// ORT_NODE_MODULES, or the usual resolution).
'use strict';
const fs = require('fs');
const path = require('path');
const npy = require('./npy.js');

function loadOrt() {
  const root = path.resolve(__dirname, '../..');
  const dirs = [process.env.ORT_NODE_MODULES,
                path.join(process.env.GLTENSOR_MODEL_CACHE || path.join(root, '.cache'), 'ort', 'node_modules')];
  for (const d of dirs) {
    if (d && fs.existsSync(path.join(d, 'onnxruntime-node'))) return require(path.join(d, 'onnxruntime-node'));
  }
  return require('onnxruntime-node');
}

function parseArgs(argv) {
  const a = {model: null, inputs: {}, shapes: {}, outDir: null, saveInputs: null, bench: 0, threads: 0, seed: 1};
  for (let i = 0; i < argv.length; ++i) {
    const k = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(k + ' needs a value');
      return argv[++i];
    };
    const kv = (s) => {
      const j = s.indexOf('=');
      if (j < 0) throw new Error(k + ' expects NAME=VALUE, got ' + s);
      return [s.slice(0, j), s.slice(j + 1)];
    };
    if (k === '--input') { const [n, v] = kv(next()); a.inputs[n] = v; }
    else if (k === '--shape') { const [n, v] = kv(next()); a.shapes[n] = v.split('x').map(Number); }
    else if (k === '--output-dir') a.outDir = next();
    else if (k === '--save-inputs') a.saveInputs = next();
    else if (k === '--bench') a.bench = Number(next());
    else if (k === '--threads') a.threads = Number(next());
    else if (k === '--seed') a.seed = Number(next());
    else if (k.startsWith('--')) throw new Error('unknown option ' + k);
    else a.model = k;
  }
  if (!a.model) throw new Error('usage: ort_run.js MODEL.onnx [--input NAME=FILE.npy] [--shape NAME=AxBxC] ' +
                                '[--output-dir DIR] [--bench N] [--threads N]');
  return a;
}

// mulberry32: a small seeded generator, so that random inputs are repeatable.
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const ort = loadOrt();
  const opts = {graphOptimizationLevel: 'all'};
  if (a.threads > 0) opts.intraOpNumThreads = a.threads;
  const t0 = performance.now();
  const session = await ort.InferenceSession.create(a.model, opts);
  const loadMs = performance.now() - t0;
  const feeds = {};
  const random = rng(a.seed);
  for (const name of session.inputNames) {
    if (a.inputs[name]) {
      const arr = npy.read(a.inputs[name]);
      feeds[name] = new ort.Tensor(arr.ortType, arr.data, arr.shape);
    } else if (a.shapes[name]) {
      const shape = a.shapes[name];
      const n = shape.reduce((x, y) => x * y, 1);
      const d = new Float32Array(n);
      for (let i = 0; i < n; ++i) d[i] = random();
      feeds[name] = new ort.Tensor('float32', d, shape);
    } else {
      throw new Error('input ' + name + ' needs --input or --shape');
    }
  }
  if (a.saveInputs) {
    fs.mkdirSync(a.saveInputs, {recursive: true});
    for (const name of session.inputNames)
      npy.write(path.join(a.saveInputs, name.replace(/[^A-Za-z0-9._-]/g, '_') + '.npy'), feeds[name].data,
                feeds[name].dims);
  }
  const t1 = performance.now();
  let out = await session.run(feeds);
  const runMs = performance.now() - t1;
  let benchMs;
  if (a.bench > 0) {
    const t2 = performance.now();
    for (let i = 0; i < a.bench; ++i) out = await session.run(feeds);
    benchMs = (performance.now() - t2) / a.bench;
  }
  const summary = {};
  for (const name of session.outputNames) {
    const t = out[name];
    summary[name] = {shape: t.dims, type: t.type};
    if (a.outDir) {
      fs.mkdirSync(a.outDir, {recursive: true});
      npy.write(path.join(a.outDir, name.replace(/[^A-Za-z0-9._-]/g, '_') + '.npy'), t.data, t.dims);
    }
  }
  console.log(JSON.stringify({load_ms: loadMs, run_ms: runMs, bench_ms: benchMs, outputs: summary}));
}

main().catch((e) => {
  console.error('ort_run.js: ' + (e && e.message ? e.message : e));
  process.exit(1);
});
