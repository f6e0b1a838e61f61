/** Words that name a secret wherever they stand in a variable's name: `PGPASSWORD`, `GITHUB_TOKEN`, `GOOGLE_APPLICATION_CREDENTIALS`. */
const secretWords = /PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN|CREDENTIAL|API_?KEY/i;
/** `_`-separated parts that name a secret: `DEPLOY_KEY`, `GITHUB_PAT`, `MYSQL_PWD`, `NATS_PASS`, `SSH_AUTH_SOCK`, `SENTRY_DSN`, `OTEL_EXPORTER_OTLP_HEADERS` (an exporter's API key). */
const secretParts = new Set(['KEY', 'PAT', 'PWD', 'PASS', 'AUTH', 'CREDS', 'DSN', 'PRIVATE', 'ASKPASS', 'COOKIE', 'HEADERS']);
/** The runtime's own settings and credentials, and whole families whose every variable selects credentials. */
const reservedPrefix = /^(OPENAI|ANTHROPIC|TURNLOOM|NATS|AWS)_/i;
/** `scheme://user:password@host`, in any variable (`DATABASE_URL`, `HTTPS_PROXY`). */
const urlWithPassword = /^[a-z][a-z0-9+.-]*:\/\/[^/?#@\s]*:[^/?#@\s]*@/i;

function isSecret(name: string, value: string | undefined): boolean {
  // `PWD` alone is the working directory, not a password.
  const parts = name.toUpperCase().split('_');
  return secretWords.test(name) || reservedPrefix.test(name) || (name.toUpperCase() !== 'PWD' && parts.some((part) => secretParts.has(part))) || urlWithPassword.test(value ?? '');
}

/**
 * `env` without the runtime's credentials and settings, nor anything named
 * or shaped like a secret: the model chooses the commands and reads their
 * output, so anything a command can print, it can leak. Removing too much
 * costs a command a setting; removing too little leaks a key.
 */
export function scrubbedEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name, value]) => !isSecret(name, value)));
}
