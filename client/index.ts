export { TurnloomClient } from './turnloomClient.ts';
export type { ClientOptions } from './turnloomClient.ts';
export { ThreadWatch } from './threadWatch.ts';
export type { ThreadWatchContext, ThreadWatchOptions } from './threadWatch.ts';
export type { ApiCaller } from './apiCaller.ts';
