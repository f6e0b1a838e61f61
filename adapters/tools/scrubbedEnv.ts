const secretName = /API_KEY|TOKEN|SECRET|PASSWORD/i;
const runtimeName = /^(OPENAI|ANTHROPIC|TURNLOOM)_/i;

/**
 * `env` without the runtime's credentials and settings: the model chooses the
 * commands and reads their output, so anything a command can print, it can leak.
 */
export function scrubbedEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !secretName.test(name) && !runtimeName.test(name)));
}
