import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { tempDir } from '../support/tempDir.ts';
import { expectOneLineFailure, runCli } from './runCli.ts';

const fixture = fileURLToPath(new URL('../fixtures/providers/anthropic/anthropic-text.chunks.txt', import.meta.url));

/**
 * Files the user names that are missing, unreadable or not what they should
 * be (auth, script, recording, data folder): one line each, naming the file
 * and what is wrong, never a stack trace or a Zod issue array.
 */
describe('turnloom with bad files', () => {
  const dir = tempDir('turnloom-cli-files-');
  const file = (name: string, content: string) => {
    writeFileSync(join(dir.path, name), content);
    return join(dir.path, name);
  };
  const path = (name: string) => join(dir.path, name);
  beforeAll(() => {
    file('not-json.json', '{bad');
    // A file named by mistake, as /etc/shadow would be: the error says where it stops being JSON, never what it holds.
    file('shadow', 'root:$6$SECRET-HASH:19000:0:99999:7:::\n');
    file('short-token.json', JSON.stringify({ tokens: { 'short-tok': { principal: 'alice', scopes: ['read'] } } }));
    file('bad-scope.json', JSON.stringify({ tokens: { 'a-long-enough-token-0123': { principal: 'alice', scopes: ['fly'] } } }));
    file('bad-script.json', JSON.stringify({ steps: 3 }));
    file('pretty.json', JSON.stringify({ type: 'message_start' }, null, 2));
    file('wrong-shape.chunks.txt', '{"a":1}\n{"b":2}\n');
    file('empty.chunks.txt', '\n\n');
    file('a-file-not-a-folder', 'x');
    mkdirSync(path('a-folder'));
  });
  afterAll(() => dir.remove());
  const run = (args: string[]) => runCli(args, { cwd: dir.path });

  const cases: Array<{ name: string; args: () => string[]; says: RegExp; hides?: string }> = [
    { name: 'a missing --auth file', args: () => ['serve', '--auth', path('nope.json')], says: /--auth .*nope\.json: no such file/ },
    { name: 'an --auth file that is a folder', args: () => ['serve', '--auth', path('a-folder')], says: /--auth .*a-folder: is a folder/ },
    { name: 'an --auth file that is not JSON', args: () => ['serve', '--auth', path('not-json.json')], says: /--auth .*not-json\.json:1:2: not JSON \(invalid symbol\)/ },
    {
      name: 'an --auth file with a short token',
      args: () => ['serve', '--auth', path('short-token.json')],
      says: /not an auth file .*tokens\.<token>: tokens must be at least 16 characters/,
      hides: 'short-tok',
    },
    {
      name: 'an --auth file with an unknown scope',
      args: () => ['serve', '--auth', path('bad-scope.json'), '--nats', inject('natsUrl')],
      says: /not an auth file .*tokens\.<token>\.scopes\.0: /,
      hides: 'a-long-enough-token-0123',
    },
    { name: 'a missing --script file', args: () => ['serve', '--script', path('nope.json')], says: /--script .*nope\.json: no such file/ },
    { name: 'a --script file that is not JSON', args: () => ['serve', '--script', path('not-json.json')], says: /--script .*: not JSON/ },
    { name: 'a --script file that is not a script', args: () => ['demo', '--script', path('bad-script.json')], says: /--script .*: not a script .*steps: / },
    { name: 'a missing replay file', args: () => ['replay', path('nope.chunks.txt'), '--provider', 'anthropic'], says: /replay .*nope\.chunks\.txt: no such file/ },
    { name: 'a replay file that is a JSON document', args: () => ['replay', path('pretty.json'), '--provider', 'anthropic'], says: /not a recorded anthropic stream: line 1 is not JSON/ },
    { name: 'a replay file of the wrong shape', args: () => ['replay', path('wrong-shape.chunks.txt'), '--provider', 'openai-responses'], says: /not a recorded openai-responses stream: chunk 1/ },
    { name: 'an empty replay file', args: () => ['replay', path('empty.chunks.txt'), '--provider', 'anthropic'], says: /the file is empty/ },
    { name: 'a recording of another provider', args: () => ['replay', fixture, '--provider', 'openai-chat'], says: /not a recorded openai-chat stream/ },
    { name: 'replay without --provider', args: () => ['replay', fixture], says: /--provider anthropic\|openai-chat\|openai-responses is required/ },
    { name: 'replay with an unknown provider', args: () => ['replay', fixture, '--provider', 'gemini'], says: /unknown provider "gemini"/ },
    { name: 'replay without a file', args: () => ['replay'], says: /which recording\?/ },
    { name: 'a --script file that holds secrets', args: () => ['run', 'hi', '--script', path('shadow')], says: /--script .*shadow:1:1: not JSON \(invalid symbol\); expected a script/, hides: 'SECRET' },
    { name: 'an --auth file that holds secrets', args: () => ['serve', '--auth', path('shadow')], says: /--auth .*shadow:1:1: not JSON \(invalid symbol\); expected/, hides: 'SECRET' },
    { name: 'a replay file that holds secrets', args: () => ['replay', path('shadow'), '--provider', 'openai-chat'], says: /line 1 is not JSON/, hides: 'SECRET' },
    // Hung before: the NATS connection was opened first and kept the process alive after the store failed.
    { name: '--data naming a file, with --nats', args: () => ['serve', '--data', path('a-file-not-a-folder'), '--nats', inject('natsUrl')], says: /a-file-not-a-folder/ },
    { name: '--data naming a file (demo)', args: () => ['demo', '--data', path('a-file-not-a-folder')], says: /a-file-not-a-folder/ },
    // Spun at full CPU inside LMDB; the store's own folder check (adapters/lmdbStore.ts) turns it into one line.
    { name: '--data where no folder can be made', args: () => ['serve', '--data', '/proc/nope'], says: /\/proc\/nope/ },
  ];

  for (const { name, args, says, hides } of cases) {
    it(`${name}: one line, non-zero exit`, async () => {
      const line = expectOneLineFailure(await run(args()), says);
      if (hides) expect(line).not.toContain(hides);
    });
  }
});
