// Oracle for oracle_test.go: reads JSON lines {"pattern", "texts"} on stdin
// and writes each back with what JavaScript's RegExp with the u flag says:
// "syntax" (the SyntaxError message, or null) and "results" (test() per
// text). Run by `go test -run TestOracle -update` (needs node on PATH).
const rl = require('readline').createInterface({ input: process.stdin });
const out = [];
rl.on('line', (line) => {
  const c = JSON.parse(line);
  try {
    const re = new RegExp(c.pattern, 'u');
    c.syntax = null;
    c.results = c.texts.map((t) => re.test(t));
  } catch (e) {
    c.syntax = e.message;
  }
  out.push(JSON.stringify(c));
});
rl.on('close', () => process.stdout.write(out.join('\n') + '\n'));
