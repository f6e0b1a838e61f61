// Bundles the command (cli/main.ts) into dist/bin/: `tsc` leaves ~200 files of
// ours and ~180 of our dependencies for a `turnloom run` to load one by one,
// and their loading was most of its start (0.93 s to the first model request
// here, 0.62–0.79 s bundled). Each command stays a chunk of its own, loaded
// when it runs. The library (`exports`) stays tsc's output, unbundled.
import { cpSync, readFileSync } from 'node:fs';
import { build } from 'esbuild';

const root = new URL('..', import.meta.url);
const manifest = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'));

await build({
  absWorkingDir: new URL('.', root).pathname,
  entryPoints: { turnloom: 'cli/main.ts' },
  outdir: 'dist/bin',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  // Packages with ESM builds (jsonc-parser's UMD one requires its files by computed paths).
  mainFields: ['module', 'main'],
  external: [
    // Optional peers stay the user's to install and to choose the version of (a provider's SDK, OpenTelemetry's).
    ...Object.keys(manifest.peerDependencies ?? {}),
    // Native addons, found beside their package's files at run time.
    'lmdb',
    'msgpackr',
    'msgpackr-extract',
  ],
  // What bundled CommonJS packages `require` (node built-ins) needs a `require` in an ES module.
  banner: { js: "import { createRequire as __turnloomRequire } from 'node:module'; const require = __turnloomRequire(import.meta.url);" },
  logLevel: 'warning',
  // Whitespace and syntax only: names stay, so a stack trace still reads (in a checkout, `node --enable-source-maps` maps it
  // to the sources, at ~80 ms a start, so not by default; a package leaves the maps out); less to read and compile at each start.
  minifyWhitespace: true,
  minifySyntax: true,
});

// The inspector's page is read from beside the module that serves it, which is now a chunk here.
cpSync(new URL('inspector/page', root), new URL('dist/bin/page', root), { recursive: true });
