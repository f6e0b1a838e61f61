// `turnloom/testing`: what tests of a program that embeds turnloom need: a model that plays a script, and a local server replaying recorded provider streams to the real SDKs.
export { ScriptedProvider } from '../adapters/providers/scriptedProvider.ts';
export type { ScriptInput } from '../adapters/providers/scriptedProvider.ts';
export { serveRecordedStream, parseChunks } from '../adapters/providers/recordedStreamServer.ts';
export type { RecordedRequest, RecordedStreamServer, ResponsePlan, WireProtocol } from '../adapters/providers/recordedStreamServer.ts';
