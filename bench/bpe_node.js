// The JavaScript side of bench_tokenizer: encodes a file line by line (the package's encode()
// grows its result by concatenation, quadratic in one call's length) with the gpt-3-encoder
// package, one pass with its cache empty and then the best of `passes` more, on one core (Node
// is single-threaded). Prints "cold MB/s warm MB/s tokens".
// Usage: node bpe_node.js PACKAGE_DIR FILE PASSES
const fs = require('fs');
const path = require('path');
const { encode } = require(path.resolve(process.argv[2], 'Encoder.js'));
const text = fs.readFileSync(process.argv[3], 'utf8');
const mb = Buffer.byteLength(text) / 1e6;
const lines = text.match(/[^\n]*\n|[^\n]+$/g);
const time = () => {
  const t = process.hrtime.bigint();
  let n = 0;
  for (const line of lines) n += encode(line).length;
  return [Number(process.hrtime.bigint() - t) / 1e9, n];
};
const [cold, tokens] = time();
let warm = Infinity;
for (let i = 0; i < Number(process.argv[4]); i++) warm = Math.min(warm, time()[0]);
console.log(`${mb / cold} ${mb / warm} ${tokens}`);
