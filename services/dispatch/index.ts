export { WorkerGateway, WORKER_QUEUE_GROUP } from './workerGateway.ts';
export type { WorkerGatewayOptions } from './workerGateway.ts';
export { WorkerRegistry } from './workerRegistry.ts';
export { workerEventSchema, helloSchema, claimSchema, recordSchema, checkSchema, settleSchema, leasedReadSchemas, workerMethods } from './workerProtocol.ts';
export type { WorkerEvent, WorkerMethod, Hello, HelloAnswer, Claim, RecordRequest, SettleRequest, LeaseProof, Offer } from './workerProtocol.ts';
