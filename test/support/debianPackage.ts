import { spawnSync } from 'node:child_process';

export const onPath = (command: string): boolean => !spawnSync(command, ['--version'], { encoding: 'utf8' }).error;

/**
 * A command the suite needs, brought when it is missing and this machine
 * lets us: as root with apt-get, Debian's package is installed once.
 * Whether it is there afterwards is the caller's to check and say.
 */
export function installFromDebian(command: string, debianPackage: string): boolean {
  if (onPath(command)) return true;
  const mayInstall = process.getuid?.() === 0 && !spawnSync('apt-get', ['--version']).error;
  if (mayInstall) {
    console.log(`${command} is not installed: installing Debian's package (apt-get install ${debianPackage})…`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
    spawnSync('apt-get', ['install', '-y', '-qq', debianPackage], { stdio: 'inherit', env });
  }
  return onPath(command);
}
