import { describe, expect, it } from 'vitest';
import { isInstalled, requirePackages } from '../../adapters/optionalPackage.ts';
import { TurnloomError } from '../../domain/index.ts';

describe('optional peer dependencies: the provider SDKs and the OpenTelemetry SDK', () => {
  it('tells an installed package from one that is not, without loading it', () => {
    expect(isInstalled('openai')).toBe(true);
    expect(isInstalled('@anthropic-ai/sdk')).toBe(true);
    expect(isInstalled('@opentelemetry/sdk-trace-base')).toBe(true);
    expect(isInstalled('turnloom-no-such-package')).toBe(false);
  });

  it('what needs a package that is not installed is one `unavailable` line naming it and the command that installs it', () => {
    expect(() => requirePackages('AnthropicProvider', ['@anthropic-ai/sdk'])).not.toThrow();
    let thrown: unknown;
    try {
      requirePackages('The thing', ['openai', 'turnloom-no-such-package', '@scope/turnloom-nothing']);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(TurnloomError);
    expect(thrown).toMatchObject({
      code: 'unavailable',
      message: 'The thing needs the packages "turnloom-no-such-package", "@scope/turnloom-nothing", not installed here: npm install turnloom-no-such-package @scope/turnloom-nothing',
      details: { packages: ['turnloom-no-such-package', '@scope/turnloom-nothing'] },
    });
  });
});
