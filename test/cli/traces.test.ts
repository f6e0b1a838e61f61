import { type IncomingMessage, createServer } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NatsBus } from '../../bus/natsBus.ts';
import { TurnloomClient } from '../../client/index.ts';
import { runCli } from '../support/cliProcess.ts';
import { type NatsServerHandle, freePort, startNatsServer } from '../support/natsServer.ts';
import { tempDir } from '../support/tempDir.ts';

interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  attributes: Record<string, unknown>;
}

type OtlpValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; arrayValue?: { values: OtlpValue[] } };
const valueOf = (value: OtlpValue): unknown => value.stringValue ?? (value.intValue === undefined ? undefined : Number(value.intValue)) ?? value.boolValue ?? value.arrayValue?.values.map(valueOf);
const attributesOf = (list: Array<{ key: string; value: OtlpValue }> = []) => Object.fromEntries(list.map(({ key, value }) => [key, valueOf(value)]));

/** A local OTLP/HTTP receiver: what the `serve` and `worker` processes export, as they export it. */
async function otlpReceiver(): Promise<{ url: string; spans: ReceivedSpan[]; metricNames: Set<string>; close(): Promise<void> }> {
  const spans: ReceivedSpan[] = [];
  const metricNames = new Set<string>();
  const body = async (request: IncomingMessage) => {
    let text = '';
    for await (const chunk of request) text += chunk;
    return JSON.parse(text) as Record<string, unknown>;
  };
  const server = createServer((request, response) => {
    void body(request)
      .then((payload) => {
        if (request.url === '/v1/traces') {
          for (const resourceSpans of (payload.resourceSpans ?? []) as Array<{ resource: { attributes: Array<{ key: string; value: OtlpValue }> }; scopeSpans: Array<{ spans: Array<Record<string, unknown>> }> }>) {
            const service = String(attributesOf(resourceSpans.resource.attributes)['service.name']);
            for (const scope of resourceSpans.scopeSpans) {
              for (const span of scope.spans) {
                spans.push({ service, traceId: String(span.traceId), spanId: String(span.spanId), parentSpanId: String(span.parentSpanId ?? ''), name: String(span.name), attributes: attributesOf(span.attributes as Array<{ key: string; value: OtlpValue }>) });
              }
            }
          }
        } else if (request.url === '/v1/metrics') {
          for (const resourceMetrics of (payload.resourceMetrics ?? []) as Array<{ scopeMetrics: Array<{ metrics: Array<{ name: string }> }> }>) {
            for (const scope of resourceMetrics.scopeMetrics) for (const metric of scope.metrics) metricNames.add(metric.name);
          }
        }
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      })
      .catch(() => response.writeHead(400).end());
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${port}`, spans, metricNames, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** The spans as an indented tree under each root: `name [service]`. */
function tree(spans: ReceivedSpan[]): string {
  const children = new Map<string, ReceivedSpan[]>();
  for (const span of spans) children.set(span.parentSpanId, [...(children.get(span.parentSpanId) ?? []), span]);
  const lines: string[] = [];
  const walk = (span: ReceivedSpan, depth: number) => {
    lines.push(`${'  '.repeat(depth)}${span.name} [${span.service}]`);
    for (const child of children.get(span.spanId) ?? []) walk(child, depth + 1);
  };
  const ids = new Set(spans.map((span) => span.spanId));
  for (const root of spans.filter((span) => !ids.has(span.parentSpanId))) walk(root, 0);
  return lines.join('\n');
}

describe('traces: a turn that ran on a remote worker is one trace', () => {
  let nats: NatsServerHandle;
  let receiver: Awaited<ReturnType<typeof otlpReceiver>>;
  const dir = tempDir('turnloom-traces-');
  beforeAll(async () => {
    nats = await startNatsServer({ jetstream: false });
    receiver = await otlpReceiver();
  });
  afterAll(async () => {
    await receiver.close();
    await nats.dispose();
    dir.remove();
  });

  it('the engine\'s turn span, the worker\'s run with its steps, model calls, tool call and approval, and the engine\'s spans of the worker\'s writes', async () => {
    const script = join(dir.path, 'script.json');
    writeFileSync(script, JSON.stringify({ model: 'scripted-1', steps: [[{ text: 'Checking.' }, { toolCall: { name: 'bash', input: { command: 'echo ok' } } }], [{ text: 'It works.' }]] }));
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '100', OTEL_METRIC_EXPORT_INTERVAL: '500' };
    const serve = runCli(['serve', '--nats', nats.url, '--no-worker', '--prefix', 'traced', '--data', join(dir.path, 'data')], { env });
    const worker = runCli(['worker', '--nats', nats.url, '--prefix', 'traced', '--workspace', dir.path, '--script', script], { env });
    const bus = await NatsBus.connect({ servers: nats.url });
    try {
      await serve.waitFor('telemetry:');
      await worker.waitFor('telemetry:');
      const api = new TurnloomClient(bus, { prefix: 'traced' });
      const turn = await api.startTurn({ text: 'does it work?', onApproval: () => 'approve' });
      expect((await turn.done).state).toBe('completed');
    } finally {
      // Stopped as an operator stops them: each flushes what it batched.
      await Promise.all([serve.kill('SIGTERM'), worker.kill('SIGTERM')]);
      await bus.close();
    }

    const root = receiver.spans.find((span) => span.name === 'invoke_agent turnloom');
    expect(root, tree(receiver.spans)).toBeDefined();
    const spans = receiver.spans.filter((span) => span.traceId === root!.traceId);
    console.log(`the span tree of one turn:\n${tree(spans)}`);
    const byId = new Map(spans.map((span) => [span.spanId, span]));
    const parentOf = (span: ReceivedSpan) => byId.get(span.parentSpanId);
    expect(root!.service).toBe('turnloom-serve');
    expect(root!.attributes).toMatchObject({ 'gen_ai.operation.name': 'invoke_agent', 'turnloom.turn.outcome': 'completed' });
    const run = spans.find((span) => span.name === 'turnloom.run_turn')!;
    expect(run.service).toBe('turnloom-worker');
    expect(parentOf(run)).toBe(root);
    const steps = spans.filter((span) => span.name === 'turnloom.step');
    expect(steps.map((step) => step.attributes['turnloom.step'])).toEqual([1, 2]);
    for (const step of steps) expect(parentOf(step)).toBe(run);
    // The turn names no model: the span says `chat`, and the provider's answer says which model answered.
    const chats = spans.filter((span) => span.name === 'chat');
    expect(chats).toHaveLength(2);
    for (const chat of chats) {
      expect(steps).toContain(parentOf(chat));
      expect(chat.attributes).toMatchObject({ 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'scripted', 'gen_ai.response.model': 'scripted-1' });
      expect(chat.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
    }
    const tool = spans.find((span) => span.name === 'execute_tool bash')!;
    expect(parentOf(tool)).toBe(steps[0]);
    expect(tool.attributes).toMatchObject({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'bash' });
    const approval = spans.find((span) => span.name === 'turnloom.approval')!;
    expect(parentOf(approval)).toBe(steps[0]);
    expect(approval.attributes['turnloom.approval.decision']).toBe('granted');
    const writes = spans.filter((span) => span.name === 'turnloom.worker.record' || span.name === 'turnloom.worker.settle');
    expect(writes.length).toBeGreaterThan(3);
    for (const write of writes) {
      expect(write.service).toBe('turnloom-serve');
      expect(parentOf(write)).toBe(run);
    }
    for (const name of ['turnloom.turns', 'turnloom.turn.duration', 'gen_ai.client.token.usage']) expect(receiver.metricNames).toContain(name);
  }, 90_000);
});
