import type { WorkerInfo } from '../../protocol/apiResults.ts';
import type { Hello } from './workerProtocol.ts';

/**
 * The workers the engine has heard from, kept from their heartbeats alone:
 * a worker is live while its last heartbeat is younger than the lease
 * timeout, and forgotten ten timeouts after its last one.
 */
export class WorkerRegistry {
  private readonly workers = new Map<string, Omit<WorkerInfo, 'live'>>();

  constructor(private readonly timeoutMs: number) {}

  /** Records a heartbeat; `true` when this worker was not live before (new, or back). */
  heard(hello: Hello, now: number): boolean {
    const known = this.workers.get(hello.workerId);
    const wasLive = known !== undefined && now - known.lastHeartbeat <= this.timeoutMs;
    this.workers.set(hello.workerId, {
      workerId: hello.workerId,
      environment: hello.environment,
      workspace: hello.workspace,
      host: hello.host,
      pid: hello.pid,
      startTicks: hello.startTicks,
      capacity: hello.capacity,
      runningTurns: hello.running.length,
      firstSeen: known?.firstSeen ?? now,
      lastHeartbeat: now,
    });
    return !wasLive;
  }

  get(workerId: string, now: number): WorkerInfo | undefined {
    const worker = this.workers.get(workerId);
    return worker && { ...worker, live: now - worker.lastHeartbeat <= this.timeoutMs };
  }

  list(now: number): WorkerInfo[] {
    for (const [workerId, worker] of this.workers) if (now - worker.lastHeartbeat > 10 * this.timeoutMs) this.workers.delete(workerId);
    return [...this.workers.values()].map((worker) => ({ ...worker, live: now - worker.lastHeartbeat <= this.timeoutMs }));
  }

  liveIn(environment: string, now: number): number {
    return this.list(now).filter((worker) => worker.live && worker.environment === environment).length;
  }
}
