import type { CheckpointDiff, FileChange, FileChanges } from './checkpoints.ts';
import { cutText, cutToFit, jsonBytes } from './cutToFit.ts';
import type { DomainEvent } from './domainEvents.ts';

/** Every change counted, the first `maxFiles` of them listed (in the order given). */
export function summarizeChanges(files: FileChange[], maxFiles = Number.POSITIVE_INFINITY): FileChanges {
  let additions = 0;
  let deletions = 0;
  for (const file of files) {
    additions += file.additions;
    deletions += file.deletions;
  }
  const listed = files.length > maxFiles ? files.slice(0, maxFiles) : files;
  return { files: listed, filesChanged: files.length, additions, deletions, filesOmitted: files.length - listed.length };
}

/** Room for the counts to grow by a few digits when files leave the list. */
const COUNT_ROOM = 16;

/** The longest start of `files` whose JSON array takes at most `budget` bytes. */
function listWithin(files: FileChange[], budget: number): FileChange[] {
  let bytes = 2;
  let count = 0;
  for (const file of files) {
    bytes += jsonBytes(file) + (count > 0 ? 1 : 0);
    if (bytes > budget) break;
    count += 1;
  }
  return count === files.length ? files : files.slice(0, count);
}

/**
 * Changes (or a diff, with its patch) shrunk until their JSON takes at most
 * `maxBytes`, keeping their shape: the list keeps its first files and counts
 * the others in `filesOmitted`, the patch keeps its start and ends with a note
 * saying how much was cut, the totals stay exact. When both are too large,
 * each gets half of the room; one that needs less gives the rest to the
 * other. What fits comes back as it is; the input is never changed.
 */
export function fitChanges<T extends FileChanges & Partial<Pick<CheckpointDiff, 'patch' | 'truncated'>>>(value: T, maxBytes: number): T {
  const size = jsonBytes(value);
  if (size <= maxBytes) return value;
  const patchBytes = value.patch === undefined ? 0 : jsonBytes(value.patch);
  const listBytes = jsonBytes(value.files);
  const room = maxBytes - (size - listBytes - patchBytes) - COUNT_ROOM;
  const half = Math.floor(room / 2);
  const files = listWithin(value.files, patchBytes <= half ? room - patchBytes : Math.max(half, room - patchBytes));
  const fitted: T = { ...value, files, filesOmitted: value.filesOmitted + value.files.length - files.length };
  const patchRoom = room - jsonBytes(files);
  if (value.patch !== undefined && patchBytes > patchRoom) Object.assign(fitted, { patch: cutText(value.patch, patchRoom, `the changes were over ${maxBytes} bytes`), truncated: true });
  return fitted;
}

/**
 * A stored event shrunk until its JSON takes at most `maxBytes`: a
 * checkpoint's changes as changes (see `fitChanges`), so readers still find
 * a list, totals and a patch; anything else by `cutToFit`.
 */
export function fitEvent(event: DomainEvent, maxBytes: number): { value: DomainEvent; cut: boolean } {
  if (jsonBytes(event) <= maxBytes) return { value: event, cut: false };
  let shaped: DomainEvent = event;
  if (event.type === 'checkpoint.captured' && event.diff !== null) {
    const around = jsonBytes({ ...event, diff: null }) - jsonBytes(null);
    shaped = { ...event, diff: fitChanges(event.diff, maxBytes - around) };
  } else if (event.type === 'checkpoint.reverted') {
    shaped = fitChanges(event, maxBytes);
  }
  return { value: cutToFit(shaped, maxBytes).value, cut: true };
}

/**
 * Changes as a stored event holds them. Events recorded before the totals
 * existed carry only their list, which was then always whole.
 */
export function recordedChanges(recorded: Pick<FileChanges, 'files'> & Partial<FileChanges>): FileChanges {
  if (recorded.filesChanged === undefined) return summarizeChanges(recorded.files);
  const { files, filesChanged, additions = 0, deletions = 0, filesOmitted = 0 } = recorded;
  return { files, filesChanged, additions, deletions, filesOmitted };
}

/** A diff as a stored event holds it; `null` for one that an older engine cut down to a note (what it listed is lost). */
export function recordedDiff(diff: CheckpointDiff | null): CheckpointDiff | null {
  if (diff === null || typeof diff !== 'object') return null;
  return { ...diff, ...recordedChanges(diff) };
}
