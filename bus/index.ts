export { assertSubject, subjectMatches } from './subjectRules.ts';
export { InProcessHub, InProcessBus } from './inProcessBus.ts';
export { NatsBus } from './natsBus.ts';
export { subjects, idPattern, assertId, isInbox } from './subjects.ts';
export type { Subjects } from './subjects.ts';
export { encode, decode, contentTypeOf, MSGPACK, JSON_TYPE } from './codec.ts';
export type { ContentType } from './codec.ts';
