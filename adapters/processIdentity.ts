import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';

/** Which process this is, precisely enough to tell it from a later one that reuses its pid. */
export interface ProcessIdentity {
  pid: number;
  host: string;
  /** Start time in clock ticks since boot (Linux); `null` where the system does not say. */
  startTicks: number | null;
  /** When it took the thing it holds, epoch milliseconds. */
  since: number;
}

/** The process's state letter and start time from /proc (Linux); `null` where the system does not say. */
function procStat(pid: number): { state: string; startTicks: number | null } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields 3 and 22, counted after the parenthesised command name (which may hold spaces).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[19]);
    return { state: fields[0] ?? '', startTicks: Number.isFinite(ticks) ? ticks : null };
  } catch {
    return null;
  }
}

export const startTicksOf = (pid: number): number | null => procStat(pid)?.startTicks ?? null;

export function currentProcess(now: number = Date.now()): ProcessIdentity {
  return { pid: process.pid, host: hostname(), startTicks: startTicksOf(process.pid), since: now };
}

/**
 * Is that process still running? On another host nobody can tell, so it
 * counts as alive: taking a folder from a live engine is the one mistake
 * this must never make.
 */
export function isAlive(holder: Pick<ProcessIdentity, 'pid' | 'host' | 'startTicks'>): boolean {
  if (holder.host !== hostname()) return true;
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const stat = procStat(holder.pid);
  // Killed but not yet reaped by its parent: a zombie holds nothing.
  if (stat && (stat.state === 'Z' || stat.state === 'X')) return false;
  // The pid is taken, but maybe by a newer process.
  return holder.startTicks === null || stat?.startTicks === holder.startTicks;
}
