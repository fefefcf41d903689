#!/usr/bin/env node
// node compare.js GOT.npy WANT.npy [atol] [rtol]: prints the max absolute difference, the worst
// element and the count outside atol + rtol * |want|; exit status 1 if any.
'use strict';
const npy = require('./npy.js');
const [gotFile, wantFile, atolArg, rtolArg] = process.argv.slice(2);
const got = npy.read(gotFile), want = npy.read(wantFile);
const atol = Number(atolArg || 1e-4), rtol = Number(rtolArg || 1e-3);
if (got.shape.join('x') !== want.shape.join('x')) {
  console.log(`shape ${got.shape} vs ${want.shape}`);
  process.exit(1);
}
let maxAbs = 0, worst = -1, bad = 0;
for (let i = 0; i < want.data.length; ++i) {
  const g = Number(got.data[i]), w = Number(want.data[i]);
  const d = Math.abs(g - w);
  if (!(d <= atol + rtol * Math.abs(w))) ++bad;
  if (d > maxAbs || Number.isNaN(d)) { maxAbs = d; worst = i; }
}
console.log(JSON.stringify({n: want.data.length, max_abs: maxAbs, worst, got: worst >= 0 ? Number(got.data[worst]) : null,
                            want: worst >= 0 ? Number(want.data[worst]) : null, outside: bad}));
process.exit(bad ? 1 : 0);
