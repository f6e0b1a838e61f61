export { Deadlines } from './deadlines.ts';
export { CrashRepair } from './crashRepair.ts';
export type { CrashRepairOptions } from './crashRepair.ts';
export type { DeadlineOptions } from './deadlines.ts';
export { StepIngestion } from './stepIngestion.ts';
export type { StepIngestionOptions } from './stepIngestion.ts';
export { deriveMessages, systemPrompt } from './deriveRequest.ts';
export { defaultRetryPolicy, retryDelay } from './retryPolicy.ts';
export type { RetryPolicy } from './retryPolicy.ts';
