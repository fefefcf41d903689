// Minimal NumPy .npy (format 1.0/2.0, little-endian, C order) reader and writer for the ONNX
// Runtime reference runner: float32, float64 (read as float32), int32, int64, uint8, bool.
'use strict';
const fs = require('fs');

const TYPES = {
  '<f4': {ctor: Float32Array, ort: 'float32'},
  '<i4': {ctor: Int32Array, ort: 'int32'},
  '<i8': {ctor: BigInt64Array, ort: 'int64'},
  '|u1': {ctor: Uint8Array, ort: 'uint8'},
  '|b1': {ctor: Uint8Array, ort: 'bool'},
};

function read(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(file + ': not a .npy file');
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const hstart = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', hstart, hstart + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(file + ': Fortran order is not supported');
  const shapeText = /'shape':\s*\(([^)]*)\)/.exec(header)[1];
  const shape = shapeText.split(',').map((s) => s.trim()).filter((s) => s.length).map(Number);
  const n = shape.reduce((a, b) => a * b, 1);
  const off = hstart + hlen;
  const body = buf.buffer.slice(buf.byteOffset + off, buf.byteOffset + buf.length);
  if (descr === '<f8') {
    const d = new Float64Array(body, 0, n);
    return {data: Float32Array.from(d), shape, ortType: 'float32'};
  }
  const t = TYPES[descr];
  if (!t) throw new Error(file + ': dtype ' + descr + ' is not supported');
  const data = new t.ctor(body.slice(0, n * t.ctor.BYTES_PER_ELEMENT));
  return {data: t.ort === 'bool' ? Uint8Array.from(data, (v) => (v ? 1 : 0)) : data, shape, ortType: t.ort};
}

function descrOf(data) {
  if (data instanceof Float32Array) return '<f4';
  if (data instanceof Int32Array) return '<i4';
  if (data instanceof BigInt64Array) return '<i8';
  if (data instanceof Uint8Array) return '|u1';
  throw new Error('cannot write this array type to .npy');
}

function write(file, data, shape) {
  const shapeText = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  let header = `{'descr': '${descrOf(data)}', 'fortran_order': False, 'shape': ${shapeText}, }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'),
                                        Buffer.from(data.buffer, data.byteOffset, data.byteLength)]));
}

module.exports = {read, write};
