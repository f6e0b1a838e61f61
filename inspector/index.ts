export { InspectorRelay } from './relayServer.ts';
export type { RelayOptions } from './relayServer.ts';
export { ThreadStream } from './threadStream.ts';
export type { StreamMessage, StreamSink } from './threadStream.ts';
export { layoutChart, layoutCharts } from './chartLayout.ts';
export type { ChartLayout } from './chartLayout.ts';
