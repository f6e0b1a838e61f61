import type { Subjects } from '../bus/index.ts';
import type { Bus } from '../domain/index.ts';
import type { ApiMethod, ApiParamsIn } from './apiSchemas.ts';
import type { ApiResults } from './apiResults.ts';

/** What a thread watch needs of a client: its bus and subjects, and typed API calls. */
export interface ApiCaller {
  readonly bus: Bus;
  readonly subjects: Subjects;
  call<M extends ApiMethod>(method: M, params: ApiParamsIn<M>): Promise<ApiResults[M]>;
  /**
   * Sends a request whose answer nobody waits for (a courtesy such as
   * dropping a watch that would lapse by itself): no timer is left behind,
   * so it never keeps a process up that is done.
   */
  notify<M extends ApiMethod>(method: M, params: ApiParamsIn<M>): void;
}
