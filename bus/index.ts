export type { Bus, BusMessage, BusStatus, BusSubscription, PublishOptions, RequestOptions, SubscribeOptions, BusErrorKind } from './bus.ts';
export { BusError, assertSubject, subjectMatches } from './bus.ts';
export { InProcessHub, InProcessBus } from './inProcessBus.ts';
export { NatsBus } from './natsBus.ts';
