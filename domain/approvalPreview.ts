/**
 * What an approval allows, shown to the person before they answer: worked
 * out by the worker from the workspace as it is at the moment of asking.
 * A diff binds the approval to the file it was made from (its `digest`): if
 * the file changed before the approved call runs, the call is refused. A
 * preview that could not be made says why.
 */
export type ApprovalPreview =
  | {
      kind: 'diff';
      /** The file, relative to the workspace root. */
      path: string;
      /** Unified diff of the file now against the file after the call (`--- a/path`, `+++ b/path`); cut past a bound, with a last line saying so. */
      patch: string;
      additions: number;
      deletions: number;
      /** The file does not exist yet: the call makes it. */
      created: boolean;
      /** The patch was cut (the counts are still whole). */
      cut: boolean;
      /**
       * The file as the diff was made from it: `sha256:<hex>` of its bytes, or
       * `absent`. The approved call is refused if the file is no longer so:
       * a person's edit made while the question waited is never overwritten.
       * Left out in logs written before it.
       */
      digest?: string;
    }
  | {
      kind: 'command';
      command: string;
      /** The folder it runs in, relative to the workspace root (`.` for the root). */
      cwd: string;
    }
  /** The call would fail as it stands (text not found, a path refused…), or the file could not be read: the reason, in the tool's words. */
  | { kind: 'unavailable'; reason: string };

/** How much of a preview's patch is kept: enough to read, small enough for every log and page. */
export const MAX_PREVIEW_PATCH_CHARS = 16_000;
