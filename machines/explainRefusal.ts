import type { LifecycleMachineName } from '../domain/index.ts';
import { lifecycleMachines } from './lifecycleMachines.ts';

interface StateConfig {
  description?: string;
  on?: Record<string, unknown>;
  states?: Record<string, StateConfig>;
  type?: string;
}

/** The state and its ancestors, innermost first: what a state accepts includes what its parents do. */
function stateChain(root: StateConfig, path: string): StateConfig[] {
  const chain: StateConfig[] = [];
  let node: StateConfig | undefined = root;
  for (const name of path.split('.')) {
    node = node?.states?.[name];
    if (!node) return [];
    chain.unshift(node);
  }
  return chain;
}

/**
 * Why a machine refuses an event in a state, in its own words: the refusal,
 * what that state means, and what it would accept instead. The state is a
 * dotted path (`running.streaming`), or `absent` when no such actor lives.
 */
export function explainRefusal(machine: LifecycleMachineName, state: string, event: string): string {
  const refusal = `${machine} in state "${state}" does not accept "${event}"`;
  if (state === 'absent') return `${refusal}: there is no such live ${machine} (it finished, or never existed)`;
  const chain = stateChain(lifecycleMachines[machine].machine.config as StateConfig, state);
  if (chain.length === 0) return refusal;
  const accepted = [...new Set(chain.flatMap((node) => Object.keys(node.on ?? {})))];
  const meaning = chain[0]!.description ? `: ${chain[0]!.description}` : '';
  const instead = chain[0]!.type === 'final' ? ' It is final and accepts nothing.' : accepted.length > 0 ? ` It accepts ${accepted.join(', ')}.` : '';
  return `${refusal}${meaning}${instead}`;
}
