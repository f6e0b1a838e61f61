import { agentsSdk } from './agentsSdk.ts';
import { langgraphDefault, langgraphFull } from './langgraph.ts';
import { turnloom } from './turnloom.ts';
import type { Contender } from './workload.ts';

/** Every contender, the comparison (LangGraph with synchronous=FULL) first. */
export const contenders: readonly Contender[] = [langgraphFull, langgraphDefault, agentsSdk, turnloom];

export function contenderByKey(key: string): Contender {
  const found = contenders.find((contender) => contender.key === key);
  if (!found) throw new Error(`no contender ${key}; choose from ${contenders.map((contender) => contender.key).join(', ')}`);
  return found;
}
