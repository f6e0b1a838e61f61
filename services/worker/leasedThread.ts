import type { Subjects } from '../../bus/index.ts';
import { type Bus, TurnloomError } from '../../domain/index.ts';
import type { ApiMethod, ApiParamsIn, ApiResults } from '../api/index.ts';
import { type LeaseProof, leasedReadSchemas } from '../dispatch/workerProtocol.ts';
import type { WorkerLink } from './workerLink.ts';

/**
 * The thread a worker holds, read the way a client reads one (so the same
 * `ThreadWatch` folds it with the same projector), but through the worker
 * protocol and under the lease: the worker never touches the engine's store
 * and needs no API token.
 */
export class LeasedThread {
  readonly bus: Bus;
  readonly subjects: Subjects;

  constructor(
    bus: Bus,
    subjects: Subjects,
    private readonly link: WorkerLink,
    private readonly proof: LeaseProof,
  ) {
    this.bus = bus;
    this.subjects = subjects;
  }

  async call<M extends ApiMethod>(method: M, params: ApiParamsIn<M>): Promise<ApiResults[M]> {
    if (!Object.hasOwn(leasedReadSchemas, method)) throw new TurnloomError('invalid_payload', `a worker reads threads, it does not call ${method}`);
    return this.link.call<ApiResults[M]>(method as keyof typeof leasedReadSchemas, { ...this.proof, ...params });
  }

  notify<M extends ApiMethod>(method: M, params: ApiParamsIn<M>): void {
    if (!Object.hasOwn(leasedReadSchemas, method)) throw new TurnloomError('invalid_payload', `a worker reads threads, it does not call ${method}`);
    this.link.notify(method as keyof typeof leasedReadSchemas, { ...this.proof, ...params });
  }
}
