import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { ScriptInput } from '../../adapters/providers/scriptedProvider.ts';

/**
 * The seed scenario's workspace: a small project whose login has a real race
 * (two logins of one user both pass the "already logged in?" check while the
 * first is still waiting for its token) and a test that catches it.
 */
const buggySession = `const sessions = new Map();
let issued = 0;

async function issueToken(user) {
  await new Promise((resolve) => setTimeout(resolve, 10));
  issued += 1;
  return \`\${user}-\${issued}\`;
}

export async function login(user) {
  if (sessions.has(user)) return sessions.get(user);
  const token = await issueToken(user);
  sessions.set(user, token);
  return token;
}

export const tokensIssued = () => issued;
`;

const loginTest = `import assert from 'node:assert/strict';
import { test } from 'node:test';
import { login, tokensIssued } from '../src/session.js';

test('two logins of one user at once share one session', async () => {
  const [first, second] = await Promise.all([login('ada'), login('ada')]);
  assert.equal(first, second);
  assert.equal(tokensIssued(), 1);
});
`;

const racyLines = `export async function login(user) {
  if (sessions.has(user)) return sessions.get(user);
  const token = await issueToken(user);
  sessions.set(user, token);
  return token;
}`;

const fixedLines = `const pending = new Map();

// A login already under way is shared, so a second one cannot slip in while the first waits for its token.
export function login(user) {
  if (sessions.has(user)) return Promise.resolve(sessions.get(user));
  if (!pending.has(user)) {
    const token = issueToken(user).then((value) => {
      sessions.set(user, value);
      return value;
    }).finally(() => pending.delete(user));
    pending.set(user, token);
  }
  return pending.get(user);
}`;

export const demoPrompt = 'Fix the login race and run the tests.';

/** Writes the project into `dir` and commits it, so its checkpoints have a base. */
export function writeLoginRaceProject(dir: string): void {
  const files: Record<string, string> = {
    'package.json': `${JSON.stringify({ name: 'login-demo', private: true, type: 'module', scripts: { test: 'node --test' } }, null, 2)}\n`,
    'src/session.js': buggySession,
    'test/login.test.js': loginTest,
    '.gitignore': 'node_modules/\n',
  };
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  const git = (...args: string[]) =>
    execFileSync('git', args, {
      cwd: dir,
      stdio: 'ignore',
      env: { ...process.env, GIT_AUTHOR_NAME: 'demo', GIT_AUTHOR_EMAIL: 'demo@localhost', GIT_COMMITTER_NAME: 'demo', GIT_COMMITTER_EMAIL: 'demo@localhost' },
    });
  git('init', '-q');
  git('add', '-A');
  git('commit', '-q', '--no-gpg-sign', '-m', 'login demo');
}

const testRun = { name: 'bash', input: { command: 'node --test' } };

/** What the scripted model does: read, run the tests (they fail), fix, run them again (they pass). Every tool call runs for real. */
export const loginRaceScript: ScriptInput = {
  delayMs: 12,
  steps: [
    [
      { reasoning: 'A race in login: look at how a session is created, and at the test that should catch it.' },
      { text: 'I will read the login code and its test first.' },
      { toolCall: { name: 'read', input: { path: 'src/session.js' } } },
      { toolCall: { name: 'read', input: { path: 'test/login.test.js' } } },
    ],
    [{ text: 'The test logs the same user in twice at once. Let me run it to see the failure.' }, { toolCall: testRun }],
    [
      {
        text:
          'It fails: both logins pass the `sessions.has` check before either has stored its token, so two tokens are issued. ' +
          'I will share the login that is already under way instead of starting a second one.',
      },
      { toolCall: { name: 'edit', input: { path: 'src/session.js', oldText: racyLines, newText: fixedLines } } },
    ],
    [{ text: 'Now the tests again.' }, { toolCall: testRun }],
    [{ text: 'The tests pass: a second login of the same user now waits for the first one and gets the same session, and only one token is issued.' }],
  ],
};
