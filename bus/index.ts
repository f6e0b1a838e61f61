// NatsBus is imported from ./natsBus.ts itself, not from here: nats.js takes tens of milliseconds to load, and an embedded run never connects to NATS.
export { assertSubject, subjectMatches } from './subjectRules.ts';
export { InProcessHub, InProcessBus } from './inProcessBus.ts';
export { subjects, idPattern, assertId, isInbox } from './subjects.ts';
export type { Subjects } from './subjects.ts';
export { encode, decode, contentTypeOf, MSGPACK, JSON_TYPE } from './codec.ts';
export type { ContentType } from './codec.ts';
