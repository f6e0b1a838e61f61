import { metrics, trace } from '@opentelemetry/api';
import { requirePackages } from '../adapters/optionalPackage.ts';
import { VERSION } from '../domain/index.ts';
import { registerSecret } from './redact.ts';

/** Whether the standard `OTEL_*` variables ask for export (OTLP over HTTP), and it is not turned off. */
function wanted(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED === 'true') return false;
  if (env.OTEL_TRACES_EXPORTER === 'none' && env.OTEL_METRICS_EXPORTER === 'none') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT || env.OTEL_TRACES_EXPORTER === 'otlp');
}

const sdkPackages = ['@opentelemetry/sdk-trace-base', '@opentelemetry/exporter-trace-otlp-http', '@opentelemetry/resources', '@opentelemetry/sdk-metrics', '@opentelemetry/exporter-metrics-otlp-http'];

/**
 * Turns OpenTelemetry export on for `serve` and `worker` when the standard
 * `OTEL_*` variables ask for it (endpoints, headers, service name, as every
 * OTLP exporter reads them): traces and metrics over OTLP/HTTP. The SDK is
 * loaded only then. Resolves with what flushes and stops it.
 */
export async function startTelemetry(service: string, env: NodeJS.ProcessEnv = process.env): Promise<{ enabled: boolean; stop(): Promise<void> }> {
  if (!wanted(env)) return { enabled: false, stop: async () => undefined };
  // The SDK is an optional peer dependency: asked for but not there is one line saying what to install.
  requirePackages('OpenTelemetry export (asked for by the OTEL_* variables; OTEL_SDK_DISABLED=true turns it off)', sdkPackages);
  // Exporter headers carry a collector's API key: never printed.
  for (const name of ['OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_TRACES_HEADERS', 'OTEL_EXPORTER_OTLP_METRICS_HEADERS']) {
    for (const pair of (env[name] ?? '').split(',')) registerSecret(decodeURIComponent(pair.slice(pair.indexOf('=') + 1).trim()));
  }
  const [{ BasicTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }, { MeterProvider, PeriodicExportingMetricReader }, { OTLPMetricExporter }] = await Promise.all([
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-metrics'),
    import('@opentelemetry/exporter-metrics-otlp-http'),
  ]);
  const resource = resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME || service, 'service.version': VERSION });
  const traces = env.OTEL_TRACES_EXPORTER === 'none' ? null : new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] });
  const meters = env.OTEL_METRICS_EXPORTER === 'none' ? null : new MeterProvider({ resource, readers: [new PeriodicExportingMetricReader({ exporter: new OTLPMetricExporter() })] });
  if (traces) trace.setGlobalTracerProvider(traces);
  if (meters) metrics.setGlobalMeterProvider(meters);
  return {
    enabled: true,
    stop: async () => {
      // What is batched is sent before the process goes; a collector that is away costs the spans, never the exit.
      await Promise.allSettled([traces?.shutdown(), meters?.shutdown()]);
    },
  };
}
