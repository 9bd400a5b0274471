// Oracle for TestFormatNumberOracle: reads lines of 16 hex digits (the bits
// of a float64, big-endian) and writes "<hex> <String(value)>" per line.
// Run by `go test -run TestFormatNumberOracle -update` (needs node).
const rl = require('readline').createInterface({ input: process.stdin });
const out = [];
rl.on('line', (line) => {
  const hex = line.trim();
  out.push(hex + ' ' + String(Buffer.from(hex, 'hex').readDoubleBE(0)));
});
rl.on('close', () => process.stdout.write(out.join('\n') + '\n'));
