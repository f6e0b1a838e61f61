import { readFileSync } from 'node:fs';

/** The passwords the shipped permissions file (docs/nats/turnloom-permissions.conf) reads from its environment, for tests. */
export const natsUserPasswords = {
  TURNLOOM_ENGINE_PASSWORD: 'engine-secret',
  TURNLOOM_CLIENT_PASSWORD: 'client-secret',
  TURNLOOM_CLIENT2_PASSWORD: 'client2-secret',
  TURNLOOM_WORKER_PASSWORD: 'worker-secret',
  TURNLOOM_WORKER_GPU_PASSWORD: 'worker-gpu-secret',
  TURNLOOM_INSPECTOR_PASSWORD: 'inspector-secret',
};

/** The shipped permissions file, as a nats-server configuration. */
export const shippedPermissions = (): string => readFileSync(new URL('../../docs/nats/turnloom-permissions.conf', import.meta.url), 'utf8');
