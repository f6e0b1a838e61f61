import { readFileSync, readdirSync } from 'node:fs';

/**
 * The pids (as this process sees them) of the running processes with
 * `argument` as one word of their command line. Commands report pids of
 * their own namespace, so tests find what they started by a unique
 * argument instead (`sleep 777.<tag>`). A zombie has no command line: it
 * runs nothing, and is not counted.
 */
export function processesWith(argument: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').includes(argument)) found.push(Number(entry));
    } catch {
      // Gone while we looked.
    }
  }
  return found;
}

/** A number no other test run uses, for `sleep <seconds>.<tag>`. */
export const uniqueTag = (): string => `${process.pid}${Math.floor(Math.random() * 1e6)}`;
