import { simpleGit } from 'simple-git';

/** Would point git at another repository, index or pathspec syntax than the one chosen here (set when run from a git hook). */
const ambient = new Set([
  'git_dir',
  'git_work_tree',
  'git_index_file',
  'git_object_directory',
  'git_alternate_object_directories',
  'git_common_dir',
  'git_prefix',
  'git_namespace',
  'git_literal_pathspecs',
  'git_glob_pathspecs',
  'git_noglob_pathspecs',
  'git_icase_pathspecs',
]);

/** simple-git refuses to run with these set; no command here opens an editor, pager, prompt, connection or external diff. */
const launchers = new Set([
  'editor',
  'git_editor',
  'git_sequence_editor',
  'pager',
  'git_pager',
  'git_askpass',
  'ssh_askpass',
  'git_ssh',
  'git_ssh_command',
  'git_proxy_command',
  'git_external_diff',
  'git_template_dir',
]);

function baseEnvironment(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    const key = name.toLowerCase();
    if (value !== undefined && !ambient.has(key) && !launchers.has(key)) env[name] = value;
  }
  return env;
}

export interface GitOptions {
  /** Added to this process's environment for this one call only. */
  env?: Record<string, string>;
  /** Exit codes that mean "nothing found" (rev-parse --quiet) and yield empty output instead of an error. */
  emptyOnExit?: number[];
}

/** One git call with an args array; a fresh simple-git instance each time so env never leaks into other calls. */
export async function runGit(cwd: string, args: string[], options: GitOptions = {}): Promise<string> {
  try {
    return await simpleGit({
      baseDir: cwd,
      // Config and config-path variables come from this process's own environment, not from untrusted input.
      unsafe: { allowUnsafeConfigPaths: true, allowUnsafeConfigEnvCount: true },
      // simple-git treats a non-zero exit without stderr as success; here every unexpected exit is an error.
      errors: (error, { exitCode, stdErr }) => {
        if (exitCode === 0 || options.emptyOnExit?.includes(exitCode)) return error;
        const message = Buffer.concat(stdErr).toString('utf8').trim();
        return Buffer.from(message || (error instanceof Error ? error.message : `exit code ${exitCode}`));
      },
    })
      .env({ ...baseEnvironment(), ...options.env })
      .raw(args);
  } catch (error) {
    const message = error instanceof Error ? error.message.trim() : String(error);
    throw new Error(`git ${args.find((arg) => !arg.startsWith('-')) ?? ''} failed in ${cwd}: ${message}`, { cause: error });
  }
}
