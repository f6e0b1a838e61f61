// @ts-check
/**
 * A unified diff drawn for reading: one block per file under a header with
 * its path and counts, hunks with the old and new line numbers, added and
 * removed lines coloured. Patches come from the model's work: every line is
 * set as text, never parsed as markup.
 */
import { h } from './dom.js';

/**
 * @typedef {{ kind: 'add' | 'del' | 'ctx' | 'hunk' | 'note', text: string, old: number | null, new: number | null }} DiffLine
 * @typedef {{ path: string, notes: string[], lines: DiffLine[], additions: number, deletions: number }} DiffFile
 */

/** Git's own lines about a file that say nothing a reader needs: its blob ids and the two names the header already shows. */
const PLUMBING = /^(index |--- |\+\+\+ )/;

/** Git quotes a name with unusual characters C-style, close enough to JSON for the common escapes. @param {string} name */
function unquote(name) {
  if (!(name.length > 1 && name.startsWith('"') && name.endsWith('"'))) return name;
  try {
    return String(JSON.parse(name));
  } catch {
    return name.slice(1, -1);
  }
}

/** `a/src/x.js` → `src/x.js`; `/dev/null` stays as it is. @param {string} name */
const stripSide = (name) => (name.startsWith('a/') || name.startsWith('b/') ? name.slice(2) : name);

/**
 * Splits a unified diff into files. A file starts at `diff --git` (a
 * checkpoint's patch), or at the `---`/`+++` pair an approval's preview of
 * one file begins with.
 * @param {string} patch
 * @returns {DiffFile[]}
 */
export function parsePatch(patch) {
  /** @type {DiffFile[]} */
  const files = [];
  let inHunk = false;
  let oldLine = 0;
  let newLine = 0;
  const lines = patch.split('\n');
  if (lines.at(-1) === '') lines.pop();
  /** @param {string} path @returns {DiffFile} */
  const start = (path) => {
    const file = { path, notes: [], lines: [], additions: 0, deletions: 0 };
    files.push(file);
    inHunk = false;
    return file;
  };
  lines.forEach((line, index) => {
    // A name git had to quote does not match: the `+++` line below names the file then.
    if (line.startsWith('diff --git ')) return void start(/^diff --git a\/(.*) b\/(.*)$/.exec(line)?.[2] ?? '');
    const next = lines[index + 1] ?? '';
    if (files.length === 0 && line.startsWith('--- ') && next.startsWith('+++ ')) {
      const after = stripSide(next.slice(4).trim());
      return void start(after === '/dev/null' ? stripSide(line.slice(4).trim()) : after);
    }
    const current = files.at(-1) ?? start('');
    const hunk = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (hunk) {
      inHunk = true;
      oldLine = Number(hunk[1]);
      newLine = Number(hunk[2]);
      current.lines.push({ kind: 'hunk', text: line, old: null, new: null });
    } else if (inHunk && line.startsWith('+')) {
      current.additions += 1;
      current.lines.push({ kind: 'add', text: line.slice(1), old: null, new: newLine++ });
    } else if (inHunk && line.startsWith('-')) {
      current.deletions += 1;
      current.lines.push({ kind: 'del', text: line.slice(1), old: oldLine++, new: null });
    } else if (inHunk && line.startsWith(' ')) {
      current.lines.push({ kind: 'ctx', text: line.slice(1), old: oldLine++, new: newLine++ });
    } else if (inHunk) {
      // `\ No newline at end of file`, or the note a cut patch ends with.
      current.lines.push({ kind: 'note', text: line, old: null, new: null });
    } else if (!PLUMBING.test(line)) {
      current.notes.push(line);
    } else if (current.path === '' && !line.startsWith('index ')) {
      const name = stripSide(unquote(line.slice(4).trim()));
      if (name !== '/dev/null') current.path = name;
    }
  });
  return files;
}

/** `+3 −1`, coloured. @param {number} additions @param {number} deletions */
export function diffStat(additions, deletions) {
  return h('span', { class: 'diff-stat' }, h('span', { class: 'diff-add' }, `+${additions}`), ' ', h('span', { class: 'diff-del' }, `−${deletions}`));
}

const marks = /** @type {const} */ ({ add: '+', del: '−', ctx: ' ', hunk: '', note: '' });

/**
 * The whole patch, file after file.
 * @param {string} patch
 * @param {{ testid?: string }} [options]
 */
export function renderPatch(patch, options = {}) {
  const files = parsePatch(patch);
  const root = h('div', { class: 'diff', 'data-testid': options.testid ?? 'diff' });
  if (files.length === 0) root.append(h('div', { class: 'empty' }, 'No changes.'));
  for (const file of files) {
    const body = h('div', { class: 'diff-body' });
    for (const line of file.lines) {
      body.append(h('div', { class: `diff-line ${line.kind}`, 'data-kind': line.kind },
        h('span', { class: 'ln' }, line.old ?? ''),
        h('span', { class: 'ln' }, line.new ?? ''),
        h('span', { class: 'mark' }, marks[line.kind]),
        h('span', { class: 'code' }, line.text)));
    }
    root.append(h('section', { class: 'diff-file', 'data-path': file.path },
      h('div', { class: 'diff-file-head' }, h('span', { class: 'path' }, file.path || '(patch)'), diffStat(file.additions, file.deletions),
        ...file.notes.map((note) => h('span', { class: 'diff-note' }, note))),
      body));
  }
  return root;
}
