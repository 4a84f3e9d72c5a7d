// Render every formula given on stdin with KaTeX (throwOnError, strict), as derive's tests ask.
// Input: a JSON array of {"tex": "...", "display": true|false}. Output: a JSON array of the
// failures, {"tex", "error"}; exit code 1 when there is any. KaTeX comes from the project's
// package.json (npm ci), the same release derive vendors in derive/katex/.
const katex = require("katex");

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  const failures = [];
  for (const { tex, display } of JSON.parse(input)) {
    try {
      katex.renderToString(tex, { displayMode: display, throwOnError: true, strict: "error" });
    } catch (error) {
      failures.push({ tex, error: String(error.message || error) });
    }
  }
  process.stdout.write(JSON.stringify({ version: katex.version, failures }));
  process.exitCode = failures.length ? 1 : 0;
});
