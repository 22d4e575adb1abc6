// The reference: encodes every file of a folder (sorted by name) with the gpt-3-encoder package,
// decoding the bytes as Node does (WHATWG UTF-8, U+FFFD for invalid sequences; a leading BOM is
// kept, as fs.readFileSync(path, 'utf8') keeps it), and prints one
// JSON array of id arrays. Usage: node encode_with_node.js PACKAGE_DIR CORPUS_DIR
const fs = require('fs');
const path = require('path');
const { encode } = require(path.resolve(process.argv[2], 'Encoder.js'));
const dir = process.argv[3];
const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
const out = fs.readdirSync(dir).sort().map(f => encode(decoder.decode(fs.readFileSync(path.join(dir, f)))));
process.stdout.write(JSON.stringify(out));
