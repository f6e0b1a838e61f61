// Prints "N passed, N failed" from vitest's JSON report. Skipped and todo tests
// count as failed, and so does a test file that failed to load: nothing hides in a green run.
import { existsSync, readFileSync } from 'node:fs';

const [path, status] = process.argv.slice(2);
if (!existsSync(path)) {
  console.log('no test report was written');
  console.log('0 passed, 1 failed');
  process.exit(1);
}
const report = JSON.parse(readFileSync(path, 'utf8'));
const brokenFiles = report.testResults.filter((file) => file.status === 'failed' && file.assertionResults.every((t) => t.status !== 'failed'));
const hidden = report.numPendingTests + report.numTodoTests;
if (hidden > 0) console.log(`${hidden} skipped or todo tests count as failed`);
for (const file of brokenFiles) console.log(`test file failed outside any test: ${file.name}\n${file.message ?? ''}`);
const passed = report.numPassedTests;
const failed = report.numFailedTests + hidden + brokenFiles.length + (Number(status) !== 0 && report.numFailedTests + brokenFiles.length === 0 ? 1 : 0);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
