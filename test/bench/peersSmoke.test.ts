import { describe, expect, it } from 'vitest';
import { peersSuite } from '../../bench/peersBench.ts';

/**
 * The peers suite at its smallest: LangGraph.js, the OpenAI Agents SDK and
 * turnloom each run a few turns, the child processes (strace, kill -9) run
 * once. It only proves the code runs and answers in the right shape: no
 * timing is judged (smoke figures carry `meetsTarget: null`).
 */
describe('npm run bench -- peers, smoke', () => {
  // The first run on a machine installs the peers (and better-sqlite3, which compiles) into bench/.
  it('every figure, beside LangGraph with synchronous=FULL', { timeout: 600_000 }, async () => {
    const figures = await peersSuite.run({ smoke: true });
    expect(figures.map((figure) => figure.key)).toEqual(['peersTurnWall', 'peersTurnCpu', 'peersThroughput50', 'peersGrowth200', 'peersFsyncs', 'peersBytes', 'peersKillTool', 'peersKillStream']);
    for (const figure of figures) {
      expect(figure.meetsTarget, figure.key).toBeNull();
      expect(figure.note, figure.key).toMatch(/turnloom/);
      // Without strace on the PATH the sync count is missing, and says so.
      if (figure.key === 'peersFsyncs' && figure.comparison === null) {
        expect(figure.note).toMatch(/strace is not on the PATH/);
        continue;
      }
      expect(Number.isFinite(figure.value) && figure.value > 0, `${figure.key} = ${figure.value}`).toBe(true);
      expect(figure.comparison?.label).toBe('LangGraph, SQLite sync FULL');
      const comparison = figure.comparison!.value;
      // What LangGraph kept of a killed stream may well be nothing; everything else it measures is some.
      expect(Number.isFinite(comparison) && (comparison > 0 || figure.key === 'peersKillStream'), `${figure.key} comparison = ${comparison}`).toBe(true);
      if (comparison > 0) expect(figure.ratio).toBeCloseTo(figure.value / comparison);
      else expect(figure.ratio).toBeNull();
    }
    expect(figures[0]!.note).toMatch(/@langchain\/langgraph \d+\.\d+\.\d+.*@openai\/agents \d+\.\d+\.\d+/);
  });
});
