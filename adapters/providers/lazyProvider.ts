import type { ProviderAdapter, ProviderEvent, ProviderRequest } from '../../domain/index.ts';

/**
 * A provider whose SDK is imported on its first call rather than at start:
 * the official SDKs take a good part of a second to load, and most processes
 * that have a key set start long before (or without ever) calling the model.
 * A failed import is tried again on the next call.
 */
export class LazyProvider implements ProviderAdapter {
  readonly name: string;
  private readonly load: () => Promise<ProviderAdapter>;
  private loading: Promise<ProviderAdapter> | undefined;

  /** `parameters`: what the adapter it loads will say of itself, known before it is loaded (a request header needs them first). */
  constructor(name: string, load: () => Promise<ProviderAdapter>, readonly parameters?: Readonly<Record<string, string | number | boolean>>) {
    this.name = name;
    this.load = load;
  }

  /**
   * Starts importing the SDK now, for a process that will call the model
   * soon and has other work to do first; a failure is left for the call to
   * meet (and try again).
   */
  preload(): void {
    this.adapter().catch(() => undefined);
  }

  private adapter(): Promise<ProviderAdapter> {
    this.loading ??= this.load().catch((error: unknown) => {
      this.loading = undefined;
      throw error;
    });
    return this.loading;
  }

  async startSession(): Promise<{ providerSessionId: string | null }> {
    const adapter = await this.adapter();
    return (await adapter.startSession?.()) ?? { providerSessionId: null };
  }

  async *stream(request: ProviderRequest, signal: AbortSignal): AsyncIterable<ProviderEvent> {
    yield* (await this.adapter()).stream(request, signal);
  }
}
